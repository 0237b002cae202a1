"""External events and continue-as-new for the SQL adapters (DuckDB, PostgreSQL): the
``EventClient`` calls and the write of a ``ContinuedAsNew`` acknowledgement, each a few
statements of the dialect's named-query file in one transaction, retried as a lost race is
(``_sql_retries``: the loop every write of the adapters runs through).

Each transaction holds what the call's answer depends on: a sent event with the wake of its
run, an event taken with the step that records it, a run ended with its instance's next run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import yieldstar_sim.runtime._common as common
from yieldstar_sim.core.codec import durable_value_codec
from yieldstar_sim.core.events import (
    EventAccepted,
    EventRecord,
    EventRequest,
    EventResult,
    ReceivedEvent,
)
from yieldstar_sim.core.ids import check_name, continued_run_base
from yieldstar_sim.runtime._events_common import check_event, instance_refused, refused, settle
from yieldstar_sim.runtime._sql_retries import SqlRetries, TryAgain

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.core.clock import Clock
    from yieldstar_sim.core.model import ContinuedAsNew, ExecutionRecord, Lease
    from yieldstar_sim.runtime._sql_primitives import Rows
    from yieldstar_sim.runtime.failpoints import FailPoints

R = TypeVar("R")


class _Abort(Exception):
    """End the transaction without writing, answering ``answer`` (raised when an error)."""

    def __init__(self, answer: object) -> None:
        super().__init__()
        self.answer = answer

    def take(self) -> object:
        """The answer, no longer held here: an error raised from it has this abort as its
        context, and an abort that still held it would be a reference cycle."""
        answer, self.answer = self.answer, None
        return answer


class _Taken(TryAgain):
    """Another call took the event between the read and the write: a lost race, tried again."""


def _wrote(rows: Rows) -> bool:
    """Whether a write touched a row: DuckDB answers a count, PostgreSQL the RETURNING rows."""
    return bool(rows) and bool(rows[0][0])


class SqlEvents(SqlRetries):
    """The event calls of ``SqlCalls`` (the adapter's options are declared for the type
    checker)."""

    if TYPE_CHECKING:
        _clock: Clock
        _failpoints: FailPoints

        def execution(self, execution_id: str) -> ExecutionRecord | None: ...
        def executions(self) -> list[ExecutionRecord]: ...

    def _transaction(self, operation: str, body: Callable[[], R]) -> R:
        """``body`` in a transaction, run again after a lost race; ``operation``'s failure
        points around its commit. A body that raises ``_Abort`` writes nothing."""

        def once() -> tuple[bool, object]:
            self._execute("begin")
            try:
                result = body()
            except (_Abort, TryAgain) as ended:
                self._rollback_quietly()
                if isinstance(ended, TryAgain):
                    raise
                return False, ended.take()
            self._failpoints.hit(f"{operation}.before_commit")
            self._execute("commit")
            return True, result

        committed, answer = self._retried(operation, once, transaction=True)
        if not committed:
            if isinstance(answer, BaseException):
                raise answer from None
            return answer  # type: ignore[return-value]
        self._failpoints.hit(f"{operation}.after_commit")
        return answer  # type: ignore[return-value]

    def send_event(self, request: EventRequest) -> EventResult:
        """Accept an event for a run or an instance and wake its current run, or refuse it."""
        checked = check_event(request)

        def send() -> EventResult:
            now = self._clock.now()
            if checked.execution_id is not None:
                record = self.execution(checked.execution_id)
                refusal = refused(checked, record)
                current = record
            else:
                rows = self._execute("instance_runs", {"instance_id": checked.instance_id})
                runs = [common.execution_record(row) for row in rows]
                refusal = instance_refused(checked, runs)
                current = next((run for run in runs if not run.terminal), None)
            if refusal is not None:
                raise _Abort(refusal)
            assert current is not None
            instance = current.instance
            if checked.event_id is not None:
                found = self._execute(
                    "event_find", {"instance_id": instance, "event_id": checked.event_id}
                )
                if found:
                    raise _Abort(EventAccepted(int(found[0][0]), str(found[0][1]), instance, True))
            inserted = self._execute(
                "event_insert",
                {
                    "event_id": checked.event_id, "instance_id": instance,
                    "execution_id": checked.execution_id, "name": checked.name,
                    "payload": checked.payload, "now": now,
                },
            )  # fmt: skip
            self._execute("event_wake", {"execution_id": current.execution_id, "now": now})
            return EventAccepted(int(inserted[0][0]), str(inserted[0][1]), instance)

        return self._transaction("send_event", send)

    def wait_for_event(self, lease: Lease, step_key: str, name: str) -> ReceivedEvent | None:
        """Take the oldest pending event ``name`` of the leased run (or its instance) and
        record it as the completed step ``step_key``, in one write. Fenced."""
        common.check_lease(lease)
        check_name(name, "the event name")

        def take() -> ReceivedEvent | None:
            now = self._clock.now()
            fence = {
                "execution_id": lease.execution_id, "incarnation": lease.incarnation,
                "owner": lease.owner, "token": lease.token, "now": now,
            }  # fmt: skip
            if not _wrote(self._execute("fence_holds", fence)):
                raise _Abort(common.lease_lost(lease, self.execution(lease.execution_id), now))
            found = self._execute("event_next", {"execution_id": lease.execution_id, "name": name})
            if not found:
                return None
            seq, event_id, payload = found[0]
            received = ReceivedEvent(name, durable_value_codec.decode_trusted(str(payload)),
                                     str(event_id))  # fmt: skip
            write, _ = common.check_put_step(step_key, "completed", received.to_value(), 1, None)
            if not _wrote(
                self._execute(
                    "put_step", {**fence, "entry": common.step_entry(write, now), "wake_at": None}
                )
            ):
                raise _Abort(common.lease_lost(lease, self.execution(lease.execution_id), now))
            taken = {"seq": seq, "execution_id": lease.execution_id, "step_key": write.step_key}
            if not _wrote(self._execute("event_take", taken)):
                raise _Taken("event_take: the event was taken meanwhile")
            return received

        return self._transaction("wait_for_event", take)

    def events(self) -> list[EventRecord]:
        """Every accepted event, in the order accepted, with what became of it."""
        events = [
            EventRecord(
                int(seq),
                str(event_id),
                str(instance_id),
                None if execution_id is None else str(execution_id),
                str(name),
                durable_value_codec.decode_trusted(str(payload)),
                float(sent_at),
                "consumed" if status == "consumed" else "pending",
                None if consumed_by is None else str(consumed_by),
                None if step_key is None else str(step_key),
            )
            for (
                seq,
                event_id,
                instance_id,
                execution_id,
                name,
                payload,
                sent_at,
                status,
                consumed_by,
                step_key,
            ) in self._read("events_all")
        ]
        return settle(events, self.executions())

    def _continue_as_new(self, lease: Lease, outcome: ContinuedAsNew) -> ExecutionRecord:
        """End the leased run ``continued-as-new`` and admit its instance's next run, due now,
        in one transaction; those waiting for the run are woken (they follow it)."""
        common.check_lease(lease)
        params = (
            None if outcome.params is None
            else durable_value_codec.encode_or_raise(outcome.params, path="params")
        )  # fmt: skip

        def end() -> ExecutionRecord:
            now = self._clock.now()
            record = self.execution(lease.execution_id)
            if record is None:
                raise _Abort(common.lease_lost(lease, record, now))
            seq = int(self._execute("next_seq")[0][0])
            # The instance's and the run's ID (continued_run_id), free or suffixed in SQL as a
            # start's target is, so that a schedule found on memory replays with the same IDs.
            base = continued_run_base(record.workflow_id, record.instance, record.execution_id)
            new_id = str(self._execute("continue_id", {"target_base": base})[0][0])
            fence = {
                "execution_id": lease.execution_id, "incarnation": lease.incarnation,
                "owner": lease.owner, "token": lease.token, "now": now,
                "result": durable_value_codec.encode_or_raise({"continuedAs": new_id}),
            }  # fmt: skip
            if not _wrote(self._execute("continue_end", fence)):
                raise _Abort(common.lease_lost(lease, record, now))
            self._execute(
                "continue_insert",
                {
                    "new_id": new_id, "new_seq": seq, "workflow_id": record.workflow_id,
                    "params": params, "now": now, "instance_id": record.instance,
                },
            )  # fmt: skip
            self._execute("waiters_wake", {"execution_id": lease.execution_id, "now": now})
            ended = self.execution(lease.execution_id)
            assert ended is not None
            return ended

        return self._transaction("acknowledge", end)
