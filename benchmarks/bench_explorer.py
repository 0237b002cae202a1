"""Throughput, overhead, parallel speed-up, search power, scaling and memory of ``ys.explore``.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_explorer.py            # full run, about 3-5 minutes
    .venv/bin/python benchmarks/bench_explorer.py --quick    # smoke test, under ~30 s
    .venv/bin/python benchmarks/bench_explorer.py --only exhaustive --quick   # issue 14's table

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
* **search power**: schedules run until the first violation in ``trigger-in-step``
  (``stop_at_first=True``, ``max_faults=2``, counting the fault-free base run) for the
  systematic, random and PCT strategies, over several seeds (median), beside a Hypothesis
  search (``hypothesis.find``, generate phase only, seeded) over lists of one or two
  ``ys.Fault(kind, at=index)`` drawn from the kinds and the choice points of the fault-free
  run, each example a ``ys.simulate(..., faults=..., scenario_faults=False)``; its count also
  includes the fault-free run it needed.
* **scaling**: single-fault systematic exploration (``max_faults=1``) of synthetic scenarios
  with one workflow of N ``step.run`` steps, one trigger and 2 workers, for N = 10, 100 and
  1,000 (with a budget where the whole bound would take too long): choice points, schedules
  under the bound, run, skipped, the time per schedule (and per schedule and choice point),
  total, and the whole bound extrapolated; the cost of the base run (the fault-free run with
  every choice point fingerprinted: ``budget=1``) beside a plain run.
* **fingerprints**: for the same N-step workflows, one schedule with one fault (a crash after
  the call at the middle choice point) run three ways, alternating, medians of repetitions:
  plain (``run_plan``), fingerprinting every choice point with the per-run cache
  (``run_plan(expand=True)``, what the systematic search does), and fingerprinting by reading
  every record and formatting the whole state at every point (the fingerprint before the
  cache, kept in this file). Ratios to the plain run; ``--fingerprints-only`` runs just this
  section.
* **memory**: a 10,000-schedule exploration of ``durable-start`` (random strategy,
  ``max_faults=2``; and systematic, ``max_faults=3``) in a fresh child process, sampled every
  1,000 schedules (``--quick``: 800 schedules, every 200) through the ``progress``
  callback: peak RSS (``ru_maxrss``) and resident memory now (``/proc/self/statm``; the
  peak alone hides growth below the peak the imports left) in one child, and the traced
  Python heap (``tracemalloc`` current and peak) in another.

Targets, reported as PASS/MISS (never asserted):

* the explorer's cost per schedule at most 1.0x one plain run;
* ``jobs=2`` at least 1.7x faster than ``jobs=1``;
* systematic exploration needs the fewest schedules to the first violation;
* a fingerprinted run at most 1.2x a plain run at every length;
* peak RSS under 300 MB over 10,000 schedules, and flat: resident memory after 10,000
  schedules within 1.25x of resident memory after 1,000.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import multiprocessing
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb
import hypothesis
from _harness import ms, table, verdict
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

import yieldstar_sim as ys
from yieldstar_sim.simulation import ExplorationReport, FaultKind, SimulationRun
from yieldstar_sim.simulation.explorer import plans

if TYPE_CHECKING:
    from collections.abc import Sequence

MAX_COST_RATIO = 1.0
MIN_SPEEDUP = 1.7
MAX_PEAK_MB = 300.0
MAX_GROWTH = 1.25
MAX_FINGERPRINT_RATIO = 1.2
FAULT_KINDS: tuple[FaultKind, ...] = tuple(FaultKind)


# --------------------------------------------------------------------------- helpers


def explore(scenario: ys.Scenario, **options: Any) -> tuple[float, ExplorationReport]:
    """Seconds (wall) and report of one exploration, without DuckDB confirmation."""
    options.setdefault("confirm", None)
    start = time.perf_counter()
    report = ys.explore(scenario, **options)
    return time.perf_counter() - start, report


def timed_simulate(scenario: ys.Scenario, **options: Any) -> tuple[float, SimulationRun]:
    """Seconds and result of one ``ys.simulate``; its runtime is closed after the clock stops."""
    start = time.perf_counter()
    run = ys.simulate(scenario, **options)
    seconds = time.perf_counter() - start
    run.runtime.close()
    return seconds, run


def freeze_seconds(scenario: ys.Scenario) -> float:
    """The freeze the explorer places by default: the lease plus the redelivery delay."""
    return scenario.lease_seconds + scenario.redelivery_delay


def fault(kind: FaultKind, at: int, scenario: ys.Scenario) -> ys.Fault:
    """A fault at a choice point, as the explorer places it."""
    seconds = freeze_seconds(scenario) if kind == FaultKind.FREEZE else None
    return ys.Fault(kind, at=at, seconds=seconds)


def essentials(report: ExplorationReport) -> tuple[Any, ...]:
    """What must not depend on how an exploration was run."""
    return (
        report.schedules_run,
        report.skipped_equivalent,
        report.total_under_bound,
        [(v.invariant, v.message, v.faults) for v in report.violations],
    )


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def progress(text: str) -> None:
    print(f"  {text}", file=sys.stderr, flush=True)


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
    print("\n".join(table(rows, [False, True, True, True, True, True, True], indent="  ")))
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
    print("\n".join(table(rows, [False, True, True, True, True], indent="  ")))
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
    print("\n".join(table(rows, [True] * 7, indent="  ")))
    print(
        f"  reports equal (schedules, skipped, bound, violations): "
        f"{'yes' if result.same else 'NO'}; speed-up per repetition: "
        f"{', '.join(f'{s:.2f}' for s in result.speedups)}; CPU ceiling: two forked processes "
        f"of pure-Python arithmetic against one, per repetition: "
        f"{', '.join(f'{c:.2f}' for c in result.ceiling)}"
    )
    return speedup


# --------------------------------------------------------------------------- first violation


def hypothesis_search(scenario: ys.Scenario, seed: int, max_examples: int) -> int | None:
    """Schedules (the fault-free run, then examples) until Hypothesis finds a violation."""
    _, base = timed_simulate(scenario, seed=seed, runtime="memory", scenario_faults=False)
    calls = 0
    first: int | None = None

    def violates(faults: list[ys.Fault]) -> bool:
        nonlocal calls, first
        calls += 1
        # Two faults drawn at one choice point, or one a crash left unreached, cannot all
        # fire: the explorer would never run that plan, so it is not a violation either.
        run = ys.simulate(
            scenario, seed, runtime="memory", faults=faults, scenario_faults=False,
            check_faults=False,
        )  # fmt: skip
        run.runtime.close()
        if not run.ok and first is None:
            first = calls
        return not run.ok

    placed = st.tuples(st.sampled_from(FAULT_KINDS), st.integers(0, max(base.points - 1, 0)))
    plans = st.lists(
        placed.map(lambda pair: fault(pair[0], pair[1], scenario)), min_size=1, max_size=2
    )
    options = settings(
        database=None,
        derandomize=False,
        max_examples=max_examples,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    try:
        find(plans, violates, settings=options, random=random.Random(seed))
    except NoSuchExample:
        return None
    return None if first is None else first + 1


@dataclass
class Search:
    """Schedules to the first violation, per seed, for one search method."""

    method: str
    counts: list[int | None] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    @property
    def found(self) -> list[int]:
        return [c for c in self.counts if c is not None]

    @property
    def median(self) -> float:
        return median(self.found) if self.found else float("inf")


def measure_search(scenario: ys.Scenario, seeds: Sequence[int], budget: int) -> list[Search]:
    searches = [Search(m) for m in ("systematic", "random", "pct", "hypothesis")]
    for seed in seeds:
        for search in searches:
            start = time.perf_counter()
            if search.method == "hypothesis":
                count = hypothesis_search(scenario, seed, budget)
            else:
                _, report = explore(
                    scenario, strategy=search.method, max_faults=2, seed=seed, budget=budget
                )
                count = None if report.ok else report.schedules_run
            search.counts.append(count)
            search.seconds.append(time.perf_counter() - start)
    return searches


def print_search(searches: Sequence[Search], scenario: ys.Scenario, budget: int) -> bool:
    seeds = len(searches[0].counts)
    print(
        f"\nSchedules to the first violation in {scenario.name} (max 2 faults, budget {budget}, "
        f"seeds 0-{seeds - 1}; counts include the fault-free run)"
    )
    rows = [["method", "found", "median", "min", "max", "per seed", "median s"]]
    for search in searches:
        found = search.found
        rows.append(
            [
                search.method,
                f"{len(found)}/{seeds}",
                f"{search.median:g}",
                str(min(found)) if found else "-",
                str(max(found)) if found else "-",
                " ".join("-" if c is None else str(c) for c in search.counts),
                f"{median(search.seconds):.3f}",
            ]
        )
    print("\n".join(table(rows, [False, True, True, True, True, False, True], indent="  ")))
    print(
        "  median s: seconds to the verdict per seed, the explorer's including its shrinking "
        "of what it found."
    )
    systematic, *others = searches
    return all(systematic.median < other.median for other in others)


# --------------------------------------------------------------------------- scaling


def chain_scenario(n: int) -> ys.Scenario:
    """One workflow of ``n`` ``step.run`` steps, one trigger, 2 workers."""

    @ys.workflow("chain")
    def chain(step: ys.StepRunner, params: Any) -> Any:
        total = 0
        for i in range(n):
            total += yield from step.run(f"s{i}", lambda i=i: i)
        return total

    return ys.Scenario(
        name=f"chain-{n}",
        workflows=[chain],
        triggers=[ys.Trigger("chain", {"steps": n}, execution_id="chain-1")],
        workers=2,
        max_points=100 * n + 1_000,
    )


@dataclass
class Growth:
    steps: int
    budget: int | None
    points: int = 0
    plain: float = 0.0
    base: float = 0.0
    seconds: float = 0.0
    schedules: int = 0
    skipped: int = 0
    bound: int = 0
    ok: bool = True


def measure_growth(steps: int, budget: int | None) -> Growth:
    scenario = chain_scenario(steps)
    result = Growth(steps, budget)
    runs = [timed_simulate(scenario, seed=0, runtime="memory") for _ in range(3)]
    result.plain = median([s for s, _ in runs])
    result.points = runs[0][1].points
    result.base = median([explore(scenario, max_faults=1, budget=1)[0] for _ in range(3)])
    result.seconds, report = explore(scenario, max_faults=1, stop_at_first=False, budget=budget)
    result.schedules, result.skipped = report.schedules_run, report.skipped_equivalent
    result.bound = report.total_under_bound or 0
    result.ok = report.ok
    return result


def print_growth(results: Sequence[Growth]) -> None:
    print(
        "\nScaling: single-fault systematic exploration (max_faults=1) of one workflow of N "
        "step.run steps, 2 workers"
    )
    rows = [
        [
            "N",
            "points",
            "under bound",
            "run",
            "skipped",
            "budget",
            "total s",
            "ms/schedule",
            "us/sched/point",
            "whole bound s",
            "plain run ms",
            "base run ms",
        ]
    ]
    for r in results:
        per = r.seconds / r.schedules
        rows.append(
            [
                f"{r.steps:,}",
                f"{r.points:,}",
                f"{r.bound:,}",
                f"{r.schedules:,}",
                str(r.skipped),
                "none" if r.budget is None else str(r.budget),
                f"{r.seconds:.2f}",
                ms(per),
                f"{per / r.points * 1e6:.1f}",
                f"{r.seconds if r.budget is None else per * (r.bound - r.skipped):,.1f}"
                + ("" if r.budget is None else " (est.)"),
                ms(r.plain),
                ms(r.base),
            ]
        )
    print("\n".join(table(rows, [True] * 12, indent="  ")))
    print(
        "  base run: the fault-free run with every choice point fingerprinted (explore with "
        "budget=1); whole bound (est.): ms/schedule x (under bound - skipped), where a budget "
        "cut the run short. Every exploration held every invariant: "
        f"{'yes' if all(r.ok for r in results) else 'NO'}."
    )


# --------------------------------------------------------------------------- fingerprints


def _state_key_before(simulator: Any, name: str, point: Any, cache: Any = None) -> str:
    """The fingerprint as it was before the cache: every record and step read again, and
    the whole state formatted, at every choice point."""
    runtime = simulator.runtime
    records = []
    for record in runtime.executions():
        lease = record.lease
        records.append(
            (
                record.execution_id,
                str(record.status),
                record.due_at,
                record.lease_token,
                None if lease is None else lease.expires_at,
                record.cancel_requested,
                record.waiting_on,
                tuple(
                    (s.step_key, s.status, s.attempt) for s in runtime.steps(record.execution_id)
                ),
            )
        )
    others = sorted(
        state.replace(other, "~") for other, state in simulator.kernel.waiting() if other != name
    )
    info = point.info
    ledger = [
        (e.name, sorted(e.data.items()), e.execution_id, e.step_key)
        for e in simulator.ledger.effects
    ]
    text = repr(
        (records, simulator.clock.now(), ledger, others, info.op, info.execution_id, info.step_key)
    )
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


@dataclass
class FingerprintCost:
    steps: int
    points: int = 0
    times: dict[str, list[float]] = field(
        default_factory=lambda: {"plain": [], "cached": [], "before": []}
    )

    def ratio(self, mode: str) -> float:
        """Median over repetitions of this mode's time / the plain run's."""
        return median([t / p for t, p in zip(self.times[mode], self.times["plain"], strict=True)])


def measure_fingerprints(steps: int, reps: int) -> FingerprintCost:
    """Plain, cached and full-read fingerprinted runs of one single-fault schedule."""
    scenario = chain_scenario(steps)
    base = plans.run_plan(scenario, plans.Plan(0, 0))
    plan = plans.Plan(0, 0, (fault(FaultKind.CRASH_AFTER, base.points // 2, scenario),))
    result = FingerprintCost(steps, plans.run_plan(scenario, plan).points)
    cached = plans._state_key
    plans.run_plan(scenario, plan, expand=True)  # warm-up
    for rep in range(reps):
        modes = ["plain", "cached", "before"]
        for mode in modes if rep % 2 == 0 else modes[::-1]:
            plans._state_key = _state_key_before if mode == "before" else cached
            try:
                start = time.perf_counter()
                plans.run_plan(scenario, plan, expand=mode != "plain")
                result.times[mode].append(time.perf_counter() - start)
            finally:
                plans._state_key = cached
    return result


def print_fingerprints(results: Sequence[FingerprintCost]) -> bool:
    print(
        "\nFingerprints: one schedule with one fault (crash after the middle point) of one "
        "workflow of N step.run steps; medians, ms, ratios to the plain run"
    )
    rows = [["N", "points", "plain", "cached", "before", "cached/plain", "before/plain",
             "before/cached"]]  # fmt: skip
    rows.extend(
        [
            f"{r.steps:,}",
            f"{r.points:,}",
            *(ms(median(r.times[mode])) for mode in ("plain", "cached", "before")),
            f"{r.ratio('cached'):.2f}x",
            f"{r.ratio('before'):.2f}x",
            f"{median(r.times['before']) / median(r.times['cached']):.2f}x",
        ]
        for r in results
    )
    print("\n".join(table(rows, [True] * 8, indent="  ")))
    ok = all(r.ratio("cached") <= MAX_FINGERPRINT_RATIO for r in results)
    print(
        f"  [{verdict(ok)}] a fingerprinted run at most {MAX_FINGERPRINT_RATIO}x a plain run at "
        "every length"
    )
    return ok


def fingerprint_section(config: Config) -> bool:
    """Measure and print the fingerprint costs at 10, 100 and 1,000 steps."""
    costs = []
    for steps in (10, 100, 1000):
        progress(f"fingerprints, {steps} steps")
        # Short runs are noisier: more repetitions of them.
        reps = (3 if config.quick else 7) * (5 if steps <= 10 else 1)
        costs.append(measure_fingerprints(steps, reps))
    return print_fingerprints(costs)


# --------------------------------------------------------------------------- memory


def resident_mb() -> float:
    """Resident memory now, in MB (Linux ``/proc/self/statm``; else the peak)."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def memory_child(strategy: str, budget: int, every: int, trace: bool) -> None:
    """In a fresh process: explore, sampling memory every ``every`` schedules; print JSON."""
    scenario = ys.load_scenario("durable-start")
    options: dict[str, Any] = (
        {"strategy": "random", "max_faults": 2}
        if strategy == "random"
        else {"strategy": "systematic", "max_faults": 3}
    )
    samples: list[dict[str, float]] = []

    def sample(count: int) -> None:
        if count % every:
            return
        point: dict[str, float] = {
            "schedules": count,
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "now_mb": resident_mb(),
        }
        if trace:
            current, peak = tracemalloc.get_traced_memory()
            point.update(current_mb=current / 2**20, peak_mb=peak / 2**20)
        samples.append(point)

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    resident = resident_mb()
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    report = ys.explore(
        scenario, budget=budget, stop_at_first=False, confirm=None, progress=sample, **options
    )
    print(
        json.dumps(
            {
                "before_mb": before,
                "resident_mb": resident,
                "seconds": time.perf_counter() - start,
                "schedules": report.schedules_run,
                "samples": samples,
            }
        )
    )


