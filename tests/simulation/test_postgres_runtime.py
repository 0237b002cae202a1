"""runtime="postgres" through the runtime factory: simulate, explore(confirm=...), the CLI; a
schema per runtime, dropped on close; clear errors without a server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.model import StartAccepted
from yieldstar_sim.errors import InfrastructureError
from yieldstar_sim.runtime.factory import RuntimeChoiceError
from yieldstar_sim.runtime.postgres import PostgresRuntime
from yieldstar_sim.runtime.postgres_connections import SCHEMAS

FIX = ys.load_scenario("durable-start")


def schemas(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as connection:
        rows = connection.execute("SELECT nspname FROM pg_namespace").fetchall()
    return {str(row[0]) for row in rows}


# ------------------------------------------------------------------------ without a server


def test_runtime_postgres_without_a_dsn_names_the_variable_to_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("YIELDSTAR_PG_DSN", raising=False)
    with pytest.raises(
        RuntimeChoiceError, match=r"^runtime 'postgres' needs a server: set YIELDSTAR_PG_DSN to"
    ):
        ys.simulate(FIX, runtime="postgres")


def test_a_server_that_cannot_be_reached_is_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(InfrastructureError) as caught:
        PostgresRuntime(f"host={tmp_path} dbname=nowhere password=secret")
    message = str(caught.value)
    assert message.startswith(f"cannot connect to PostgreSQL at {tmp_path}/nowhere: ")
    assert "\n" not in message
    assert "secret" not in message


def test_a_database_file_is_refused_for_postgres() -> None:
    with pytest.raises(RuntimeChoiceError, match=r"needs runtime='duckdb', not 'postgres'$"):
        ys.simulate(FIX, runtime="postgres", db="run.duckdb")


# ------------------------------------------------------------------------ with a server


@pytest.mark.postgres
def test_each_runtime_has_its_own_schema_dropped_on_close() -> None:
    dsn = os.environ["YIELDSTAR_PG_DSN"]
    SCHEMAS.size = 0  # nothing pooled: a closed runtime's schema is dropped at once
    try:
        _each_runtime_has_its_own_schema(dsn)
    finally:
        SCHEMAS.size = 4


def _each_runtime_has_its_own_schema(dsn: str) -> None:
    first, second = PostgresRuntime(dsn), PostgresRuntime(dsn)
    first.trigger("charge-order", execution_id="order-42")
    assert second.executions() == []
    assert {first.schema, second.schema} <= schemas(dsn)
    shared = PostgresRuntime(dsn, schema=first.schema)
    assert [r.execution_id for r in shared.executions()] == ["order-42"]
    shared.close()  # a named schema is kept ...
    assert first.schema in schemas(dsn)
    first.close()  # ... and the owner's is dropped
    second.close()
    assert not {first.schema, second.schema} & schemas(dsn)
    with pytest.raises(InfrastructureError, match=r"is closed$"):
        first.executions()


@pytest.mark.postgres
def test_a_closed_runtimes_schema_serves_the_next_runtime_emptied() -> None:
    dsn = os.environ["YIELDSTAR_PG_DSN"]
    SCHEMAS.clear()
    first = PostgresRuntime(dsn)
    first.trigger("charge-order", execution_id="order-42")
    first.start(ys.StartRequest(ys.RequestId("order-42", "ship"), "ship-order"))
    first.close()
    assert first.schema in schemas(dsn)  # kept, emptied, for the next runtime
    second = PostgresRuntime(dsn)
    assert second.schema == first.schema
    assert second.executions() == []
    second.trigger("charge-order", execution_id="order-42")
    started = second.start(ys.StartRequest(ys.RequestId("order-42", "ship"), "ship-order"))
    assert started == StartAccepted("@ship-order:order-42/ship")
    # The admission sequence restarted: the target is the second admission, as in a fresh one.
    assert [r.seq for r in second.executions()] == [1, 2]
    with pytest.raises(InfrastructureError, match=r"is closed$"):
        first.executions()  # the closed runtime cannot reach the schema it gave back
    second.close()
    SCHEMAS.clear()  # what the process does at exit
    assert first.schema not in schemas(dsn)


@pytest.mark.postgres
def test_claims_take_ids_by_code_point_whatever_the_databases_collation() -> None:
    """Rows due at one instant are claimed by ID as the memory runtime compares them: 'B'
    before 'a', even in a database whose collation (ICU's root locale here) says otherwise."""
    dsn = os.environ["YIELDSTAR_PG_DSN"]
    name = f"yieldstar_icu_{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(
            f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8' "
            "LOCALE_PROVIDER icu ICU_LOCALE 'und' LOCALE 'C'"
        )
    try:
        rt = PostgresRuntime(psycopg.conninfo.make_conninfo(dsn, dbname=name))
        try:
            assert rt.sql("SELECT min(x) FROM (VALUES ('B'), ('a')) v(x)") == [("a",)]
            memory = ys.MemoryRuntime()
            for runtime in (rt, memory):
                for execution_id in ("a", "B"):
                    runtime.trigger("charge-order", execution_id=execution_id)
            assert [runtime.due() for runtime in (rt, memory)] == [["B", "a"], ["B", "a"]]
            claims = [
                [runtime.claim("w1", lease_seconds=30.0) for _ in "ab"] for runtime in (rt, memory)
            ]
            ids = [[d.lease.execution_id for d in c if d is not None] for c in claims]
            assert ids == [["B", "a"], ["B", "a"]]
        finally:
            rt.close()
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.mark.postgres
def test_a_schema_used_for_queries_of_your_own_is_dropped_not_pooled() -> None:
    dsn = os.environ["YIELDSTAR_PG_DSN"]
    SCHEMAS.clear()
    runtime = PostgresRuntime(dsn)
    runtime.sql("CREATE TABLE mine (x integer)")
    runtime.close()
    assert runtime.schema not in schemas(dsn)
    again = PostgresRuntime(dsn)
    assert again.schema != runtime.schema
    again.close()
    SCHEMAS.clear()


