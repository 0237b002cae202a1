"""The PostgreSQL runtime: the runtime Protocol on a real server, through psycopg 3.

Install it with ``pip install 'yieldstar-sim[postgres]'``. Every runtime object keeps its tables
in a schema of its own, created when it opens and dropped when it closes, so that any number of
runtimes (one per simulated run, tests in parallel) share one database without seeing each
other; pass ``schema=`` to open a named schema instead (made if missing, kept on close), which
is how several processes share one runtime's tables.

Every transaction is SERIALIZABLE, so a race between connections surfaces as a serialization
failure (or a deadlock, or a unique violation), and the call is run again on a fresh snapshot,
a bounded number of times: a losing start finds the winner's target, a losing claim finds the
next execution or nothing, a losing fenced write finds the new lease and is refused
(docs/decisions.md, "PostgreSQL isolation and locking").

``runtime="postgres"`` in ``simulate``, ``explore`` and the CLI opens one on the server that the
environment variable ``YIELDSTAR_PG_DSN`` names (a libpq connection string), by ``from_env``.

>>> runtime = PostgresRuntime("host=/tmp/pg dbname=postgres")  # doctest: +SKIP
>>> runtime.trigger("charge-order", {"order": 42}, execution_id="order-42")  # doctest: +SKIP
'order-42'
"""

from __future__ import annotations

import os
import random
import secrets
import threading
import time
import weakref
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg import sql as pgsql
from psycopg.pq import TransactionStatus

