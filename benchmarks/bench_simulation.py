"""Cost of one simulation run, and how a memory-runtime run splits between kernel and runtime.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_simulation.py            # full run, well under 2 minutes
    .venv/bin/python benchmarks/bench_simulation.py --quick    # fewer runs, well under 20 s
    .venv/bin/python benchmarks/bench_simulation.py --smoke    # every section, tiny (CI)

The scenarios are the bundled ``durable-start`` (charge-order starts ship-order with
``step.start``; the scenario's own crash before the ship step is recorded) and
``trigger-in-step`` (the same story with a non-durable trigger in a step body: two couriers,
so its runs report invariant violations, which is their point). Each run is what
``ys.simulate(scenario, seed, runtime=...)`` does, in its three phases, timed apart:
``Execution(...)`` (**setup**: the runtime, the kernel, the fault plan, the actors spawned, on
to the first choice point), ``drive(execution, Execution.default_move)`` and closing the actors
(**run**: a move taken at each choice point until nothing is left) and ``finish(execution)``
(**check**: collecting records and checking every invariant). Runtimes are closed after the
clock stops.

What it measures:

* **per-run cost**, per scenario and runtime (``MemoryRuntime``; ``DuckDBRuntime`` in memory):
  every repetition runs seeds 0..S-1 (30 by default), each run timed on its own
  (``time.perf_counter``, garbage collector paused during the run, collected between runs).
  The table shows medians over all runs (repetitions x seeds) of the total and of each phase,
  the fastest run, choice points and trace events per run, and microseconds per choice point
  (the median over runs of run-phase time / points, and of total time / points).
* **where a memory-runtime run goes**, by timing wrappers (no profiler): every public method of
  ``MemoryRuntime``, the ``Kernel`` methods an ``Execution`` calls (``settle``, ``ready``,
  ``point``, ``take``, ``spawn``, ``nudge``...), the ``Execution``'s per-move methods
  (``default_move``, ``take``, ``done``, ``close_actors``; ``drive``, its loop, too), every
  actor's ``send``/``close`` (each actor generator is wrapped when spawned), the codec's
  public methods, ``Trace.add`` and ``FaultPlan.fault_at`` switch a stack of categories
  (wrappers at class level, so bound methods taken at construction, like the kernel's
  ``next_wake``, are caught too); the time between two switches goes to the category on top.
  So **kernel** is the kernel's own code (heaps, waking, resuming; its calls out are not),
  **execution** the ``Execution``'s work at each point (choosing the seed's move among the
  ready actors, finding the plan's fault, checking the move and recording it on the path: what
  ``Kernel.run`` did before ``7857e99``, with its chooser), **runtime** is inside runtime
  methods wherever they are called from (workers, step-body triggers, ``finish``), codec work
  included, and **rest** is everything else, itemised: the actors (the simulation's workers,
  the driver, step bodies, the world), the codec outside the runtime, ``Trace.add``, the fault
  plan, ``Execution`` construction and ``finish`` (invariants). Times and shares are medians
  over runs. A wrapper
  costs a few tenths of a microsecond (measured and printed), charged to the categories it
  sits between, so the instrumented total is shown next to the plain median. The same
  wrappers on one repetition of DuckDB runs show where those go, for comparison.
* **which code dominates**: the same memory-runtime runs again, each under its own
  ``cProfile``; ``tottime`` is summed per source file (C builtins are charged to the file that
  called them, in proportion to the time of each call edge) and per function, and the medians
  over runs are shown for the files outside ``kernel.py``, ``execution.py`` and ``runtime/``
  and the largest
  functions. Codec, ``json`` and ``rfc8785`` time there is mostly spent on the
  runtime's behalf (the wrappers count it as runtime). The profiler inflates code that makes
  many small calls; its kernel share is printed beside the wrappers' for comparison.

Targets, reported as PASS/MISS (never asserted):

* the kernel's own code takes under 20% of a memory-runtime run (timing wrappers), for each
  scenario;
* so do the kernel and the ``Execution``'s move loop together (what the kernel's ``run`` and
  its chooser were before ``7857e99``).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import duckdb
from _harness import (
    TARGETS,
    footer,
    gc_paused,
    header,
    median,
    ms,
    parser,
    pct,
    progress,
    show,
    sizes,
    spread,
    target,
    us,
)
from _simulation_meter import (
    EXECUTION,
    KERNEL,
    REST,
    RUNTIME,
    Instrumented,
    Meter,
    Profile,
    measure_profile,
    switch_cost,
)

import yieldstar_sim as ys
from yieldstar_sim.simulation.execution import Execution
from yieldstar_sim.simulation.finish import finish
from yieldstar_sim.simulation.run import drive

if TYPE_CHECKING:
    from collections.abc import Sequence

SCENARIOS = ("durable-start", "trigger-in-step")
RUNTIMES = ("memory", "duckdb")
MAX_KERNEL_SHARE = 0.20


def close_runtime(runtime: object) -> None:
    closer = getattr(runtime, "close", None)
    if closer is not None:
        closer()


# --------------------------------------------------------------------------- per-run cost


@dataclass
class Sample:
    """One timed run."""

    setup: float
    run: float
    check: float
    points: int
    events: int
    ok: bool

    @property
    def total(self) -> float:
        return self.setup + self.run + self.check


@dataclass
class Case:
    """Every timed run of one scenario on one runtime."""

    scenario: ys.Scenario
    runtime: str
    samples: list[Sample] = field(default_factory=list)
    digests: set[str] = field(default_factory=set)


def timed_run(scenario: ys.Scenario, seed: int, runtime: str) -> tuple[Sample, str]:
    """One run as ``ys.simulate`` makes it, its phases timed apart; returns its trace digest."""
    with gc_paused():
        began = time.perf_counter()
        execution = Execution(scenario, seed=seed, runtime=runtime)
        built = time.perf_counter()
        drive(execution, Execution.default_move)
        execution.close_actors()
        ran = time.perf_counter()
        result = finish(execution)
        checked = time.perf_counter()
    sample = Sample(
        built - began,
        ran - built,
        checked - ran,
        result.points,
        len(result.trace),
        result.ok,
    )
    digest = result.trace_digest()
    close_runtime(result.runtime)
    return sample, digest


def measure_case(case: Case, seeds: range) -> None:
    for seed in seeds:
        sample, digest = timed_run(case.scenario, seed, case.runtime)
        case.samples.append(sample)
        case.digests.add(f"{seed}:{digest}")


# --------------------------------------------------------------------------- timing wrappers


@dataclass
class Split:
    """Where the instrumented runs of one scenario on one runtime went, run by run."""

    scenario: ys.Scenario
    runtime: str = "memory"
    samples: list[dict[str, float]] = field(default_factory=list)
    """Seconds per category, one dict per run."""
    totals: list[float] = field(default_factory=list)
    switches: int = 0
    digests: set[str] = field(default_factory=set)

    @property
    def runs(self) -> int:
        return len(self.samples)

    @staticmethod
    def part(sample: dict[str, float], category: str) -> float:
        if category == "all":
            return sum(sample.values())
        if category == "rest":
            own = (KERNEL, EXECUTION, RUNTIME)
            return sum(sample.values()) - sum(sample.get(part, 0.0) for part in own)
        if category == "loop":
            return sample.get(KERNEL, 0.0) + sample.get(EXECUTION, 0.0)
        return sample.get(category, 0.0)

    def seconds(self, category: str) -> float:
        """The median over runs of the time spent in ``category`` (or "rest", "all")."""
        return median(self.part(sample, category) for sample in self.samples)

    def share(self, category: str, of: str = "all") -> float:
        """The median over runs of ``category``'s share of ``of``."""
        return median(self.part(s, category) / self.part(s, of) for s in self.samples)


