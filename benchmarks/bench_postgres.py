"""The PostgreSQL runtime on a real server: per-call cost against bare SQL, statements per call,
and simulate runs per second on memory, DuckDB and PostgreSQL side by side.

Run it from the repository root, with a server (``eval "$(scripts/postgres.sh start)"``)::

    .venv/bin/python benchmarks/bench_postgres.py            # full run, a few minutes
    .venv/bin/python benchmarks/bench_postgres.py --quick    # fewer repetitions
    .venv/bin/python benchmarks/bench_postgres.py --smoke    # every section, tiny (CI)

Without ``YIELDSTAR_PG_DSN`` it says so in one line, skips the PostgreSQL figures, and still
prints simulate runs per second on memory and DuckDB.

What it measures (the calls, batches and workloads are bench_runtime's, so the figures compare
with DuckDB's there):

* **cost**: per runtime call, the median over repetitions of the per-call mean of a timed batch,
  each repetition on a fresh ``PostgresRuntime`` (its own schema) set up through the public API.
* **bare**: exactly the statements the adapter issues, the same SQL text
  (``postgres.QUERIES``) and parameters, on the runtime's own connection (so psycopg prepares
  them alike), on a runtime set up identically: PostgreSQL plus psycopg's round trip.
* **ratio**: adapter / bare, the median of per-repetition ratios (adapter and bare timed back
  to back, in alternating order): the price of the adapter's Python side.
* **SQL/call**: statements per call (``PostgresRuntime.statements``), per call and over
  bench_runtime's two workloads.
* **simulate runs/s**: ``ys.simulate`` of the bundled durable-start scenario over consecutive
  seeds, a fresh runtime per run (on PostgreSQL: a schema created and dropped per run).

Targets, reported as PASS/MISS (never asserted): at most 1.5 statements per runtime call over
the workloads; every call within 1.5x the bare cost of its own statements.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import TYPE_CHECKING, Any

from _harness import (
    footer,
    header,
    parser,
    per_call,
    progress,
    show,
    sizes,
    spread,
    targets,
    us,
    verdict,
)
from _runtime_calls import BENCHES, WARMUP, BareOp, Batch, Bench, populate, time_adapter
from _runtime_workloads import WORKLOADS, run_workload

import yieldstar_sim as ys
from yieldstar_sim.core.clock import ManualClock
from yieldstar_sim.runtime.duckdb_runtime import QUERIES as DUCKDB_QUERIES

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.runtime.postgres import PostgresRuntime

MAX_STATEMENTS_PER_CALL = 1.5
MAX_RATIO = 1.5
DSN = os.environ.get("YIELDSTAR_PG_DSN", "").strip()
NAME_OF = {sql: name for name, sql in DUCKDB_QUERIES.items()}
#: DuckDB's start and child blocks hold two statements each; on PostgreSQL they are two calls.
OPENS = {"start_insert": "begin", "child_insert": "begin"}
ENDS_FIRST = {"start_find": "rollback", "child_find": "rollback"}
#: DuckDB reads the row a claim will take (claim_rows), then takes it by ID and revision; on
#: PostgreSQL the claim is the one statement that finds and takes it.
FOLDED = {"claim_rows"}


def new_postgres() -> PostgresRuntime:
    from yieldstar_sim.runtime.postgres import PostgresRuntime

    return PostgresRuntime(DSN, clock=ManualClock())


def translate(op: BareOp) -> list[tuple[str, dict[str, object] | None]]:
    """bench_runtime's bare statements (DuckDB's text) as the PostgreSQL adapter issues them."""
    from yieldstar_sim.runtime.postgres import QUERIES

    out: list[tuple[str, dict[str, object] | None]] = []
    for sql, params in op:
        name = NAME_OF[sql]
        if name in FOLDED:
            continue
        bound = params
        if name in OPENS:
            out.append((QUERIES[OPENS[name]], None))
            bound = {"guard": True, **(params or {})}
        if name in ENDS_FIRST:
            out.append((QUERIES[ENDS_FIRST[name]], None))
        out.append((QUERIES[name], bound))
    return out


def time_bare(runtime: PostgresRuntime, batch: Batch) -> float:
    """Seconds per call of the batch's bare statements, after its warm-up ones."""
    connection = runtime.connection
    ops = [translate(op) for op in batch.bare]

    def run(op: list[tuple[str, dict[str, object] | None]]) -> None:
        for sql, params in op:
            cursor = connection.execute(sql, params)
            if cursor.description is not None:
                cursor.fetchall()

    for op in ops[:WARMUP]:
        run(op)
    return per_call([lambda op=op: run(op) for op in ops[WARMUP:]])


