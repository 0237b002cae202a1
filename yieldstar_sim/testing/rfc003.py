"""RFC 003's runtime-adapter table, row by row: one case per row, named as the row is."""

from __future__ import annotations

import functools

from yieldstar_sim.core.codec import durable_value_codec
from yieldstar_sim.core.model import (
    Completed,
    ExecutionStatus,
    ParentLink,
    RequestId,
    StartRejected,
    StartRequest,
    WorkflowStartErrorCode,
)
from yieldstar_sim.testing._support import (
    LEASE,
    RuntimeFactory,
    _accepted,
    _caller,
    _expect,
    _fresh,
    _one_target,
    _race,
    _raises_injected,
    _ship,
    _targets,
)


def failure_before_a_new_start_commits(make: RuntimeFactory) -> None:
    """No target is admitted; a repeated call succeeds as a first call."""
    runtime, _ = _fresh(make)
    caller = _caller(runtime)
    before = runtime.executions()
    runtime.failpoints.arm("start.before_commit")
    _raises_injected(
        lambda: runtime.start(_ship()),
        "the armed failure point start.before_commit did not fail the start",
    )
    _expect(
        runtime.executions() == before, "a start that failed before its commit admitted something"
    )
    _expect(runtime.start_requests() == [], "a start that failed before its commit left a request")
    _expect(runtime.due() == [caller], "a start that failed before its commit left a wake")
    target = _accepted(runtime.start(_ship()), "the repeated call")
    _one_target(runtime, caller, "ship", target)
    _expect(target in runtime.due(), "the repeated call's target is not due")


def start_commit_followed_by_a_lost_response(make: RuntimeFactory) -> None:
    """A repeated call returns the committed execution ID; exactly one target is admitted."""
    runtime, _ = _fresh(make)
    caller = _caller(runtime)
    runtime.failpoints.arm("start.after_commit")
    _raises_injected(
        lambda: runtime.start(_ship()),
        "the armed failure point start.after_commit did not lose the response",
    )
    committed = _targets(runtime, caller, "ship")
    _expect(len(committed) == 1, f"the committed start should have one target, found {committed}")
    target = _accepted(runtime.start(_ship()), "the repeated call")
    _expect(
        target == committed[0], f"the repeat returned {target}, not the committed {committed[0]}"
    )
    _one_target(runtime, caller, "ship", target)


def two_concurrent_calls_with_one_start_request_id(make: RuntimeFactory) -> None:
    """Both return the same execution ID; exactly one target is admitted."""
    for round_ in range(10):
        runtime, _ = _fresh(make)
        caller = _caller(runtime, f"order-{round_}")
        request = _ship(caller)
        results = _race([functools.partial(runtime.start, request)] * 2)
        ids = {_accepted(result, "a concurrent call") for result in results}
        _expect(len(ids) == 1, f"two concurrent calls with one request ID got {sorted(ids)}")
        _one_target(runtime, caller, "ship", ids.pop())
        runtime.close()


def two_different_start_request_ids(make: RuntimeFactory) -> None:
    """Each receives a different execution ID. A request is bound to its caller's
    incarnation: one from a caller pruned and admitted again under its ID is another request
    (``target_ids.a_reused_callers_requests_get_new_targets``)."""
    runtime, _ = _fresh(make)
    _caller(runtime, "order-42")
    _caller(runtime, "order-43")
    ids = [
        _accepted(runtime.start(_ship("order-42", "ship")), "order-42/ship"),
        _accepted(runtime.start(_ship("order-42", "ship-2")), "order-42/ship-2"),
        _accepted(runtime.start(_ship("order-43", "ship")), "order-43/ship"),
    ]
    _expect(len(set(ids)) == 3, f"three different request IDs got the IDs {ids}")


def a_new_start_commits(make: RuntimeFactory) -> None:
    """The target is admitted, due, and has the caller as its parent."""
    runtime, clock = _fresh(make)
    clock.set(5.0)
    caller = _caller(runtime)
    target = _accepted(runtime.start(_ship()), "the start")
    record = runtime.execution(target)
    _expect(record is not None, f"the target {target} is not admitted")
    assert record is not None
    _expect(record.workflow_id == "ship-order", f"the target runs {record.workflow_id}")
    _expect(record.params == {"order": 42}, f"the target's params are {record.params}")
    _expect(record.origin == "start", f"the target's origin is {record.origin}")
    _expect(record.status == ExecutionStatus.PENDING, f"the target is {record.status}")
    _expect(
        record.parent == ParentLink(caller, "ship", detached=False),
        f"the target's parent link is {record.parent}",
    )
    _expect(record.due_at == 5.0, f"the target's first wake is at {record.due_at}, not now (5)")
    _expect(target in runtime.due(), "the target is not due")
    requests = runtime.start_requests()
    _expect(
        [(r.request_id, r.target_execution_id) for r in requests]
        == [(RequestId(caller, "ship"), target)],
        f"the start-request records are {requests}",
    )
    delivery = runtime.claim("w1", lease_seconds=LEASE, execution_id=target)
    _expect(delivery is not None, "the due target could not be claimed")


