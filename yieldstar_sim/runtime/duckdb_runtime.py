"""The DuckDB runtime: the default adapter, embedded, in memory or in a file.

Most runtime calls are one SQL statement of ``queries.sql``, each parsed once per process (a new
start is one INSERT inside an explicit transaction, so a failure point can sit between it and
its COMMIT; a claim reads its row, then takes it by compare-and-swap). Threads each get their
own cursor; DuckDB's optimistic concurrency turns races into conflicts, which are retried here
as re-reads, never surfaced as errors (docs/decisions.md, "DuckDB concurrency"). A runtime that
is its database's one writer also follows its queue (``duckdb_queue``), the rows it leased and
the reads it made since its last write, and answers from them what needs no statement
(docs/decisions.md, "The DuckDB path").

A start request sent twice (a retry after a lost response) finds its first target in the
table: one request, one target.

>>> from yieldstar_sim import DuckDBRuntime, RequestId, StartRequest
>>> runtime = DuckDBRuntime()
>>> runtime.trigger("charge-order", {"order": 42}, execution_id="order-42")
'order-42'
>>> ship = StartRequest(RequestId("order-42", "ship"), "ship-order", {"order": 42})
>>> runtime.start(ship) == runtime.start(ship)
True
>>> [record.execution_id for record in runtime.executions()]
['order-42', '@ship-order:order-42/ship']
"""

from __future__ import annotations

import contextlib
import re
import threading
import weakref
from importlib import resources
from typing import TYPE_CHECKING, Any

import duckdb

import yieldstar_sim.runtime._common as common
from yieldstar_sim.core.model import (
    ExecutionRecord,
    InfrastructureError,
    StartRequestRecord,
    StepRecord,
)
from yieldstar_sim.runtime._sql_calls import SqlCalls
from yieldstar_sim.runtime.duckdb_files import (
    DatabaseFileError,
    connect,
    runtime_columns,
    schema_problem,
)
from yieldstar_sim.runtime.duckdb_pool import POOL, Held
from yieldstar_sim.runtime.duckdb_queue import QueueModel
from yieldstar_sim.runtime.sql_files import SHARED, include, load_queries

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path

    from yieldstar_sim.core.clock import Clock

#: A race lost to another connection: roll back and try again on a fresh snapshot.
_RACE_ERRORS = (duckdb.TransactionException, duckdb.ConstraintException)
_MAX_RACE_RETRIES = 1000


_PACKAGE = resources.files("yieldstar_sim.runtime")
SCHEMA = include((_PACKAGE / "schema.sql").read_text(encoding="utf-8"), SHARED)
QUERIES = load_queries((_PACKAGE / "queries.sql").read_text(encoding="utf-8"), SHARED)


def _statement_count(sql: str) -> int:
    return sum(1 for part in sql.split(";") if part.strip())


_STATEMENTS = {name: _statement_count(sql) for name, sql in QUERIES.items()}
#: Each named query parsed once per process, on first use: ``execute`` takes a parsed
#: ``duckdb.Statement`` (it runs a copy), which skips the parser, 35-45% of a statement's cost on
#: duckdb 2.0 (docs/decisions.md, "The DuckDB path"). A block of several statements is several.
_PARSED: dict[str, tuple[duckdb.Statement, ...]] = {}
_PARAMETERS = {name: frozenset(re.findall(r"\$(\w+)", sql)) for name, sql in QUERIES.items()}
#: The statements that write nothing (a plain SELECT).
_READS = frozenset(
    name
    for name, sql in QUERIES.items()
    if re.match(r"(?:\s|--[^\n]*\n)*SELECT\b", sql, re.IGNORECASE)
)
#: The writes the queue model follows (``duckdb_queue``): those that change no row's ready
#: time (a step or a wake recorded under a lease, whose expiry decides; transactions; prunes,
#: which touch terminal rows only; an event's own row, sent or taken) and those whose change the
#: model applies after them. Any other write, and any statement that fails, drops the model.
_FOLLOWED = frozenset(
    {
        "begin", "commit", "rollback", "start_find", "child_find",
        "put_step", "record_wake",
        "prune", "prune_to_tombstone_rows", "prune_to_tombstone", "prune_requests",
        "trigger", "start_insert", "child_insert", "claim_take", "renew", "release", "wait_for",
        "acknowledge", "acknowledge_terminal", "cancel_rows", "cancel",
        "event_insert", "event_wake", "event_take",
        "continue_end", "continue_insert", "waiters_wake",
    }
)  # fmt: skip
_TERMINAL = frozenset({"completed", "failed", "cancelled", "dead-lettered", "continued-as-new"})
_SCHEMA_OBJECTS = 7  # two tables, three views, the sequence and the macro of schema.sql