from yieldstar_sim.core.clock import Clock, ManualClock
from yieldstar_sim.core.model import (
    ChildAccepted,
    ChildRequest,
    ChildResult,
    Delivery,
    ExecutionNotFoundError,
    ExecutionRecord,
    ExecutionStateError,
    ExecutionStatus,
    InfrastructureError,
    Lease,
    StartAccepted,
    StartRejected,
    StartRequest,
    StartRequestRecord,
    StartResult,
    StepRecord,
    StepStatus,
    WorkflowRunOutcome,
    check_name,
)
from yieldstar_sim.runtime import _common as common
from yieldstar_sim.runtime.failpoints import FailPoints
from yieldstar_sim.runtime.postgres_connections import (
    CREATE_SCHEMA,
    DSN_VARIABLE,
    MAX_BACKOFF_SECONDS,
    MAX_RETRIES,
    QUERIES,
    RETRYABLE,
    SCHEMA,
    SESSION,
    Connections,
    Holder,
    check_schema,
    first_line,
    storable,
    where,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    Connection = psycopg.Connection[tuple[Any, ...]]

R = TypeVar("R")


def from_env(*, clock: Clock | None = None, **options: Any) -> PostgresRuntime:
    """A ``PostgresRuntime`` on the server ``YIELDSTAR_PG_DSN`` names: the factory behind
    ``runtime="postgres"`` (also usable as ``"yieldstar_sim.runtime.postgres:from_env"``)."""
    from yieldstar_sim.runtime.factory import RuntimeChoiceError

    dsn = os.environ.get(DSN_VARIABLE, "").strip()
    if not dsn:
        raise RuntimeChoiceError(
            f"runtime 'postgres' needs a server: set {DSN_VARIABLE} to a libpq connection "
            "string, e.g. 'host=/tmp/pg dbname=postgres' (scripts/postgres.sh start makes one)"
        )
    return PostgresRuntime(dsn, clock=clock, **options)


class PostgresRuntime:
    """A runtime adapter over PostgreSQL tables that it creates itself, in its own schema.

    ``dsn`` is a libpq connection string (``"host=/tmp/pg dbname=postgres"``, or a
    ``postgresql://`` URL). Without ``schema`` the runtime creates a fresh schema and drops it
    on ``close`` (or when it is garbage collected, or at exit); with ``schema`` it opens that
    schema, creating its tables if they are missing, and leaves it in place on close. ``clock``
    supplies virtual time (without one, time stands at 0); ``orphan_guard`` and
    ``on_existing_id`` are as on ``DuckDBRuntime``. Each thread gets its own connection. A call
    that loses ``max_retries`` races in a row raises ``InfrastructureError``.
    """

    def __init__(
        self,
        dsn: str,
        *,
        clock: Clock | None = None,
        orphan_guard: bool = True,
        on_existing_id: str = "refuse",
        schema: str | None = None,
        max_retries: int = MAX_RETRIES,
    ) -> None:
        if not isinstance(dsn, str) or not dsn.strip():
            raise ValueError(f"dsn must be a libpq connection string, not {dsn!r}")
        self._clock: Clock = clock if clock is not None else ManualClock()
        self._orphan_guard = common.check_orphan_guard(orphan_guard)
        self._on_existing_id = common.check_on_existing_id(on_existing_id)
        self._failpoints = FailPoints()
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 1:
            raise ValueError(f"max_retries must be a whole number from 1, not {max_retries!r}")
        self.max_retries = max_retries
        """How many races in a row one call may lose before it raises InfrastructureError."""
        self._dsn = dsn
        owned = schema is None
        self.schema = (
            f"yieldstar_{secrets.token_hex(6)}" if schema is None else check_schema(schema)
        )
        """The schema holding this runtime's tables."""
        self._connections = Connections(dsn, self.schema, owned=owned)
        self._release = weakref.finalize(self, self._connections.release)
        self._local = threading.local()
        self._count_lock = threading.Lock()
        self._jitter = random.Random()
        self.statements = 0
        """SQL statements issued so far (a BEGIN, COMMIT or ROLLBACK counts as one)."""
        self.retries = 0
        """Calls (or parts of calls) run again after a serialization failure or deadlock."""
        self._create_schema()

    def _create_schema(self) -> None:
        """Create the schema and its tables unless they exist, one opener at a time."""
        connection = self._connection_of_thread()
        identifier = pgsql.Identifier(self.schema)
        try:
            with connection.transaction():
                connection.execute(QUERIES["lock_schema"], {"schema": self.schema})
                found = connection.execute(QUERIES["schema_tables"], {"schema": self.schema})
                row = found.fetchone()
                if row is not None and row[0]:
                    return
                connection.execute(pgsql.SQL(CREATE_SCHEMA).format(schema=identifier))
                connection.execute(SCHEMA)
            self._connections.created = True
        except psycopg.Error as error:
            self.close()
            raise InfrastructureError(
                f"creating the runtime's tables in schema {self.schema!r} on "
                f"{where(self._dsn)}: {first_line(error)}"
            ) from None

    def __repr__(self) -> str:
        return f"PostgresRuntime(schema={self.schema!r}, now={self._clock.now():g})"

    @property
    def clock(self) -> Clock:
        """The clock every call reads its time from."""
        return self._clock

    @property
    def failpoints(self) -> FailPoints:
        """The adapter's named failure points."""
        return self._failpoints

    @property
    def connection(self) -> Connection:
        """This thread's connection to the runtime's schema, for queries of your own."""
        return self._connection_of_thread()

    def sql(
        self, query: str, params: Sequence[object] | Mapping[str, object] | None = None
    ) -> list[tuple[Any, ...]]:
        """Run a query of your own against the runtime's tables and return its rows."""
        cursor = self._connection_of_thread().execute(query, params)
        return cursor.fetchall() if cursor.description is not None else []

    def close(self) -> None:
        """Drop the runtime's own schema (not a named one) and close its connections."""
        self._release()

    # ------------------------------------------------------------------ plumbing

    def _connection_of_thread(self) -> Connection:
        holder: Holder | None = getattr(self._local, "holder", None)
        if holder is not None and not holder.connection.closed:
            return holder.connection
        if not self._release.alive:
            raise InfrastructureError(f"the PostgreSQL runtime (schema {self.schema!r}) is closed")
        connection = self._connections.take() or self._connect()
        holder = Holder(connection)
        weakref.finalize(holder, self._connections.give_back, connection)
        self._local.holder = holder
        return connection

    def _connect(self) -> Connection:
        try:
            connection = psycopg.connect(self._dsn, autocommit=True)
        except psycopg.Error as error:
            raise InfrastructureError(
                f"cannot connect to PostgreSQL at {where(self._dsn)}: {first_line(error)}"
            ) from None
        with self._connections.lock:
            self._connections.open.append(connection)
        # SERIALIZABLE for every transaction, explicit or single-statement.
        connection.execute(pgsql.SQL(SESSION).format(schema=pgsql.Identifier(self.schema)))
        return connection

    def _execute(
        self, name: str, params: Mapping[str, object] | None = None
    ) -> list[tuple[Any, ...]]:
        with self._count_lock:
            self.statements += 1
        try:
            cursor = self._connection_of_thread().execute(QUERIES[name], params)
        except RETRYABLE:
            raise
        except psycopg.OperationalError as error:
            raise InfrastructureError(
                f"PostgreSQL runtime, {name}: the server at {where(self._dsn)} failed: "
                f"{first_line(error)}"
            ) from None
        return cursor.fetchall() if cursor.description is not None else []

    def _backoff(self, attempt: int) -> None:
        with self._count_lock:
            self.retries += 1
        # Jittered so that the losers of one race do not meet again at once.
        time.sleep(self._jitter.uniform(0, min(MAX_BACKOFF_SECONDS, 0.001 * 2**attempt)))

    def _rollback_quietly(self) -> None:
        # A failed statement aborts its transaction; end it before trying again.
        connection = self._connection_of_thread()
        if connection.info.transaction_status != TransactionStatus.IDLE:
            self._execute("rollback")

    def _gave_up(self, name: str, error: BaseException | None) -> InfrastructureError:
        return InfrastructureError(
            f"{name}: gave up after {self.max_retries} lost races in a row (serialization failures "
            f"or deadlocks; the last: {first_line(error) if error else 'none'})"
        )

    def _write(
        self, name: str, params: Mapping[str, object] | None = None
    ) -> list[tuple[Any, ...]]:
        """Run one statement in its own transaction, again after a lost race (reads too: a
        SERIALIZABLE read can fail to serialize)."""
        last: BaseException | None = None
        for attempt in range(self.max_retries):
            try:
                return self._execute(name, params)
            except RETRYABLE as error:
                last = error
                self._rollback_quietly()
                self._backoff(attempt)
        raise self._gave_up(name, last)

    _read = _write

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
        insert = {
            "workflow_id": checked.workflow_id,
            "params": checked.params,
            "caller": checked.caller,
            "step_key": checked.step_key,
            "detached": checked.detached,
            "now": self._clock.now(),
            "guard": self._orphan_guard,
        }
        find = {"caller": checked.caller, "step_key": checked.step_key}

        def found(rows: list[tuple[Any, ...]]) -> StartResult | None:
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

        def inserted(rows: list[tuple[Any, ...]]) -> StartResult:
            return StartAccepted(str(rows[0][0]))

        return self._insert_or_find(
            "start", ("start_insert", insert), ("start_find", find), inserted, found
        )

    def _insert_or_find(
        self,
        operation: str,
        insert: tuple[str, Mapping[str, object]],
        find: tuple[str, Mapping[str, object]],
        inserted: Callable[[list[tuple[Any, ...]]], R],
        found: Callable[[list[tuple[Any, ...]]], R | None],
    ) -> R:
        """Insert inside a transaction (``operation.before_commit`` sits before its COMMIT), or,
        when the guarded INSERT inserted nothing, end the transaction and read what is there.
        A race lost at any point (a serialization failure, a key committed first) is tried
        again from the start."""
        last: BaseException | None = None
        for attempt in range(self.max_retries):
            try:
                self._execute("begin")
                rows = self._execute(*insert)
                self._failpoints.hit(f"{operation}.before_commit")
                if rows:
                    self._execute("commit")
                    result = inserted(rows)
                else:
                    self._execute("rollback")
                    answer = found(self._execute(*find))
                    if answer is None:
                        continue
                    result = answer
            except RETRYABLE as error:
                last = error
                self._rollback_quietly()
                self._backoff(attempt)
                continue
            except BaseException:
                self._rollback_quietly()
                raise
            self._failpoints.hit(f"{operation}.after_commit")
            return result
        raise self._gave_up(operation, last)

    def start_child(self, request: ChildRequest) -> ChildResult:
        """Create the run ``child_id`` for the request, or join the run that has that ID."""
        checked = common.check_child(request)
        if isinstance(checked, StartRejected):
            return checked
        insert = {
            "child_id": checked.child_id,
            "workflow_id": checked.workflow_id,
            "params": checked.params,
            "origin": checked.origin,
            "caller": checked.caller,
            "step_key": checked.step_key,
            "detached": checked.detached,
            "now": self._clock.now(),
            "guard": self._orphan_guard,
        }
        find = {
            "caller": checked.caller,
            "step_key": checked.step_key,
            "child_id": checked.child_id,
        }

        def found(rows: list[tuple[Any, ...]]) -> ChildResult | None:
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

        def inserted(rows: list[tuple[Any, ...]]) -> ChildResult:
            return ChildAccepted(checked.child_id, created=True)

        return self._insert_or_find(
            "start_child", ("child_insert", insert), ("child_find", find), inserted, found
        )

    def _refuses(self, caller_status: str) -> bool:
        """Whether the orphan guard refused a new target of a caller in ``caller_status``."""
        return self._orphan_guard and ExecutionStatus(caller_status).terminal

    def cancel(self, execution_id: str) -> list[str]:
        """Request cancellation of an execution and of what it owns; returns the executions
        whose cancellation was newly requested (terminal ones are left as they are)."""
        self._failpoints.hit("cancel.before_commit")
        rows = (
            self._write("cancel", {"execution_id": execution_id, "now": self._clock.now()})
            if storable(execution_id)
            else []
        )
        if not rows and self.execution(execution_id) is None:
            raise ExecutionNotFoundError(f"execution {execution_id!r} does not exist")
        self._failpoints.hit("cancel.after_commit")
        return sorted(str(row[0]) for row in rows)

    # ------------------------------------------------------------------ reads

    def execution(self, execution_id: str) -> ExecutionRecord | None:
        """The record of one execution, or ``None``."""
        if not storable(execution_id):
            return None
        rows = self._read("execution", {"execution_id": execution_id})
        return common.execution_record(rows[0]) if rows else None

    def executions(self) -> list[ExecutionRecord]:
        """Every execution, in admission order."""
        return [common.execution_record(row) for row in self._read("executions")]

    def steps(self, execution_id: str) -> list[StepRecord]:
        """The recorded steps of one execution, in the order they were first recorded."""
        if not storable(execution_id):
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
            if storable(execution_id)
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

    def _fenced(self, name: str, lease: Lease, params: dict[str, object]) -> list[tuple[Any, ...]]:
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
        rows = self._write(name, params) if storable(lease.execution_id) else []
        if not rows:
            raise common.lease_lost(lease, self.execution(lease.execution_id), now)
        return rows

    def renew(self, lease: Lease, *, lease_seconds: float) -> Lease:
        """Extend a held lease to ``lease_seconds`` from now."""
        lease_seconds = common.check_seconds(lease_seconds, "lease_seconds", positive=True)
        rows = self._fenced("renew", lease, {"expires_at": self._clock.now() + lease_seconds})
        self._failpoints.hit("renew.after_commit")
        return replace(lease, expires_at=float(rows[0][0]))

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
        write = common.check_step(step_key, status, value, attempt)
        if wake_at is not None:
            wake_at = common.check_seconds(wake_at, "wake_at")
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
        rows = self._write("acknowledge_terminal", params) if storable(lease.execution_id) else []
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
        deleted = self._write("prune", target) if storable(execution_id) else []
        if not any(row[0] == execution_id for row in deleted):
            tombstoned = self._write("prune_to_tombstone", target) if storable(execution_id) else []
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