@pytest.mark.postgres
def test_a_search_on_postgres_uses_one_schema_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    dsn = os.environ["YIELDSTAR_PG_DSN"]
    SCHEMAS.clear()
    before = schemas(dsn)
    taken: list[str | None] = []
    take = SCHEMAS.take

    def counted(dsn: str) -> str | None:
        taken.append(take(dsn))
        return taken[-1]

    # Other test processes make schemas on the same server meanwhile: count this one's.
    monkeypatch.setattr(SCHEMAS, "take", counted)
    report = ys.explore(FIX, runtime="postgres", confirm=None, budget=12)
    assert report.violations == []
    assert report.schedules_run == 12
    assert taken.count(None) == 1  # every schedule ran in it, emptied between them
    pooled = set(SCHEMAS._idle[dsn])
    assert len(pooled) == 1
    assert pooled <= schemas(dsn) - before
    SCHEMAS.clear()
    assert not pooled & schemas(dsn)


def noted_postgres(*, clock: object) -> PostgresRuntime:
    """A PostgreSQL runtime whose schema is noted in the file ``$NOTED_SCHEMAS``, by a name
    other processes import."""
    runtime = PostgresRuntime(os.environ["YIELDSTAR_PG_DSN"], clock=clock)  # type: ignore[arg-type]
    with Path(os.environ["NOTED_SCHEMAS"]).open("a") as noted:
        noted.write(f"{runtime.schema}\n")
    return runtime


@pytest.mark.postgres
def test_a_search_in_processes_leaves_no_schema_when_its_pool_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pool's process ends without running ``atexit``: the schemas its runs opened are
    # dropped as the pool ends it, not left on the server.
    noted = tmp_path / "schemas.txt"
    monkeypatch.setenv("NOTED_SCHEMAS", str(noted))
    report = ys.explore(
        FIX, runtime=f"{__name__}:noted_postgres", confirm=None, jobs=2, max_faults=1,
        stop_at_first=False,
    )  # fmt: skip
    assert report.schedules_run > 2
    SCHEMAS.clear()  # this process's own, as its exit does
    opened = set(noted.read_text().split())
    assert len(opened) >= 2  # this process's and a worker's at least
    assert not opened & schemas(os.environ["YIELDSTAR_PG_DSN"])


@pytest.mark.postgres
def test_the_records_are_queryable_with_sql_through_the_views() -> None:
    runtime = PostgresRuntime(os.environ["YIELDSTAR_PG_DSN"])
    try:
        caller = runtime.trigger("charge-order", execution_id="order-42")
        target = runtime.start(ys.StartRequest(ys.RequestId(caller, "ship"), "ship-order"))
        delivery = runtime.claim("w1", lease_seconds=30, execution_id=caller)
        assert delivery is not None
        runtime.put_step(delivery.lease, "charge", status="pending", value=None)
        runtime.put_step(delivery.lease, "charge", status="completed", value={"ok": True})
        runtime.put_step(delivery.lease, "pack", status="completed", value="line\u2028break")
        assert runtime.sql("SELECT step_key, position, status, value::text FROM steps") == [
            ("charge", 0, "completed", '{"ok":true}'),
            ("pack", 1, "completed", '"line\u2028break"'),
        ]
        assert runtime.sql("SELECT count(*) FROM step_log") == [(3,)]
        assert runtime.sql(
            "SELECT caller_execution_id, target_execution_id FROM start_requests"
        ) == [
            (caller, target.execution_id)  # type: ignore[union-attr]
        ]
    finally:
        runtime.close()


@pytest.mark.postgres
def test_explore_on_memory_and_confirm_on_postgres() -> None:
    report = ys.explore(FIX, runtime="memory", confirm="postgres")
    assert report.verdict == "ok"
    assert report.runtime_mismatches == []
    assert any(line.startswith("confirmed on postgres") for line in report.confirmations)


@pytest.mark.postgres
def test_the_cli_runs_a_scenario_on_postgres(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "yieldstar_sim.cli", "run", "durable-start", "--runtime",
         "postgres", "--out", str(tmp_path), "--format", "json"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "postgres" in result.stdout