@dataclass
class MemoryRun:
    strategy: str
    rss: dict[str, Any]
    traced: dict[str, Any]

    @property
    def peak(self) -> float:
        """Peak RSS over the whole child, in MB."""
        return float(max(s["rss_mb"] for s in self.rss["samples"]))

    @property
    def flatness(self) -> float:
        """Resident memory after the last sample over resident memory after the first."""
        samples = self.rss["samples"]
        return float(samples[-1]["now_mb"] / samples[0]["now_mb"])

    @property
    def per_schedule(self) -> float:
        """Bytes the traced heap grows per schedule, first sample to last."""
        first, last = self.traced["samples"][0], self.traced["samples"][-1]
        grown = (last["current_mb"] - first["current_mb"]) * 2**20
        return float(grown / (last["schedules"] - first["schedules"]))

    @property
    def ok(self) -> bool:
        return self.peak < MAX_PEAK_MB and self.flatness <= MAX_GROWTH


def run_child(strategy: str, budget: int, every: int, *, trace: bool) -> dict[str, Any]:
    command = [sys.executable, __file__, "--memory-child", strategy, str(budget), str(every)]
    if trace:
        command.append("--trace")
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return data


def print_memory(runs: Sequence[MemoryRun], budget: int, every: int) -> bool:
    print(
        f"\nMemory over a {budget:,}-schedule exploration of durable-start, fresh process each, "
        f"sampled every {every:,} schedules"
    )
    ok = True
    for run in runs:
        label = "random, max_faults=2" if run.strategy == "random" else "systematic, max_faults=3"
        print(
            f"  {label}: {run.rss['schedules']:,} schedules in {run.rss['seconds']:.1f} s "
            f"({run.traced['seconds']:.1f} s under tracemalloc); before exploring: peak RSS "
            f"{run.rss['before_mb']:.1f} MB, resident {run.rss['resident_mb']:.1f} MB"
        )
        rows = [["schedules", "peak RSS MB", "RSS now MB", "traced now MB", "traced peak MB"]]
        for rss, traced in zip(run.rss["samples"], run.traced["samples"], strict=True):
            rows.append(
                [
                    f"{rss['schedules']:,}",
                    f"{rss['rss_mb']:.1f}",
                    f"{rss['now_mb']:.1f}",
                    f"{traced['current_mb']:.2f}",
                    f"{traced['peak_mb']:.2f}",
                ]
            )
        print("\n".join(table(rows, [True] * 5, indent="    ")))
        print(
            f"    resident after {budget:,} / after {every:,}: {run.flatness:.3f}x; the traced "
            f"heap grows {run.per_schedule:,.0f} bytes per schedule (the plans and outcomes the "
            f"search keeps), about {run.per_schedule * 1e6 / 2**30:.1f} GB per million schedules"
        )
        ok = ok and run.ok
    return ok


