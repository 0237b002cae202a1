"""Cost of one simulation run, and how a memory-runtime run splits between kernel and runtime.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_simulation.py            # full run, well under 2 minutes
    .venv/bin/python benchmarks/bench_simulation.py --quick    # smoke test, well under 20 s

The scenarios are the bundled ``durable-start`` (charge-order starts ship-order with
``step.start``; the scenario's own crash before the ship step is recorded) and
``trigger-in-step`` (the same story with a non-durable trigger in a step body: two couriers,
so its runs report invariant violations, which is their point). Each run is what
``ys.simulate(scenario, seed, runtime=...)`` does, in its three phases, timed apart:
``Simulator(...)`` (**setup**: the runtime, the kernel, the fault plan), ``Simulator.run()``
(**run**: the kernel passing choice points until nothing is left) and ``finish(simulator)``
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
  ``MemoryRuntime``, the ``Kernel`` methods the simulator calls (``run``, ``spawn``,
  ``nudge``, ``close``), every actor's ``send``/``close`` (each actor generator is wrapped
  when spawned), the codec's public methods, ``Trace.add`` and ``FaultPlan.fault_at`` switch
  a stack of categories (wrappers at class level, so bound methods taken at construction, like
  the kernel's ``next_wake``, are caught too); the time between two switches goes to the
  category on top. So **kernel** is the kernel's own code (choosing, heaps, waking; its calls
  out are not), **runtime** is inside runtime methods wherever they are called from (workers,
  step-body triggers, ``finish``), codec work included, and **rest** is everything else,
  itemised: the actors (the simulator's workers, the driver, step bodies, the world), the
  codec outside the runtime, ``Trace.add``, the fault plan, ``Simulator`` construction and
  ``finish`` (invariants). Times and shares are medians over runs. A wrapper
  costs a few tenths of a microsecond (measured and printed), charged to the categories it
  sits between, so the instrumented total is shown next to the plain median. The same
  wrappers on one repetition of DuckDB runs show where those go, for comparison.
* **which code dominates**: the same memory-runtime runs again, each under its own
  ``cProfile``; ``tottime`` is summed per source file (C builtins are charged to the file that
  called them, in proportion to the time of each call edge) and per function, and the medians
  over runs are shown for the files outside ``kernel.py`` and ``runtime/`` and the largest
  functions. Codec, ``json`` and ``rfc8785`` time there is mostly spent on the
  runtime's behalf (the wrappers count it as runtime). The profiler inflates code that makes
  many small calls; its kernel share is printed beside the wrappers' for comparison.

Target, reported as PASS/MISS (never asserted):

* the kernel's own code takes under 20% of a memory-runtime run (timing wrappers), for each
  scenario.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import math
import os
import platform
import pstats
import statistics
import sys
import sysconfig
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import duckdb
from _harness import ms, table, us, verdict

import yieldstar_sim as ys
from yieldstar_sim.core.codec import DurableValueCodec
from yieldstar_sim.runtime.duckdb_runtime import DuckDBRuntime
from yieldstar_sim.runtime.memory import MemoryRuntime
from yieldstar_sim.simulation.faults import FaultPlan
from yieldstar_sim.simulation.kernel import Kernel
from yieldstar_sim.simulation.run import finish
from yieldstar_sim.simulation.simulator import Simulator
from yieldstar_sim.simulation.trace import Trace

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator, Sequence

P = ParamSpec("P")
R = TypeVar("R")

SCENARIOS = ("durable-start", "trigger-in-step")
RUNTIMES = ("memory", "duckdb")
MAX_KERNEL_SHARE = 0.20
PACKAGE = Path(ys.__file__).resolve().parent
KERNEL_FILE = PACKAGE / "simulation" / "kernel.py"
RUNTIME_DIR = PACKAGE / "runtime"
STDLIB = Path(sysconfig.get_paths()["stdlib"]).resolve()


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
    gc.collect()
    gc.disable()
    try:
        began = time.perf_counter()
        simulator = Simulator(scenario, seed=seed, runtime=runtime)
        built = time.perf_counter()
        simulator.run()
        ran = time.perf_counter()
        result = finish(simulator)
        checked = time.perf_counter()
    finally:
        gc.enable()
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

KERNEL, RUNTIME = "kernel", "runtime"
REST = {
    "actors": "the simulator's actors, the driver, step bodies, the world",
    "codec": "the durable-value codec, outside the runtime (driver, world)",
    "trace": "Trace.add",
    "fault plan": "FaultPlan.fault_at, the kernel's fault source",
    "setup": "Simulator(...) construction, less runtime and kernel",
    "check": "finish(): invariants and collecting records, less runtime",
}
CODEC_METHODS = ("encode", "encode_or_raise", "decode", "decode_trusted", "validate_object")


class Meter:
    """A stack of categories; the time between two switches goes to the one on top (none
    while paused)."""

    def __init__(self) -> None:
        self.stack: list[str] = ["other"]
        self.spent: dict[str, float] = defaultdict(float)
        self.switches = 0
        self.paused = True
        self.mark = time.perf_counter()

    def push(self, category: str) -> None:
        if not self.paused:
            now = time.perf_counter()
            self.spent[self.stack[-1]] += now - self.mark
            self.mark = now
            self.switches += 1
        self.stack.append(category)

    def pop(self) -> None:
        if not self.paused:
            now = time.perf_counter()
            self.spent[self.stack[-1]] += now - self.mark
            self.mark = now
            self.switches += 1
        self.stack.pop()

    def start(self) -> None:
        """Count from now (at the start of a run)."""
        self.stack = ["other"]
        self.paused = False
        self.mark = time.perf_counter()

    def pause(self) -> None:
        """Stop counting (at the end of a run)."""
        self.paused = True


def metered(
    meter: Meter, category: str, function: Callable[P, R], *, unless_in: str | None = None
) -> Callable[P, R]:
    """``function``, its time charged to ``category`` (left to ``unless_in`` when called
    from there)."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if meter.stack[-1] == unless_in:
            return function(*args, **kwargs)
        meter.push(category)
        try:
            return function(*args, **kwargs)
        finally:
            meter.pop()

    return wrapper


