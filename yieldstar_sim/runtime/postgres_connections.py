"""The PostgreSQL runtime's connections: one per thread, handed on when a thread ends, and the
schema a runtime owns, dropped when it closes; with the settings every session runs under.

``postgres.py`` holds how the runtime's statements run (``_sql_calls.py`` the calls over them);
this module what must outlive none of them.
"""

from __future__ import annotations

import contextlib
import os
import threading
from importlib import resources
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import errors
from psycopg import sql as pgsql
from psycopg.pq import TransactionStatus

from yieldstar_sim.runtime.duckdb_runtime import load_queries

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
SCHEMA = (PACKAGE / "postgres_schema.sql").read_text(encoding="utf-8")
QUERIES = load_queries((PACKAGE / "postgres_queries.sql").read_text(encoding="utf-8"))

# Identifiers cannot be bound parameters: these are composed with psycopg.sql.Identifier.
SESSION = (
    "SET search_path TO {schema}, pg_catalog; SET default_transaction_isolation TO 'serializable'"
)
CREATE_SCHEMA = "CREATE SCHEMA IF NOT EXISTS {schema}"
DROP_SCHEMA = "DROP SCHEMA IF EXISTS {schema} CASCADE"
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

    def __init__(self, dsn: str, schema: str, *, owned: bool) -> None:
        self.dsn = dsn
        self.schema = schema
        self.owned = owned
        self.created = False
        """Whether the owned schema was made (an open that failed to connect made nothing)."""
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


class Holder:
    """A thread's hold on its connection: collected when the thread ends, giving it back."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
