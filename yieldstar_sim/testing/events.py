"""External events and continue-as-new, as runtime-adapter cases (docs/decisions.md,
"External events and continue-as-new"): every adapter that implements
``runtime.protocol.EventClient`` passes them (``check_event_adapter``)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from yieldstar_sim.core.events import EventAccepted, EventErrorCode, EventRejected, EventRequest
from yieldstar_sim.core.ids import continued_run_id
from yieldstar_sim.core.model import Completed, ContinuedAsNew, ExecutionStatus, LeaseLostError
from yieldstar_sim.runtime.protocol import EventClient, events_of
from yieldstar_sim.testing._support import (
    LEASE,
    Case,
    RuntimeFactory,
    _caller,
    _claimed,
    _expect,
    _finish,
    _fresh,
    _raised,
)

if TYPE_CHECKING:
    from yieldstar_sim.core.model import Delivery
    from yieldstar_sim.runtime.protocol import Runtime


def _events(runtime: Runtime) -> EventClient:
    return events_of(runtime)


def _accepted(result: object, what: str) -> EventAccepted:
    _expect(isinstance(result, EventAccepted), f"{what} was not accepted: {result!r}")
    assert isinstance(result, EventAccepted)
    return result


def an_event_is_taken_once_and_recorded_as_the_step(make: RuntimeFactory) -> None:
    """A run takes the oldest pending event of a name, recorded as its step in one write; a
    second look finds none, and the event reads consumed by that run and step."""
    runtime, _, caller, delivery = _claimed(make)
    events = _events(runtime)
    _accepted(events.send_event(EventRequest("approve", {"by": "ana"}, execution_id=caller)),
              "an event to a live run")  # fmt: skip
    _accepted(events.send_event(EventRequest("approve", 2, instance_id=caller)), "a second one")
    first = events.wait_for_event(delivery.lease, "approval", "approve")
    _expect(first is not None and first.payload == {"by": "ana"}, f"took {first!r}, not the first")
    steps = {step.step_key: step for step in runtime.steps(caller)}
    _expect("approval" in steps and steps["approval"].status == "completed",
            f"the step was not recorded completed with the event: {steps}")  # fmt: skip
    second = events.wait_for_event(delivery.lease, "again", "approve")
    _expect(second is not None and second.payload == 2, f"the second look took {second!r}")
    _expect(events.wait_for_event(delivery.lease, "third", "approve") is None,
            "a third look found an event where none was left")  # fmt: skip
    _expect("third" not in {s.step_key for s in runtime.steps(caller)},
            "a look that found nothing recorded a step")  # fmt: skip
    records = events.events()
    _expect([(e.status, e.consumed_by, e.step_key) for e in records]
            == [("consumed", caller, "approval"), ("consumed", caller, "again")],
            f"the events read {records}")  # fmt: skip


def a_stale_lease_takes_no_event(make: RuntimeFactory) -> None:
    """Taking an event is fenced: a lease another claim replaced takes nothing."""
    runtime, clock, caller, delivery = _claimed(make)
    events = _events(runtime)
    events.send_event(EventRequest("approve", None, instance_id=caller))
    clock.advance(LEASE + 1)
    _expect(runtime.claim("w2", lease_seconds=LEASE) is not None, "the expired run was not claimed")
    _raised(LeaseLostError, lambda: events.wait_for_event(delivery.lease, "a", "approve"),
            "a stale lease took an event")  # fmt: skip
    _expect(events.events()[0].status == "pending", "the fenced look changed the event")


def an_event_wakes_its_run(make: RuntimeFactory) -> None:
    """An event makes the run it is for due now, even when it arrives while the run is
    leased: after that delivery suspends, the run is claimable at once."""
    runtime, clock, caller, delivery = _claimed(make)
    events = _events(runtime)
    runtime.put_step(delivery.lease, "approval", status="pending", value={"name": "approve"},
                     wake_at=500.0)  # fmt: skip
    events.send_event(EventRequest("approve", None, execution_id=caller))
    from yieldstar_sim.core.model import Suspended

    runtime.acknowledge(delivery.lease, Suspended())
    clock.advance(1)
    _expect(runtime.due() == [caller], f"the run was not due after its event: {runtime.due()}")


def a_resent_event_id_is_accepted_once(make: RuntimeFactory) -> None:
    """An event ID names one event per instance: a resend answers the first acceptance."""
    runtime, _ = _fresh(make)
    caller = _caller(runtime)
    events = _events(runtime)
    first = _accepted(
        events.send_event(EventRequest("approve", 1, instance_id=caller, event_id="e-1")), "first"
    )
    again = _accepted(
        events.send_event(EventRequest("approve", 1, instance_id=caller, event_id="e-1")), "again"
    )
    _expect(again.duplicate and again.seq == first.seq, f"the resend answered {again!r}")
    _expect(len(events.events()) == 1, "a resent event ID was kept twice")


def an_event_for_no_run_or_an_ended_one_is_refused(make: RuntimeFactory) -> None:
    """An event for a run or instance that does not exist, or has ended, is refused with its
    code, and nothing is kept."""
    runtime, _, caller, delivery = _claimed(make)
    events = _events(runtime)
    for request in (EventRequest("x", None, execution_id="nobody"),
                    EventRequest("x", None, instance_id="nobody")):  # fmt: skip
        result = events.send_event(request)
        _expect(isinstance(result, EventRejected)
                and result.code == EventErrorCode.EXECUTION_NOT_FOUND,
                f"an event for nobody answered {result!r}")  # fmt: skip
    runtime.acknowledge(delivery.lease, Completed(1))
    result = events.send_event(EventRequest("x", None, instance_id=caller))
    _expect(isinstance(result, EventRejected) and result.code == EventErrorCode.EXECUTION_ENDED,
            f"an event for an ended instance answered {result!r}")  # fmt: skip
    _expect(events.events() == [], "a refused event was kept")


def a_sender_mistake_is_refused_before_anything_is_written(make: RuntimeFactory) -> None:
    """An event with both targets, neither, a bad name or a payload that is no durable value
    raises, and nothing is kept."""
    runtime, _ = _fresh(make)
    caller = _caller(runtime)
    events = _events(runtime)
    for request in (EventRequest("x", None, execution_id=caller, instance_id=caller),
                    EventRequest("x", None), EventRequest("", None, instance_id=caller),
                    EventRequest("x", {1, 2}, instance_id=caller)):  # fmt: skip
        _raised(ValueError, functools.partial(events.send_event, request),
                f"{request!r} was accepted")  # fmt: skip
    _expect(events.events() == [], "a refused event was kept")


def continue_as_new_keeps_the_instance(make: RuntimeFactory) -> None:
    """Continue-as-new ends the run ``continued-as-new`` naming its next run, which is due
    now with the new params, its own ID and history, and the same instance; the old lease
    fences nothing after."""
    runtime, _, caller, delivery = _claimed(make)
    runtime.put_step(delivery.lease, "a", status="completed", value=1)
    ended = runtime.acknowledge(delivery.lease, ContinuedAsNew({"n": 2}))
    _expect(ended.status == ExecutionStatus.CONTINUED_AS_NEW, f"the run ended {ended.status}")
    new_id = ended.result["continuedAs"] if isinstance(ended.result, dict) else None
    new = runtime.execution(str(new_id))
    _expect(new is not None and new.execution_id != caller, f"no next run named: {ended.result}")
    assert new is not None
    _expect((new.instance, new.params, new.origin, new.workflow_id)
            == (caller, {"n": 2}, "continue", ended.workflow_id),
            f"the next run is {new}")  # fmt: skip
    _expect(runtime.steps(new.execution_id) == [], "the next run inherited steps")
    _expect(runtime.due() == [new.execution_id], f"due after it: {runtime.due()}")
    _raised(LeaseLostError, lambda: runtime.put_step(delivery.lease, "b", status="completed"),
            "the ended run's lease still wrote a step")  # fmt: skip


def an_instance_event_waits_for_the_next_run(make: RuntimeFactory) -> None:
    """An event sent to the instance and not taken when its run continues as new is taken by
    the next run; one sent to the ended run by ID reads undelivered, with the reason."""
    runtime, _, caller, delivery = _claimed(make)
    events = _events(runtime)
    events.send_event(EventRequest("tick", 1, instance_id=caller))
    events.send_event(EventRequest("tick", 2, execution_id=caller))
    ended = runtime.acknowledge(delivery.lease, ContinuedAsNew(None))
    new_id = str(ended.result["continuedAs"]) if isinstance(ended.result, dict) else ""
    next_delivery: Delivery | None = runtime.claim("w1", lease_seconds=LEASE)
    _expect(next_delivery is not None and next_delivery.execution.execution_id == new_id,
            f"the next run was not claimed: {next_delivery}")  # fmt: skip
    assert next_delivery is not None
    taken = events.wait_for_event(next_delivery.lease, "tick", "tick")
    _expect(taken is not None and taken.payload == 1, f"the next run took {taken!r}")
    _expect(events.wait_for_event(next_delivery.lease, "tick-2", "tick") is None,
            "the next run took an event sent to the run before it")  # fmt: skip
    statuses = [(e.status, e.consumed_by) for e in events.events()]
    _expect(statuses == [("consumed", new_id), ("undelivered", None)], f"events read {statuses}")
    _expect("continued as new" in events.events()[1].reason, "the undelivered one says no why")


def _continue(runtime: Runtime, execution_id: str) -> str:
    """Claim ``execution_id``, continue it as new, and return its next run's ID."""
    delivery = runtime.claim("w1", lease_seconds=LEASE, execution_id=execution_id)
    _expect(delivery is not None, f"{execution_id} could not be claimed")
    assert delivery is not None
    ended = runtime.acknowledge(delivery.lease, ContinuedAsNew(None))
    new_id = ended.result.get("continuedAs") if isinstance(ended.result, dict) else None
    _expect(isinstance(new_id, str), f"{execution_id} named no next run: {ended.result}")
    return str(new_id)