class MeteredActor:
    """Wraps an actor generator: time inside its ``send`` and ``close`` is not the kernel's."""

    __slots__ = ("actor", "meter")

    def __init__(self, actor: Generator[Any, Any, None], meter: Meter) -> None:
        self.actor = actor
        self.meter = meter

    def send(self, value: Any) -> Any:
        self.meter.push("actors")
        try:
            return self.actor.send(value)
        finally:
            self.meter.pop()

    def close(self) -> None:
        self.meter.push("actors")
        try:
            self.actor.close()
        finally:
            self.meter.pop()


class Instrumented:
    """Class-level timing wrappers on the runtime, kernel, codec, trace and fault plan, for a
    ``with`` block (class level, so bound methods taken at construction are wrapped too)."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.saved: list[tuple[type, str, Any]] = []

    def wrap(self, owner: type, name: str, category: str, *, unless_in: str | None = None) -> None:
        original = owner.__dict__[name]
        self.saved.append((owner, name, original))
        setattr(owner, name, metered(self.meter, category, original, unless_in=unless_in))

    def __enter__(self) -> Instrumented:
        meter = self.meter
        for runtime in (MemoryRuntime, DuckDBRuntime):
            for name, value in list(runtime.__dict__.items()):
                if callable(value) and (name == "__init__" or not name.startswith("_")):
                    self.wrap(runtime, name, RUNTIME)
        for name in ("__init__", "run", "nudge", "close"):
            self.wrap(Kernel, name, KERNEL)
        for name in CODEC_METHODS:
            self.wrap(DurableValueCodec, name, "codec", unless_in=RUNTIME)
        self.wrap(Trace, "add", "trace")
        self.wrap(FaultPlan, "fault_at", "fault plan")
        spawn = Kernel.spawn

        def spawn_metered(
            kernel: Kernel,
            name: str,
            actor: Generator[Any, Any, None],
            *,
            at: float | None = None,
        ) -> None:
            meter.push(KERNEL)
            try:
                spawn(kernel, name, MeteredActor(actor, meter), at=at)  # type: ignore[arg-type]
            finally:
                meter.pop()

        self.saved.append((Kernel, "spawn", spawn))
        setattr(Kernel, "spawn", spawn_metered)  # noqa: B010 (a method, replaced for a while)
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, name, original in reversed(self.saved):
            setattr(owner, name, original)
        self.saved.clear()


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
            return sum(sample.values()) - sample.get(KERNEL, 0.0) - sample.get(RUNTIME, 0.0)
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
            gc.collect()
            gc.disable()
            try:
                meter.start()
                began = time.perf_counter()
                meter.push("setup")
                simulator = Simulator(split.scenario, seed=seed, runtime=split.runtime)
                meter.pop()
                meter.push("actors")  # Simulator.run itself, around the kernel
                simulator.run()
                meter.pop()
                meter.push("check")
                result = finish(simulator)
                meter.pop()
                split.totals.append(time.perf_counter() - began)
                meter.pause()
            finally:
                gc.enable()
            split.samples.append(dict(meter.spent))
            meter.spent.clear()
            split.digests.add(f"{seed}:{result.trace_digest()}")
            close_runtime(result.runtime)
    split.switches += meter.switches


def switch_cost(pairs: int = 20_000) -> float:
    """Seconds one metered call adds (two switches and the wrapper), over a bare call."""

    def nothing() -> None:
        return None

    meter = Meter()
    meter.start()
    wrapped = metered(meter, "x", nothing)
    best = math.inf
    for _ in range(5):
        began = time.perf_counter()
        for _ in range(pairs):
            nothing()
        bare = time.perf_counter() - began
        began = time.perf_counter()
        for _ in range(pairs):
            wrapped()
        best = min(best, (time.perf_counter() - began - bare) / pairs)
    return best


# --------------------------------------------------------------------------- profile


Func = tuple[str, int, str]


@dataclass
class Profile:
    """``tottime`` per file and per function, run by run (each run profiled on its own, so a
    preemption distorts one run, not the medians); builtins charged to their callers' files."""

    files: list[dict[str, float]] = field(default_factory=list)
    functions: list[dict[str, float]] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return len(self.files)

    @staticmethod
    def part(run: dict[str, float], name: str) -> float:
        if name == "all":
            return sum(run.values())
        if name == "other":
            return sum(run.values()) - run.get(KERNEL, 0.0) - run.get(RUNTIME, 0.0)
        return run.get(name, 0.0)

    def seconds(self, name: str, *, function: bool = False) -> float:
        """Median tottime per run of a file (or "all", "other"), or of a function."""
        if function:
            return median(run.get(name, 0.0) for run in self.functions)
        return median(self.part(run, name) for run in self.files)

    def share(self, name: str, of: str = "all", *, function: bool = False) -> float:
        """Median per-run share of a file's (or function's) tottime in ``of``'s."""
        runs = zip(self.functions if function else self.files, self.files, strict=True)
        return median(
            (mine.get(name, 0.0) if function else self.part(mine, name)) / self.part(run, of)
            for mine, run in runs
        )


