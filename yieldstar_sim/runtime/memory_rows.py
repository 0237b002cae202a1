"""The memory runtime's rows: one execution's record as plain Python, with its steps, lease and
outcome, and durable values stored decoded (each reader gets fresh containers, so a changed
record changes nothing stored)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter
from typing import TYPE_CHECKING

from yieldstar_sim.core.codec import durable_value_codec
from yieldstar_sim.core.frozen import maker
from yieldstar_sim.core.model import (
    TERMINAL_STATUSES,
    Delivery,
    ErrorInfo,
    ExecutionOrigin,
    ExecutionRecord,
    ExecutionStatus,
    Lease,
    ParentLink,
    RequestId,
    StartRequestRecord,
    StepRecord,
)

if TYPE_CHECKING:
    from yieldstar_sim.core.codec import DurableValue
    from yieldstar_sim.runtime._common import StepWrite

# The memory runtime builds a record, lease or step for most calls it answers (``core.frozen``).
# Type checkers check the calls against the classes themselves.
if TYPE_CHECKING:
    new_record, new_lease, new_step = ExecutionRecord, Lease, StepRecord
    new_delivery, new_start_request = Delivery, StartRequestRecord
else:
    new_record, new_lease, new_step, new_delivery, new_start_request = map(
        maker, (ExecutionRecord, Lease, StepRecord, Delivery, StartRequestRecord)
    )

ORIGINS: dict[str, ExecutionOrigin] = {
    "trigger": "trigger", "start": "start", "child": "child", "spawn": "spawn",
    "continue": "continue",
}  # fmt: skip


def fresh(value: DurableValue) -> DurableValue:
    """A copy of a decoded durable value whose containers are new: what a reader gets, so that
    changing it changes nothing stored (as reading canonical JSON again gave). Scalars are
    immutable and shared."""
    kind = type(value)
    # A scalar item is taken as it is without a call (spelled out: every record a read
    # builds copies its params and result here, and most of their items are scalars).
    if kind is dict:
        return {
            key: fresh(item) if type(item) is dict or type(item) is list else item
            for key, item in value.items()  # type: ignore[union-attr]
        }
    if kind is list:
        return [
            fresh(item) if type(item) is dict or type(item) is list else item
            for item in value  # type: ignore[union-attr]
        ]
    return value


def read_step(record: StepRecord) -> StepRecord:
    """A stored step as a reader gets it: its value with new containers (a scalar value is
    shared, the record being immutable)."""
    value = record.value
    if type(value) is not dict and type(value) is not list:
        return record
    return new_step(
        record.execution_id, record.step_key, record.position, record.status, fresh(value),
        record.attempt, record.recorded_at,
    )  # fmt: skip


def decode(canonical: str | None) -> DurableValue:
    return None if canonical is None else durable_value_codec.decode_trusted(canonical)


@dataclass(slots=True)
class Row:
    """One execution as stored: the same columns as the DuckDB table.

    Values are kept twice: as canonical JSON (what a repeated start request is compared with)
    and decoded, once, when they are written, so that a read builds its record without
    decoding JSON again (each read gets fresh containers, never the stored ones).
    """

    execution_id: str
    seq: int
    workflow_id: str
    params: str | None
    origin: str
    parent_execution_id: str | None
    parent_seq: int | None
    parent_step_key: str | None
    parent_detached: bool | None
    status: ExecutionStatus
    created_at: float
    result: str | None = None
    error: str | None = None
    finished_at: float | None = None
    due_at: float | None = None
    lease_owner: str | None = None
    lease_token: int = 0
    lease_expires_at: float | None = None
    cancel_requested: bool = False
    waiting_on: str | None = None
    recoveries: int = 0
    instance_id: str | None = None
    steps: dict[str, StepRecord] = field(default_factory=dict)
    """By step key, in the order of their positions (a rewrite keeps a key's place)."""
    revision: int = 0
    """Bumped by every write to the row or its steps: what readers of
    ``MemoryRuntime.rows_view`` follow."""
    step_writes: list[str] = field(default_factory=list)
    """The step key of every step write, in order (``MemoryRuntime.rows_view``)."""
    params_value: DurableValue = None
    """``params`` decoded (set on admission)."""
    shared: bool = False
    """Whether a snapshot holds this very row (``MemoryRuntime.snapshot``): the runtime
    writes a copy of it instead."""
    result_value: DurableValue = None
    error_info: ErrorInfo | None = None
    parent: ParentLink | None = None

    def __post_init__(self) -> None:
        # Kept as the enum member: every record built from the row would convert it again.
        self.status = ExecutionStatus(self.status)
        self.params_value = decode(self.params)
        if self.parent_execution_id is not None:
            self.parent = ParentLink(
                self.parent_execution_id, str(self.parent_step_key), bool(self.parent_detached)
            )

    def write_step(self, write: StepWrite, now: float) -> None:
        """Record (or rewrite) one step of this row, in its place if it has one: the one step
        write every call that records a step makes (``put_step``, an event taken, an attempt
        completed by its token). The row must be this call's own (``MemoryRuntime._touch``)."""
        old = self.steps.get(write.step_key)
        self.step_writes.append(write.step_key)
        self.steps[write.step_key] = new_step(
            self.execution_id, write.step_key,
            len(self.steps) if old is None else old.position,
            write.status, write.value, write.attempt, now,
        )  # fmt: skip

    def set_outcome(self, status: str, result: str | None, error: str | None) -> None:
        """Store an outcome's columns, decoded once."""
        self.status, self.result, self.error = ExecutionStatus(status), result, error
        self.result_value = decode(result)
        decoded = decode(error)
        self.error_info = None if decoded is None else ErrorInfo.from_value(decoded)

    def columns(self) -> tuple[object, ...]:
        return (
            self.execution_id,
            self.seq,
            self.workflow_id,
            self.params,
            self.origin,
            self.parent_execution_id,
            self.parent_step_key,
            self.parent_detached,
            self.status,
            self.result,
            self.error,
            self.created_at,
            self.finished_at,
            self.due_at,
            self.lease_owner,
            self.lease_token,
            self.lease_expires_at,
            self.cancel_requested,
            self.waiting_on,
            self.recoveries,
            self.instance_id,
        )

    def record(self) -> ExecutionRecord:
        """The public record, built from the stored (already decoded) values: the same record
        ``common.execution_record(self.columns())`` gives, without decoding JSON."""
        lease = (
            new_lease(
                self.execution_id,
                self.lease_owner,
                self.lease_token,
                float(self.lease_expires_at),  # type: ignore[arg-type]
                self.seq,
            )
            if self.lease_owner is not None
            else None
        )
        return new_record(
            self.execution_id,
            self.workflow_id,
            fresh(self.params_value),  # type: ignore[arg-type]
            ORIGINS.get(self.origin, "trigger"),
            self.parent,
            self.status,
            float(self.created_at),  # times as floats, as execution_record makes them
            self.seq,
            fresh(self.result_value),
            self.error_info,
            None if self.finished_at is None else float(self.finished_at),
            None if self.due_at is None else float(self.due_at),
            lease,
            self.lease_token,
            self.cancel_requested,
            self.waiting_on,
            self.recoveries,
            self.instance_id,
        )

    def start_request(self) -> StartRequestRecord:
        """The start request this started target stands for: what
        ``common.start_request_record(self.record())`` gives, without the rest of the record."""
        parent = self.parent
        assert parent is not None
        return new_start_request(
            RequestId(parent.execution_id, parent.step_key),
            self.workflow_id,
            fresh(self.params_value),  # type: ignore[arg-type]
            parent.detached,
            self.execution_id,
            float(self.created_at),
        )

    def copy(self) -> Row:
        """A row of its own with the same columns: its steps and step writes copied, its
        values shared (they are never changed in place, only replaced)."""
        new = _blank_row()
        # Every column set in one C loop (a Python loop over them was most of a copy, and the
        # first write to a row after each saved state copies it).
        deque(map(setattr, repeat(new), _ROW_SLOTS, _row_columns(self)), maxlen=0)
        new.steps = dict(self.steps)
        new.step_writes = list(self.step_writes)
        new.shared = False
        return new

    def head(self) -> tuple[object, ...]:
        """``(execution ID, status, due_at, lease token, lease expiry, cancel requested,
        waiting on, recoveries)`` as the record would show them: what of a record changes as
        it runs, without building the record (the explorer's fingerprints)."""
        return (
            self.execution_id,
            str(self.status),
            None if self.due_at is None else float(self.due_at),
            self.lease_token,
            None if self.lease_owner is None else float(self.lease_expires_at),  # type: ignore[arg-type]
            self.cancel_requested,
            self.waiting_on,
            self.recoveries,
        )

    def claim_rank(self) -> tuple[bool, str]:
        """Where a claim takes this execution among those claimable at the same instant:
        triggered ones (no parent) before those an execution admitted, each by ID. Neither
        depends on the order of admissions, so two starts admitted in either order are
        claimed alike (docs/decisions.md, "Target IDs from the start request")."""
        return (self.parent_execution_id is not None, self.execution_id)

    def ready_at(self) -> float | None:
        """When a live execution becomes claimable: its wake if free, its lease's expiry if not."""
        return self.due_at if self.lease_owner is None else self.lease_expires_at

    def holds(self, lease: Lease, now: float) -> bool:
        return (
            self.status not in TERMINAL_STATUSES
            and self.seq == lease.incarnation
            and self.lease_owner == lease.owner
            and self.lease_token == lease.token
            and self.lease_expires_at is not None
            and self.lease_expires_at > now
        )


_ROW_SLOTS = tuple(Row.__slots__)
_row_columns = attrgetter(*_ROW_SLOTS)


def _blank_row() -> Row:
    return Row.__new__(Row)
