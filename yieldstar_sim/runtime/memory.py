"""The memory runtime: plain Python, the reference adapter and the fast one.

Every call is atomic under one lock; failure points sit where the DuckDB adapter's sit, so a
failure armed in a test observably does the same thing on both.

>>> from yieldstar_sim import MemoryRuntime, RequestId, StartRequest
>>> runtime = MemoryRuntime()
>>> runtime.trigger("charge-order", {"order": 42}, execution_id="order-42")
'order-42'
>>> runtime.start(StartRequest(RequestId("order-42", "ship"), "ship-order", {"order": 42}))
StartAccepted(execution_id='@ship-order:order-42/ship', status='accepted')
"""

from __future__ import annotations

import threading
from collections import ChainMap
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

import yieldstar_sim.runtime._common as common
from yieldstar_sim.core.ids import check_name, generated_execution_id, start_target_id
from yieldstar_sim.core.model import (
    TERMINAL_STATUSES,
    ChildAccepted,
    ChildRequest,
    ChildResult,
    ContinuedAsNew,
    Delivery,
    ExecutionNotFoundError,
    ExecutionRecord,
    ExecutionStateError,
    ExecutionStatus,
    Lease,
    StartAccepted,
    StartRejected,
    StartRequest,
    StartRequestRecord,
    StartResult,
    StepRecord,
    StepStatus,
    WorkflowRunOutcome,
)
from yieldstar_sim.runtime.memory_attempts import MemoryAttempts
from yieldstar_sim.runtime.memory_events import MemoryEvents
from yieldstar_sim.runtime.memory_order import ClaimOrder
from yieldstar_sim.runtime.memory_rows import Row, new_delivery, new_lease, read_step

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from yieldstar_sim.core.clock import Clock
    from yieldstar_sim.core.events import EventRecord
    from yieldstar_sim.runtime._common import CheckedChild, CheckedStart
    from yieldstar_sim.runtime.failpoints import FailPoints


@dataclass(frozen=True, slots=True)
class MemorySnapshot:
    """A memory runtime's records at one moment (``MemoryRuntime.snapshot``)."""

    rows: dict[str, Row]
    tombstones: dict[str, Row]
    requests: dict[tuple[int, str], str]
    last_seq: int
    events: tuple[EventRecord, ...] = ()