# --------------------------------------------------------------------------- main


@dataclass(frozen=True)
class Config:
    """Sizes of every section, full or quick."""

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

    @classmethod
    def make(cls, quick: bool, reps: int | None) -> Config:
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
    systematic_first = all(systematic.median < other.median for other in others)
    every = config.every
    memory_ok = all(run.ok for run in runs)
    print("\nTargets (reported, not asserted)")
    print(
        f"  [{verdict(cost <= MAX_COST_RATIO)}] explorer cost per schedule against one plain run "
        f"(ys.simulate, memory): {cost:.2f}x (target <= {MAX_COST_RATIO}x)"
    )
    print(
        f"  [{verdict(speedup >= MIN_SPEEDUP and parallel.same)}] jobs=2 over jobs=1: "
        f"{speedup:.2f}x (target >= {MIN_SPEEDUP}x; the machine's CPU ceiling this run "
        f"{median(parallel.ceiling):.2f}x)"
    )
    medians = ", ".join(f"{s.method} {s.median:g}" for s in searches)
    print(
        f"  [{verdict(systematic_first)}] systematic needs the fewest schedules to the first "
        f"violation (medians: {medians})"
    )
    peaks = ", ".join(
        f"{run.strategy} peak {run.peak:.0f} MB, resident {run.flatness:.2f}x" for run in runs
    )
    print(
        f"  [{verdict(memory_ok)}] peak RSS over {config.memory_budget:,} schedules under "
        f"{MAX_PEAK_MB:.0f} MB, resident memory flat (<= {MAX_GROWTH}x from {every:,} "
        f"schedules on): {peaks}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smaller explorations (smoke test)")
    parser.add_argument("--reps", type=int, help="repetitions on memory (default 5; quick 1)")
    parser.add_argument(
        "--fingerprints-only", action="store_true", help="only the fingerprint cost section"
    )
    parser.add_argument(
        "--only",
        choices=("exhaustive",),
        help="run one section: exhaustive (benchmarks/_exhaustive.py)",
    )
    parser.add_argument("--memory-child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        strategy, budget, every = args.memory_child
        memory_child(strategy, int(budget), int(every), args.trace)
        return 0
    if args.only == "exhaustive":
        from _exhaustive import run_exhaustive

        return run_exhaustive(args.quick)
    config = Config.make(args.quick, args.reps)
    began = time.perf_counter()
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"yieldstar_sim explorer benchmark: python {platform.python_version()}, duckdb "
        f"{duckdb.__version__}, hypothesis {hypothesis.__version__}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs (load {load}); {config.reps} repetitions"
        f"{', quick' if config.quick else ''}\n"
    )
    if args.fingerprints_only:
        fingerprint_section(config)
        print(f"\n(took {time.perf_counter() - began:.1f} s)")
        return 0
    fixed = ys.load_scenario("durable-start")
    problem = ys.load_scenario("trigger-in-step")
    explore(fixed, max_faults=1)  # warm-up: imports, caches, DuckDB's first connection
    timed_simulate(fixed, seed=0, runtime="duckdb")

    throughput = Throughput(fixed, config.duckdb_budget)
    for rep in range(config.reps):
        progress(f"throughput, repetition {rep + 1}/{config.reps}")
        measure_throughput(throughput, 31)
        if rep < config.duckdb_reps:
            measure_duckdb(throughput, 3)
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

    fingerprint_section(config)

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
    print(f"\n(took {time.perf_counter() - began:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