def bucket(filename: str) -> str:
    """``kernel``, ``runtime`` or a short file name for a profiled source file."""
    path = Path(filename)
    if path == KERNEL_FILE:
        return "kernel"
    if RUNTIME_DIR in path.parents:
        return "runtime"
    if PACKAGE in path.parents:
        return str(path.relative_to(PACKAGE.parent))
    if "site-packages" in path.parts:
        index = path.parts.index("site-packages")
        return f"{path.parts[index + 1]} (site-packages)"
    if STDLIB in path.parents:
        return f"{path.relative_to(STDLIB).as_posix()} (stdlib)"
    return filename


def function_name(func: Func) -> str:
    filename, line, name = func
    if filename == "~":
        return name
    return f"{bucket(filename)}:{line} {name}"


def measure_profile(profile: Profile, scenario: ys.Scenario, seeds: range) -> None:
    for seed in seeds:
        profiler = cProfile.Profile()
        gc.collect()
        gc.disable()
        try:
            profiler.enable()
            simulator = Simulator(scenario, seed=seed, runtime="memory")
            simulator.run()
            finish(simulator)
            profiler.disable()
        finally:
            gc.enable()
        by_file: dict[str, float] = defaultdict(float)
        by_function: dict[str, float] = defaultdict(float)
        stats: dict[Func, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
        for func, (_, _, tottime, _, callers) in stats.items():
            filename = func[0]
            if filename != "~":
                by_file[bucket(filename)] += tottime
                by_function[function_name(func)] += tottime
                continue
            # A C builtin: charge it to its callers' files, in proportion to each edge's time.
            by_function[func[2]] += tottime
            edges = {caller: edge[2] for caller, edge in callers.items()}
            weight = sum(edges.values())
            if weight <= 0:
                by_file["builtins (no caller)"] += tottime
                continue
            for caller, edge_time in edges.items():
                owner = bucket(caller[0]) if caller[0] != "~" else "builtins (no caller)"
                by_file[owner] += tottime * edge_time / weight
        profile.files.append(dict(by_file))
        profile.functions.append(dict(by_function))


# --------------------------------------------------------------------------- report


def pct(share: float) -> str:
    return f"{share * 100:.1f}%"


def span(values: Sequence[int]) -> str:
    low, high = min(values), max(values)
    return f"{low}" if low == high else f"{low}-{high}"


def median(values: Iterator[float] | Sequence[float]) -> float:
    return statistics.median(list(values))


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
                span([s.points for s in samples]),
                span([s.events for s in samples]),
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
    print("\n".join(table(rows, [False, False, *([True] * 11)])))
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
        "runtime",
        "rest",
        "kernel us/run",
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
            pct(split.share(RUNTIME)),
            pct(split.share("rest")),
            us(split.seconds(KERNEL)),
            us(split.seconds(RUNTIME)),
            us(split.seconds("rest")),
            ms(median(split.totals)),
            ms(plain[(split.scenario.name, split.runtime)]),
            f"{split.switches / split.runs:.0f}",
        ]
        for split in splits
    ]
    print("\n".join(table(rows, [False, False, *([True] * 10)])))
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
    print("\n".join("  " + line for line in table(rows, [False, *([True] * len(splits)), False])))
    print("\n  median us per run, and median share of the whole run.")