def a_continued_runs_id_is_its_instances_and_runs(make: RuntimeFactory) -> None:
    """Two instances that continue as new, in either order, give their next runs the same IDs,
    the ones ``core.ids.continued_run_id`` names from the instance and the run, and each of
    those runs continues to the instance's next."""
    found: list[dict[str, list[str]]] = []
    for instances in (("order-42", "order-43"), ("order-43", "order-42")):
        runtime, _ = _fresh(make)
        for instance in sorted(instances):
            _caller(runtime, instance)
        runs = {instance: [instance] for instance in instances}
        for _ in range(2):
            for instance in instances:
                runs[instance].append(_continue(runtime, runs[instance][-1]))
        found.append(runs)
    expected: dict[str, list[str]] = {}
    for instance in ("order-42", "order-43"):
        expected[instance] = [instance]
        for _ in range(2):
            expected[instance].append(
                continued_run_id("charge-order", instance, expected[instance][-1])
            )
    _expect(found[0] == expected, f"the runs' IDs are {found[0]}, not {expected}")
    _expect(found[1] == expected, f"continued the other way round, they are {found[1]}")


def a_reused_instances_runs_get_new_ids(make: RuntimeFactory) -> None:
    """An instance whose first run was pruned and its ID triggered again is a new instance:
    its next run does not take the ID an earlier instance's run still holds."""
    runtime, _ = _fresh(make)
    caller = _caller(runtime)
    old = _continue(runtime, caller)
    _finish(runtime, old, Completed(None))
    runtime.prune(caller)
    _caller(runtime)
    new = _continue(runtime, caller)
    _expect(new != old, f"the new instance's next run took {old}, which a run holds")
    record = runtime.execution(old)
    _expect(record is not None and record.status == ExecutionStatus.COMPLETED,
            f"the earlier instance's run {old} was not kept as it was: {record}")  # fmt: skip
    _expect(runtime.claim("w1", lease_seconds=LEASE) is not None, "the new run is not due")


