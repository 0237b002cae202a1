"""The PostgreSQL runtime's connections: one per thread, handed on when a thread ends, and the
schema a runtime owns, dropped when it closes; with the settings every session runs under.

``postgres.py`` holds how the runtime's statements run (``_sql_calls.py`` the calls over them);
this module what must outlive none of them.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from importlib import resources
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import errors
from psycopg import sql as pgsql
from psycopg.pq import TransactionStatus

from yieldstar_sim.runtime.sql_files import SHARED, include, load_queries

if TYPE_CHECKING:
    Connection = psycopg.Connection[tuple[Any, ...]]

#: The environment variable ``from_env`` (and so ``runtime="postgres"``) reads the server from.
DSN_VARIABLE = "YIELDSTAR_PG_DSN"

#: A race lost to another connection: run the call again on a fresh snapshot.
RETRYABLE = (errors.SerializationFailure, errors.DeadlockDetected, errors.UniqueViolation)
#: How many races in a row one call may lose before it gives up (InfrastructureError).
MAX_RETRIES = 100
#: The longest pause between two tries; pauses grow from 1 ms, jittered so racers spread out.
MAX_BACKOFF_SECONDS = 0.05

PACKAGE = resources.files("yieldstar_sim.runtime")
SCHEMA = include((PACKAGE / "postgres_schema.sql").read_text(encoding="utf-8"), SHARED)
QUERIES = load_queries((PACKAGE / "postgres_queries.sql").read_text(encoding="utf-8"), SHARED)

# Identifiers cannot be bound parameters: these are composed with psycopg.sql.Identifier.
SESSION = (
    "SET search_path TO {schema}, pg_catalog; SET default_transaction_isolation TO 'serializable'"
)
CREATE_SCHEMA = "CREATE SCHEMA IF NOT EXISTS {schema}"
DROP_SCHEMA = "DROP SCHEMA IF EXISTS {schema} CASCADE"
#: An owned schema emptied for the next runtime: the state a freshly created one has.
RESET_SCHEMA = (
    "TRUNCATE {schema}.executions, {schema}.events; "
    "ALTER SEQUENCE {schema}.execution_seq RESTART WITH 1"
)
#: PostgreSQL's limit on an identifier's length, in bytes.
MAX_IDENTIFIER_BYTES = 63


def where(dsn: str) -> str:
    """The server a DSN names, for messages (never its password)."""
    try:
        parts = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "(an unreadable connection string)"
    host = parts.get("host") or "localhost"
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"{host}{port}/{parts.get('dbname') or 'the default database'}"


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def check_schema(schema: object) -> str:
    if not isinstance(schema, str) or not schema.strip():
        raise ValueError(f"schema must be a non-empty name, not {schema!r}")
    if "\x00" in schema or len(schema.encode("utf-8")) > MAX_IDENTIFIER_BYTES:
        raise ValueError(
            f"schema {schema!r} cannot name a PostgreSQL schema (at most "
            f"{MAX_IDENTIFIER_BYTES} bytes, no NUL)"
        )
    return schema


def storable(text: object) -> bool:
    """Whether ``text`` can be stored in a PostgreSQL text column (no NUL): a lookup of one
    that cannot finds nothing, as it would in the other adapters."""
    return not (isinstance(text, str) and "\x00" in text)


class Connections:
    """The runtime's connections and the schema it owns: what must be released when the runtime
    closes or is collected, without referring to it. A thread holds one connection while it
    lives; when it ends, the connection waits for the next thread (threads come and go, a
    server's connections are few)."""

    def __init__(self, dsn: str, schema: str, *, owned: bool, created: bool = False) -> None:
        self.dsn = dsn
        self.schema = schema
        self.owned = owned
        self.created = created
        """Whether the owned schema was made (an open that failed to connect made nothing)."""
        self.poolable = owned
        """Whether the owned schema may serve the next runtime once emptied: not after its
        connection was handed out for queries of your own, which may leave what a reset
        does not undo."""
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.open: list[Connection] = []
        self.idle: list[Connection] = []

    def take(self) -> Connection | None:
        """An idle connection a finished thread left, if there is one."""
        with self.lock:
            return self.idle.pop() if self.idle else None

    def give_back(self, connection: Connection) -> None:
        """Keep a finished thread's connection for the next one; one left inside a transaction
        is closed instead (ending it would take a statement on a thread that is not its own)."""
        if connection.closed:
            return
        if connection.info.transaction_status != TransactionStatus.IDLE:
            with self.lock:
                if connection in self.open:
                    self.open.remove(connection)
            connection.close()
            return
        with self.lock:
            if connection in self.open:
                self.idle.append(connection)

    def release(self) -> None:
        """Drop the owned schema (on a connection still open), then close every connection. A
        forked child leaves its parent's connections and schema alone."""
        if os.getpid() != self.pid:
            return
        with self.lock:
            connections, self.open, self.idle = self.open, [], []
        try:
            if self.owned and self.created and self.poolable and self._pooled(connections):
                return
            if self.owned and self.created:
                alive = [connection for connection in connections if not connection.closed]
                if not alive:
                    with contextlib.suppress(psycopg.OperationalError):  # the server is gone
                        alive.append(psycopg.connect(self.dsn, autocommit=True))
                        connections.append(alive[0])
                if alive:
                    if alive[0].info.transaction_status != TransactionStatus.IDLE:
                        alive[0].execute("ROLLBACK")
                    drop = pgsql.SQL(DROP_SCHEMA).format(schema=pgsql.Identifier(self.schema))
                    alive[0].execute(drop)
        finally:
            for connection in connections:
                connection.close()

    def _pooled(self, connections: list[Connection]) -> bool:
        """Empty the owned schema on a connection of this runtime and give it to the pool;
        ``False`` (the schema is then dropped) when no connection is idle, the reset fails or
        the pool is full."""
        idle = [
            connection
            for connection in connections
            if not connection.closed
            and connection.info.transaction_status == TransactionStatus.IDLE
        ]
        if not idle:
            return False
        reset = pgsql.SQL(RESET_SCHEMA).format(schema=pgsql.Identifier(self.schema))
        try:
            idle[0].execute(reset)
        except psycopg.Error:
            return False
        return SCHEMAS.give(self.dsn, self.schema)


class SchemaPool:
    """A per-process pool of owned schemas, their tables made and emptied, by server.

    Creating a runtime's schema and tables, and dropping them on close, costs more than the
    statements of a short simulated run; emptying the table and restarting the sequence costs
    one statement. A runtime opened without ``schema=`` takes a schema here and gives it back
    when closed, emptied; the pool drops what it holds when the process exits. A schema whose
    connection was handed out for queries of your own is dropped, never pooled; one made in a
    parent process is left to the parent.
    """

    def __init__(self, size: int = 4) -> None:
        self.size = size
        """The most idle schemas kept per server."""
        self._idle: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def take(self, dsn: str) -> str | None:
        """An emptied schema on ``dsn``'s server, or ``None`` when there is none."""
        with self._lock:
            if self._pid != os.getpid():
                self._idle, self._pid = {}, os.getpid()  # a parent's: never used here
            idle = self._idle.get(dsn)
            return idle.pop() if idle else None

    def give(self, dsn: str, schema: str) -> bool:
        """Keep an emptied ``schema`` for the next runtime on ``dsn``; ``False`` when full."""
        with self._lock:
            if self._pid != os.getpid():
                return False
            idle = self._idle.setdefault(dsn, [])
            if len(idle) >= self.size:
                return False
            idle.append(schema)
            return True

    def clear(self) -> None:
        """Drop every idle schema (at exit; a server that is gone keeps them)."""
        with self._lock:
            idle, self._idle = self._idle, {}
            if self._pid != os.getpid():
                return
        for dsn, schemas in idle.items():
            with (
                contextlib.suppress(psycopg.Error),
                psycopg.connect(dsn, autocommit=True) as connection,
            ):
                for schema in schemas:
                    drop = pgsql.SQL(DROP_SCHEMA).format(schema=pgsql.Identifier(schema))
                    connection.execute(drop)


SCHEMAS = SchemaPool()
"""The process's pool of emptied PostgreSQL schemas."""
atexit.register(SCHEMAS.clear)


class Holder:
    """A thread's hold on its connection: collected when the thread ends, giving it back."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
