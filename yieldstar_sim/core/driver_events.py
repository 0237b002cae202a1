"""The driver's two verbs of external events: ``step.wait_for_event`` and
``step.continue_as_new`` (docs/decisions.md, "External events and continue-as-new").

A wait takes its event and records its step in one runtime call (``ConsumeEvent``), so an
event is never taken without the step that took it: a crash either side of the call leaves
both or neither. With no event yet, the step is recorded pending with its deadline (the
timeout's wake) and the run suspends; an event sent meanwhile wakes it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NoReturn

from yieldstar_sim.core.codec import InvalidValue, durable_value_codec
from yieldstar_sim.core.commands import Command, ConsumeEvent, PutStep, ReadClock, RecordWake
from yieldstar_sim.core.driver_flow import Suspend, Throw
from yieldstar_sim.core.driver_outcomes import completed
from yieldstar_sim.core.events import ReceivedEvent
from yieldstar_sim.core.ids import check_name
from yieldstar_sim.core.model import (
    ContinuedAsNew,
    NondeterminismError,
    WorkflowCancelledError,
    WorkflowDefinitionError,
    WorkflowRunOutcome,
)

if TYPE_CHECKING:
    from collections.abc import Container, Generator

    from yieldstar_sim.core.authoring import ContinueAsNewStep, StepRunner, WaitForEventStep
    from yieldstar_sim.core.model import ExecutionRecord, Lease, StepRecord


class Ended(Exception):
    """The code ended the run with an outcome of its own (``step.continue_as_new``)."""

    def __init__(self, outcome: WorkflowRunOutcome) -> None:
        super().__init__(outcome.status)
        self.outcome = outcome


def wait_for_event(
    request: WaitForEventStep, recorded: StepRecord | None, lease: Lease
) -> Generator[Command, Any, ReceivedEvent | None]:
    """The commands of ``step.wait_for_event``: the event, or ``None`` past the timeout."""
    key = request.key
    until: float | None = None
    if recorded is not None:
        value = recorded.value
        if not isinstance(value, dict):
            raise TypeError(f"a step record holds {value!r}, not an object")
        if recorded.status == "completed":
            return ReceivedEvent.from_value(value)
        if value.get("name") != request.name:
            raise Throw(
                NondeterminismError(
                    lease.execution_id, recorded.position, key, key,
                    detail=f"the record waits for event {value.get('name')!r}, the code for "
                    f"{request.name!r}",
                )
            )  # fmt: skip
        deadline = value.get("until")
        until = None if deadline is None else float(deadline)  # type: ignore[arg-type]
    else:
        _check(request)
    event: ReceivedEvent | None = yield ConsumeEvent(lease, key, request.name)
    if event is not None:
        return event
    now: float = yield ReadClock()
    if recorded is None and request.timeout is not None:
        until = now + request.timeout
    if until is not None and now >= until:
        yield PutStep(lease, key, "completed", {"timedOut": True, "until": until})
        return None
    if recorded is None:
        yield PutStep(lease, key, "pending", {"name": request.name, "until": until}, 1, until)
    elif until is not None:
        yield RecordWake(lease, until)  # the claim that woke us consumed the wake
    raise Suspend


def _check(request: WaitForEventStep) -> None:
    try:
        check_name(request.name, f"step.wait_for_event({request.key!r}): the event name")
    except ValueError as error:
        raise Throw(error) from None
    timeout = request.timeout
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise Throw(
            TypeError(f"step.wait_for_event({request.key!r}): timeout must be a number of "
                      f"seconds or None, not {timeout!r}")
        )  # fmt: skip
    if not math.isfinite(timeout) or timeout < 0:
        raise Throw(
            ValueError(f"step.wait_for_event({request.key!r}): {timeout!r} is not a timeout")
        )


def continue_as_new(
    request: ContinueAsNewStep,
    record: ExecutionRecord,
    runner: StepRunner,
    performed: Container[int],
    *,
    cancelled: str | None,
) -> NoReturn:
    """End the delivery ``ContinuedAsNew`` (or throw why it cannot into the code)."""
    if cancelled is not None:
        raise Throw(WorkflowCancelledError(cancelled))
    parent = record.parent
    if parent is not None and not parent.detached:
        raise Throw(
            WorkflowDefinitionError(
                f"step.continue_as_new: {record.execution_id} is owned by "
                f"{parent.execution_id} (its step {parent.step_key!r} waits for this run's "
                "outcome); only a run nobody waits for can continue as new here: return a "
                "result instead, or start the work detached"
            )
        )
    encoding = durable_value_codec.round_trip(request.params, path="params")
    if isinstance(encoding, InvalidValue):
        raise Throw(
            WorkflowDefinitionError(
                f"step.continue_as_new: {encoding.message}; the new run's params must be plain "
                "data (None, bool, number, str, list, dict with str keys)"
            )
        )
    params = encoding[1]
    if params is not None and not isinstance(params, dict):
        raise Throw(
            WorkflowDefinitionError(
                f"step.continue_as_new: the new run's params must be an object or None, not "
                f"{type(params).__name__}"
            )
        )
    if runner.iterated_by_code(performed) is not None or runner.never_run():
        # The mistakes a returning run is failed for (a verb called but never run) fail it
        # here too: ``completed`` names the verb.
        raise Ended(completed(record.execution_id, None, runner, performed))
    raise Ended(ContinuedAsNew(params))
