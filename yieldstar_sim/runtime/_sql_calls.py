"""The runtime calls of the SQL adapters (DuckDB, PostgreSQL), written once over a few
primitives that each adapter supplies with its own connections, transactions and retries.

Both adapters keep the same named statements (``queries.sql``, ``postgres_queries.sql``) and
answer every call the same way; they differ in how a statement runs (a lost race retried on a
fresh snapshot, a transaction around an insert-or-find) and in what text a column can hold
(PostgreSQL refuses NUL, so a lookup of such an ID must find nothing without asking the server).
``SqlPrimitives`` names what an adapter supplies; ``SqlCalls`` is the calls over them.

Why a mixin over a Protocol, not a calls object the adapter holds: the calls are the adapter's
public methods (``DuckDBRuntime.trigger``, ``PostgresRuntime.claim``...), so composition would
need every one of them forwarded, with its signature and docstring, in both adapters: the
duplication this module removes, back again. The mixin holds no state and no plumbing; the
Protocol is its whole contract, and mypy checks that each adapter meets it (an adapter lacking
a primitive cannot be instantiated).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

import yieldstar_sim.runtime._common as common
from yieldstar_sim.core.ids import check_name, start_target_base, trigger_id_prefix
from yieldstar_sim.core.model import (
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
from yieldstar_sim.runtime._sql_attempts import SqlAttempts
from yieldstar_sim.runtime._sql_primitives import Rows, SqlPrimitives
from yieldstar_sim.runtime._sql_retries import TryAgain

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from yieldstar_sim.core.clock import Clock
    from yieldstar_sim.runtime.failpoints import FailPoints


R = TypeVar("R")


class SqlCalls(SqlAttempts, common.AdapterOptions, SqlPrimitives):
    """The runtime Protocol's calls for an adapter that supplies ``SqlPrimitives``."""

    def _insert_or_find(
        self,
        operation: str,
        insert: tuple[str, Mapping[str, object]],
        find: tuple[str, Mapping[str, object]],
        inserted: Callable[[Rows], R],
        found: Callable[[Rows], R | None],
    ) -> R:
        """Run ``insert`` in a transaction (``operation.before_commit`` before its COMMIT) and
        answer ``inserted(rows)``; when it inserted nothing, end the transaction and answer
        ``found`` of the rows of ``find``, running it all again while ``found`` answers
        ``None`` or a race is lost at any point (a conflict, a key committed first);
        ``operation.after_commit`` sits after a successful answer."""

        def once() -> R:
            if self._BEGIN is not None:
                self._execute(self._BEGIN)
            rows = self._execute(*insert)
            self._failpoints.hit(f"{operation}.before_commit")
            if rows:
                self._execute("commit")
                return inserted(rows)
            if self._END_UNUSED is not None:
                self._execute(self._END_UNUSED)
            answer = found(self._execute(*find))
            if answer is None:
                raise TryAgain(f"{operation}: what {find[0]} looked for was gone")
            return answer

        result = self._retried(operation, once, transaction=True)
        self._failpoints.hit(f"{operation}.after_commit")
        return result

    @property
    def clock(self) -> Clock:
        """The clock every call reads its time from."""
        return self._clock

    @property
    def failpoints(self) -> FailPoints:
        """The adapter's named failure points."""
        return self._failpoints

    # ------------------------------------------------------------------ admission

    def trigger(
        self, workflow_id: str, params: object = None, *, execution_id: str | None = None
    ) -> str:
        """Admit an execution with its first wake due now; return its ID."""
        workflow_id, encoded = common.check_trigger(workflow_id, params, execution_id)
        self._failpoints.hit("trigger.before_commit")
        rows = self._write(
            "trigger",
            {
                "execution_id": execution_id,
                "id_prefix": trigger_id_prefix(workflow_id),
                "workflow_id": workflow_id,
                "params": encoded,
                "now": self._clock.now(),
            },
        )
        if not rows:
            # The ID exists (only a caller-chosen one can): the policy answers. A pruned
            # execution has no record to return, and is refused as before.
            assert execution_id is not None
            existing = self.execution(execution_id)
            return common.existing_id_answer(
                self._on_existing_id, execution_id, workflow_id,
                None if existing is None else existing.workflow_id,
            )  # fmt: skip
        self._failpoints.hit("trigger.after_commit")
        return str(rows[0][0])

    def start(self, request: StartRequest) -> StartResult:
        """Admit the target of ``request``, or return the one it already admitted."""
        checked = common.check_start(request)
        if isinstance(checked, StartRejected):
            return checked
        insert = self._target_params(checked)
        insert["target_base"] = start_target_base(
            checked.workflow_id, checked.caller, checked.step_key
        )  # the target's ID, or with a suffix if it is held (start_target_id)
        find = {"caller": checked.caller, "step_key": checked.step_key}

        def found(rows: Rows) -> StartResult | None:
            if not rows:
                raise common.caller_not_found(checked)
            target_id, workflow_id, params, caller_status = rows[0]
            if target_id is None:
                if self._refuses(caller_status):
                    raise common.caller_terminal(checked, caller_status)
                return None  # the request vanished with a pruned caller: look again
            return common.mismatch(checked, target_id, workflow_id, params) or StartAccepted(
                str(target_id)
            )

        def inserted(rows: Rows) -> StartResult:
            return StartAccepted(str(rows[0][0]))

        return self._insert_or_find(
            "start", ("start_insert", insert), ("start_find", find), inserted, found
        )

    def start_child(self, request: ChildRequest) -> ChildResult:
        """Create the run ``child_id`` for the request, or join the run that has that ID."""
        checked = common.check_child(request)
        if isinstance(checked, StartRejected):
            return checked
        insert = self._target_params(checked)
        insert.update(child_id=checked.child_id, origin=checked.origin)
        find = {
            "caller": checked.caller,
            "step_key": checked.step_key,
            "child_id": checked.child_id,
        }

        def found(rows: Rows) -> ChildResult | None:
            if not rows:
                raise common.caller_not_found(checked)
            _, target, workflow_id, params, existing, existing_workflow, caller_status = rows[0]
            answer = common.child_answer(
                checked,
                None if target is None else (target, workflow_id, params),
                None if existing is None else (existing, existing_workflow),
            )
            if answer is None and self._refuses(caller_status):
                # Neither a request to repeat nor a run to join: a new child, refused.
                raise common.caller_terminal(checked, caller_status)
            return answer

        def inserted(rows: Rows) -> ChildResult:
            return ChildAccepted(checked.child_id, created=True)

        return self._insert_or_find(
            "start_child", ("child_insert", insert), ("child_find", find), inserted, found
        )

    def _target_params(
        self, checked: common.CheckedStart | common.CheckedChild
    ) -> dict[str, object]:
        """What a start's and a child's insert of their target both bind: the request, the time,
        and whether the orphan guard is on."""
        return {
            "workflow_id": checked.workflow_id,
            "params": checked.params,
            "caller": checked.caller,
            "step_key": checked.step_key,
            "detached": checked.detached,
            "now": self._clock.now(),
            "guard": self._orphan_guard,
        }

    def _refuses(self, caller_status: str) -> bool:
        """Whether the orphan guard refused a new target of a caller in ``caller_status``."""
        return self._orphan_guard and ExecutionStatus(caller_status).terminal

    def cancel(self, execution_id: str) -> list[str]:
        """Request cancellation of an execution and of what it owns; returns the executions
        whose cancellation was newly requested (terminal ones are left as they are)."""
        self._failpoints.hit("cancel.before_commit")
        rows = (
            self._write("cancel", {"execution_id": execution_id, "now": self._clock.now()})
            if self._admits(execution_id)
            else []
        )
        if not rows and self.execution(execution_id) is None:
            raise ExecutionNotFoundError(f"execution {execution_id!r} does not exist")
        self._failpoints.hit("cancel.after_commit")
        return sorted(str(row[0]) for row in rows)

    # ------------------------------------------------------------------ reads

    def execution(self, execution_id: str) -> ExecutionRecord | None:
        """The record of one execution, or ``None``."""
        if not self._admits(execution_id):
            return None
        rows = self._read("execution", {"execution_id": execution_id})
        return common.execution_record(rows[0]) if rows else None

    def executions(self) -> list[ExecutionRecord]:
        """Every execution, in admission order."""
        return [common.execution_record(row) for row in self._read("executions")]

    def steps(self, execution_id: str) -> list[StepRecord]:
        """The recorded steps of one execution, in the order they were first recorded."""
        if not self._admits(execution_id):
            return []
        rows = self._read("step_log", {"execution_id": execution_id})
        return common.parse_step_log(execution_id, rows[0][0]) if rows else []

    def start_requests(self) -> list[StartRequestRecord]:
        """Every retained start request with its target."""
        return [
            common.start_request_record(common.execution_record(row))
            for row in self._read("start_requests")
        ]

    def due(self) -> list[str]:
        """The executions a claim could take now, in claim order."""
        return [str(row[0]) for row in self._read("due", {"now": self._clock.now()})]

    def next_wake_at(self) -> float | None:
        """The earliest time at which some execution becomes claimable."""
        value = self._read("next_wake_at")[0][0]
        return None if value is None else float(value)

    # ------------------------------------------------------------------ leases

    def claim(
        self, owner: str, *, lease_seconds: float, execution_id: str | None = None
    ) -> Delivery | None:
        """Lease the first claimable execution (or the named one) to ``owner``."""
        check_name(owner, "the lease owner")
        lease_seconds = common.check_seconds(lease_seconds, "lease_seconds", positive=True)
        now = self._clock.now()
        self._failpoints.hit("claim.before_commit")
        rows = (
            self._write(
                "claim",
                {
                    "owner": owner,
                    "expires_at": now + lease_seconds,
                    "execution_id": execution_id,
                    "now": now,
                },
            )
            if self._admits(execution_id)
            else []
        )
        delivery = None
        if rows:
            *columns, step_log = rows[0]
            record = common.execution_record(columns)
            assert record.lease is not None
            delivery = Delivery(
                record.lease, record, tuple(common.parse_step_log(record.execution_id, step_log))
            )
        self._failpoints.hit("claim.after_commit")
        return delivery

    def _fenced(self, name: str, lease: Lease, params: dict[str, object]) -> Rows:
        """Run the fenced write ``name`` under ``lease``; refuse it if the lease is stale."""
        common.check_lease(lease)
        now = self._clock.now()
        self._failpoints.hit(f"{name}.before_commit")
        params.update(
            execution_id=lease.execution_id,
            incarnation=lease.incarnation,
            owner=lease.owner,
            token=lease.token,
            now=now,
        )
        rows = self._write(name, params) if self._admits(lease.execution_id) else []
        if not rows:
            raise common.lease_lost(lease, self.execution(lease.execution_id), now)
        return rows

    def renew(self, lease: Lease, *, lease_seconds: float) -> Lease:
        """Extend a held lease to ``lease_seconds`` from now."""
        lease_seconds = common.check_seconds(lease_seconds, "lease_seconds", positive=True)
        expires_at = self._clock.now() + lease_seconds
        self._fenced("renew", lease, {"expires_at": expires_at})
        self._failpoints.hit("renew.after_commit")
        # The value the write stored: reading it back (RETURNING) costs DuckDB a few ms.
        return replace(lease, expires_at=expires_at)

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
        entry = common.step_entry(write, self._clock.now())
        self._fenced("put_step", lease, {"entry": entry, "wake_at": wake_at})
        self._failpoints.hit("put_step.after_commit")

    def record_wake(self, lease: Lease, at: float) -> None:
        """Make the execution due again at ``at`` (the earliest recorded wake wins)."""
        at = common.check_seconds(at, "the wake time")
        self._fenced("record_wake", lease, {"at": at})
        self._failpoints.hit("record_wake.after_commit")

    def acknowledge(self, lease: Lease, outcome: WorkflowRunOutcome) -> ExecutionRecord:
        """Record a delivery's outcome and give up the lease; a terminal outcome wakes every
        execution waiting for this one."""
        if isinstance(outcome, ContinuedAsNew):
            return self._continue_as_new(lease, outcome)
        status, result, error = common.outcome_columns(outcome)
        if not ExecutionStatus(status).terminal:
            rows = self._fenced(
                "acknowledge",
                lease,
                {"status": status, "result": result, "error": error, "terminal": False},
            )
            self._failpoints.hit("acknowledge.after_commit")
            return common.execution_record(rows[0])
        common.check_lease(lease)
        now = self._clock.now()
        self._failpoints.hit("acknowledge.before_commit")
        params: dict[str, object] = {
            "execution_id": lease.execution_id,
            "incarnation": lease.incarnation,
            "owner": lease.owner,
            "token": lease.token,
            "now": now,
            "status": status,
            "result": result,
            "error": error,
        }
        rows = (
            self._write("acknowledge_terminal", params) if self._admits(lease.execution_id) else []
        )
        mine = [row for row in rows if row[0] == lease.execution_id]
        if not mine:
            raise common.lease_lost(lease, self.execution(lease.execution_id), now)
        self._failpoints.hit("acknowledge.after_commit")
        return common.execution_record(mine[0])

    def wait_for(self, lease: Lease, execution_id: str) -> ExecutionRecord | None:
        """Register that the leased execution waits for ``execution_id`` (whose terminal
        outcome will wake it), then read that execution. Fenced."""
        check_name(execution_id, "the execution to wait for")
        self._fenced("wait_for", lease, {"target": execution_id})
        self._failpoints.hit("wait_for.after_commit")
        return self.execution(execution_id)

    def release(self, lease: Lease, *, delay: float) -> None:
        """Give up the lease without an outcome; the execution is due again after ``delay``."""
        delay = common.check_seconds(delay, "the redelivery delay")
        self._fenced("release", lease, {"due_at": self._clock.now() + delay})
        self._failpoints.hit("release.after_commit")

    # ------------------------------------------------------------------ retention

    def prune(self, execution_id: str) -> None:
        """Remove a terminal execution with its steps, wake and start-request records."""
        self._failpoints.hit("prune.before_commit")
        target = {"execution_id": execution_id}
        deleted = self._write("prune", target) if self._admits(execution_id) else []
        if not any(row[0] == execution_id for row in deleted):
            tombstoned = (
                self._write("prune_to_tombstone", target) if self._admits(execution_id) else []
            )
            if tombstoned:
                self._write("prune_requests", {"seq": tombstoned[0][0]})
            else:
                record = self.execution(execution_id)
                if record is None:
                    raise ExecutionNotFoundError(f"execution {execution_id!r} does not exist")
                raise ExecutionStateError(
                    f"execution {execution_id!r} is {record.status}; only a terminal execution "
                    "can be pruned"
                )
        self._failpoints.hit("prune.after_commit")