class MemoryRuntime(MemoryAttempts, MemoryEvents, common.AdapterOptions):
    """A runtime adapter that keeps every record in Python objects.

    ``clock`` supplies virtual time (without one, time stands at 0). ``orphan_guard`` (on by
    default) refuses a new start or child of a terminal caller (``TerminalCallerError``) and
    admits an owned target of a caller being cancelled with its own cancellation requested;
    switch it off only to show the hazard (``orphan-after-cancel``). ``on_existing_id``
    answers a trigger whose caller-chosen ID exists: ``"refuse"`` (EXECUTION_EXISTS, the
    default) or ``"return_existing"``. Events, attempts: ``memory_events``, ``memory_attempts``."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        orphan_guard: bool = True,
        on_existing_id: str = "refuse",
    ) -> None:
        self._keep_options(clock, orphan_guard, on_existing_id)
        self._lock = threading.RLock()
        self._rows: dict[str, Row] = {}
        # Executions that are not terminal: the only ones claims and wakes need to look at.
        self._live: dict[str, Row] = {}
        # Which of them a claim takes, and who waits on whom, indexed: told of every write
        # that moves when an execution is claimable.
        self._order = ClaimOrder(self._live)
        # (caller incarnation, step key) -> target ID: the retained start-request records.
        self._requests: dict[tuple[int, str], str] = {}
        # Pruned targets whose caller is retained: their request records still name them.
        self._tombstones: dict[str, Row] = {}
        self._last_seq = 0
        self._events = []  # accepted external events, frozen records (memory_events)
        # Every row written, once per write, from the first reader on (row_writes).
        self._writes: list[Row] | None = None

    def __repr__(self) -> str:
        return f"MemoryRuntime({len(self._rows)} executions, now={self._clock.now():g})"

    @property
    def clock(self) -> Clock:
        """The clock every call reads its time from."""
        return self._clock

    @property
    def failpoints(self) -> FailPoints:
        """The adapter's named failure points."""
        return self._failpoints

    def close(self) -> None:
        """Nothing to release; present for the Protocol."""

    # ------------------------------------------------------------------ admission

    def _next_seq(self) -> int:
        self._last_seq += 1
        return self._last_seq

    def trigger(
        self, workflow_id: str, params: object = None, *, execution_id: str | None = None
    ) -> str:
        """Admit an execution with its first wake due now; return its ID."""
        workflow_id, encoded = common.check_trigger(workflow_id, params, execution_id)
        with self._lock:
            now = self._clock.now()
            self._failpoints.hit("trigger.before_commit")
            if execution_id is not None and execution_id in self._rows:
                return common.existing_id_answer(
                    self._on_existing_id, execution_id, workflow_id,
                    self._rows[execution_id].workflow_id,
                )  # fmt: skip
            seq = self._next_seq()
            new_id = execution_id or generated_execution_id(workflow_id, seq)
            self._rows[new_id] = self._live[new_id] = row = Row(
                new_id, seq, workflow_id, encoded, "trigger", None, None, None, None,
                ExecutionStatus.PENDING, now, due_at=now,
            )  # fmt: skip
            self._logged(row)
            self._order.queue(row)
        self._failpoints.hit("trigger.after_commit")
        return new_id

    def start(self, request: StartRequest) -> StartResult:
        """Admit the target of ``request``, or return the one it already admitted."""
        checked = common.check_start(request)
        if isinstance(checked, StartRejected):
            return checked
        with self._lock:
            now = self._clock.now()
            caller = self._rows.get(checked.caller)
            if caller is None:
                self._failpoints.hit("start.before_commit")  # where DuckDB finds no caller
                raise common.caller_not_found(checked)
            requested = self._requested(caller, checked.step_key)
            if requested is not None:
                self._failpoints.hit("start.before_commit")
                result: StartResult = common.mismatch(checked, *requested) or StartAccepted(
                    requested[0]
                )
            elif self._refuses(caller):
                self._failpoints.hit("start.before_commit")  # where DuckDB finds the caller over
                raise common.caller_terminal(checked, caller.status)
            else:
                # The DuckDB sequence is not transactional: a start that fails before its commit
                # still uses up a number, and so does this one. The ID is the request's.
                seq = self._next_seq()
                self._failpoints.hit("start.before_commit")
                taken = ChainMap(self._rows, self._tombstones).keys()
                target_id = start_target_id(
                    checked.workflow_id, checked.caller, checked.step_key, taken=taken
                )
                self._admit_target(checked, caller, target_id, seq=seq, origin="start", now=now)
                result = StartAccepted(target_id)
        self._failpoints.hit("start.after_commit")
        return result

    def start_child(self, request: ChildRequest) -> ChildResult:
        """Create the run ``child_id`` for the request, or join the run that has that ID."""
        checked = common.check_child(request)
        if isinstance(checked, StartRejected):
            return checked
        with self._lock:
            now = self._clock.now()
            caller = self._rows.get(checked.caller)
            requested = None if caller is None else self._requested(caller, checked.step_key)
            existing = self._rows.get(checked.child_id)
            if (
                caller is not None
                and requested is None
                and existing is None
                and not self._refuses(caller)
            ):
                seq = self._next_seq()
                self._failpoints.hit("start_child.before_commit")
                self._admit_target(
                    checked, caller, checked.child_id, seq=seq, origin=checked.origin, now=now
                )
                result: ChildResult = ChildAccepted(checked.child_id, created=True)
            else:
                self._failpoints.hit("start_child.before_commit")
                if caller is None:
                    raise common.caller_not_found(checked)
                answer = common.child_answer(
                    checked,
                    requested,
                    None if existing is None else (existing.execution_id, existing.workflow_id),
                )
                if answer is None:
                    # Neither a request to repeat nor a run to join: a new child, refused.
                    raise common.caller_terminal(checked, caller.status)
                result = answer
        self._failpoints.hit("start_child.after_commit")
        return result

    def _admit_target(
        self,
        request: CheckedStart | CheckedChild,
        caller: Row,
        target_id: str,
        *,
        seq: int,
        origin: str,
        now: float,
    ) -> None:
        """Admit the target of a start request, the request (caller incarnation, step key)
        recorded with it: a start's, a child's or a spawn's, alike."""
        row = Row(
            target_id, seq, request.workflow_id, request.params, origin,
            request.caller, caller.seq, request.step_key, request.detached,
            ExecutionStatus.PENDING, now, due_at=now,
            cancel_requested=self._inherits(caller, detached=request.detached),
        )  # fmt: skip
        self._rows[target_id] = self._live[target_id] = row
        self._logged(row)
        self._order.queue(row)
        self._requests[(caller.seq, request.step_key)] = target_id

    def _requested(self, caller: Row, step_key: str) -> tuple[str, str, str | None] | None:
        """The target the start request (``caller``'s incarnation, ``step_key``) admitted, as
        (execution ID, workflow, encoded parameters), pruned or not; None if it admitted none."""
        target_id = self._requests.get((caller.seq, step_key))
        if target_id is None:
            return None
        target = self._rows.get(target_id) or self._tombstones[target_id]
        return target_id, target.workflow_id, target.params

    def _refuses(self, caller: Row) -> bool:
        """Whether the orphan guard refuses a new target of ``caller``: it is terminal."""
        return self._orphan_guard and caller.status.terminal

    def _inherits(self, caller: Row, *, detached: bool) -> bool:
        return common.inherits_cancellation(
            self._orphan_guard, detached=detached, caller_cancel_requested=caller.cancel_requested
        )

    def cancel(self, execution_id: str) -> list[str]:
        """Request cancellation of an execution and of what it owns; returns the executions
        whose cancellation was newly requested (terminal ones are left as they are)."""
        with self._lock:
            now = self._clock.now()
            self._failpoints.hit("cancel.before_commit")
            root = self._rows.get(execution_id)
            if root is None:
                raise ExecutionNotFoundError(f"execution {execution_id!r} does not exist")
            owned, frontier = {root.execution_id}, [root]
            while frontier:
                owner = frontier.pop()
                for row in self._rows.values():
                    if (
                        row.parent_seq == owner.seq
                        and not row.parent_detached
                        and row.execution_id not in owned
                    ):
                        owned.add(row.execution_id)
                        frontier.append(row)
            cancelled = []
            for target_id in owned:
                row = self._rows[target_id]
                if target_id in self._live and not row.cancel_requested:
                    row = self._touch(row)
                    row.cancel_requested = True
                    row.due_at = now if row.due_at is None else min(row.due_at, now)
                    self._order.queue(row)
                    cancelled.append(target_id)
        self._failpoints.hit("cancel.after_commit")
        return sorted(cancelled)

    # ------------------------------------------------------------------ reads

    def execution(self, execution_id: str) -> ExecutionRecord | None:
        """The record of one execution, or ``None``."""
        with self._lock:
            row = self._rows.get(execution_id)
            return None if row is None else row.record()

    def executions(self) -> list[ExecutionRecord]:
        """Every execution, in admission order."""
        with self._lock:
            return [row.record() for row in self._ordered()]

    def rows_view(self) -> Mapping[str, Row]:
        """Every execution's row by ID, in admission order: a live, read-only view for a
        reader that follows what changed between calls (a row's ``revision`` grows with every
        write, ``step_writes`` lists each step write's key). Read it only between calls."""
        return MappingProxyType(self._rows)

    def row_writes(self) -> Sequence[Row]:
        """Every row written, once per write, in the order of the writes (an admission is a
        write; so is a prune, after which the row has left ``rows_view``): a live, read-only
        list for a reader that follows what changed between calls, as the explorer's keys do
        (what was appended since a reader's last look is what it reads again). The log starts
        at the first call, with every row there is then (a runtime nobody follows keeps no
        pruned row). Read it only while no call runs, and change nothing in it."""
        with self._lock:
            if self._writes is None:
                self._writes = list(self._rows.values())
            return self._writes

    def snapshot(self) -> MemorySnapshot:
        """Every record as it is now, for ``restore``: what a simulation that restores a
        saved state asks of its runtime (armed failure points are not part of it). The rows
        are shared with the snapshot, not copied: a row is copied when it is next written
        (``_touch``)."""
        with self._lock:
            for row in (*self._rows.values(), *self._tombstones.values()):
                row.shared = True
            return MemorySnapshot(
                dict(self._rows), dict(self._tombstones), dict(self._requests), self._last_seq,
                tuple(self._events),
            )  # fmt: skip

    def restore(self, snapshot: MemorySnapshot) -> None:
        """Put every record back as ``snapshot`` holds it (its rows still shared with it: the
        snapshot can be restored again). A reader of ``rows_view`` and ``row_writes`` takes
        them up again, the log of writes starting again with every row."""
        with self._lock:
            # In place: ``rows_view`` and ``row_writes`` are live views of these objects.
            rows = self._rows
            rows.clear()
            rows.update(snapshot.rows)
            self._live = {
                execution_id: row
                for execution_id, row in rows.items()
                if row.status not in TERMINAL_STATUSES
            }
            self._order = ClaimOrder(self._live)
            self._tombstones = dict(snapshot.tombstones)
            self._requests = dict(snapshot.requests)
            self._last_seq, self._events = snapshot.last_seq, list(snapshot.events)
            if self._writes is not None:
                self._writes[:] = rows.values()

    def _touch(self, row: Row) -> Row:
        """Count a write to ``row`` (its ``revision``) and log it (``row_writes``); returns
        the row to write, a copy of its own when ``row`` is shared with a snapshot."""
        if row.shared:
            row = self._unshared(row)
        row.revision += 1
        if self._writes is not None:
            self._writes.append(row)
        return row

    def _unshared(self, row: Row) -> Row:
        """A copy of ``row`` of this runtime's own, in its place wherever ``row`` stands."""
        mine = row.copy()
        execution_id = row.execution_id
        for rows in (self._rows, self._live, self._tombstones):
            if rows.get(execution_id) is row:
                rows[execution_id] = mine
        return mine

    def _logged(self, row: Row) -> None:
        """Log the admission of ``row`` (``row_writes``)."""
        if self._writes is not None:
            self._writes.append(row)

    def _ordered(self) -> Iterator[Row]:
        return iter(sorted(self._rows.values(), key=lambda row: row.seq))

    def steps(self, execution_id: str) -> list[StepRecord]:
        """The recorded steps of one execution, in the order they were first recorded."""
        with self._lock:
            row = self._rows.get(execution_id)
            return [] if row is None else list(map(read_step, row.steps.values()))

    def start_requests(self) -> list[StartRequestRecord]:
        """Every retained start request with its target."""
        with self._lock:
            targets = [
                self._rows.get(target_id) or self._tombstones[target_id]
                for target_id in self._requests.values()
            ]
            return [row.start_request() for row in sorted(targets, key=lambda row: row.seq)]

    def due(self) -> list[str]:
        """The executions a claim could take now, in claim order."""
        with self._lock:
            return [row.execution_id for row in self._claimable(self._clock.now())]

    def _first_claimable(self, now: float, execution_id: str | None) -> Row | None:
        """What a claim takes: the named execution if claimable, else the first in claim
        order (the earliest claimable, then ``Row.claim_rank``)."""
        live = self._live
        row = self._order.first(live) if execution_id is None else live.get(execution_id)
        at = None if row is None else row.ready_at()
        return row if at is not None and at <= now else None

    def _claimable(self, now: float) -> list[Row]:
        due = [r for r in self._live.values() if (at := r.ready_at()) is not None and at <= now]
        return sorted(due, key=lambda row: (row.ready_at(), row.claim_rank()))

    def next_wake_at(self) -> float | None:
        """The earliest time at which some execution becomes claimable."""
        with self._lock:
            first = self._order.first(self._live)
            return None if first is None else first.ready_at()

    # ------------------------------------------------------------------ leases

    def claim(
        self, owner: str, *, lease_seconds: float, execution_id: str | None = None
    ) -> Delivery | None:
        """Lease the first claimable execution (or the named one) to ``owner``."""
        check_name(owner, "the lease owner")
        lease_seconds = common.check_seconds(lease_seconds, "lease_seconds", positive=True)
        with self._lock:
            now = self._clock.now()
            self._failpoints.hit("claim.before_commit")
            row_or_none = self._first_claimable(now, execution_id)
            delivery = None
            if row_or_none is not None:
                row = row_or_none
                row = self._touch(row)
                row.recoveries += row.lease_owner is not None  # its holder's lease ran out
                row.lease_owner = owner
                row.lease_token += 1
                row.lease_expires_at = now + lease_seconds
                row.due_at = None
                row.waiting_on = None
                self._order.queue(row)
                lease = new_lease(
                    row.execution_id, owner, row.lease_token, row.lease_expires_at, row.seq
                )
                steps = tuple(map(read_step, row.steps.values()))
                delivery = new_delivery(lease, row.record(), steps)
        self._failpoints.hit("claim.after_commit")
        return delivery

    def _fenced(self, operation: str, lease: Lease) -> tuple[Row, float]:
        """The row ``lease`` still fences, after passing ``operation``'s before point."""
        common.check_lease(lease)
        now = self._clock.now()
        self._failpoints.hit(f"{operation}.before_commit")
        row = self._rows.get(lease.execution_id)
        if row is None or not row.holds(lease, now):
            raise common.lease_lost(lease, None if row is None else row.record(), now)
        return row, now

    def renew(self, lease: Lease, *, lease_seconds: float) -> Lease:
        """Extend a held lease to ``lease_seconds`` from now."""
        lease_seconds = common.check_seconds(lease_seconds, "lease_seconds", positive=True)
        with self._lock:
            row, now = self._fenced("renew", lease)
            row = self._touch(row)
            row.lease_expires_at = now + lease_seconds
            self._order.queue(row)
            renewed = replace(lease, expires_at=row.lease_expires_at)
        self._failpoints.hit("renew.after_commit")
        return renewed

    def put_step(
        self,
        lease: Lease,
        step_key: str,
        *,
        status: StepStatus,
        value: object = None,
        attempt: int = 1,
        wake_at: float | None = None,
    ) -> None:
        """Record (or rewrite) one step, and optionally its wake, atomically."""
        write, wake_at = common.check_put_step(step_key, status, value, attempt, wake_at)
        with self._lock:
            row, now = self._fenced("put_step", lease)
            row = self._touch(row)
            row.write_step(write, now)
            if wake_at is not None:
                row.due_at = wake_at if row.due_at is None else min(row.due_at, wake_at)
        self._failpoints.hit("put_step.after_commit")

    def record_wake(self, lease: Lease, at: float) -> None:
        """Make the execution due again at ``at`` (the earliest recorded wake wins)."""
        at = common.check_seconds(at, "the wake time")
        with self._lock:
            row, _ = self._fenced("record_wake", lease)
            row = self._touch(row)
            row.due_at = at if row.due_at is None else min(row.due_at, at)
        self._failpoints.hit("record_wake.after_commit")

    def acknowledge(self, lease: Lease, outcome: WorkflowRunOutcome) -> ExecutionRecord:
        """Record a delivery's outcome and give up the lease."""
        if isinstance(outcome, ContinuedAsNew):
            return self._continue_as_new(lease, outcome)
        status, result, error = common.outcome_columns(outcome)
        with self._lock:
            row, now = self._fenced("acknowledge", lease)
            row = self._touch(row)
            terminal = ExecutionStatus(status).terminal
            row.set_outcome(status, result, error)
            row.lease_owner = None
            row.lease_expires_at = None
            if terminal:
                row.finished_at = now
                row.due_at = None
                del self._live[row.execution_id]
                for waiting in self._order.waiting_on(row.execution_id, self._live):
                    waiter = self._touch(waiting)
                    waiter.due_at = now if waiter.due_at is None else min(waiter.due_at, now)
                    self._order.queue(waiter)
            else:
                self._order.queue(row)
            record = row.record()
        self._failpoints.hit("acknowledge.after_commit")
        return record

    def wait_for(self, lease: Lease, execution_id: str) -> ExecutionRecord | None:
        """Register that the leased execution waits for ``execution_id`` (whose terminal
        outcome will wake it), then read that execution. Fenced."""
        check_name(execution_id, "the execution to wait for")
        with self._lock:
            row, _ = self._fenced("wait_for", lease)
            row = self._touch(row)
            row.waiting_on = execution_id
            self._order.wait(row.execution_id, execution_id)
            target = self._rows.get(execution_id)
            record = None if target is None else target.record()
        self._failpoints.hit("wait_for.after_commit")
        return record

    def release(self, lease: Lease, *, delay: float) -> None:
        """Give up the lease without an outcome; the execution is due again after ``delay``."""
        delay = common.check_seconds(delay, "the redelivery delay")
        with self._lock:
            row, now = self._fenced("release", lease)
            row = self._touch(row)
            row.lease_owner = None
            row.lease_expires_at = None
            row.due_at = now + delay
            self._order.queue(row)
        self._failpoints.hit("release.after_commit")

    # ------------------------------------------------------------------ retention

    def prune(self, execution_id: str) -> None:
        """Remove a terminal execution with its steps, wake and start-request records."""
        with self._lock:
            self._failpoints.hit("prune.before_commit")
            row = self._rows.get(execution_id)
            if row is None:
                raise ExecutionNotFoundError(f"execution {execution_id!r} does not exist")
            if not row.status.terminal:
                raise ExecutionStateError(
                    f"execution {execution_id!r} is {row.status}; only a terminal execution "
                    "can be pruned"
                )
            del self._rows[execution_id]
            row = self._touch(row)
            if row.origin == "start" and (row.parent_seq, row.parent_step_key) in self._requests:
                # Its caller's request record outlives it, and still names it (RFC 013 prunes a
                # caller's requests with the caller, not with the target).
                row.steps, row.step_writes = {}, []
                row.set_outcome(ExecutionStatus.PRUNED, None, None)
                self._tombstones[execution_id] = row
            elif (row.parent_seq, row.parent_step_key) in self._requests:
                # A business ID: its protection expires with its record (the steps guide).
                del self._requests[(row.parent_seq, row.parent_step_key)]  # type: ignore[arg-type]
            for key in [key for key in self._requests if key[0] == row.seq]:
                self._tombstones.pop(self._requests.pop(key), None)
        self._failpoints.hit("prune.after_commit")
