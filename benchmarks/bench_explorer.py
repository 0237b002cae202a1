"""Throughput, overhead, parallel speed-up, search power, scaling and memory of ``ys.explore``.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_explorer.py            # full run, about 3-5 minutes
    .venv/bin/python benchmarks/bench_explorer.py --quick    # smoke test, under ~30 s
    .venv/bin/python benchmarks/bench_explorer.py --only exhaustive --quick   # issue 14's table
    .venv/bin/python benchmarks/bench_explorer.py --restoring-only --quick   # restoring, ~3 min
    .venv/bin/python benchmarks/bench_explorer.py --keys-only --instructions  # valgrind
    .venv/bin/python benchmarks/bench_explorer.py --smoke    # every section, tiny (CI)

Every exploration is ``ys.explore(..., confirm=None)`` (no DuckDB confirmation), timed with
``time.perf_counter`` around the call, garbage collector on (as in use). The machines are
shared and noisy (2 cores): each section times the things it compares back to back, in
alternating order, and quotes medians of repetitions and of per-repetition ratios.

What it measures:

* **throughput**: schedules per second of systematic exploration (``max_faults=2``,
  ``stop_at_first=False``) of the bundled ``durable-start`` on the memory runtime (the whole
  bound), and end to end on DuckDB (``runtime="duckdb"``, a ``budget``: a DuckDB schedule
  costs about 100x a memory one), beside the memory runtime under the same budget.
* **cost per schedule**: the exploration's seconds per schedule as a ratio to one plain run
  of the same scenario, ``ys.simulate(scenario, 0, runtime="memory")`` (median of
  single runs). That run keeps the scenario's own crash; the fault-free run
  (``scenario_faults=False``, the explorer's base schedule) and the mean plain run with one
  fault at each choice point of it (``ys.simulate(..., faults=[...])``: the schedules the
  explorer runs, without its bookkeeping) are shown beside it, to tell how much of the ratio
  is the explorer's own work and how much is the longer runs faults make.
* **parallel speed-up**: the same exploration (systematic, ``max_faults=3`` with a budget)
  with ``jobs=1`` and ``jobs=2``; the reports must be equal. Beside it, the pool start-up
  (``jobs=2`` with ``budget=1``), the parent's CPU time during ``jobs=2`` (its serial share),
  and the speed-up the machine gives right now to plain CPU-bound Python in two forked
  processes (the ceiling, measured in the same repetition; "of ceiling" is the median of the
  per-repetition speed-up / ceiling).
* **search power**: schedules to the first violation by strategy, see ``_explorer_search.py``.
* **restoring** (``--restoring-only``): searches that put saved states back against the same
  searches on a runtime that cannot snapshot itself, which replay the path to each: a 300-step
  (quick; 1,000 otherwise) workflow at one fault, bundled scenarios at two, durable-start's
  exhaustive search: see ``_explorer_restoring.py``.
* **scaling** and **state keys** (``--keys-only``): see ``_explorer_scaling.py``; **memory**
  over 10,000 schedules: see ``_explorer_memory.py``.

Targets, reported as PASS/MISS (never asserted):

* the explorer's cost per schedule at most 1.0x one plain run;
* ``jobs=2`` at least 1.7x faster than ``jobs=1``;
* systematic exploration needs the fewest schedules to the first violation;
* a run keyed as the systematic search keys it, and one with a key at every point, at most
  1.2x a plain run at every length;
* restoring states at most 1.0x of replaying the paths to them, with the same reports;
* peak RSS under 300 MB over 10,000 schedules, and flat: resident memory after 10,000
  schedules within 1.25x of resident memory after 1,000.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb
import hypothesis
from _explorer_kit import FAULT_KINDS, essentials, explore, fault, timed_simulate
from _explorer_memory import (
    MAX_GROWTH,
    MAX_PEAK_MB,
    MemoryRun,
    memory_child,
    print_memory,
    run_child,
)
from _explorer_restoring import restoring_section
from _explorer_scaling import key_section, measure_growth, print_growth
from _explorer_search import Search, measure_search, print_search
from _harness import TARGETS, footer, header, median, ms, parser, progress, show, sizes, target

import yieldstar_sim as ys

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.simulation import ExplorationReport

MAX_COST_RATIO = 1.0
MIN_SPEEDUP = 1.7


# --------------------------------------------------------------------------- throughput, cost


@dataclass
class Throughput:
    """Systematic max_faults=2 exploration of one scenario, and plain runs of it."""

    scenario: ys.Scenario
    duckdb_budget: int
    schedules: int = 0
    skipped: int = 0
    bound: int | None = None
    explore: list[float] = field(default_factory=list)
    """Seconds per schedule, memory, whole bound."""
    plain: list[float] = field(default_factory=list)
    """Median seconds of ``ys.simulate(scenario, 0, runtime="memory")``, per repetition."""
    fault_free: list[float] = field(default_factory=list)
    single_fault: list[float] = field(default_factory=list)
    """Mean seconds of a plain run with one fault, over every (choice point, kind)."""
    points: tuple[int, int] = (0, 0)
    """Choice points of the plain run and of the fault-free run."""
    duckdb: list[float] = field(default_factory=list)
    memory_budget: list[float] = field(default_factory=list)
    duckdb_plain: list[float] = field(default_factory=list)
    duckdb_schedules: int = 0

    def ratios(self, baseline: list[float]) -> list[float]:
        return [e / b for e, b in zip(self.explore, baseline, strict=True)]


def measure_throughput(result: Throughput, plain_runs: int) -> None:
    """One repetition on memory: the exploration, then the plain runs it is compared with."""
    scenario = result.scenario
    seconds, report = explore(scenario, max_faults=2, stop_at_first=False)
    result.schedules, result.skipped = report.schedules_run, report.skipped_equivalent
    result.bound = report.total_under_bound
    result.explore.append(seconds / report.schedules_run)
    plain = [timed_simulate(scenario, seed=0, runtime="memory") for _ in range(plain_runs)]
    free = [
        timed_simulate(scenario, seed=0, runtime="memory", scenario_faults=False)
        for _ in range(plain_runs)
    ]
    result.plain.append(median([s for s, _ in plain]))
    result.fault_free.append(median([s for s, _ in free]))
    points = free[0][1].points
    result.points = (plain[0][1].points, points)
    single = [
        timed_simulate(
            scenario,
            seed=0,
            runtime="memory",
            faults=[fault(kind, at, scenario)],
            scenario_faults=False,
            # A stall placed where nothing elapses cannot fire: the explorer never runs that
            # plan, so the run goes on without it rather than being refused.
            check_faults=False,
        )[0]
        for at in range(points)
        for kind in FAULT_KINDS
    ]
    result.single_fault.append(statistics.fmean(single))


def measure_duckdb(result: Throughput, plain_runs: int) -> None:
    """One repetition of the budgeted exploration on DuckDB and on memory, and plain DuckDB."""
    scenario, budget = result.scenario, result.duckdb_budget
    seconds, report = explore(
        scenario, max_faults=2, stop_at_first=False, runtime="duckdb", budget=budget
    )
    result.duckdb_schedules = report.schedules_run
    result.duckdb.append(seconds / report.schedules_run)
    seconds, report = explore(scenario, max_faults=2, stop_at_first=False, budget=budget)
    result.memory_budget.append(seconds / report.schedules_run)
    result.duckdb_plain.append(
        median([timed_simulate(scenario, seed=0, runtime="duckdb")[0] for _ in range(plain_runs)])
    )


def print_throughput(result: Throughput) -> float:
    """Print the throughput and cost tables; return the median cost ratio to a plain run."""
    name = result.scenario.name
    print(
        f"Throughput: systematic exploration of {name}, max_faults=2, stop_at_first=False "
        f"({len(result.explore)} repetitions on memory, {len(result.duckdb)} on DuckDB)"
    )
    mem = median(result.explore)
    rows = [["runtime", "budget", "schedules", "skipped", "under bound", "ms/schedule", "sched/s"]]
    rows.append(
        [
            "memory",
            "none",
            str(result.schedules),
            str(result.skipped),
            str(result.bound),
            ms(mem),
            f"{1 / mem:,.0f}",
        ]
    )
    for label, values in (("memory", result.memory_budget), ("duckdb", result.duckdb)):
        rows.append(
            [
                label,
                str(result.duckdb_budget),
                str(result.duckdb_schedules),
                "-",
                "-",
                ms(median(values)),
                f"{1 / median(values):,.1f}",
            ]
        )
    show(rows, [False, True, True, True, True, True, True], "  ")
    duck_ratio = median([d / m for d, m in zip(result.duckdb, result.memory_budget, strict=True)])
    print(
        f"  DuckDB end to end costs {duck_ratio:,.0f}x memory per schedule under the same budget; "
        f"one plain DuckDB run (ys.simulate(..., runtime='duckdb')) takes "
        f"{ms(median(result.duckdb_plain))} ms."
    )
    plain_points, free_points = result.points
    print(
        f"\nCost per schedule: the exploration above (memory, whole bound) against plain "
        f"ys.simulate runs of {name} (medians of {len(result.explore)} repetitions)"
    )
    rows = [["baseline", "choice points", "baseline ms", "explorer ms/schedule", "ratio"]]
    baselines = (
        (
            "ys.simulate(scenario, 0, runtime='memory') (the scenario's crash)",
            plain_points,
            result.plain,
        ),
        ("the same, scenario_faults=False (fault-free)", free_points, result.fault_free),
        (
            f"mean of one fault at each (point, kind): {free_points * len(FAULT_KINDS)} runs",
            -1,
            result.single_fault,
        ),
    )
    for label, points, values in baselines:
        rows.append(
            [
                label,
                str(points) if points >= 0 else "-",
                ms(median(values)),
                ms(mem),
                f"{median(result.ratios(values)):.2f}x",
            ]
        )
    show(rows, [False, True, True, True, True], "  ")
    return median(result.ratios(result.plain))


# --------------------------------------------------------------------------- jobs


def _burn(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


@dataclass
class Parallel:
    """jobs=1 against jobs=2 on one exploration."""

    options: dict[str, Any]
    one: list[float] = field(default_factory=list)
    two: list[float] = field(default_factory=list)
    parent_cpu: list[float] = field(default_factory=list)
    startup: list[float] = field(default_factory=list)
    ceiling: list[float] = field(default_factory=list)
    schedules: int = 0
    same: bool = True

    @property
    def speedups(self) -> list[float]:
        return [a / b for a, b in zip(self.one, self.two, strict=True)]


def measure_parallel(result: Parallel, scenario: ys.Scenario, rep: int, burn: int) -> None:
    """One repetition: both explorations (alternating order), start-up, and the CPU ceiling."""
    reports: dict[int, ExplorationReport] = {}
    for jobs in (1, 2) if rep % 2 == 0 else (2, 1):
        cpu = time.process_time()
        seconds, reports[jobs] = explore(scenario, jobs=jobs, **result.options)
        if jobs == 2:
            result.parent_cpu.append(time.process_time() - cpu)
            result.two.append(seconds)
        else:
            result.one.append(seconds)
    result.schedules = reports[1].schedules_run
    result.same = result.same and essentials(reports[1]) == essentials(reports[2])
    one, _ = explore(scenario, max_faults=1, budget=1, jobs=1)
    two, _ = explore(scenario, max_faults=1, budget=1, jobs=2)
    result.startup.append(two - one)
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as pool:
        pool.submit(_burn, 1).result()
        start = time.perf_counter()
        _burn(burn)
        _burn(burn)
        serial = time.perf_counter() - start
        start = time.perf_counter()
        list(pool.map(_burn, [burn, burn]))
        result.ceiling.append(serial / (time.perf_counter() - start))


def print_parallel(result: Parallel, scenario: ys.Scenario) -> float:
    options = ", ".join(f"{k}={v}" for k, v in result.options.items())
    print(
        f"\nParallel shards: systematic exploration of {scenario.name} ({options}), "
        f"{result.schedules} schedules ({len(result.one)} repetitions, medians)"
    )
    speedup = median(result.speedups)
    two = median(result.two)
    rows = [
        [
            "jobs=1 s",
            "jobs=2 s",
            "speed-up",
            "of ceiling",
            "pool start-up s",
            "parent CPU",
            "CPU ceiling",
        ]
    ]
    efficiency = median([s / c for s, c in zip(result.speedups, result.ceiling, strict=True)])
    rows.append(
        [
            f"{median(result.one):.2f}",
            f"{two:.2f}",
            f"{speedup:.2f}x",
            f"{efficiency:.0%}",
            f"{median(result.startup):.3f}",
            f"{median(result.parent_cpu):.2f} s ({median(result.parent_cpu) / two:.0%})",
            f"{median(result.ceiling):.2f}x",
        ]
    )
    show(rows, [True] * 7, "  ")
    print(
        f"  reports equal (schedules, skipped, bound, violations): "
        f"{'yes' if result.same else 'NO'}; speed-up per repetition: "
        f"{', '.join(f'{s:.2f}' for s in result.speedups)}; CPU ceiling: two forked processes "
        f"of pure-Python arithmetic against one, per repetition: "
        f"{', '.join(f'{c:.2f}' for c in result.ceiling)}"
    )
    return speedup


# --------------------------------------------------------------------------- main


@dataclass(frozen=True)
class Config:
    """Sizes of every section, full, quick or smoke."""

    quick: bool
    reps: int
    duckdb_reps: int
    duckdb_budget: int
    parallel_options: dict[str, Any]
    parallel_reps: int
    burn: int
    seeds: range
    search_budget: int
    growth: tuple[tuple[int, int | None], ...]
    memory_budget: int
    every: int
    smoke: bool = False
    plain_runs: int = 31
    duckdb_plain_runs: int = 3

    @classmethod
    def make(cls, quick: bool, reps: int | None, smoke: bool = False) -> Config:
        if smoke:
            return cls(
                quick, reps or 1, 1, 3, {"max_faults": 1, "stop_at_first": False}, 1,
                100_000, range(1), 100, ((10, None), (30, 3)), 20, 10, True, 1, 1,
            )  # fmt: skip
        if quick:
            return cls(
                quick, reps or 1, 1, 20, {"max_faults": 2, "stop_at_first": False}, 1,
                2_000_000, range(3), 500, ((10, None), (100, 60), (1000, 10)), 800, 200,
            )  # fmt: skip
        return cls(
            quick, reps or 5, 3, 100, {"max_faults": 3, "stop_at_first": False, "budget": 6000},
            3, 5_000_000, range(10), 1000, ((10, None), (100, None), (1000, 200)), 10_000, 1000,
        )  # fmt: skip


def print_targets(
    config: Config,
    cost: float,
    parallel: Parallel,
    searches: Sequence[Search],
    runs: Sequence[MemoryRun],
) -> None:
    speedup = median(parallel.speedups)
    systematic, *others = searches
    medians = ", ".join(f"{s.method} {s.median:g}" for s in searches)
    peaks = ", ".join(
        f"{run.strategy} peak {run.peak:.0f} MB, resident {run.flatness:.2f}x" for run in runs
    )
    print(f"\n{TARGETS}")
    target(
        cost <= MAX_COST_RATIO,
        "explorer cost per schedule against one plain run (ys.simulate, memory): "
        f"{cost:.2f}x (target <= {MAX_COST_RATIO}x)",
    )
    target(
        speedup >= MIN_SPEEDUP and parallel.same,
        f"jobs=2 over jobs=1: {speedup:.2f}x (target >= {MIN_SPEEDUP}x; the machine's CPU "
        f"ceiling this run {median(parallel.ceiling):.2f}x)",
    )
    target(
        all(systematic.median < other.median for other in others),
        f"systematic needs the fewest schedules to the first violation (medians: {medians})",
    )
    target(
        all(run.ok for run in runs),
        f"peak RSS over {config.memory_budget:,} schedules under {MAX_PEAK_MB:.0f} MB, resident "
        f"memory flat (<= {MAX_GROWTH}x from {config.every:,} schedules on): {peaks}",
    )


def keys(config: Config, *, instructions: bool) -> None:
    """The state key section alone: timed, or in instructions (valgrind)."""
    if instructions:
        from _key_instructions import key_instructions

        key_instructions(config.smoke)
    else:
        key_section(config.quick, config.smoke)


def arguments() -> argparse.ArgumentParser:
    """The command line: the harness's flags and this benchmark's sections."""
    args_parser = parser(__doc__, reps="repetitions on memory (default 5; quick 1)")
    args_parser.add_argument(
        "--keys-only", action="store_true", help="only the state key cost section"
    )
    args_parser.add_argument(
        "--instructions",
        action="store_true",
        help="with --keys-only: machine instructions per run (valgrind) instead of time",
    )
    args_parser.add_argument(
        "--restoring-only",
        action="store_true",
        help="only the restoring section (restored states against replayed paths)",
    )
    args_parser.add_argument(
        "--only",
        choices=("exhaustive",),
        help="run one section: exhaustive (benchmarks/_exhaustive.py)",
    )
    args_parser.add_argument("--memory-child", nargs=3, help=argparse.SUPPRESS)
    args_parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    return args_parser


def main(argv: Sequence[str] | None = None) -> int:
    args_parser = arguments()
    args = args_parser.parse_args(argv)
    if args.memory_child:
        strategy, budget, every = args.memory_child
        memory_child(strategy, int(budget), int(every), args.trace)
        return 0
    if args.only == "exhaustive":
        from _exhaustive import run_exhaustive

        return run_exhaustive(args.quick, args.smoke)
    config = Config.make(args.quick, args.reps, args.smoke)
    began = header(
        "explorer",
        f"duckdb {duckdb.__version__}",
        f"hypothesis {hypothesis.__version__}",
        details=f"{config.reps} repetitions{sizes(args)}",
    )
    print()
    if args.instructions and not args.keys_only:
        args_parser.error("--instructions counts the state key section: add --keys-only")
    if args.keys_only:
        keys(config, instructions=args.instructions)
        footer(began)
        return 0
    if args.restoring_only:
        restoring_section(config.quick, config.smoke)
        footer(began)
        return 0
    fixed = ys.load_scenario("durable-start")
    problem = ys.load_scenario("trigger-in-step")
    explore(fixed, max_faults=1)  # warm-up: imports, caches, DuckDB's first connection
    timed_simulate(fixed, seed=0, runtime="duckdb")

    throughput = Throughput(fixed, config.duckdb_budget)
    for rep in range(config.reps):
        progress(f"throughput, repetition {rep + 1}/{config.reps}")
        measure_throughput(throughput, config.plain_runs)
        if rep < config.duckdb_reps:
            measure_duckdb(throughput, config.duckdb_plain_runs)
    cost = print_throughput(throughput)

    parallel = Parallel(config.parallel_options)
    for rep in range(config.parallel_reps):
        progress(f"parallel, repetition {rep + 1}/{config.parallel_reps}")
        measure_parallel(parallel, fixed, rep, config.burn)
    print_parallel(parallel, fixed)

    progress("search power")
    searches = measure_search(problem, config.seeds, config.search_budget)
    print_search(searches, problem, config.search_budget)

    growths = []
    for steps, budget in config.growth:
        progress(f"scaling, {steps} steps")
        growths.append(measure_growth(steps, budget))
    print_growth(growths)

    key_section(config.quick, config.smoke)
    restoring_section(config.quick, config.smoke)

    runs = []
    for strategy in ("random", "systematic"):
        progress(f"memory, {strategy}")
        runs.append(
            MemoryRun(
                strategy,
                run_child(strategy, config.memory_budget, config.every, trace=False),
                run_child(strategy, config.memory_budget, config.every, trace=True),
            )
        )
    print_memory(runs, config.memory_budget, config.every)

    print_targets(config, cost, parallel, searches, runs)
    footer(began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