EVENT_CASES: dict[str, Case] = {
    "An event is taken once and recorded as the step": (
        an_event_is_taken_once_and_recorded_as_the_step
    ),
    "A stale lease takes no event": a_stale_lease_takes_no_event,
    "An event wakes its run": an_event_wakes_its_run,
    "A resent event ID is accepted once": a_resent_event_id_is_accepted_once,
    "An event for no run or an ended one is refused": (
        an_event_for_no_run_or_an_ended_one_is_refused
    ),
    "A sender's mistake is refused before anything is written": (
        a_sender_mistake_is_refused_before_anything_is_written
    ),
    "Continue-as-new keeps the instance": continue_as_new_keeps_the_instance,
    "An instance's event waits for its next run": an_instance_event_waits_for_the_next_run,
    "A continued run's ID is its instance's and run's": (
        a_continued_runs_id_is_its_instances_and_runs
    ),
    "A reused instance's runs get new IDs": a_reused_instances_runs_get_new_ids,
}


def check_event_adapter(make: RuntimeFactory) -> None:
    """Run every event case against runtimes made by ``make`` (an ``EventClient``).

    Raises ``AssertionError`` naming the first case that fails and why.

    >>> from yieldstar_sim import MemoryRuntime
    >>> check_event_adapter(lambda clock: MemoryRuntime(clock=clock))
    """
    for name, case in EVENT_CASES.items():
        try:
            case(make)
        except AssertionError as error:
            raise AssertionError(f"{name}: {error}") from error
