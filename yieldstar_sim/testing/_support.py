"""What the conformance cases share: the runtime factory, fresh runtimes, expectations."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeAlias, TypeVar

from yieldstar_sim.core.clock import ManualClock
from yieldstar_sim.core.model import (
    Delivery,
    ExecutionStateError,
    InjectedFailure,
    LeaseLostError,
    RequestId,
    StartAccepted,
    StartRequest,
    StartResult,
    TerminalCallerError,
    WorkflowRunOutcome,
)
from yieldstar_sim.runtime.protocol import Runtime

T = TypeVar("T")
E = TypeVar("E", bound=BaseException)

RuntimeFactory: TypeAlias = Callable[[ManualClock], Runtime]
"""Makes a fresh, empty runtime that reads its time from the given clock."""


Case: TypeAlias = Callable[[RuntimeFactory], None]


LEASE = 30.0


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _fresh(make: RuntimeFactory) -> tuple[Runtime, ManualClock]:
    clock = ManualClock()
    return make(clock), clock


def _caller(runtime: Runtime, execution_id: str = "order-42") -> str:
    return runtime.trigger("charge-order", {"order": 42}, execution_id=execution_id)


_UNSET: object = object()


def _ship(
    caller: str = "order-42",
    step_key: str = "ship",
    *,
    workflow_id: str = "ship-order",
    params: object = _UNSET,
    detached: bool = False,
) -> StartRequest:
    return StartRequest(
        RequestId(caller, step_key),
        workflow_id,
        {"order": 42} if params is _UNSET else params,
        detached,
    )


def _accepted(result: StartResult, what: str) -> str:
    _expect(
        isinstance(result, StartAccepted), f"{what}: expected an accepted start, got {result!r}"
    )
    assert isinstance(result, StartAccepted)
    return result.execution_id


def _targets(runtime: Runtime, caller: str, step_key: str) -> list[str]:
    return [
        record.execution_id
        for record in runtime.executions()
        if record.parent is not None
        and (record.parent.execution_id, record.parent.step_key) == (caller, step_key)
    ]


def _one_target(runtime: Runtime, caller: str, step_key: str, expected: str) -> None:
    targets = _targets(runtime, caller, step_key)
    _expect(
        targets == [expected],
        f"request ({caller}, {step_key}) should have exactly one target {expected}, "
        f"found {targets}",
    )


def _claimed(make: RuntimeFactory) -> tuple[Runtime, ManualClock, str, Delivery]:
    """A fresh runtime, its clock, its one caller (``_caller``) and w1's delivery of it."""
    runtime, clock = _fresh(make)
    caller = _caller(runtime)
    delivery = runtime.claim("w1", lease_seconds=LEASE)
    assert delivery is not None
    return runtime, clock, caller, delivery


def _finish(runtime: Runtime, execution_id: str, outcome: WorkflowRunOutcome) -> None:
    delivery = runtime.claim("w1", lease_seconds=LEASE, execution_id=execution_id)
    assert delivery is not None, f"{execution_id} could not be claimed"
    runtime.acknowledge(delivery.lease, outcome)


def _refused_as_terminal(call: Callable[[], object], what: str, caller: str, status: str) -> None:
    try:
        answer = call()
    except TerminalCallerError as error:
        _expect(
            isinstance(error, LeaseLostError) and isinstance(error, ExecutionStateError),
            f"{what}: TerminalCallerError must be a LeaseLostError and an ExecutionStateError",
        )
        _expect(
            f"the caller {caller} is {status}" in str(error),
            f"{what}: the refusal does not say the caller is {status}: {error}",
        )
    else:
        raise AssertionError(f"{what} from the {status} caller {caller} gave {answer!r}")


def _raised(kind: type[E], call: Callable[[], object], message: str) -> E:
    """The ``kind`` error ``call`` raised, for the case to look into; ``message`` fails the
    case when it raised none."""
    try:
        call()
    except kind as error:
        return error
    raise AssertionError(message)


def _raises_injected(
    call: Callable[[], object], message: str = "an armed failure point did not fail the call"
) -> None:
    _raised(InjectedFailure, call, message)


def _race(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Run each call on a thread of its own, all released together; answer their results in
    the order they finished, or re-raise the first error."""
    barrier = threading.Barrier(len(calls))
    results: list[T] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def run(call: Callable[[], T]) -> None:
        try:
            barrier.wait()
            result = call()
        except BaseException as error:  # reported to the caller below
            with lock:
                errors.append(error)
        else:
            with lock:
                results.append(result)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results
