"""The per-process pool of private in-memory DuckDB databases that ``DuckDBRuntime`` takes its
database from: the schema is made once per database, and a database a runtime gave back is
emptied (under 1 ms) instead of opened and made again (30-70 ms)."""

from __future__ import annotations

import collections
import contextlib
import gc
import os
import threading

import duckdb

#: Statements that return a pooled database to the state a fresh one has: no rows, and the
#: admission sequence starting again at 1 (execution IDs and ``seq`` derive from it). In a
#: transaction of their own: BEGIN refuses to run inside an open one (see ``give``).
_RESET = """BEGIN TRANSACTION;
DELETE FROM executions;
DELETE FROM events;
CREATE OR REPLACE SEQUENCE execution_seq START 1;
COMMIT;"""
#: ``_RESET`` parsed once per process (the parser is a third of a small statement's cost).
_PARSED_RESET: list[duckdb.Statement] = []


def _reset(connection: duckdb.DuckDBPyConnection) -> None:
    if not _PARSED_RESET:
        _PARSED_RESET.extend(connection.extract_statements(_RESET))
    for statement in _PARSED_RESET:
        connection.execute(statement)


class Held:
    """What a runtime holds of its database, apart from the runtime: what its finalizer hands
    back to the pool when a runtime nobody closed is collected (a run's runtime stays open for
    ``run.sql()``, so most are never closed)."""

    __slots__ = ("connection", "cursors", "pid", "poolable")

    def __init__(self, connection: duckdb.DuckDBPyConnection, poolable: bool) -> None:
        self.connection = connection
        self.cursors: list[duckdb.DuckDBPyConnection] = []
        self.pid = os.getpid()
        self.poolable = poolable


class DatabasePool:
    """A per-process pool of private in-memory databases, their schema already created.

    Opening a database and creating the schema costs tens of milliseconds, a quarter of a short
    simulated run; emptying the table and restarting the sequence costs under one. A runtime
    on ``":memory:"`` takes a database here and gives it back when closed, reset, so a run
    starts from exactly the state a fresh database has (the determinism and memory = DuckDB
    tests check it). A database that its runtime handed out for queries of your own
    (``connection``, ``sql``) may hold objects or settings a reset would not undo: it is closed,
    never pooled. A file-backed database is never pooled: the file holds one run.

    A runtime that is never closed (a run's, kept open for ``run.sql()``) comes back when it is
    collected: its finalizer only queues what it held (``returned``: no lock, no SQL, as a
    finalizer can run inside any code, this pool's included); the next ``take`` resets it. A
    dropped run is freed at once by reference counting (``tests/simulation/test_runs_freed.py``
    keeps it so), but workflow code can hold a run's runtime in reference cycles of its own,
    which only the cyclic collector frees: a ``take`` that finds nothing idle collects the young
    generations first.
    """

    def __init__(self, size: int = 4) -> None:
        self.size = size
        """The most idle databases kept."""
        self._idle: list[duckdb.DuckDBPyConnection] = []
        self._inherited: list[object] = []
        self._returned: collections.deque[Held] = collections.deque()
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def take(self) -> duckdb.DuckDBPyConnection | None:
        """An idle database, reset, or ``None`` when there is none."""
        taken = self._take()
        if taken is None and not self._idle:
            # A run's runtime reachable only from reference cycles (workflow code's own: a
            # closure that refers to itself) waits for the cyclic collector. Collecting the
            # young generations costs about 0.1 ms and usually frees it; a fresh database
            # costs 30-70 ms. Older generations are left alone: a full collection costs
            # 10-30 ms on a small heap and grows with the caller's.
            gc.collect(1)
            taken = self._take()
        return taken

    def _take(self) -> duckdb.DuckDBPyConnection | None:
        while self._returned:
            try:
                held = self._returned.popleft()
            except IndexError:  # another thread took the last one
                break
            if held.pid != os.getpid():
                self._inherited.append(held)  # a parent's, collected in this child: unused
                continue
            for cursor in held.cursors:
                with contextlib.suppress(duckdb.Error):
                    cursor.close()
            self.give(held.connection)
        with self._lock:
            if self._pid != os.getpid():
                self.after_fork()
            return self._idle.pop() if self._idle else None

    def after_fork(self) -> None:
        """In a forked child: never use the parent's databases, nor close them (a destructor
        could wait on a lock another parent thread held at the fork): keep them referenced,
        unused, and start with a fresh lock and no idle database."""
        self._lock = threading.Lock()
        self._inherited.extend(self._idle)
        self._inherited.extend(self._returned)
        self._idle, self._pid = [], os.getpid()
        self._returned = collections.deque()

    def returned(self, held: Held) -> None:
        """Queue the database of a runtime collected unclosed, for the next ``take`` to reset
        (a runtime's finalizer: appending to a deque is atomic)."""
        if held.poolable:
            self._returned.append(held)

    def give(self, connection: duckdb.DuckDBPyConnection) -> None:
        """Reset ``connection`` and keep it for the next run, or close it when the pool is
        full or the reset fails."""
        try:
            try:
                _reset(connection)
            except duckdb.TransactionException:
                # A transaction was open (BEGIN refused) or the reset failed inside its own:
                # end it and reset again. Ending one first every time costs a failing ROLLBACK
                # (an exception) on almost every reset.
                with contextlib.suppress(duckdb.TransactionException):
                    connection.execute("ROLLBACK")
                _reset(connection)
        except duckdb.Error:
            connection.close()
            return
        with self._lock:
            if self._pid == os.getpid() and len(self._idle) < self.size:
                self._idle.append(connection)
                return
        connection.close()

    def clear(self) -> None:
        """Close every idle database."""
        self._returned.clear()
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


POOL = DatabasePool()
"""The process's pool of in-memory DuckDB databases."""
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=POOL.after_fork)
