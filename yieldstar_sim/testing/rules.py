"""The admission, lease, retention, ownership and failure-point rules of
docs/decisions.md, as runtime-adapter cases."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from yieldstar_sim.core.model import (
    AdmissionErrorCode,
    Cancelled,
    ChildAccepted,
    ChildRequest,
    Completed,
    ErrorInfo,
    ExecutionAdmissionError,
    ExecutionNotFoundError,
    ExecutionStateError,
    ExecutionStatus,
    Failed,
    InvalidIDError,
    LeaseLostError,
    ParentLink,
    RequestId,
    StartRejected,
    Suspended,
    WorkflowStartErrorCode,
)
from yieldstar_sim.testing._support import (
    LEASE,
    RuntimeFactory,
    _accepted,
    _caller,
    _claimed,
    _expect,
    _finish,
    _fresh,
    _one_target,
    _raised,
    _raises_injected,
    _refused_as_terminal,
    _ship,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.core.model import Delivery


def caller_chosen_id_collision_is_refused(make: RuntimeFactory) -> None:
    """A caller-chosen ID that exists is refused with ExecutionAdmissionError."""
    runtime, _ = _fresh(make)
    _caller(runtime)
    before = runtime.executions()
    error = _raised(
        ExecutionAdmissionError,
        lambda: runtime.trigger("other-workflow", {"x": 1}, execution_id="order-42"),
        "a trigger with an existing execution ID was admitted",
    )
    _expect(error.code == AdmissionErrorCode.EXECUTION_EXISTS, f"wrong code {error.code}")
    _expect(runtime.executions() == before, "the refused trigger changed the records")


def generated_ids_never_collide_with_caller_chosen_ones(make: RuntimeFactory) -> None:
    """Generated IDs live in a namespace that caller-chosen IDs cannot use."""
    runtime, _ = _fresh(make)
    caller = _caller(runtime)
    generated = [runtime.trigger("ship-order") for _ in range(3)]
    generated += [_accepted(runtime.start(_ship(caller, f"ship-{i}")), "a start") for i in range(3)]
    _expect(len(set(generated)) == 6, f"generated IDs repeat: {generated}")
    for execution_id in generated:
        _raised(
            InvalidIDError,
            functools.partial(runtime.trigger, "ship-order", execution_id=execution_id),
            f"a caller could choose the generated ID {execution_id}",
        )
    _expect(len(runtime.executions()) == 7, "a refused trigger admitted an execution")


def invalid_execution_ids_are_refused(make: RuntimeFactory) -> None:
    """Empty IDs and IDs with ASCII control characters are refused before admission."""
    runtime, _ = _fresh(make)
    for bad in ("", "order\n42", "tab\there", "nul\x00", "del\x7f"):
        _raised(
            InvalidIDError,
            functools.partial(runtime.trigger, "charge-order", execution_id=bad),
            f"the execution ID {bad!r} was admitted",
        )
    _expect(runtime.executions() == [], "an invalid ID admitted an execution")


def a_direct_trigger_admits_a_due_execution_without_running_it(make: RuntimeFactory) -> None:
    """A trigger returns once admission commits; the execution is due, with no lease or steps."""
    runtime, clock = _fresh(make)
    clock.set(3.0)
    execution_id = runtime.trigger("charge-order", {"order": 42})
    record = runtime.execution(execution_id)
    assert record is not None
    _expect(record.status == ExecutionStatus.PENDING and record.lease is None, f"{record}")
    _expect(record.due_at == 3.0 and runtime.due() == [execution_id], "the trigger is not due now")
    _expect(record.origin == "trigger" and record.parent is None, f"{record}")
    _expect(runtime.steps(execution_id) == [], "a trigger recorded steps")
    error = _raised(
        ExecutionAdmissionError,
        lambda: runtime.trigger("charge-order", {"when": float("nan")}),
        "a trigger with invalid parameters was admitted",
    )
    _expect(error.code == AdmissionErrorCode.INVALID_PARAMETERS, f"wrong code {error.code}")
    _expect(len(runtime.executions()) == 1, "an invalid trigger admitted an execution")


def a_start_from_an_unknown_caller_is_refused(make: RuntimeFactory) -> None:
    """A start whose caller does not exist admits nothing."""
    runtime, _ = _fresh(make)
    error = _raised(
        ExecutionAdmissionError,
        lambda: runtime.start(_ship("nobody")),
        "a start from an unknown caller was accepted",
    )
    _expect(error.code == AdmissionErrorCode.CALLER_NOT_FOUND, f"wrong code {error.code}")
    _expect(runtime.executions() == [], "a start from an unknown caller admitted something")


def a_claim_leases_one_execution_with_a_growing_fencing_token(make: RuntimeFactory) -> None:
    """Only one holder at a time; an expired lease passes to the next claim with token + 1."""
    runtime, clock = _fresh(make)
    caller = _caller(runtime)
    first = runtime.claim("w1", lease_seconds=LEASE)
    _expect(first is not None and first.lease.token == 1, f"first claim: {first}")
    assert first is not None
    _expect(first.execution.execution_id == caller, "the claim took the wrong execution")
    _expect(runtime.claim("w2", lease_seconds=LEASE) is None, "a held lease was claimed again")
    _expect(runtime.due() == [], "a leased execution is listed as due")
    _expect(runtime.next_wake_at() == LEASE, f"next wake is {runtime.next_wake_at()}")
    clock.advance(LEASE)
    second = runtime.claim("w2", lease_seconds=LEASE)
    _expect(second is not None and second.lease.token == 2, f"claim after expiry: {second}")


def a_stale_lease_holder_is_fenced(make: RuntimeFactory) -> None:
    """Every fenced write of a stale holder is refused; its start is answered, not fenced."""
    runtime, clock, caller, stale = _claimed(make)
    target = _accepted(runtime.start(_ship()), "the first holder's start")
    runtime.put_step(stale.lease, "ship", status="completed", value={"executionId": target})
    clock.advance(LEASE + 1)
    fresh = runtime.claim("w2", lease_seconds=LEASE, execution_id=caller)
    assert fresh is not None
    _expect([s.step_key for s in fresh.steps] == ["ship"], "the new holder lost a recorded step")
    writes: dict[str, Callable[[], object]] = {
        "put_step": lambda: runtime.put_step(stale.lease, "late", status="completed"),
        "record_wake": lambda: runtime.record_wake(stale.lease, 99.0),
        "renew": lambda: runtime.renew(stale.lease, lease_seconds=LEASE),
        "release": lambda: runtime.release(stale.lease, delay=1.0),
        "acknowledge": lambda: runtime.acknowledge(stale.lease, Completed("stale")),
    }
    for name, write in writes.items():
        try:
            write()
        except LeaseLostError as error:
            _expect(
                "w1" in str(error) and "w2" in str(error),
                f"the refusal of {name} does not say who holds the lease now: {error}",
            )
        else:
            raise AssertionError(f"the stale holder's {name} was not refused")
    again = _accepted(runtime.start(_ship()), "the stale holder's start")
    _expect(again == target, "the stale holder's start admitted a new target")
    _one_target(runtime, caller, "ship", target)
    record = runtime.acknowledge(fresh.lease, Completed({"shipment": target}))
    _expect(record.status == ExecutionStatus.COMPLETED, "the current holder could not acknowledge")
    _expect([s.step_key for s in runtime.steps(caller)] == ["ship"], "a refused write landed")


def an_expired_lease_fences_its_holder_even_unclaimed(make: RuntimeFactory) -> None:
    """A lease past its expiry fences writes even before anyone else claims."""
    runtime, clock, _, delivery = _claimed(make)
    clock.advance(LEASE)
    error = _raised(
        LeaseLostError,
        lambda: runtime.put_step(delivery.lease, "late", status="completed"),
        "a write under an expired lease was accepted",
    )
    _expect("expired" in str(error), f"the refusal does not say the lease expired: {error}")


def a_renewed_lease_lasts_longer(make: RuntimeFactory) -> None:
    """Renewing moves the expiry to lease_seconds from now."""
    runtime, clock, _, delivery = _claimed(make)
    clock.advance(20)
    renewed = runtime.renew(delivery.lease, lease_seconds=LEASE)
    _expect(renewed.expires_at == 50.0 and renewed.token == 1, f"renewed lease: {renewed}")
    clock.advance(20)
    runtime.put_step(renewed, "charge", status="completed", value=1)
    _expect(runtime.claim("w2", lease_seconds=LEASE) is None, "a renewed lease was claimed")


def a_released_lease_is_redelivered_after_the_delay(make: RuntimeFactory) -> None:
    """Release re-arms the wake at now + delay; until then nobody can claim."""
    runtime, clock, caller, delivery = _claimed(make)
    clock.advance(2)
    runtime.release(delivery.lease, delay=5)
    record = runtime.execution(caller)
    assert record is not None
    _expect(record.lease is None and record.due_at == 7.0, f"released record: {record}")
    _expect(runtime.claim("w2", lease_seconds=LEASE) is None, "claimed before the delay")
    _expect(runtime.next_wake_at() == 7.0, f"next wake {runtime.next_wake_at()}")
    clock.set(7)
    again = runtime.claim("w2", lease_seconds=LEASE)
    _expect(again is not None and again.lease.token == 2, f"claim after the delay: {again}")


def a_claim_finds_work_exactly_when_the_next_wake_is_due(make: RuntimeFactory) -> None:
    """A claim leases an execution exactly when ``next_wake_at()`` is at most now: an idle
    simulated worker claims only then (docs/decisions.md, "Idle workers block")."""
    runtime, clock = _fresh(make)

    def claim(owner: str, what: str) -> Delivery | None:
        wake = runtime.next_wake_at()
        due = wake is not None and wake <= clock.now()
        got = runtime.claim(owner, lease_seconds=LEASE)
        _expect(
            (got is not None) == due,
            f"{what}: next_wake_at() is {wake} at t={clock.now():g}, and a claim found "
            f"{'nothing' if got is None else got.execution.execution_id}",
        )
        return got

    claim("w1", "an empty runtime")
    caller = _caller(runtime)
    first = claim("w1", "a due trigger")
    assert first is not None
    claim("w2", "an execution leased")
    clock.advance(2)
    runtime.release(first.lease, delay=5)
    claim("w2", "an execution released for 5s")
    clock.set(7)
    second = claim("w2", "a release's delay over")
    assert second is not None
    runtime.put_step(second.lease, "wait", status="pending", value={"until": 20}, wake_at=20)
    runtime.acknowledge(second.lease, Suspended())
    claim("w1", "an execution suspended until t=20")
    clock.set(20)
    third = claim("w1", "a wake due")
    assert third is not None
    clock.advance(LEASE - 1)
    claim("w2", "a lease about to run out")
    clock.advance(1)
    fourth = claim("w2", "a lease run out")
    assert fourth is not None
    runtime.acknowledge(fourth.lease, Completed({"done": True}))
    claim("w1", f"{caller} completed")


def steps_and_wakes_are_recorded_under_the_lease(make: RuntimeFactory) -> None:
    """Steps keep their first position when rewritten; a suspended outcome keeps its wake."""
    runtime, clock, caller, delivery = _claimed(make)
    runtime.put_step(delivery.lease, "charge", status="completed", value={"ok": True})
    runtime.put_step(delivery.lease, "wait", status="pending", value={"until": 60}, wake_at=60)
    runtime.put_step(delivery.lease, "charge", status="failed", value={"n": 1.5}, attempt=2)
    steps = runtime.steps(caller)
    _expect(
        [(s.step_key, s.position, s.status, s.value, s.attempt) for s in steps]
        == [("charge", 0, "failed", {"n": 1.5}, 2), ("wait", 1, "pending", {"until": 60}, 1)],
        f"recorded steps: {steps}",
    )
    record = runtime.acknowledge(delivery.lease, Suspended())
    _expect(record.status == ExecutionStatus.SUSPENDED and record.due_at == 60.0, f"{record}")
    _expect(runtime.due() == [] and runtime.next_wake_at() == 60.0, "the wake is not at t=60")
    clock.set(60)
    again = runtime.claim("w2", lease_seconds=LEASE)
    _expect(again is not None and len(again.steps) == 2, f"redelivery at the wake: {again}")
    assert again is not None
    runtime.record_wake(again.lease, 90)
    runtime.record_wake(again.lease, 80)
    record = runtime.acknowledge(again.lease, Suspended())
    _expect(record.due_at == 80.0, f"the earliest wake should win: {record}")


def _change(value: object, key: str) -> None:
    """Append to the list under ``key`` of a value a reader got, as workflow code might."""
    assert isinstance(value, dict)
    items = value[key]
    assert isinstance(items, list)
    items.append("changed")


def a_value_read_is_a_copy(make: RuntimeFactory) -> None:
    """Changing a value a reader got (a step's, a delivery's, a record's parameters or result)
    changes nothing stored: workflow code that appends to a list a step returned must find
    the step as it was recorded when it replays."""
    runtime, _ = _fresh(make)
    caller = runtime.trigger("charge-order", {"items": ["a"]})
    delivery = runtime.claim("w1", lease_seconds=LEASE)
    assert delivery is not None
    runtime.put_step(delivery.lease, "load", status="completed", value={"items": ["a"]})
    _change(runtime.steps(caller)[0].value, "items")
    record = runtime.execution(caller)
    assert record is not None
    _change(record.params, "items")
    runtime.release(delivery.lease, delay=0)
    again = runtime.claim("w2", lease_seconds=LEASE, execution_id=caller)
    assert again is not None
    _expect(
        [step.value for step in again.steps] == [{"items": ["a"]}],
        f"a step value a reader changed came back changed: {again.steps}",
    )
    _change(again.steps[0].value, "items")
    _change(again.execution.params, "items")
    runtime.acknowledge(again.lease, Completed({"courier": ["c-1"]}))
    done = runtime.execution(caller)
    assert done is not None
    _change(done.result, "courier")
    stored = runtime.execution(caller)
    assert stored is not None
    _expect(
        (stored.params, stored.result, [s.value for s in runtime.steps(caller)])
        == ({"items": ["a"]}, {"courier": ["c-1"]}, [{"items": ["a"]}]),
        f"values readers changed came back changed: {stored}, {runtime.steps(caller)}",
    )


def a_terminal_outcome_is_stored(make: RuntimeFactory) -> None:
    """Completed and failed outcomes keep their result or error; terminal clears the wake."""
    runtime, clock = _fresh(make)
    ok = _caller(runtime, "ok")
    bad = _caller(runtime, "bad")
    clock.set(4)
    first = runtime.claim("w1", lease_seconds=LEASE, execution_id=ok)
    second = runtime.claim("w1", lease_seconds=LEASE, execution_id=bad)
    assert first is not None
    assert second is not None
    done = runtime.acknowledge(first.lease, Completed({"courier": ["c-1", 2.5, None]}))
    _expect(done.result == {"courier": ["c-1", 2.5, None]} and done.finished_at == 4.0, f"{done}")
    error = ErrorInfo("ValueError", "card declined")
    failed = runtime.acknowledge(second.lease, Failed(error))
    _expect(failed.status == ExecutionStatus.FAILED and failed.error == error, f"{failed}")
    _expect(runtime.due() == [] and runtime.next_wake_at() is None, "a terminal execution is due")
    _expect(runtime.execution(ok) == done, "the stored record differs from the acknowledged one")


def pruning_removes_a_callers_start_requests(make: RuntimeFactory) -> None:
    """Pruning a terminal caller removes its steps and start requests; targets keep their link."""
    runtime, _, caller, delivery = _claimed(make)
    target = _accepted(runtime.start(_ship()), "the start")
    runtime.put_step(delivery.lease, "ship", status="completed", value={"executionId": target})
    _raised(ExecutionStateError, lambda: runtime.prune(caller), "a live execution was pruned")
    runtime.acknowledge(delivery.lease, Completed(None))
    runtime.prune(caller)
    _expect(runtime.execution(caller) is None, "the pruned caller's record remains")
    _expect(runtime.steps(caller) == [], "the pruned caller's steps remain")
    _expect(runtime.start_requests() == [], "the pruned caller's start requests remain")
    record = runtime.execution(target)
    _expect(
        record is not None and record.parent == ParentLink(caller, "ship"),
        f"the target lost its parent link: {record}",
    )
    _raised(
        ExecutionNotFoundError,
        lambda: runtime.prune(caller),
        "pruning a missing execution did not say so",
    )
    # The caller is terminal and gone: its start requests no longer protect anything.
    error = _raised(
        ExecutionAdmissionError,
        lambda: runtime.start(_ship()),
        "a start from a pruned caller was accepted",
    )
    _expect(error.code == AdmissionErrorCode.CALLER_NOT_FOUND, f"wrong code {error.code}")
    _caller(runtime)  # the ID is free again: a new execution, with no requests yet
    new_target = _accepted(runtime.start(_ship()), "the new caller's start")
    _expect(new_target != target, "a new caller with a pruned caller's ID got its old target")


def a_request_outlives_its_pruned_target(make: RuntimeFactory) -> None:
    """Requests are pruned with their caller: a repeat after the target was pruned still gets
    the original target ID (and a changed repeat still the mismatch), never a new target."""
    runtime, _ = _fresh(make)
    caller = _caller(runtime)
    target = _accepted(runtime.start(_ship()), "the start")
    delivery = runtime.claim("w1", lease_seconds=LEASE, execution_id=target)
    assert delivery is not None
    runtime.acknowledge(delivery.lease, Completed(None))
    runtime.prune(target)
    _expect(runtime.execution(target) is None, "the pruned target's record remains")
    again = _accepted(runtime.start(_ship()), "the repeat after the target was pruned")
    _expect(again == target, f"the repeat got {again}, not the pruned target {target}")
    mismatch = runtime.start(_ship(workflow_id="ship-express"))
    _expect(
        isinstance(mismatch, StartRejected)
        and mismatch.code == WorkflowStartErrorCode.START_REQUEST_MISMATCH,
        f"a changed repeat after the target was pruned gave {mismatch!r}",
    )
    _expect(
        [(r.request_id, r.target_execution_id) for r in runtime.start_requests()]
        == [(RequestId(caller, "ship"), target)],
        "the caller's request record did not survive its target's pruning",
    )
    _expect([r.execution_id for r in runtime.executions()] == [caller], "a target was admitted")


def a_lease_of_a_pruned_incarnation_fences_nothing(make: RuntimeFactory) -> None:
    """An ID pruned and admitted again starts its tokens anew; the old incarnation's lease,
    with the same owner and token, is still refused."""
    runtime, _, _, old = _claimed(make)
    runtime.acknowledge(old.lease, Completed(None))
    runtime.prune("order-42")
    _caller(runtime)
    new = runtime.claim("w1", lease_seconds=LEASE)
    assert new is not None
    _expect(new.lease.token == old.lease.token, "the new incarnation's token should restart")
    error = _raised(
        LeaseLostError,
        lambda: runtime.put_step(old.lease, "late", status="completed"),
        "the old incarnation's lease wrote into the new one",
    )
    _expect("pruned and admitted again" in str(error), f"unclear refusal: {error}")
    runtime.put_step(new.lease, "fresh", status="completed")


def a_child_is_created_once_and_joined_after(make: RuntimeFactory) -> None:
    """A child request creates the run (owned) or, when its ID exists, joins it without
    taking ownership; a repeat of the creating request says 'created' again."""
    runtime, _ = _fresh(make)
    _caller(runtime, "first")
    _caller(runtime, "second")
    create = ChildRequest(RequestId("first", "fulfil"), "fulfil", "fulfil-42", {"by": "first"})
    created = runtime.start_child(create)
    _expect(created == ChildAccepted("fulfil-42", created=True), f"create gave {created!r}")
    _expect(runtime.start_child(create) == created, "a repeat of the creation did not match")
    join = ChildRequest(RequestId("second", "fulfil"), "fulfil", "fulfil-42", {"by": "second"})
    joined = runtime.start_child(join)
    _expect(joined == ChildAccepted("fulfil-42", created=False), f"join gave {joined!r}")
    record = runtime.execution("fulfil-42")
    assert record is not None
    _expect(
        record.parent == ParentLink("first", "fulfil") and record.params == {"by": "first"},
        f"the join changed the child: {record}",
    )
    other = runtime.start_child(ChildRequest(RequestId("second", "x"), "ship", "fulfil-42"))
    _expect(
        isinstance(other, StartRejected)
        and other.code == WorkflowStartErrorCode.START_REQUEST_MISMATCH,
        f"joining a run of another workflow gave {other!r}",
    )
    _expect(runtime.cancel("second") == ["second"], "a joiner must own nothing")
    _expect(runtime.cancel("first") == ["first", "fulfil-42"], "the creator owns its child")


def a_terminal_outcome_wakes_its_waiters(make: RuntimeFactory) -> None:
    """An execution that waits for another is woken by that one's terminal outcome."""
    runtime, clock = _fresh(make)
    _caller(runtime)
    target = _accepted(runtime.start(_ship()), "the start")
    waiter = runtime.claim("w1", lease_seconds=LEASE, execution_id="order-42")
    assert waiter is not None
    seen = runtime.wait_for(waiter.lease, target)
    _expect(seen is not None and not seen.terminal, f"wait_for read {seen!r}")
    runtime.acknowledge(waiter.lease, Suspended())
    _expect(runtime.execution("order-42").due_at is None, "a waiter must not be due yet")  # type: ignore[union-attr]
    clock.advance(7)
    delivery = runtime.claim("w2", lease_seconds=LEASE, execution_id=target)
    assert delivery is not None
    runtime.acknowledge(delivery.lease, Completed({"courier": 1}))
    woken = runtime.execution("order-42")
    _expect(woken is not None and woken.due_at == 7.0, f"the waiter was not woken: {woken}")


def a_terminal_caller_admits_no_new_target(make: RuntimeFactory) -> None:
    """A delivery of a terminal execution is stale: its new start, child or spawn (owned or
    detached) is refused with TerminalCallerError and admits nothing."""
    runtime, _ = _fresh(make)
    caller = _caller(runtime)
    _caller(runtime, "shopper")
    _finish(runtime, caller, Cancelled())
    before = (runtime.executions(), runtime.start_requests())
    calls: dict[str, Callable[[], object]] = {
        "an owned start": lambda: runtime.start(_ship()),
        "a detached start": lambda: runtime.start(_ship(step_key="ship-later", detached=True)),
        "a child": lambda: runtime.start_child(
            ChildRequest(RequestId(caller, "pack"), "pack", "pack-42")
        ),
        "a spawn": lambda: runtime.start_child(
            ChildRequest(RequestId(caller, "survey"), "survey", "survey-42", detached=True)
        ),
    }
    for what, call in calls.items():
        _refused_as_terminal(call, what, caller, "cancelled")
    _expect(
        (runtime.executions(), runtime.start_requests()) == before,
        "a refused start of a terminal caller admitted something",
    )
    # The refusal is about the caller, not the request: a live caller still starts these.
    _accepted(runtime.start(_ship("shopper")), "a live caller's start")
    created = runtime.start_child(ChildRequest(RequestId("shopper", "pack"), "pack", "pack-42"))
    _expect(created == ChildAccepted("pack-42", created=True), f"a live caller's child: {created}")


def a_terminal_callers_repeated_request_gets_its_target(make: RuntimeFactory) -> None:
    """A terminal caller's repeat of a request it made is answered as before (RFC 003: a stale
    lease holder receives the same target); a join admits nothing and is answered too."""
    runtime, _ = _fresh(make)
    caller = _caller(runtime)
    _caller(runtime, "shopper")
    target = _accepted(runtime.start(_ship()), "the start")
    child = ChildRequest(RequestId(caller, "pack"), "pack", "pack-42")
    _expect(runtime.start_child(child) == ChildAccepted("pack-42", created=True), "the child")
    elsewhere = ChildRequest(RequestId("shopper", "fulfil"), "fulfil", "fulfil-42")
    _expect(runtime.start_child(elsewhere).status == "accepted", "the shopper's child")
    _finish(runtime, caller, Completed(None))
    before = (runtime.executions(), runtime.start_requests())
    again = _accepted(runtime.start(_ship()), "the terminal caller's repeat")
    _expect(again == target, f"the repeat got {again}, not {target}")
    repeat = runtime.start_child(child)
    _expect(repeat == ChildAccepted("pack-42", created=True), f"the child's repeat: {repeat!r}")
    mismatch = runtime.start(_ship(workflow_id="ship-express"))
    _expect(
        isinstance(mismatch, StartRejected)
        and mismatch.code == WorkflowStartErrorCode.START_REQUEST_MISMATCH,
        f"a terminal caller's changed repeat gave {mismatch!r}",
    )
    join = runtime.start_child(ChildRequest(RequestId(caller, "join"), "fulfil", "fulfil-42"))
    _expect(join == ChildAccepted("fulfil-42", created=False), f"a terminal caller's join: {join}")
    _expect(
        (runtime.executions(), runtime.start_requests()) == before,
        "a terminal caller's repeat or join admitted something",
    )


def an_owned_target_follows_its_owners_cancellation(make: RuntimeFactory) -> None:
    """A target admitted while its owner's cancellation is requested (the owner not terminal
    yet) starts with its own cancellation requested, due now, if it is owned; a detached start
    or a spawn does not: it outlives its parent."""
    runtime, clock = _fresh(make)
    caller = _caller(runtime)
    clock.set(3)
    _expect(runtime.cancel(caller) == [caller], "the owner's cancellation was not requested")
    clock.set(5)
    owned = _accepted(runtime.start(_ship()), "an owned start")
    detached = _accepted(runtime.start(_ship(step_key="later", detached=True)), "a detached one")
    runtime.start_child(ChildRequest(RequestId(caller, "pack"), "pack", "pack-42"))
    runtime.start_child(
        ChildRequest(RequestId(caller, "survey"), "survey", "survey-42", detached=True)
    )
    expected = {owned: True, "pack-42": True, detached: False, "survey-42": False}
    for target, follows in expected.items():
        record = runtime.execution(target)
        assert record is not None, f"{target} was not admitted"
        _expect(
            record.cancel_requested is follows and record.due_at == 5.0,
            f"{target} ({'owned' if follows else 'detached'}) was admitted with "
            f"cancel_requested={record.cancel_requested} and due_at={record.due_at}",
        )
    _expect(
        runtime.cancel(caller) == [],
        "a second cancellation of the owner reached targets that already follow it",
    )


def failure_points_before_and_after_commit(make: RuntimeFactory) -> None:
    """Before-commit failures leave nothing behind; after-commit failures keep the write."""
    runtime, _ = _fresh(make)
    runtime.failpoints.arm("trigger.before_commit")
    _raises_injected(lambda: runtime.trigger("w", execution_id="a"))
    _expect(runtime.executions() == [], "a trigger that failed before commit admitted")
    runtime.failpoints.arm("trigger.after_commit")
    _raises_injected(lambda: runtime.trigger("w", execution_id="a"))
    _expect([r.execution_id for r in runtime.executions()] == ["a"], "the trigger did not commit")
    runtime.failpoints.arm("claim.after_commit")
    _raises_injected(lambda: runtime.claim("w1", lease_seconds=LEASE))
    _expect(runtime.claim("w2", lease_seconds=LEASE) is None, "a lost claim response freed it")
    error = _raised(
        ValueError,
        lambda: runtime.failpoints.arm("no.such_point"),
        "an unknown failure point was armed",
    )
    _expect("start.before_commit" in str(error), "the error does not list the points")
