"""A run is fully determined by (scenario, seed, schedule, fault plan): the same inputs give a
byte-identical trace, on the memory runtime, on DuckDB and on PostgreSQL alike."""

from __future__ import annotations

import pytest

import yieldstar_sim as ys

DURABLE = ys.load_scenario("durable-start")


def busy_scenario() -> ys.Scenario:
    """Two workers, three orders due at once and a frozen worker: many interleavings."""
    return ys.Scenario(
        name="busy-shop",
        workflows=DURABLE.workflows,
        triggers=[
            ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}") for n in (1, 2, 3)
        ],
        faults=[ys.Fault("freeze", op="put_step", step_key="ship", seconds=35)],
        invariants=[ys.at_most_once("courier.booked", by="order")],
    )


SEEDS = range(200)


def test_200_seeds_give_byte_identical_traces_on_a_second_run() -> None:
    scenario = busy_scenario()
    digests = set()
    for seed in SEEDS:
        first = ys.simulate(scenario, seed, runtime="memory")
        second = ys.simulate(scenario, seed, runtime="memory")
        assert first.trace.to_jsonl() == second.trace.to_jsonl(), f"seed {seed} differs"
        assert first.ok, first.explain()
        digests.add(first.trace_digest())
    assert len(digests) > 20, "the seeds should explore different interleavings"


@pytest.mark.duckdb
def test_200_seeds_give_the_same_trace_on_memory_and_duckdb() -> None:
    scenario = busy_scenario()
    for seed in SEEDS:
        memory = ys.simulate(scenario, seed, runtime="memory")
        duckdb = ys.simulate(scenario, seed, runtime="duckdb")
        assert memory.trace.to_jsonl() == duckdb.trace.to_jsonl(), f"seed {seed} differs"
        duckdb.runtime.close()


@pytest.mark.postgres
def test_seeds_give_the_same_trace_on_memory_duckdb_and_postgres() -> None:
    """runtime="postgres" (the server YIELDSTAR_PG_DSN names, a fresh schema per run): the same
    trace as memory and DuckDB, seed for seed. 40 seeds: each run opens and drops a schema."""
    scenario = busy_scenario()
    for seed in range(40):
        memory = ys.simulate(scenario, seed, runtime="memory")
        duckdb = ys.simulate(scenario, seed, runtime="duckdb")
        postgres = ys.simulate(scenario, seed, runtime="postgres")
        assert memory.trace.to_jsonl() == postgres.trace.to_jsonl(), f"seed {seed} differs"
        assert duckdb.trace.to_jsonl() == postgres.trace.to_jsonl(), f"seed {seed} differs"
        assert postgres.runtime_kind == "postgres"
        duckdb.runtime.close()
        postgres.runtime.close()


def test_a_schedule_replays_the_same_run_whatever_the_seed() -> None:
    scenario = busy_scenario()
    run = ys.simulate(scenario, 7, runtime="memory")
    again = ys.simulate(scenario, 12345, runtime="memory", schedule=run.schedule)
    assert again.trace.to_jsonl() == run.trace.to_jsonl()
    assert again.schedule == run.schedule
