"""The PostgreSQL runtime: the runtime Protocol on a real server, through psycopg 3.

Install it with ``pip install 'yieldstar-sim[postgres]'``. Every runtime object keeps its tables
in a schema of its own, so that any number of runtimes (one per simulated run, tests in
parallel) share one database without seeing each other. The schema is made when the runtime
opens; when it closes, the schema is emptied and kept for the next runtime of the process
(``postgres_connections.SCHEMAS``; a search runs every schedule in one), and dropped when the
process exits. Pass ``schema=`` to open a named schema instead (made if missing, kept on close),
which is how several processes share one runtime's tables.

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
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql as pgsql
from psycopg.pq import TransactionStatus

from yieldstar_sim.core.model import (
    InfrastructureError,
)
from yieldstar_sim.runtime._sql_calls import SqlCalls
from yieldstar_sim.runtime.postgres_connections import (
    CREATE_SCHEMA,
    DSN_VARIABLE,
    MAX_BACKOFF_SECONDS,
    MAX_RETRIES,
    QUERIES,
    RETRYABLE,
    SCHEMA,
    SCHEMAS,
    SESSION,
    Connections,
    Holder,
    check_schema,
    first_line,
    storable,
    where,
)
from yieldstar_sim.runtime.protocol import RuntimeChoiceError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from yieldstar_sim.core.clock import Clock

    Connection = psycopg.Connection[tuple[Any, ...]]


def from_env(*, clock: Clock | None = None, **options: Any) -> PostgresRuntime:
    """A ``PostgresRuntime`` on the server ``YIELDSTAR_PG_DSN`` names: the factory behind
    ``runtime="postgres"`` (also usable as ``"yieldstar_sim.runtime.postgres:from_env"``)."""
    dsn = os.environ.get(DSN_VARIABLE, "").strip()
    if not dsn:
        raise RuntimeChoiceError(
            f"runtime 'postgres' needs a server: set {DSN_VARIABLE} to a libpq connection "
            "string, e.g. 'host=/tmp/pg dbname=postgres' (scripts/postgres.sh start makes one)"
        )
    return PostgresRuntime(dsn, clock=clock, **options)


class PostgresRuntime(SqlCalls):
    """A runtime adapter over PostgreSQL tables that it creates itself, in its own schema.

    ``dsn`` is a libpq connection string (``"host=/tmp/pg dbname=postgres"``, or a
    ``postgresql://`` URL). Without ``schema`` the runtime takes an emptied schema of an
    earlier runtime of this process, or creates a fresh one, and on ``close`` (or when it is
    garbage collected) empties it for the next, or drops it when it was used for queries of
    your own (``sql``, ``connection``) or four are kept already; with ``schema`` it opens that
    schema, creating its tables if they are missing, and leaves it in place on close. ``clock``
    supplies virtual time (without one, time stands at 0); ``orphan_guard`` and
    ``on_existing_id`` are as on ``DuckDBRuntime``. Each thread gets its own connection. A call
    that loses ``max_retries`` races in a row raises ``InfrastructureError``.
    """

    _RACE_ERRORS = RETRYABLE
    # One statement per execute (bound parameters): the transaction is opened and ended apart.
    _BEGIN = "begin"
    _END_UNUSED = "rollback"

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
        self._keep_options(clock, orphan_guard, on_existing_id)
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 1:
            raise ValueError(f"max_retries must be a whole number from 1, not {max_retries!r}")
        self.max_retries = max_retries
        """How many races in a row one call may lose before it raises InfrastructureError."""
        self._dsn = dsn
        owned = schema is None
        pooled = SCHEMAS.take(dsn) if owned else None
        self.schema = (
            check_schema(schema)
            if schema is not None
            else pooled or f"yieldstar_{secrets.token_hex(6)}"
        )
        """The schema holding this runtime's tables."""
        self._connections = Connections(dsn, self.schema, owned=owned, created=pooled is not None)
        self._release = weakref.finalize(self, self._connections.release)
        self._local = threading.local()
        self._count_lock = threading.Lock()
        self._jitter = random.Random()
        self.statements = 0
        """SQL statements issued so far (a BEGIN, COMMIT or ROLLBACK counts as one)."""
        self.retries = 0
        """Calls (or parts of calls) run again after a serialization failure or deadlock."""
        if pooled is None:
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
    def connection(self) -> Connection:
        """This thread's connection to the runtime's schema, for queries of your own."""
        self._connections.poolable = False
        return self._connection_of_thread()

    def sql(
        self, query: str, params: Sequence[object] | Mapping[str, object] | None = None
    ) -> list[tuple[Any, ...]]:
        """Run a query of your own against the runtime's tables and return its rows."""
        self._connections.poolable = False
        cursor = self._connection_of_thread().execute(query, params)
        return cursor.fetchall() if cursor.description is not None else []

    def close(self) -> None:
        """Empty the runtime's own schema for the next runtime, or drop it (never a named one),
        and close its connections."""
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

    @property
    def _race_retries(self) -> int:
        return self.max_retries

    # A read runs as a write does, in its own transaction and retried: a SERIALIZABLE read can
    # fail to serialize.
    def _read(self, name: str, params: Mapping[str, object] | None = None) -> list[tuple[Any, ...]]:
        return self._write(name, params)

    def _admits(self, text: str | None) -> bool:
        # PostgreSQL refuses NUL in text: an ID holding one names nothing stored, so a lookup of
        # it finds nothing (as in the other adapters) instead of failing at the server.
        return storable(text)
