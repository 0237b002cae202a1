"""The memory runtime's external events and continue-as-new (``runtime.protocol.
EventClient``): a part of ``MemoryRuntime`` of its own, which it inherits.

Events are frozen ``EventRecord``s in a list, in the order accepted; taking one replaces its
record, so a snapshot holds the list's records as they were (``MemoryRuntime.snapshot``).
"""

from __future__ import annotations

from collections import ChainMap
from dataclasses import replace
from typing import TYPE_CHECKING

import yieldstar_sim.runtime._common as common
from yieldstar_sim.core.codec import durable_value_codec
from yieldstar_sim.core.events import (
    EventAccepted,
    EventRecord,
    EventRequest,
    EventResult,
    ReceivedEvent,
    generated_event_id,
)
from yieldstar_sim.core.ids import check_name, continued_run_id
from yieldstar_sim.core.model import ContinuedAsNew, ExecutionRecord, ExecutionStatus, Lease
from yieldstar_sim.runtime._events_common import (
    check_event,
    instance_refused,
    refused,
    settle,
)
from yieldstar_sim.runtime.memory_rows import Row

if TYPE_CHECKING:
    import threading

    from yieldstar_sim.core.clock import Clock
    from yieldstar_sim.runtime.failpoints import FailPoints
    from yieldstar_sim.runtime.memory_order import ClaimOrder


class MemoryEvents:
    """``send_event``, ``wait_for_event``, ``events`` and the write of a continue-as-new, over
    the memory runtime's rows (its other attributes are declared here for the type checker)."""

    _events: list[EventRecord]
    if TYPE_CHECKING:
        _lock: threading.RLock
        _rows: dict[str, Row]
        _live: dict[str, Row]
        _tombstones: dict[str, Row]
        _order: ClaimOrder
        _clock: Clock
        _failpoints: FailPoints

        def _touch(self, row: Row) -> Row: ...
        def _fenced(self, operation: str, lease: Lease) -> tuple[Row, float]: ...
        def _next_seq(self) -> int: ...
        def _logged(self, row: Row) -> None: ...
        def executions(self) -> list[ExecutionRecord]: ...

    def send_event(self, request: EventRequest) -> EventResult:
        """Accept an event for a run or an instance and wake its current run, or refuse it."""
        checked = check_event(request)
        with self._lock:
            now = self._clock.now()
            self._failpoints.hit("send_event.before_commit")
            if checked.execution_id is not None:
                row = self._rows.get(checked.execution_id)
                refusal = refused(checked, None if row is None else row.record())
                current = row
            else:
                runs = [
                    row for row in self._rows.values()
                    if (row.instance_id or row.execution_id) == checked.instance_id
                ]  # fmt: skip
                refusal = instance_refused(checked, [row.record() for row in runs])
                current = next((row for row in runs if row.execution_id in self._live), None)
            if refusal is not None:
                return refusal
            assert current is not None
            instance = current.instance_id or current.execution_id
            for event in self._events:
                if checked.event_id is not None and (event.instance_id, event.event_id) == (
                    instance,
                    checked.event_id,
                ):
                    return EventAccepted(event.seq, event.event_id, instance, duplicate=True)
            seq = len(self._events) + 1
            event_id = checked.event_id or generated_event_id(seq)
            self._events.append(
                EventRecord(
                    seq, event_id, instance, checked.execution_id, checked.name,
                    checked.decoded, now,
                )
            )  # fmt: skip
            # Wake the run, leased or not: a run that looked for the event before it came
            # and is about to suspend is due again once it has (no lost wake-up).
            current = self._touch(current)
            current.due_at = now if current.due_at is None else min(current.due_at, now)
            self._order.queue(current)
        self._failpoints.hit("send_event.after_commit")
        return EventAccepted(seq, event_id, instance)

    def wait_for_event(self, lease: Lease, step_key: str, name: str) -> ReceivedEvent | None:
        """Take the oldest pending event ``name`` of the leased run (or its instance) and
        record it as the completed step ``step_key``, in one write. Fenced."""
        check_name(name, "the event name")
        with self._lock:
            row, now = self._fenced("wait_for_event", lease)
            instance = row.instance_id or row.execution_id
            found = next(
                (
                    event for event in self._events
                    if event.status == "pending" and event.name == name
                    and (event.execution_id == row.execution_id
                         or (event.execution_id is None and event.instance_id == instance))
                ),
                None,
            )  # fmt: skip
            if found is None:
                received = None
            else:
                received = ReceivedEvent(found.name, found.payload, found.event_id)
                write, _ = common.check_put_step(
                    step_key, "completed", received.to_value(), 1, None
                )
                row = self._touch(row)
                row.write_step(write, now)
                self._events[found.seq - 1] = replace(
                    found, status="consumed", consumed_by=row.execution_id, step_key=step_key
                )
        self._failpoints.hit("wait_for_event.after_commit")
        return received

    def events(self) -> list[EventRecord]:
        """Every accepted event, in the order accepted, with what became of it."""
        with self._lock:
            events = list(self._events)
        # No event, nothing to settle: the records (every run's end reads them) go unbuilt.
        return settle(events, self.executions()) if events else []

    def _continue_as_new(self, lease: Lease, outcome: ContinuedAsNew) -> ExecutionRecord:
        """End the leased run ``continued-as-new`` and admit its instance's next run, due now,
        in one write; those waiting for the run are woken (they follow it to the next)."""
        params = (
            None if outcome.params is None
            else durable_value_codec.encode_or_raise(outcome.params, path="params")
        )  # fmt: skip
        with self._lock:
            row, now = self._fenced("acknowledge", lease)
            row = self._touch(row)
            seq = self._next_seq()
            # The ID is the instance's and the run's, not the sequence's: two instances that
            # continue in either order leave one state.
            instance = row.instance_id or row.execution_id
            taken = ChainMap(self._rows, self._tombstones).keys()
            new_id = continued_run_id(row.workflow_id, instance, row.execution_id, taken=taken)
            row.set_outcome(
                ExecutionStatus.CONTINUED_AS_NEW,
                durable_value_codec.encode_or_raise({"continuedAs": new_id}),
                None,
            )
            row.lease_owner = row.lease_expires_at = None
            row.finished_at, row.due_at = now, None
            del self._live[row.execution_id]
            for waiting in self._order.waiting_on(row.execution_id, self._live):
                waiter = self._touch(waiting)
                waiter.due_at = now if waiter.due_at is None else min(waiter.due_at, now)
                self._order.queue(waiter)
            self._rows[new_id] = self._live[new_id] = new = Row(
                new_id, seq, row.workflow_id, params, "continue", None, None, None, None,
                ExecutionStatus.PENDING, now, due_at=now,
                instance_id=instance,
            )  # fmt: skip
            self._logged(new)
            self._order.queue(new)
            record = row.record()
        self._failpoints.hit("acknowledge.after_commit")
        return record