_COLUMNS = common.EXECUTION_COLUMNS
_SEQ, _STATUS = _COLUMNS.index("seq"), _COLUMNS.index("status")
_RESULT, _ERROR = _COLUMNS.index("result"), _COLUMNS.index("error")
_FINISHED, _DUE = _COLUMNS.index("finished_at"), _COLUMNS.index("due_at")
_OWNER, _TOKEN = _COLUMNS.index("lease_owner"), _COLUMNS.index("lease_token")
_EXPIRES, _WAITING = _COLUMNS.index("lease_expires_at"), _COLUMNS.index("waiting_on")
_RECOVERIES = _COLUMNS.index("recoveries")

#: A leased row as this runtime last knew it: its record columns (``EXECUTION_COLUMNS``) and
#: its ``revision``, the one a compare-and-swap names.
_Known = tuple[tuple[Any, ...], int]


#: The database's settings for the adapter's own statements, chosen by measurement
#: (docs/decisions.md, "The DuckDB path"): one thread (its statements touch a few rows), and no
#: optimizer, whose planning costs more than it saves on a table of a few hundred rows (a
#: durable-start run 77 -> 51 ms; still no slower at 3,000 rows). Queries of your own
#: (``connection``, ``sql``) get the optimizer back (``_YOUR_OWN``).
SETTINGS = "SET threads TO 1; SET enable_optimizer = false"
_YOUR_OWN = "SET enable_optimizer = true"