def measure_split(split: Split, seeds: range) -> None:
    meter = Meter()
    with Instrumented(meter):
        for seed in seeds:
            with gc_paused():
                meter.start()
                began = time.perf_counter()
                meter.push("setup")
                execution = Execution(split.scenario, seed=seed, runtime=split.runtime)
                meter.pop()
                meter.push(EXECUTION)  # drive, the loop around the kernel
                drive(execution, Execution.default_move)
                execution.close_actors()
                meter.pop()
                meter.push("check")
                result = finish(execution)
                meter.pop()
                split.totals.append(time.perf_counter() - began)
                meter.pause()
            split.samples.append(dict(meter.spent))
            meter.spent.clear()
            split.digests.add(f"{seed}:{result.trace_digest()}")
            close_runtime(result.runtime)
    split.switches += meter.switches


# --------------------------------------------------------------------------- report


def print_cases(cases: Sequence[Case]) -> None:
    header = [
        "scenario",
        "runtime",
        "runs",
        "points",
        "events",
        "ok",
        "total ms",
        "fastest ms",
        "setup ms",
        "run ms",
        "check ms",
        "us/point run",
        "us/point all",
    ]
    rows = [header]
    for case in cases:
        samples = case.samples
        rows.append(
            [
                case.scenario.name,
                case.runtime,
                str(len(samples)),
                spread([s.points for s in samples]),
                spread([s.events for s in samples]),
                f"{sum(s.ok for s in samples)}/{len(samples)}",
                ms(median(s.total for s in samples)),
                ms(min(s.total for s in samples)),
                ms(median(s.setup for s in samples)),
                ms(median(s.run for s in samples)),
                ms(median(s.check for s in samples)),
                us(median(s.run / s.points for s in samples)),
                us(median(s.total / s.points for s in samples)),
            ]
        )
    show(rows, [False, False, *([True] * 11)])
    print(
        "\n  medians over every run (repetitions x seeds); points and events: range over the\n"
        "  seeds; ok: runs where every invariant held (trigger-in-step is the broken story: two\n"
        "  couriers); us/point: median of per-run time / choice points (run phase; whole run)."
    )
    by_scenario: dict[str, dict[str, set[str]]] = defaultdict(dict)
    for case in cases:
        by_scenario[case.scenario.name][case.runtime] = case.digests
    for name, digests in by_scenario.items():
        if len({frozenset(d) for d in digests.values()}) > 1:
            print(f"  [WARN] {name}: memory and duckdb traces differ for some seed")
    ratios = []
    for name, runtimes in by_runtime(cases).items():
        if {"memory", "duckdb"} <= runtimes.keys():
            ratio = median(s.total for s in runtimes["duckdb"].samples) / median(
                s.total for s in runtimes["memory"].samples
            )
            ratios.append(f"{name} {ratio:.0f}x")
    if ratios:
        print(f"  duckdb / memory, per run: {', '.join(ratios)}")


