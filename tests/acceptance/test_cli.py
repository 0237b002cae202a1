"""The ``yieldstar-sim`` command, run as a user runs it: in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "yieldstar_sim.cli"]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize("runtime", ["duckdb", "memory"])
def test_demo_replays_the_lost_start_and_draws_one_ship_order(tmp_path: Path, runtime: str) -> None:
    result = run("demo", "--runtime", runtime, "--out", "graphs", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert report["ship_orders"] == ["@ship-order-2"]
    assert report["couriers"] == 1
    events = report["events"]
    assert any(
        "rejected (InjectedFailure: injected failure at start.after_commit)" in e for e in events
    )
    assert any("{'shipment': '@ship-order-2'}" in e for e in events)
    assert sum("effect courier.booked" in e for e in events) == 1
    image = tmp_path / "graphs" / "order-42-graph.png"
    assert image.read_bytes().startswith(b"\x89PNG")


def test_demo_keeps_its_records_in_a_duckdb_file(tmp_path: Path) -> None:
    result = run("demo", "--db", "run.duckdb", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "one ship-order, one courier" in result.stdout
    import duckdb

    with duckdb.connect(str(tmp_path / "run.duckdb"), read_only=True) as db:
        rows = db.execute(
            "select caller_execution_id, step_key, target_execution_id from start_requests"
        ).fetchall()
    assert rows == [("order-42", "ship", "@ship-order-2")]
    again = run("demo", "--db", "run.duckdb", cwd=tmp_path)
    assert again.returncode == 2
    assert "already holds order-42" in again.stderr
    assert "Traceback" not in again.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["demo", "--db", "missing/run.duckdb"], "does not exist"),
        (["demo", "--db", "."], "is a folder"),
        (["demo", "--db", "not-a-db.txt"], "not a valid DuckDB database"),
        (["demo", "--out", "file.txt"], "output"),
        (["demo", "--runtime", "memory", "--db", "x.duckdb"], "--db needs --runtime duckdb"),
    ],
)
def test_bad_input_gets_one_line_and_exit_code_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "not-a-db.txt").write_text("hello")
    (tmp_path / "file.txt").write_text("hello")
    result = run(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_command_is_a_usage_error(tmp_path: Path) -> None:
    result = run("frobnicate", cwd=tmp_path)
    assert result.returncode == 2
    assert "invalid choice" in result.stderr
