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
from yieldstar_sim.errors import InfrastructureError
from yieldstar_sim.runtime.factory import RuntimeChoiceError
from yieldstar_sim.runtime.postgres import PostgresRuntime

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