def by_runtime(cases: Sequence[Case]) -> dict[str, dict[str, Case]]:
    grouped: dict[str, dict[str, Case]] = defaultdict(dict)
    for case in cases:
        grouped[case.scenario.name][case.runtime] = case
    return grouped


def print_splits(splits: Sequence[Split], cases: Sequence[Case], overhead: float) -> None:
    plain = {
        (case.scenario.name, case.runtime): median(s.total for s in case.samples) for case in cases
    }
    header = [
        "scenario",
        "runtime",
        "runs",
        "kernel",
        "execution",
        "runtime",
        "rest",
        "kernel us/run",
        "execution us/run",
        "runtime us/run",
        "rest us/run",
        "instrumented ms",
        "plain ms",
        "switches/run",
    ]
    rows = [header]
    rows += [
        [
            split.scenario.name,
            split.runtime,
            str(split.runs),
            pct(split.share(KERNEL)),
            pct(split.share(EXECUTION)),
            pct(split.share(RUNTIME)),
            pct(split.share("rest")),
            us(split.seconds(KERNEL)),
            us(split.seconds(EXECUTION)),
            us(split.seconds(RUNTIME)),
            us(split.seconds("rest")),
            ms(median(split.totals)),
            ms(plain[(split.scenario.name, split.runtime)]),
            f"{split.switches / split.runs:.0f}",
        ]
        for split in splits
    ]
    show(rows, [False, False, *([True] * 12)])
    splits = [split for split in splits if split.runtime == "memory"]
    pairs = statistics.mean(split.switches / split.runs / 2 for split in splits)
    print(
        "\n  medians over runs of each category's time and share; instrumented ms: median per run\n"
        "  with the wrappers; plain ms: the same runs unwrapped (table above). One metered call\n"
        f"  costs about {us(overhead)} us more than a bare one: about {us(overhead * pairs)} us per"
        " run of wrapper\n  cost, charged to the categories each wrapper sits between"
        " (cProfile's independent\n  reading of the kernel share is below)."
    )
    rows = [["the rest (memory)", *(split.scenario.name for split in splits), "what"]]
    for category, what in REST.items():
        rows.append(
            [
                category,
                *(
                    f"{us(split.seconds(category))} us {pct(split.share(category)):>6}"
                    for split in splits
                ),
                what,
            ]
        )
    print()
    show(rows, [False, *([True] * len(splits)), False], "  ")
    print("\n  median us per run, and median share of the whole run.")


