"""The per-process pool of in-memory DuckDB databases: a pooled database starts every run in
the state a fresh one has, a closed runtime cannot reach the database it gave back, and a
file-backed database is never pooled; a runtime never closed (a run's, open for run.sql())
comes back when it is collected."""

from __future__ import annotations

import gc
import os
from typing import TYPE_CHECKING

import duckdb
import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.model import RequestId, StartAccepted, StartRequest
from yieldstar_sim.runtime.duckdb_runtime import POOL, DuckDBRuntime

if TYPE_CHECKING:
    from pathlib import Path


def _fill(runtime: DuckDBRuntime) -> None:
    runtime.trigger("charge-order", {"order": 42}, execution_id="order-42")
    runtime.start(StartRequest(RequestId("order-42", "ship"), "ship-order", {"order": 42}))
    delivery = runtime.claim("worker-1", lease_seconds=30.0)
    assert delivery is not None


def test_a_pooled_database_starts_empty_with_the_sequence_at_one() -> None:
    POOL.clear()
    first = DuckDBRuntime()
    _fill(first)
    pooled = first._connection
    first.close()
    second = DuckDBRuntime()
    assert second._connection is pooled  # reused, not reopened
    assert second.executions() == []
    assert second.next_wake_at() is None
    second.trigger("charge-order", {"order": 42}, execution_id="order-42")
    started = second.start(StartRequest(RequestId("order-42", "ship"), "ship-order", {"order": 42}))
    assert started == StartAccepted("@ship-order:order-42/ship")
    # The admission sequence restarted: the target is the second admission, as in a fresh one.
    assert [r.seq for r in second.executions()] == [1, 2]
    second.close()


def test_a_closed_runtime_cannot_reach_the_database_it_gave_back() -> None:
    POOL.clear()
    stale = DuckDBRuntime()
    _fill(stale)
    stale.close()
    fresh = DuckDBRuntime()
    with pytest.raises(duckdb.ConnectionException):
        stale.trigger("charge-order", None, execution_id="intruder")
    with pytest.raises(duckdb.ConnectionException):
        stale.executions()
    assert fresh.executions() == []
    fresh.close()


def test_a_database_used_for_queries_of_your_own_is_not_pooled() -> None:
    POOL.clear()
    runtime = DuckDBRuntime()
    runtime.sql("CREATE TABLE mine (x INTEGER)")
    used = runtime._connection
    runtime.close()
    again = DuckDBRuntime()
    assert again._connection is not used
    assert again.sql("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'mine'") == [(0,)]
    again.close()


def test_a_file_backed_database_holds_exactly_one_run(tmp_path: Path) -> None:
    POOL.clear()
    path = tmp_path / "run.duckdb"
    runtime = DuckDBRuntime(path)
    _fill(runtime)
    runtime.close()
    other = DuckDBRuntime()  # does not get the file's database
    assert other.executions() == []
    other.close()
    reopened = DuckDBRuntime(path)
    assert [record.execution_id for record in reopened.executions()] == [
        "order-42",
        "@ship-order:order-42/ship",
    ]
    reopened.close()


def test_a_forked_child_does_not_use_its_parents_databases(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A forked child is this process under another pid: the pool sees the pid change, exactly
    # what a real fork shows it. Forking for real here would test the fork, not the pool, and a
    # fork taken while another thread of the test runner holds a lock can hang the child.
    POOL.clear()
    DuckDBRuntime().close()  # one idle database in the parent
    parent = os.getpid()
    monkeypatch.setattr(os, "getpid", lambda: parent + 1)
    assert POOL.take() is None  # the child finds no idle database
    child = DuckDBRuntime()  # and opens a database of its own
    assert child.executions() == []
    child.close()
    assert POOL.take() is not None  # which it pools for itself


def test_an_unclosed_runtime_gives_its_database_back_when_collected() -> None:
    gc.collect()  # earlier tests' runtimes come back first
    POOL.clear()
    runtime = DuckDBRuntime()
    _fill(runtime)
    held = runtime._connection
    del runtime
    gc.collect()
    again = DuckDBRuntime()
    assert again._connection is held  # reused, reset: as a closed runtime's would be
    assert again.executions() == []
    again.trigger("charge-order", {"order": 42}, execution_id="order-42")
    started = again.start(StartRequest(RequestId("order-42", "ship"), "ship-order", {"order": 42}))
    assert started == StartAccepted("@ship-order:order-42/ship")
    assert [r.seq for r in again.executions()] == [1, 2]
    again.close()


def test_an_unclosed_runtime_used_for_queries_of_your_own_is_not_pooled() -> None:
    gc.collect()  # earlier tests' runtimes come back first
    POOL.clear()
    runtime = DuckDBRuntime()
    runtime.sql("CREATE TABLE mine (x INTEGER)")
    used = runtime._connection
    del runtime
    gc.collect()
    again = DuckDBRuntime()
    assert again._connection is not used
    again.close()


def test_simulated_runs_reuse_databases_and_still_answer_sql() -> None:
    """A run's runtime stays open for run.sql(); once the run is dropped its database serves
    the next run, and a run whose SQL was asked keeps its own."""
    gc.collect()
    POOL.clear()
    scenario = ys.load_scenario("durable-start")
    first = ys.simulate(scenario, 0, runtime="duckdb")
    held = first.runtime._connection  # type: ignore[attr-defined]
    del first
    gc.collect()
    second = ys.simulate(scenario, 0, runtime="duckdb")
    assert second.runtime._connection is held  # type: ignore[attr-defined]
    assert second.sql("select count(*) from executions") == [(2,)]
    del second
    gc.collect()
    third = ys.simulate(scenario, 0, runtime="duckdb")
    assert third.runtime._connection is not held  # type: ignore[attr-defined]
    assert [row[0] for row in third.sql("select execution_id from executions order by seq")] == [
        row.execution_id for row in third.executions
    ]
    third.runtime.close()


class _Cycle:
    """An object that refers to itself, as a run's actors and kernel do: reference counting
    never frees it, only the cyclic collector."""

    def __init__(self, runtime: DuckDBRuntime) -> None:
        self.runtime = runtime
        self.me = self


def test_a_runtime_held_by_a_dropped_reference_cycle_comes_back_without_a_collection() -> None:
    gc.collect()
    POOL.clear()
    runtime = DuckDBRuntime()
    _fill(runtime)
    held = runtime._connection
    cycle = _Cycle(runtime)
    del runtime, cycle
    # No gc.collect() here: the pool collects the young generations itself when it is empty.
    again = DuckDBRuntime()
    assert again._connection is held
    assert again.executions() == []
    again.close()


def test_a_database_given_back_inside_an_open_transaction_is_reset_all_the_same() -> None:
    POOL.clear()
    runtime = DuckDBRuntime()
    _fill(runtime)
    held = runtime._connection
    runtime.close()
    assert POOL.take() is held
    held.execute("BEGIN TRANSACTION")
    held.execute("DELETE FROM executions")  # an open transaction the reset must not join
    POOL.give(held)
    again = DuckDBRuntime()
    assert again._connection is held
    assert again.executions() == []
    again.trigger("charge-order", {"order": 42}, execution_id="order-42")
    assert [record.seq for record in again.executions()] == [1]
    again.close()