class DuckDBRuntime(SqlCalls):
    """A runtime adapter over DuckDB tables that it creates itself.

    ``path`` is ``":memory:"`` (a private in-memory database, the default) or a file path; an
    existing file with the schema is reused, so a run can be inspected afterwards. ``clock``
    supplies virtual time; without one, time stands at 0. ``orphan_guard`` (on by default)
    keeps owned targets with their owner: a new start or child requested by a terminal caller
    is refused with ``TerminalCallerError`` (a repeat of a request it made is still answered),
    and an owned target admitted while its owner's cancellation is requested starts with its
    own cancellation requested. Switch it off only to show the hazard it prevents (the bundled
    ``orphan-after-cancel`` scenario). ``on_existing_id`` is the answer to a trigger whose
    caller-chosen ID exists: ``"refuse"`` (EXECUTION_EXISTS, the default) or
    ``"return_existing"`` (the existing execution's ID, for the same workflow).
    """

    _RACE_ERRORS = _RACE_ERRORS
    _race_retries = _MAX_RACE_RETRIES
    # queries.sql's insert statements open their transaction (BEGIN TRANSACTION) and the find
    # statements after them end it (ROLLBACK): one round trip each.
    _BEGIN = None
    _END_UNUSED = None

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        clock: Clock | None = None,
        orphan_guard: bool = True,
        on_existing_id: str = "refuse",
    ) -> None:
        self._keep_options(clock, orphan_guard, on_existing_id)
        self.path = str(path)
        self._local = threading.local()
        self._count_lock = threading.Lock()
        self._closed = False
        self.statements = 0
        """SQL statements issued so far (a BEGIN or COMMIT counts as one)."""
        # Only a private in-memory database goes back to the pool; a file holds one run.
        poolable = self.path == ":memory:"
        pooled = POOL.take() if poolable else None
        if pooled is not None:
            self._connection = pooled
        else:
            # duckdb.connect of one file twice in a process shares one database instance, so
            # several runtime objects (threads) can use one file; another process cannot.
            self._connection = connect(self.path)
            try:
                self._connection.execute(SETTINGS)
                self._create_schema()
            except BaseException:
                self._connection.close()
                raise
        self._held = Held(self._connection, poolable)
        # A private in-memory database starts empty, fresh or reset: this runtime can follow
        # its queue from here, as long as it is the database's one writer (duckdb_queue).
        self._queue: QueueModel | None = QueueModel() if poolable else None
        # Write statements issued so far: what the reads kept below are as of. They answer only
        # while nothing was written since and this runtime is the database's one writer (its
        # queue model stands), as a statement would.
        self._writes = 0
        self._inserted: tuple[int, tuple[Any, ...]] | None = None  # the last admitted row
        self._uncommitted: tuple[Any, ...] | None = None  # a start's or child's, until COMMIT
        self._snapshot: tuple[int, dict[str, tuple[Any, ...]], list[tuple[Any, ...]]] | None = None
        self._optimizing = False
        # The rows this runtime leased, as its claim read them and its fenced writes changed
        # them since (by execution ID): what lets an acknowledgement skip reading its record.
        self._leased: dict[str, _Known] = {}
        self._cursors = self._held.cursors
        finalizer = weakref.finalize(self, POOL.returned, self._held)
        finalizer.atexit = False
        self._finalizer = finalizer

    def _create_schema(self) -> None:
        """Create the tables unless they exist: opening an existing database writes nothing to
        its catalog, and a creation that races another open of the same file is retried as a
        re-read (the other open created them)."""
        for _ in range(_MAX_RACE_RETRIES):
            found = self._connection.execute(QUERIES["schema_objects"]).fetchall()[0][0]
            if found:  # a file made before: by this version, an older one, or someone else
                problem = schema_problem(self._connection, runtime_columns(SCHEMA))
                if problem is not None:
                    raise DatabaseFileError(f"{self.path!r} {problem}")
            if found == _SCHEMA_OBJECTS:
                return
            try:
                self._connection.execute(f"BEGIN TRANSACTION;\n{SCHEMA}\nCOMMIT;")
            except _RACE_ERRORS:
                with contextlib.suppress(duckdb.TransactionException):
                    self._connection.execute("ROLLBACK")
            else:
                return
        raise InfrastructureError(f"creating the schema: gave up after {_MAX_RACE_RETRIES} races")

    def __repr__(self) -> str:
        return f"DuckDBRuntime({self.path!r}, now={self._clock.now():g})"

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """A cursor of the runtime's database for this thread, for queries of your own."""
        self._for_your_own()
        return self._cursor()

    def sql(
        self, query: str, params: Sequence[object] | Mapping[str, object] | None = None
    ) -> list[tuple[Any, ...]]:
        """Run a query of your own against the runtime's tables and return its rows."""
        self._for_your_own()
        return self._cursor().execute(query, params).fetchall()

    def _for_your_own(self) -> None:
        """Queries of your own: they may leave what a reset does not undo (the database is not
        pooled), and they may join and aggregate (the optimizer is back on, for everyone)."""
        self._held.poolable = False
        self._queue = None  # your own writes are not followed
        if not self._optimizing:
            self._optimizing = True
            self._cursor().execute(_YOUR_OWN)

    def close(self) -> None:
        """Close the database connection (a private in-memory database goes back to the
        process's pool, emptied; this runtime can no longer reach it)."""
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        with self._count_lock:
            cursors = list(self._cursors)
            self._cursors.clear()
        for cursor in cursors:
            # Closing a cursor ends its open transaction, if any.
            with contextlib.suppress(duckdb.Error):
                cursor.close()
        if self._held.poolable:
            POOL.give(self._connection)
        else:
            self._connection.close()

    # ------------------------------------------------------------------ plumbing

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        cursor: duckdb.DuckDBPyConnection | None = getattr(self._local, "cursor", None)
        if cursor is None:
            if self._closed:
                # As a closed connection says: the database may serve another run now.
                raise duckdb.ConnectionException("Connection already closed!")
            cursor = self._connection.cursor()
            self._local.cursor = cursor
            with self._count_lock:
                self._cursors.append(cursor)
                if len(self._cursors) > 1:
                    # A second thread: writes can now commit in another order than the queue
                    # model would follow them in.
                    self._queue = None
        return cursor

    def _execute(
        self, name: str, params: Mapping[str, object] | None = None
    ) -> list[tuple[Any, ...]]:
        """Run the named call's statements: most are one statement of ``queries.sql``; the
        claim and the fenced writes are composed here (``_COMPOSED``), because on DuckDB an
        ``UPDATE ... RETURNING`` costs several plain statements (docs/decisions.md)."""
        composed = _COMPOSED.get(name)
        if composed is not None:
            assert params is not None
            return composed(self, name, params)
        rows = self._statement(name, params)
        if name == "trigger":
            self._inserted = (self._writes, rows[0]) if rows else None
        elif name in ("start_insert", "child_insert"):
            self._uncommitted = rows[0] if rows else None
        elif name == "commit":
            if self._uncommitted is not None:
                self._inserted, self._uncommitted = (self._writes, self._uncommitted), None
        elif name in ("rollback", "start_find", "child_find"):
            self._uncommitted = None
        queue = self._queue
        if queue is not None:
            self._follow(queue.wrote(name, params, rows))
        return rows

    def _statement(
        self, name: str, params: Mapping[str, object] | None = None
    ) -> list[tuple[Any, ...]]:
        with self._count_lock:
            self.statements += _STATEMENTS[name]
        if params is not None and len(params) != len(_PARAMETERS[name]):
            # A composed call's statements share its parameters; DuckDB refuses unused ones.
            params = {key: params[key] for key in _PARAMETERS[name]}
        cursor = self._cursor()
        parsed = _PARSED.get(name)
        if parsed is None:
            # Parsing needs a connection, not a particular one: every connection parses alike.
            parsed = _PARSED[name] = tuple(cursor.extract_statements(QUERIES[name]))
        *opening, last = parsed
        if name in _READS:
            return cursor.execute(last, params).fetchall()
        if name not in _FOLLOWED:
            self._queue = None
        self._writes += 1
        try:
            for statement in opening:  # BEGIN or ROLLBACK before the statement of the block
                cursor.execute(statement)
            return cursor.execute(last, params).fetchall()
        except BaseException:
            if name != "rollback":  # a ROLLBACK with no transaction open changed nothing
                self._queue = None
            raise

    # Reads kept while nothing is written: the simulator reads each execution it admitted right
    # after admitting it (the insert answered its row), and a run's end reads the executions,
    # the start requests and every execution's steps in a row (one `snapshot` read answers
    # all three). Only a runtime whose queue model stands (its database's one writer) keeps
    # them; any write statement makes them stale.

    def execution(self, execution_id: str) -> ExecutionRecord | None:
        """The record of one execution, or ``None``."""
        inserted = self._inserted
        if inserted is not None and inserted[1][0] == execution_id and self._fresh(inserted[0]):
            return common.execution_record(inserted[1])
        snapshot = self._fresh_snapshot()
        if snapshot is None:
            return super().execution(execution_id)
        row = snapshot.get(execution_id)
        if row is None or row[_STATUS] == "pruned":
            return None
        return common.execution_record(row[: len(_COLUMNS)])

    def executions(self) -> list[ExecutionRecord]:
        """Every execution, in admission order."""
        rows = self._read("snapshot")
        self._snapshot = (self._writes, {row[0]: row for row in rows}, rows)
        return [
            common.execution_record(row[: len(_COLUMNS)])
            for row in rows
            if row[_STATUS] != "pruned"
        ]

    def start_requests(self) -> list[StartRequestRecord]:
        """Every retained start request with its target."""
        snapshot = self._snapshot
        if snapshot is None or not self._fresh(snapshot[0]):
            return super().start_requests()
        return [
            common.start_request_record(common.execution_record(row[: len(_COLUMNS)]))
            for row in snapshot[2]
            if row[-1]
        ]

    def steps(self, execution_id: str) -> list[StepRecord]:
        """The recorded steps of one execution, in the order they were first recorded."""
        snapshot = self._fresh_snapshot()
        if snapshot is None:
            return super().steps(execution_id)
        row = snapshot.get(execution_id)
        return [] if row is None else common.parse_step_log(execution_id, row[len(_COLUMNS)])

    def _fresh(self, writes: int) -> bool:
        return writes == self._writes and self._queue is not None

    def _fresh_snapshot(self) -> dict[str, tuple[Any, ...]] | None:
        snapshot = self._snapshot
        return snapshot[1] if snapshot is not None and self._fresh(snapshot[0]) else None

    def next_wake_at(self) -> float | None:
        """The earliest time at which some execution becomes claimable."""
        queue = self._queue
        return queue.next_ready() if queue is not None else super().next_wake_at()

    def _follow(self, followed: bool) -> None:
        """Drop the queue model when a write's rule met a row the model did not know."""
        if not followed:
            self._queue = None

    def _read_then_write(self, name: str, params: Mapping[str, object]) -> list[tuple[Any, ...]]:
        """``{name}_rows`` (which opens a transaction) reads the rows the plain UPDATE ``name``
        will write, then ``name`` writes them, on the same snapshot: the rows read are the
        call's answer, as RETURNING rows would be (docs/decisions.md: RETURNING costs more,
        and misses conflicts with plain UPDATEs)."""
        try:
            rows = self._statement(f"{name}_rows", params)
            if rows and not self._statement(name, params)[0][0]:
                raise duckdb.TransactionException(f"{name}: wrote other rows than it read")
            self._statement("commit")
        except BaseException:
            self._rollback_quietly()
            raise
        queue = self._queue
        if queue is not None and name == "cancel" and rows:
            now = params["now"]
            assert isinstance(now, float)
            self._follow(queue.cancelled([str(row[0]) for row in rows], now))
        return rows

    def _claim(self, name: str, params: Mapping[str, object]) -> list[tuple[Any, ...]]:
        """``claim_rows`` reads the first row to become claimable, ``claim_take`` leases it if
        it is claimable now and still at the revision read (a compare-and-swap: no transaction,
        so a claim that finds nothing is one statement, or none while the queue's next ready
        time is known); the claim answers the row read with the lease's columns as
        ``claim_take`` sets them. A row written in between is a lost race, for ``_write``."""
        now, named = params["now"], params["execution_id"]
        assert isinstance(now, float)
        queue = self._queue
        if queue is not None:
            known = queue.next_ready() if named is None else queue.ready(str(named))
            if known is None or known > now:
                return []
        rows = self._statement("claim_rows", params)
        first = rows[0][-1] if rows else None
        if queue is not None and self._queue is queue and first != known:
            self._queue = None  # the model was wrong: never trust it again
        if first is None or first > now:
            return []
        *row, revision, _ = rows[0]
        taken = {**params, "claimed": row[0], "revision": revision}
        if not self._statement("claim_take", taken)[0][0]:
            raise duckdb.TransactionException("claim: the row changed since it was read")
        row[_RECOVERIES] += row[_OWNER] is not None  # claim_take's count: a lease ran out
        row[_OWNER], row[_TOKEN] = params["owner"], row[_TOKEN] + 1
        row[_EXPIRES], row[_DUE], row[_WAITING] = params["expires_at"], None, None
        self._leased[row[0]] = (tuple(row[: len(_COLUMNS)]), revision + 1)
        if self._queue is not None:
            self._follow(self._queue.claimed(row[0], float(params["expires_at"])))  # type: ignore[arg-type]
        return [tuple(row)]

    def _fenced_count(self, name: str, params: Mapping[str, object]) -> list[tuple[Any, ...]]:
        """A fenced write answers its row count: ``[(count,)]``, or no row when the fence
        refused it (what ``SqlCalls`` reads as a lost lease)."""
        rows = self._statement(name, params)
        if not rows[0][0]:
            self._leased.pop(str(params["execution_id"]), None)
            return []
        self._wrote_leased(name, params)
        queue, key = self._queue, str(params["execution_id"])
        if queue is not None:
            if name == "renew":
                self._follow(queue.renewed(key, float(params["expires_at"])))  # type: ignore[arg-type]
            elif name == "release":
                self._follow(queue.released(key, float(params["due_at"])))  # type: ignore[arg-type]
            elif name == "wait_for":
                self._follow(queue.waits(key, str(params["target"])))
        return rows

    def _wrote_leased(self, name: str, params: Mapping[str, object]) -> None:
        """Follow a fenced write that went through in the leased row this runtime knows: the
        columns it set, as its statement sets them, and one more revision. A row known wrong
        (a write by another connection or call in between) costs only the read it would have
        saved: the acknowledgement's compare-and-swap then writes nothing and reads instead."""
        key = str(params["execution_id"])
        known = self._leased.pop(key, None)
        if known is None or name == "release":
            return
        row, revision = known
        if (row[_SEQ], row[_OWNER], row[_TOKEN]) != (
            params["incarnation"],
            params["owner"],
            params["token"],
        ):
            return
        changed = list(row)
        if name == "renew":
            changed[_EXPIRES] = params["expires_at"]
        elif name == "wait_for":
            changed[_WAITING] = params["target"]
        else:  # put_step with or without a wake, record_wake: the earliest wake wins
            wake = params["at"] if name == "record_wake" else params["wake_at"]
            if wake is not None:
                due = changed[_DUE]
                changed[_DUE] = wake if due is None else min(due, wake)
        self._leased[key] = (tuple(changed), revision + 1)

    def _fenced_record(self, name: str, params: Mapping[str, object]) -> list[tuple[Any, ...]]:
        """An acknowledgement with its record: one compare-and-swap when this runtime knows the
        leased row (its record is that row with the acknowledgement's columns), else the write
        and the read of the record in one transaction (what the record was when the write
        committed); no row when the fence refused it."""
        known = self._leased.pop(str(params["execution_id"]), None)
        if known is not None:
            row, revision = known
            if (row[_SEQ], row[_OWNER], row[_TOKEN]) == (
                params["incarnation"],
                params["owner"],
                params["token"],
            ):
                written = self._statement(name, {**params, "revision": revision})[0][0]
                if written:
                    record = _acknowledged(row, name, params)
                    self._acknowledged_queue(name, record, written, params)
                    return [record]
        self._statement("begin")
        try:
            written = self._statement(name, {**params, "revision": None})[0][0]
            if not written:
                self._statement("rollback")
                return []
            rows = self._statement("execution", params)
            self._statement("commit")
        except BaseException:
            self._rollback_quietly()
            raise
        self._acknowledged_queue(name, rows[0], written, params)
        return rows

    def _acknowledged_queue(
        self, name: str, record: tuple[Any, ...], written: int, params: Mapping[str, object]
    ) -> None:
        """Follow an acknowledgement in the queue model: a terminal one takes the row out and
        wakes its waiters (``written`` counts them with the row), another frees the row."""
        queue = self._queue
        if queue is None:
            return
        key = str(record[0])
        if record[_STATUS] not in _TERMINAL:
            self._follow(queue.suspended(key, record[_DUE], record[_WAITING]))
        elif name == "acknowledge_terminal":
            self._follow(queue.finished(key, written - 1, float(params["now"])))  # type: ignore[arg-type]
        else:
            self._queue = None  # a terminal outcome through `acknowledge`: no rule for it

    # A read is one statement on the thread's own cursor, run once: a snapshot read loses no
    # race under DuckDB's optimistic concurrency, so there is nothing to retry.
    _read = _execute

    def _admits(self, text: str | None) -> bool:
        # DuckDB's text columns hold any string, NUL included: every ID can be looked up.
        return True

    def _rollback_quietly(self) -> None:
        # After a failed statement DuckDB aborts the transaction, and a later COMMIT would roll
        # back silently; end it explicitly. Autocommit statements leave none to end.
        with contextlib.suppress(duckdb.TransactionException):
            self._execute("rollback")

    def _backoff(self, attempt: int) -> None:
        # Optimistic concurrency: the loser of a race tries again at once, on a fresh snapshot.
        pass

    def _gave_up(self, name: str, error: BaseException | None) -> InfrastructureError:
        return InfrastructureError(f"{name}: gave up after {_MAX_RACE_RETRIES} lost races")