def print_profile(profile: Profile, top: int) -> None:
    print(
        f"cProfile, {profile.runs} runs: kernel.py {pct(profile.share(KERNEL))}, execution.py "
        f"{pct(profile.share(EXECUTION))}, runtime/ "
        f"{pct(profile.share(RUNTIME))}, other files {pct(profile.share('other'))} of "
        f"{ms(profile.seconds('all'))} ms tottime per run (profiled; medians over runs)\n"
    )
    names = {name for run in profile.files for name in run} - {KERNEL, EXECUTION, RUNTIME}
    files = sorted(names, key=lambda name: -profile.seconds(name))
    rows = [["other files (tottime)", "us/run", "of them", "of run"]]
    rows += [
        [
            name,
            us(profile.seconds(name)),
            pct(profile.share(name, of="other")),
            pct(profile.share(name)),
        ]
        for name in files[:top]
    ]
    show(rows, [False, True, True, True], "  ")
    names = {name for run in profile.functions for name in run}
    functions = sorted(
        (
            name
            for name in names
            if not name.startswith((f"{KERNEL}:", f"{EXECUTION}:", f"{RUNTIME}:"))
        ),
        key=lambda name: -profile.seconds(name, function=True),
    )
    rows = [["other functions (tottime)", "us/run", "of run"]]
    rows += [
        [
            name,
            us(profile.seconds(name, function=True)),
            pct(profile.share(name, function=True)),
        ]
        for name in functions[:top]
    ]
    print()
    show(rows, [False, True, True], "  ")
    print(
        "\n  builtins are listed by name among functions; among files they are charged to their\n"
        "  callers. The codec, json and rfc8785 work here is mostly the runtime's (decoding and\n"
        "  encoding records); the profiler's cost per call inflates code with many small calls."
    )


def print_summary(splits: Sequence[Split], profile: Profile) -> None:
    print(f"\n{TARGETS}")
    splits = [split for split in splits if split.runtime == "memory"]
    for split in splits:
        share = split.share(KERNEL)
        target(
            share < MAX_KERNEL_SHARE,
            f"kernel share of a memory-runtime run, {split.scenario.name}: {pct(share)} "
            f"(target < {pct(MAX_KERNEL_SHARE)})",
        )
    for split in splits:
        share = split.share("loop")
        target(
            share < MAX_KERNEL_SHARE,
            f"kernel and Execution's move loop, {split.scenario.name}: {pct(share)} "
            f"(target < {pct(MAX_KERNEL_SHARE)})",
        )
    print(
        f"         cProfile's reading, both scenarios: kernel.py and the builtins it calls "
        f"{pct(profile.share(KERNEL))}, execution.py {pct(profile.share(EXECUTION))}"
    )
    ranked = sorted(REST, key=lambda category: -sum(split.seconds(category) for split in splits))
    parts = ", ".join(
        f"{category} {pct(statistics.mean(split.share(category, of='rest') for split in splits))}"
        for category in ranked[:3]
    )
    print(f"  the rest (memory, both scenarios) is dominated by {parts} of it")


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    args_parser = parser(__doc__, reps="repetitions on memory (default 20; quick 3)")
    args_parser.add_argument(
        "--seeds", type=int, help="seeds per repetition (default 30; quick 10)"
    )
    args_parser.add_argument(
        "--duckdb-reps", type=int, help="repetitions on DuckDB (default 5; quick 1)"
    )
    args = args_parser.parse_args(argv)
    seeds = range(args.seeds or (1 if args.smoke else 10 if args.quick else 30))
    reps: dict[str, int] = {
        "memory": args.reps or (1 if args.smoke else 3 if args.quick else 20),
        "duckdb": args.duckdb_reps or (1 if args.quick else 5),
    }
    began = header(
        "simulation",
        f"duckdb {duckdb.__version__}",
        details=f"seeds 0-{len(seeds) - 1}, {reps['memory']} repetitions on memory, "
        f"{reps['duckdb']} on duckdb{sizes(args)}",
    )
    print()
    scenarios = [ys.load_scenario(name) for name in SCENARIOS]
    cases = [Case(scenario, runtime) for scenario in scenarios for runtime in RUNTIMES]
    splits = [Split(scenario, runtime) for runtime in RUNTIMES for scenario in scenarios]
    for case in cases:  # warm-up: imports, caches, DuckDB's first connection
        timed_run(case.scenario, 0, case.runtime)
    for rep in range(max(reps.values())):
        progress(f"repetition {rep + 1}/{max(reps.values())}")
        order = cases if rep % 2 == 0 else list(reversed(cases))
        for case in order:
            if rep < reps[case.runtime]:
                measure_case(case, seeds)
        for split in splits if rep % 2 == 0 else list(reversed(splits)):
            if split.runtime == "memory" or rep == 0:
                measure_split(split, seeds)
    profile = Profile()
    for scenario in scenarios:
        measure_profile(profile, scenario, seeds)

    print("Per-run cost (ys.simulate's three phases: setup, run, check)")
    print_cases(cases)
    for split in splits:
        same = next(c for c in cases if (c.scenario, c.runtime) == (split.scenario, split.runtime))
        if not split.digests <= same.digests:
            print(f"  [WARN] {split.scenario.name}, {split.runtime}: the wrappers changed a trace")
    print("\nWhere a run goes (timing wrappers; DuckDB: one repetition, for comparison)")
    print_splits(splits, cases, switch_cost())
    print()
    print_profile(profile, top=10)
    print_summary(splits, profile)
    footer(began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