def print_profile(profile: Profile, top: int) -> None:
    print(
        f"cProfile, {profile.runs} runs: kernel.py {pct(profile.share(KERNEL))}, runtime/ "
        f"{pct(profile.share(RUNTIME))}, other files {pct(profile.share('other'))} of "
        f"{ms(profile.seconds('all'))} ms tottime per run (profiled; medians over runs)\n"
    )
    names = {name for run in profile.files for name in run} - {KERNEL, RUNTIME}
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
    print("\n".join("  " + line for line in table(rows, [False, True, True, True])))
    names = {name for run in profile.functions for name in run}
    functions = sorted(
        (name for name in names if not name.startswith((f"{KERNEL}:", f"{RUNTIME}:"))),
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
    print("\n".join("  " + line for line in table(rows, [False, True, True])))
    print(
        "\n  builtins are listed by name among functions; among files they are charged to their\n"
        "  callers. The codec, json and rfc8785 work here is mostly the runtime's (decoding and\n"
        "  encoding records); the profiler's cost per call inflates code with many small calls."
    )


def print_summary(splits: Sequence[Split], profile: Profile) -> None:
    print("\nTargets (reported, not asserted)")
    splits = [split for split in splits if split.runtime == "memory"]
    for split in splits:
        share = split.share(KERNEL)
        print(
            f"  [{verdict(share < MAX_KERNEL_SHARE)}] kernel share of a memory-runtime run, "
            f"{split.scenario.name}: {pct(share)} (target < {pct(MAX_KERNEL_SHARE)})"
        )
    print(
        f"         cProfile's reading, both scenarios: kernel.py and the builtins it calls "
        f"{pct(profile.share(KERNEL))}"
    )
    ranked = sorted(REST, key=lambda category: -sum(split.seconds(category) for split in splits))
    parts = ", ".join(
        f"{category} {pct(statistics.mean(split.share(category, of='rest') for split in splits))}"
        for category in ranked[:3]
    )
    print(f"  the rest (memory, both scenarios) is dominated by {parts} of it")


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer runs (smoke test)")
    parser.add_argument("--seeds", type=int, help="seeds per repetition (default 30; quick 10)")
    parser.add_argument("--reps", type=int, help="repetitions on memory (default 20; quick 3)")
    parser.add_argument(
        "--duckdb-reps", type=int, help="repetitions on DuckDB (default 5; quick 1)"
    )
    args = parser.parse_args(argv)
    seeds = range(args.seeds or (10 if args.quick else 30))
    reps: dict[str, int] = {
        "memory": args.reps or (3 if args.quick else 20),
        "duckdb": args.duckdb_reps or (1 if args.quick else 5),
    }
    began = time.perf_counter()
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"yieldstar_sim simulation benchmark: python {platform.python_version()}, duckdb "
        f"{duckdb.__version__}, {platform.machine()}, {os.cpu_count()} CPUs (load {load}); "
        f"seeds 0-{len(seeds) - 1}, {reps['memory']} repetitions on memory, {reps['duckdb']} "
        f"on duckdb{', quick' if args.quick else ''}\n"
    )
    scenarios = [ys.load_scenario(name) for name in SCENARIOS]
    cases = [Case(scenario, runtime) for scenario in scenarios for runtime in RUNTIMES]
    splits = [Split(scenario, runtime) for runtime in RUNTIMES for scenario in scenarios]
    for case in cases:  # warm-up: imports, caches, DuckDB's first connection
        timed_run(case.scenario, 0, case.runtime)
    for rep in range(max(reps.values())):
        print(f"  repetition {rep + 1}/{max(reps.values())}", file=sys.stderr, flush=True)
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
    print(f"\n(took {time.perf_counter() - began:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