def measure_calls(
    reps: int, batch: int
) -> list[tuple[Bench, list[float], list[float], set[float]]]:
    """Per bench: adapter seconds, bare seconds, statements per call, one per repetition."""
    results = []
    for bench in BENCHES:
        n = max(1, round(batch * bench.scale)) + WARMUP
        adapter: list[float] = []
        bare: list[float] = []
        counts: set[float] = set()
        for rep in range(reps):
            order = ("adapter", "bare") if rep % 2 == 0 else ("bare", "adapter")
            for which in order:
                runtime = new_postgres()
                try:
                    if bench.read:
                        populate(runtime)
                    prepared = bench.prepare(runtime, n)
                    if which == "adapter":
                        trial = time_adapter(runtime, prepared)
                        adapter.append(trial.seconds_per_call)
                        counts.add(trial.statements_per_call)
                    else:
                        bare.append(time_bare(runtime, prepared))
                finally:
                    runtime.close()
        results.append((bench, adapter, bare, counts))
        progress(bench.name)
    return results


def print_calls(results: Sequence[tuple[Bench, list[float], list[float], set[float]]]) -> int:
    rows = [
        ["call", "postgres us", "bare us", "overhead us", "ratio", "SQL/call", f"<={MAX_RATIO}x"]
    ]
    misses = 0
    for bench, adapter, bare, counts in results:
        ratio = statistics.median(a / b for a, b in zip(adapter, bare, strict=True))
        misses += ratio > MAX_RATIO
        rows.append(
            [
                bench.name,
                us(statistics.median(adapter)),
                us(statistics.median(bare)),
                us(statistics.median(adapter) - statistics.median(bare)),
                f"{ratio:.2f}",
                spread(counts),
                verdict(ratio <= MAX_RATIO),
            ]
        )
    show(rows, [False, True, True, True, True, True, False])
    return misses


def measure_workloads(rounds: int, reps: int) -> list[tuple[str, float, float]]:
    """Per workload: statements per call, and the median cost per call on PostgreSQL."""
    out = []
    for workload in WORKLOADS:
        _, counted = run_workload(new_postgres, workload, rounds, tally=True)
        statements = sum(c for _, c in counted.kinds.values()) / counted.calls
        costs = [run_workload(new_postgres, workload, rounds, tally=False)[0] for _ in range(reps)]
        out.append((workload.name, statements, statistics.median(costs)))
    return out


def simulate_rate(runtime: str, seeds: int, reps: int) -> float:
    """Median over repetitions of simulate runs per second on ``runtime``."""
    scenario = ys.load_scenario("durable-start")
    rates = []
    for _ in range(reps):
        start = time.perf_counter()
        for seed in range(seeds):
            ys.simulate(scenario, seed, runtime=runtime).runtime.close()
        rates.append(seeds / (time.perf_counter() - start))
    return statistics.median(rates)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    reps = args.reps or (1 if args.smoke else 3 if args.quick else 5)
    batch = 1 if args.smoke else 20 if args.quick else 60
    rounds = 1 if args.smoke else 5 if args.quick else 20
    seeds = 2 if args.smoke else 10 if args.quick else 40
    began = header("PostgreSQL", details=f"{reps} repetitions{sizes(args)}")
    print()
    misses = 0
    workloads: list[tuple[str, float, float]] = []
    if DSN:
        import psycopg

        with psycopg.connect(DSN) as connection:
            version = connection.execute("SHOW server_version").fetchone()
        print(f"PostgreSQL {version[0] if version else '?'}, psycopg {psycopg.__version__}\n")
        misses = print_calls(measure_calls(reps, batch))
        workloads = measure_workloads(rounds, reps)
        print()
        for name, statements, cost in workloads:
            print(f"workload '{name}': {statements:.2f} SQL/call, {us(cost)} us per call")
    else:
        print("PostgreSQL: skipped (YIELDSTAR_PG_DSN is not set; scripts/postgres.sh start)")
    print(f"\nsimulate runs per second, durable-start, {seeds} seeds (median of {reps})")
    kinds = ["memory", "duckdb", *(["postgres"] if DSN else [])]
    rates: dict[str, Any] = {kind: simulate_rate(kind, seeds, reps) for kind in kinds}
    rows = [["runtime", "runs/s", "vs memory"]]
    rows += [[k, f"{r:,.1f}", f"{r / rates['memory']:.2f}x"] for k, r in rates.items()]
    show(rows, [False, True, True], indent="  ")
    if not DSN:
        print("  postgres: skipped (YIELDSTAR_PG_DSN is not set)")
    if DSN:
        total = len(BENCHES)
        lines = [
            (
                statements <= MAX_STATEMENTS_PER_CALL,
                f"SQL statements per runtime call, {name} workload: {statements:.2f} "
                f"(target <= {MAX_STATEMENTS_PER_CALL})",
            )
            for name, statements, _ in workloads
        ]
        lines.append(
            (
                not misses,
                f"PostgreSQL call cost within {MAX_RATIO}x of its bare statements: "
                f"{total - misses} of {total} calls",
            )
        )
        targets(lines)
    footer(began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