def a_start_with_detached_true(make: RuntimeFactory) -> None:
    """The target's parent link is marked detached."""
    runtime, _ = _fresh(make)
    caller = _caller(runtime)
    target = _accepted(runtime.start(_ship(detached=True)), "the detached start")
    record = runtime.execution(target)
    assert record is not None
    _expect(
        record.parent == ParentLink(caller, "ship", detached=True),
        f"the detached target's parent link is {record.parent}",
    )
    _expect(
        [r.detached for r in runtime.start_requests()] == [True],
        "the start-request record does not say detached",
    )


class _NotPlain:
    pass


def _cycle() -> dict[str, object]:
    value: dict[str, object] = {}
    value["self"] = value
    return value


INVALID_PARAMETERS: tuple[object, ...] = (
    {"amount": float("nan")},
    {"amount": float("inf")},
    {"items": (1, 2)},
    {"tags": {"a", "b"}},
    {"blob": b"bytes"},
    {"callback": print},
    {"object": _NotPlain()},
    {1: "non-string key"},
    {"big": 2**60},
    _cycle(),
    [1, 2, 3],
    "not an object",
)


def invalid_start_parameters(make: RuntimeFactory) -> None:
    """The client returns INVALID_START_PARAMETERS; no execution is admitted."""
    runtime, _ = _fresh(make)
    caller = _caller(runtime)
    before = runtime.executions()
    for params in INVALID_PARAMETERS:
        result = runtime.start(_ship(params=params))
        _expect(
            isinstance(result, StartRejected)
            and result.code == WorkflowStartErrorCode.INVALID_START_PARAMETERS
            and bool(result.message),
            f"params {params!r} gave {result!r}, not INVALID_START_PARAMETERS",
        )
    _expect(runtime.executions() == before, "an invalid start admitted an execution")
    _expect(runtime.start_requests() == [], "an invalid start left a start-request record")
    target = _accepted(runtime.start(_ship()), "a valid start after the invalid ones")
    _one_target(runtime, caller, "ship", target)


def parameter_objects_have_different_key_order(make: RuntimeFactory) -> None:
    """durableValueCodec returns the same canonical string and the requests match."""
    runtime, _ = _fresh(make)
    caller = _caller(runtime)
    first: dict[str, object] = {"order": 42, "address": {"city": "Lyon", "zip": "69001"}}
    second: dict[str, object] = {"address": {"zip": "69001", "city": "Lyon"}, "order": 42}
    a, b = durable_value_codec.encode(first), durable_value_codec.encode(second)
    _expect(
        a.status == b.status == "encoded" and a == b,
        f"the codec encoded one value two ways: {a!r} and {b!r}",
    )
    target = _accepted(runtime.start(_ship(params=first)), "the first start")
    again = _accepted(runtime.start(_ship(params=second)), "the reordered repeat")
    _expect(again == target, f"the reordered repeat got {again}, not {target}")
    _one_target(runtime, caller, "ship", target)


def a_repeated_request_changes_the_workflow_id_or_parameters(make: RuntimeFactory) -> None:
    """The client returns START_REQUEST_MISMATCH; the original start is unchanged."""
    runtime, _ = _fresh(make)
    caller = _caller(runtime)
    target = _accepted(runtime.start(_ship()), "the original start")
    original = (runtime.executions(), runtime.start_requests())
    changes: dict[str, StartRequest] = {
        "workflow ship-express": _ship(workflow_id="ship-express"),
        "params {order: 43}": _ship(params={"order": 43}),
        "an extra parameter": _ship(params={"order": 42, "express": True}),
        "no params": _ship(params=None),
        "empty params": _ship(params={}),
    }
    for change, request in changes.items():
        result = runtime.start(request)
        _expect(
            isinstance(result, StartRejected)
            and result.code == WorkflowStartErrorCode.START_REQUEST_MISMATCH,
            f"a repeat with {change} gave {result!r}, not START_REQUEST_MISMATCH",
        )
    _expect(
        (runtime.executions(), runtime.start_requests()) == original,
        "a mismatched repeat changed the original start",
    )
    _one_target(runtime, caller, "ship", target)
    # Missing parameters and an empty object do not match, in either order.
    runtime.start(_ship(step_key="none", params=None))
    empty = runtime.start(_ship(step_key="none", params={}))
    _expect(
        isinstance(empty, StartRejected)
        and empty.code == WorkflowStartErrorCode.START_REQUEST_MISMATCH,
        f"an empty object matched missing parameters: {empty!r}",
    )


def a_matching_request_repeats_after_the_target_is_terminal(make: RuntimeFactory) -> None:
    """It returns the original execution ID without admitting another target."""
    runtime, clock = _fresh(make)
    caller = _caller(runtime)
    target = _accepted(runtime.start(_ship()), "the original start")
    delivery = runtime.claim("w1", lease_seconds=LEASE, execution_id=target)
    assert delivery is not None
    runtime.acknowledge(delivery.lease, Completed({"courier": "booked"}))
    clock.advance(100)
    again = _accepted(runtime.start(_ship()), "the repeat after the target finished")
    _expect(again == target, f"the repeat after the target finished got {again}, not {target}")
    _one_target(runtime, caller, "ship", target)
    mismatch = runtime.start(_ship(workflow_id="ship-express"))
    _expect(
        isinstance(mismatch, StartRejected)
        and mismatch.code == WorkflowStartErrorCode.START_REQUEST_MISMATCH,
        f"a changed repeat after the target finished gave {mismatch!r}",
    )
