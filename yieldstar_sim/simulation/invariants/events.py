"""The invariant that every accepted external event is consumed or reported.

An event the runtime accepted (a sender's ``send`` event answered ``accepted``, whether the
sender saw the answer or not) must end one of two ways: a run takes it
(``step.wait_for_event``: ``consumed``), or the runtime says it never will (``undelivered``,
with the reason: the run it was sent to ended, or every run of its instance did). Two ends
break it: the runtime no longer lists the event at all (it was lost, and nothing reported
it), or it lists it ``pending`` for a run, or an instance, that has ended, so that nothing
will ever take it and nobody is told. Read from the trace (what was accepted, and when each
run ended) and the runtime's events as the run left them (``SimulationRun.events``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.invariants.protocol import Violation
from yieldstar_sim.simulation.trace_payloads import SendData, StatusData, TraceKind

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.core.events import EventRecord
    from yieldstar_sim.core.model import ExecutionRecord
    from yieldstar_sim.simulation.invariants.protocol import RunView
    from yieldstar_sim.simulation.trace import Trace, TraceEvent

_ENDED = frozenset({"completed", "failed", "cancelled", "dead-lettered", "continued-as-new"})


#: Where an event the runtime lost is fixed: in the runtime that keeps events, whose
#: conformance cases name the rule.
EVENT_FIX = (
    "only the runtime keeps this promise: a runtime adapter of your own breaks it, and its "
    "event conformance cases name the rule (yieldstar_sim.testing.check_event_adapter)"
)


@dataclass(slots=True)
class _Accepted:
    """Each event the runtime accepted (by instance and event ID), with the send that first
    said so, as the events read so far show."""

    accepted: dict[tuple[str, str], tuple[TraceEvent, SendData]] = field(default_factory=dict)

    def copy(self) -> _Accepted:
        """A reader that stands where this one stands (``Trace.fold`` keeps one)."""
        return _Accepted(dict(self.accepted))

    def read(self, events: Sequence[TraceEvent]) -> None:
        """Take ``events``, the next ones in order."""
        accepted, send = self.accepted, TraceKind.SEND
        for event in events:
            if event.kind != send:
                continue
            data = event.data
            if not isinstance(data, SendData) or data.answer not in ("accepted", "duplicate"):
                continue
            assert data.instance_id is not None
            assert data.event_id is not None
            accepted.setdefault((data.instance_id, data.event_id), (event, data))


class AcceptedEventsConsumedOrReported:
    """Every external event the runtime accepted is consumed by a run, or reported
    undelivered with its reason: one the runtime no longer lists, or lists pending for a run
    or an instance that has ended, is a violation, whose sentence names the event, where it
    was sent, and what became of the run that was current then. A safety property: checked
    on cut runs too."""

    name = "every accepted event is consumed or reported"
    final_only = False

    def check(self, run: RunView) -> list[Violation]:
        """The accepted events lost, or left pending where nothing will take them."""
        # Read on from the run's restore point (``Trace.fold``): a search's run shares the
        # events before it with the run before.
        accepted = run.trace.fold("accepted events", _Accepted).accepted
        if not accepted:
            return []
        kept = {(e.instance_id, e.event_id): e for e in run.events}
        records = {record.execution_id: record for record in run.executions}
        ends = _ends(run.trace)
        violations = []
        for key, (sent, data) in accepted.items():
            record = kept.get(key)
            what = (
                f"event {data.name!r} ({data.event_id}), accepted for {data.target} at t={sent.t:g}"
            )
            if record is None:
                fate = _fate(run.executions, ends, data, sent)
                violations.append(
                    Violation(
                        self.name,
                        f"{what}, is gone: the runtime lists it neither consumed nor "
                        f"undelivered, and nothing took it{fate}; {EVENT_FIX}",
                        data={"event_id": data.event_id, "instance_id": data.instance_id},
                    )
                )
                continue
            ended = _pending_on_ended(record, records, run.executions)
            if ended is not None:
                violations.append(
                    Violation(
                        self.name,
                        f"{what}, is still pending, but {ended}: nothing will ever take it, "
                        f"and the runtime does not report it undelivered; {EVENT_FIX}",
                        data={"event_id": data.event_id, "instance_id": data.instance_id},
                    )
                )
        return violations


def _ends(trace: Trace) -> dict[str, tuple[float, int, str]]:
    """Each execution's end as the trace shows it: time, sequence number and status of the
    acknowledgement that ended it."""
    ends: dict[str, tuple[float, int, str]] = {}
    for event in trace:
        data = event.data
        if (
            event.kind == TraceKind.CALL
            and event.op == Op.ACKNOWLEDGE
            and isinstance(data, StatusData)
            and data.status in _ENDED
            and event.execution_id is not None
        ):
            ends.setdefault(event.execution_id, (event.t, event.seq, data.status))
    return ends


def _fate(
    executions: Sequence[ExecutionRecord],
    ends: dict[str, tuple[float, int, str]],
    data: SendData,
    sent: TraceEvent,
) -> str:
    """What became of the run that was current when the event was sent, in words."""
    runs = [r for r in executions if r.instance == data.instance_id]
    current = next(
        (r for r in runs if r.execution_id not in ends or ends[r.execution_id][1] > sent.seq),
        None,
    )
    if current is None:
        return ""
    end = ends.get(current.execution_id)
    if end is None:
        return f"; its run then, {current.execution_id}, is {current.status}"
    t, _, status = end
    how = "continued as new" if status == "continued-as-new" else f"ended {status}"
    later = next((r for r in runs if r.seq > current.seq), None)
    onto = (
        f" (as {later.execution_id})" if later is not None and status == "continued-as-new" else ""
    )
    return f"; its run then, {current.execution_id}, {how} at t={t:g}{onto} without taking it"


def _pending_on_ended(
    event: EventRecord,
    records: dict[str, ExecutionRecord],
    executions: Sequence[ExecutionRecord],
) -> str | None:
    """Why a pending event can never be taken (its run, or every run of its instance, has
    ended), or None."""
    if event.status != "pending":
        return None
    if event.execution_id is not None:
        run = records.get(event.execution_id)
        if run is not None and run.terminal:
            return f"its run {run.execution_id} has ended ({run.status})"
        return None
    runs = [r for r in executions if r.instance == event.instance_id]
    if runs and all(r.terminal for r in runs):
        last = runs[-1]
        return (
            f"every run of instance {event.instance_id} has ended (the last, "
            f"{last.execution_id}, {last.status})"
        )
    return None