def _acknowledged(row: tuple[Any, ...], name: str, params: Mapping[str, object]) -> tuple[Any, ...]:
    """The record an acknowledgement leaves, from the row it wrote as it was before: the
    columns ``acknowledge`` and ``acknowledge_terminal`` set, set the same way."""
    changed = list(row)
    changed[_STATUS] = str(params["status"])
    changed[_RESULT], changed[_ERROR] = params["result"], params["error"]
    if name == "acknowledge_terminal" or params["terminal"]:
        changed[_FINISHED], changed[_DUE] = params["now"], None
    changed[_OWNER] = changed[_EXPIRES] = None
    return tuple(changed)


#: The calls composed of several statements (``DuckDBRuntime._execute``).
_COMPOSED: dict[
    str, Callable[[DuckDBRuntime, str, Mapping[str, object]], list[tuple[Any, ...]]]
] = {
    "claim": DuckDBRuntime._claim,
    "cancel": DuckDBRuntime._read_then_write,
    "prune_to_tombstone": DuckDBRuntime._read_then_write,
    "renew": DuckDBRuntime._fenced_count,
    "put_step": DuckDBRuntime._fenced_count,
    "record_wake": DuckDBRuntime._fenced_count,
    "release": DuckDBRuntime._fenced_count,
    "wait_for": DuckDBRuntime._fenced_count,
    "acknowledge": DuckDBRuntime._fenced_record,
    "acknowledge_terminal": DuckDBRuntime._fenced_record,
}
