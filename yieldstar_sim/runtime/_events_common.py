"""What every adapter does alike for external events: check a request, word a refusal, and
say what became of each accepted event (``settle``), from the events and the executions.

An event's stored status is ``pending`` or ``consumed``; ``undelivered`` is derived when it is
read: the run it was sent to, or every run of its instance, has ended without taking it.
Deriving it keeps every adapter's writes to what a call names (an acknowledgement writes no
event), and a run pruned later does not make its events vanish from the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from yieldstar_sim.core.codec import durable_value_codec
from yieldstar_sim.core.events import EventErrorCode, EventRecord, EventRejected, EventRequest
from yieldstar_sim.core.ids import check_name

if TYPE_CHECKING:
    from collections.abc import Iterable

    from yieldstar_sim.core.codec import DurableValue
    from yieldstar_sim.core.model import ExecutionRecord


@dataclass(frozen=True, slots=True)
class CheckedEvent:
    """An event request whose fields are checked and whose payload is encoded."""

    name: str
    payload: str
    """The canonical JSON of the payload."""
    decoded: DurableValue
    execution_id: str | None
    instance_id: str | None
    event_id: str | None


def check_event(request: object) -> CheckedEvent:
    """``request`` checked: a ``TypeError`` or ``ValueError`` saying what is wrong with it (a
    sender's mistake, refused before anything is written)."""
    if not isinstance(request, EventRequest):
        raise TypeError(f"send_event takes an ys.EventRequest, not {request!r}")
    check_name(request.name, "the event name")
    if (request.execution_id is None) == (request.instance_id is None):
        raise ValueError(
            f"an event goes to one run (execution_id=) or to one instance (instance_id=), "
            f"not {'both' if request.execution_id is not None else 'neither'}: event "
            f"{request.name!r}"
        )
    target = request.execution_id if request.execution_id is not None else request.instance_id
    check_name(target, "the event's execution_id" if request.execution_id else "its instance_id")
    if request.event_id is not None:
        check_name(request.event_id, "the event ID")
    encoded = durable_value_codec.round_trip(request.payload, path=f"event {request.name!r}")
    if not isinstance(encoded, tuple):
        raise ValueError(
            f"{encoded.message}; an event's payload must be plain data (None, bool, number, "
            "str, list, dict with str keys)"
        )
    canonical, decoded = encoded
    return CheckedEvent(
        request.name, canonical, decoded, request.execution_id, request.instance_id,
        request.event_id,
    )  # fmt: skip


def refused(request: CheckedEvent, record: ExecutionRecord | None) -> EventRejected | None:
    """Why the run the event names (by ID) cannot take it, if it cannot."""
    if record is None:
        return EventRejected(
            EventErrorCode.EXECUTION_NOT_FOUND,
            f"event {request.name!r}: no run {request.execution_id!r}",
        )
    if record.terminal:
        return EventRejected(EventErrorCode.EXECUTION_ENDED, _ended(request.name, record))
    return None


def instance_refused(request: CheckedEvent, runs: list[ExecutionRecord]) -> EventRejected | None:
    """Why instance ``request.instance_id`` (its ``runs``, oldest first) cannot take it."""
    if not runs:
        return EventRejected(
            EventErrorCode.EXECUTION_NOT_FOUND,
            f"event {request.name!r}: no instance {request.instance_id!r}",
        )
    if all(run.terminal for run in runs):
        return EventRejected(
            EventErrorCode.EXECUTION_ENDED,
            f"event {request.name!r}: instance {request.instance_id!r} has ended (its last "
            f"run {runs[-1].execution_id} {runs[-1].status})",
        )
    return None


def _ended(name: str, record: ExecutionRecord) -> str:
    if record.result is not None and record.status == "continued-as-new":
        new = record.result.get("continuedAs") if isinstance(record.result, dict) else None
        return (
            f"event {name!r}: run {record.execution_id} continued as new as {new}; send it "
            f"to instance {record.instance!r} to reach the instance's current run"
        )
    return f"event {name!r}: run {record.execution_id} has ended ({record.status})"


def settle(events: Iterable[EventRecord], records: Iterable[ExecutionRecord]) -> list[EventRecord]:
    """``events`` with what became of each: a pending one whose run (or whose instance's
    every run) has ended is ``undelivered``, with the reason."""
    by_id: dict[str, ExecutionRecord] = {}
    last_run: dict[str, ExecutionRecord] = {}
    live: set[str] = set()
    for record in records:
        by_id[record.execution_id] = record
        last_run[record.instance] = record  # in admission order: the last is the newest
        if not record.terminal:
            live.add(record.instance)
    settled = []
    for event in events:
        reason = _undelivered(event, by_id, last_run, live) if event.status == "pending" else None
        settled.append(
            event if reason is None else replace(event, status="undelivered", reason=reason)
        )
    return settled


def _undelivered(
    event: EventRecord,
    by_id: dict[str, ExecutionRecord],
    last_run: dict[str, ExecutionRecord],
    live: set[str],
) -> str | None:
    if event.execution_id is not None:
        run = by_id.get(event.execution_id)
        if run is None:
            return f"run {event.execution_id} was pruned before it took it"
        if not run.terminal:
            return None
        if run.status == "continued-as-new":
            return f"run {run.execution_id} continued as new before it took it"
        return f"run {run.execution_id} ended ({run.status}) before it took it"
    if event.instance_id in live:
        return None
    last = last_run.get(event.instance_id)
    if last is None:
        return f"instance {event.instance_id} was pruned before it took it"
    return f"instance {event.instance_id} ended (its last run {last.execution_id} {last.status})"
