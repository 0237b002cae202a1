"""Per-call cost of the runtime adapters, and the SQL statements the DuckDB adapter issues.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_runtime.py            # full run, about 1-2 minutes
    .venv/bin/python benchmarks/bench_runtime.py --quick    # fewer repetitions, ~30 s
    .venv/bin/python benchmarks/bench_runtime.py --smoke    # every section, tiny (CI)

What it measures, for every runtime call (trigger, start new / repeat / mismatch, claim,
put_step, record_wake, renew, acknowledge, release, execution, steps, due, next_wake_at, prune)
on both adapters (``MemoryRuntime`` and an in-memory ``DuckDBRuntime``):

* **cost**: the median over repetitions (7 by default) of the per-call mean of one timed batch
  of calls (``time.perf_counter``, garbage collector paused). Every repetition sets up a fresh
  runtime through the public API, makes a few untimed warm-up calls, then times the batch. The
  read calls (execution, steps, due, next_wake_at) share one runtime per repetition, populated
  with executions in every state, which they leave unchanged.
* **SQL/call**: for DuckDB, the statements each call issues (``DuckDBRuntime.statements`` delta;
  a BEGIN, COMMIT or ROLLBACK counts as one).
* **bare**: the cost of exactly the statements the adapter issues, with no adapter around
  them: the same SQL text (``duckdb_runtime.QUERIES``) and the same parameter dicts the adapter
  builds, executed and fetched on the runtime's own cursor (``runtime.connection``), on a runtime
  set up identically. Parameters are prepared before the clock starts, so the bare cost is
  DuckDB (parse, plan, execute, fetch) plus the ``duckdb`` binding's Python round trip.
* **ratio**: DuckDB adapter cost / bare cost, the median of the per-repetition ratios (the
  adapter and bare runs of a repetition are timed back to back, in alternating order). It is
  the price of the adapter's Python side: argument checks, the durable-value codec, failure
  points, decoding rows into records.
* **same state**: after the first repetition the adapter's and the bare run's tables are
  compared row for row, proving the bare run did the same writes ("read": both ran on the same
  runtime).

Then two workloads, on each adapter: one *delivery* (claim, 10 put_steps, one start,
record_wake, acknowledge) repeated over many executions, and a *mixed* order workflow
(triggers, starts, claims, steps, renewals, releases, acknowledgements, prunes, and a repeated
start after a lost response). For each: the calls and statements by kind, the average SQL
statements per runtime call, and the mean cost per call (the statement tally comes from one
extra, untimed run; the timed runs include a thin call-counting wrapper, about 0.3 us a call).

Then the *set-up share of a run*: a whole ``ys.simulate`` of the bundled ``durable-start`` on
DuckDB (median wall time), beside the cost of making and closing its runtime, both with the
per-process pool of reset in-memory databases (``duckdb_runtime.POOL``, what runs use) and
without it (the pool emptied before each: a fresh connection and schema, as before the pool).
Set-up / run is the share; the pooled and fresh runs alternate within one repetition.

Then *memory against its previous version*: the memory runtime as it is beside the one at git
revision ``--baseline`` (default ``f8dc05f``, before it kept decoded values; loaded from
``git show`` as a module of its own, on today's shared helpers and codec, so the ratio leaves
out what those gained), alternating, medians: a whole ``ys.simulate`` of bundled scenarios
(batches of 40 runs) and the runtime calls alone (the *delivery* and *mixed* workloads).
``--memory-only`` runs just this section.

Targets, reported as PASS/MISS (never asserted):

* set-up at most 5% of a pooled DuckDB run;
* a memory run at most 0.6x its cost at the baseline;
* at most 1.5 SQL statements per runtime call on average over the workloads;
* every DuckDB call within 1.3x the bare cost of its own statements.
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import types
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
from _harness import (
    TARGETS,
    footer,
    header,
    parser,
    per_call,
    progress,
    show,
    sizes,
    spread,
    timed,
    us,
    verdict,
)
from _runtime_calls import (
    BENCHES,
    WARMUP,
    BareOp,
    Batch,
    Bench,
    Trial,
    new_duckdb,
    new_memory,
    populate,
    time_adapter,
)
from _runtime_workloads import WORKLOADS, Workload, run_workload

import yieldstar_sim as ys
from yieldstar_sim.core.clock import ManualClock
from yieldstar_sim.runtime.duckdb_runtime import POOL, SETTINGS, DuckDBRuntime
from yieldstar_sim.runtime.memory import MemoryRuntime

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from yieldstar_sim.runtime.protocol import Runtime

MAX_STATEMENTS_PER_CALL = 1.5
MAX_RATIO = 1.3
MAX_SETUP_SHARE = 0.05
MAX_MEMORY_RATIO = 0.6
BASELINE = "f8dc05f"
"""The revision whose memory runtime the current one is measured against."""


# --------------------------------------------------------------------------- timing


#: Each bare statement's text parsed once, as the adapter parses its queries once per process.
_PARSED: dict[str, list[duckdb.Statement]] = {}


def run_statements(cursor: duckdb.DuckDBPyConnection, op: BareOp) -> None:
    """Execute and fetch the statements of one bare op, parsed once like the adapter's."""
    for sql, params in op:
        parsed = _PARSED.get(sql)
        if parsed is None:
            parsed = _PARSED[sql] = cursor.extract_statements(sql)
        *opening, last = parsed
        for statement in opening:
            cursor.execute(statement)
        cursor.execute(last, params).fetchall()


def snapshot(runtime: DuckDBRuntime) -> list[tuple[object, ...]]:
    """Every row of the runtime's table, for comparing two runs."""
    return runtime.sql("SELECT * FROM executions ORDER BY seq")


def time_bare(runtime: DuckDBRuntime, batch: Batch) -> Trial:
    """Time the batch's statements run directly on the runtime's cursor, after warm-up."""
    cursor = runtime.connection
    # Handing out the connection switches the optimizer back on: the adapter's settings again.
    cursor.execute(SETTINGS)
    ops = [partial(run_statements, cursor, op) for op in batch.bare]
    for op in ops[:WARMUP]:
        op()
    timed = ops[WARMUP:]
    seconds = per_call(timed)
    return Trial(seconds, sum(len(op) for op in batch.bare[WARMUP:]) / len(timed))


@dataclass
class Result:
    """Every repetition of one bench."""

    bench: Bench
    n: int
    memory: list[float] = field(default_factory=list)
    duckdb: list[float] = field(default_factory=list)
    bare: list[float] = field(default_factory=list)
    statements: set[float] = field(default_factory=set)
    same_state: bool | None = None

    @property
    def ratios(self) -> list[float]:
        return [a / b for a, b in zip(self.duckdb, self.bare, strict=True)]

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    def add(self, memory: Trial, adapter: Trial, bare: Trial) -> None:
        self.memory.append(memory.seconds_per_call)
        self.duckdb.append(adapter.seconds_per_call)
        self.bare.append(bare.seconds_per_call)
        self.statements.add(adapter.statements_per_call)


def measure_write(result: Result, rep: int) -> None:
    """One repetition of a writing call: memory, then the DuckDB adapter and the bare
    statements, each on a fresh, identically set-up runtime, in alternating order."""
    bench, n = result.bench, result.n
    memory = new_memory()
    memory_trial = time_adapter(memory, bench.prepare(memory, n + WARMUP))
    runs: dict[str, tuple[Trial, list[tuple[object, ...]]]] = {}
    for which in ("adapter", "bare") if rep % 2 == 0 else ("bare", "adapter"):
        runtime = new_duckdb()
        try:
            batch = bench.prepare(runtime, n + WARMUP)
            trial = (
                time_adapter(runtime, batch) if which == "adapter" else time_bare(runtime, batch)
            )
            runs[which] = trial, snapshot(runtime) if rep == 0 else []
        finally:
            runtime.close()
    result.add(memory_trial, runs["adapter"][0], runs["bare"][0])
    if rep == 0:
        result.same_state = runs["adapter"][1] == runs["bare"][1]


def measure_reads(results: Sequence[Result], rep: int) -> None:
    """One repetition of every read call, on one populated runtime per adapter.

    Reads leave the population unchanged, so the adapter and the bare statements of a call
    run on the same runtime, in alternating order.
    """
    memory = new_memory()
    populate(memory)
    runtime = new_duckdb()
    populate(runtime)
    try:
        for result in results:
            bench, n = result.bench, result.n
            memory_trial = time_adapter(memory, bench.prepare(memory, n + WARMUP))
            batch = bench.prepare(runtime, n + WARMUP)
            if rep % 2 == 0:
                adapter = time_adapter(runtime, batch)
                bare = time_bare(runtime, batch)
            else:
                bare = time_bare(runtime, batch)
                adapter = time_adapter(runtime, batch)
            result.add(memory_trial, adapter, bare)
    finally:
        runtime.close()


# --------------------------------------------------------------------------- workloads


@dataclass
class WorkloadResult:
    """Every repetition of one workload."""

    workload: Workload
    rounds: int
    memory: list[float] = field(default_factory=list)
    duckdb: list[float] = field(default_factory=list)
    kinds: dict[str, list[int]] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return sum(calls for calls, _ in self.kinds.values())

    @property
    def statements(self) -> int:
        return sum(count for _, count in self.kinds.values())

    @property
    def per_call(self) -> float:
        return self.statements / self.calls


def measure_workload(workload: Workload, rounds: int, reps: int) -> WorkloadResult:
    result = WorkloadResult(workload, rounds)
    _, counted = run_workload(new_duckdb, workload, rounds, tally=True)
    result.kinds = counted.kinds
    for _ in range(reps):
        result.memory.append(run_workload(new_memory, workload, rounds, tally=False)[0])
        result.duckdb.append(run_workload(new_duckdb, workload, rounds, tally=False)[0])
    return result


# --------------------------------------------------------------------------- report


def print_calls(results: Sequence[Result]) -> None:
    header = [
        "call",
        "memory us",
        "duckdb us",
        "bare us",
        "overhead us",
        "ratio",
        "SQL/call",
        "same state",
        f"<={MAX_RATIO}x",
        "set-up",
    ]
    rows = [header]
    for result in results:
        duck = statistics.median(result.duckdb)
        bare = statistics.median(result.bare)
        rows.append(
            [
                result.bench.name,
                us(statistics.median(result.memory)),
                us(duck),
                us(bare),
                us(duck - bare),
                f"{result.ratio:.2f}",
                spread(result.statements),
                "read"
                if result.bench.read
                else {None: "-", True: "yes", False: "DIFFERS"}[result.same_state],
                verdict(result.ratio <= MAX_RATIO),
                result.bench.note,
            ]
        )
    right = [False, True, True, True, True, True, True, False, False, False]
    show(rows, right)
    print(
        "\n  us: median over repetitions of the per-call mean of a batch; ratio: median of the\n"
        "  per-repetition duckdb/bare ratios; overhead = duckdb - bare (medians); SQL/call: "
        "statements\n  per call (runtime.statements delta); same state: the bare run left "
        "the table exactly as\n  the adapter did."
    )


def print_workload(result: WorkloadResult) -> None:
    workload = result.workload
    print(f"\nworkload '{workload.name}' ({result.rounds} rounds; {workload.description})")
    rows = [["call", "calls", "statements", "SQL/call"]]
    rows += [
        [kind, str(calls), str(count), f"{count / calls:.2f}"]
        for kind, (calls, count) in result.kinds.items()
    ]
    rows.append(["total", str(result.calls), str(result.statements), f"{result.per_call:.2f}"])
    show(rows, [False, True, True, True], "  ")
    print(
        f"  cost per runtime call (median of {len(result.duckdb)}): "
        f"memory {us(statistics.median(result.memory))} us, "
        f"duckdb {us(statistics.median(result.duckdb))} us"
    )


def print_summary(results: Sequence[Result], workloads: Sequence[WorkloadResult]) -> None:
    print(f"\n{TARGETS}")
    for workload in workloads:
        ok = workload.per_call <= MAX_STATEMENTS_PER_CALL
        print(
            f"  [{verdict(ok)}] SQL statements per runtime call, {workload.workload.name} "
            f"workload: {workload.per_call:.2f} (target <= {MAX_STATEMENTS_PER_CALL})"
        )
    misses = [r for r in results if r.ratio > MAX_RATIO]
    passed = len(results) - len(misses)
    print(
        f"  [{verdict(not misses)}] DuckDB call cost within {MAX_RATIO}x of its bare statements: "
        f"{passed} of {len(results)} calls"
    )
    for result in sorted(misses, key=lambda r: -r.ratio):
        extra = statistics.median(result.duckdb) - statistics.median(result.bare)
        print(f"         MISS {result.bench.name}: {result.ratio:.2f}x (+{us(extra)} us per call)")
    differing = [r.bench.name for r in results if r.same_state is False]
    if differing:
        print(
            f"  [WARN] the bare run did not replicate the adapter's writes: {', '.join(differing)}"
        )


# --------------------------------------------------------------------------- set-up share


@dataclass
class SetupShare:
    """Run and set-up medians (seconds) of ``durable-start`` on DuckDB, pooled and fresh."""

    run: dict[str, float]
    setup: dict[str, float]

    def share(self, mode: str) -> float:
        """Set-up as a fraction of a run."""
        return self.setup[mode] / self.run[mode]


def _make_and_close() -> None:
    DuckDBRuntime(clock=ManualClock()).close()


def _simulate(scenario: ys.Scenario) -> None:
    ys.simulate(scenario, 0, runtime="duckdb").runtime.close()


def _simulate_with(scenario: ys.Scenario, make: Callable[..., Runtime]) -> None:
    ys.simulate(scenario, 0, runtime=make, timeout=None).runtime.close()


def measure_setup_share(reps: int) -> SetupShare:
    """Alternate pooled and fresh (pool emptied first) runs and set-ups, ``reps`` times each."""
    scenario = ys.load_scenario("durable-start")
    _simulate(scenario)  # warm imports and the pool
    runs: dict[str, list[float]] = {"pooled": [], "fresh": []}
    setups: dict[str, list[float]] = {"pooled": [], "fresh": []}
    for _ in range(reps):
        for mode in ("pooled", "fresh"):
            if mode == "fresh":
                POOL.clear()
            runs[mode].append(timed(partial(_simulate, scenario)))
            if mode == "fresh":
                POOL.clear()
            setups[mode].append(timed(_make_and_close))
    return SetupShare(
        {mode: statistics.median(times) for mode, times in runs.items()},
        {mode: statistics.median(times) for mode, times in setups.items()},
    )


def print_setup_share(result: SetupShare) -> None:
    """The set-up share table and its target."""
    print("\nSet-up share of a DuckDB run (durable-start, seed 0; medians, ms)\n")
    rows = [["database", "run", "set-up", "share"]]
    rows.extend(
        [
            mode,
            f"{result.run[mode] * 1e3:.1f}",
            f"{result.setup[mode] * 1e3:.2f}",
            f"{result.share(mode):.1%}",
        ]
        for mode in ("fresh", "pooled")
    )
    show(rows, [False, True, True, True], "  ")
    print(
        f"\n  pooled run / fresh run: {result.run['pooled'] / result.run['fresh']:.2f}x; "
        f"set-up <= {MAX_SETUP_SHARE:.0%} of a pooled run: "
        f"{verdict(result.share('pooled') <= MAX_SETUP_SHARE)}"
    )


# --------------------------------------------------------------------------- memory vs baseline


def baseline_memory(revision: str) -> type[MemoryRuntime] | None:
    """``MemoryRuntime`` as it was at ``revision`` (``git show``), or None without git."""
    root = Path(__file__).resolve().parent.parent
    try:
        source = subprocess.run(
            ["git", "show", f"{revision}:yieldstar_sim/runtime/memory.py"],
            cwd=root, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType("_memory_baseline")
    module.__file__ = f"<memory.py at {revision}>"
    sys.modules[module.__name__] = module  # dataclasses look their module up
    with moved_names_lent(source):
        exec(compile(source, module.__file__, "exec"), module.__dict__)
    module.common = _common_for(module.common)
    runtime: type[MemoryRuntime] = module.MemoryRuntime
    return runtime


def _common_for(common: types.ModuleType) -> types.ModuleType:
    """``_common`` as an older memory.py reads it: rows from before columns were added at the
    end of ``EXECUTION_COLUMNS`` (the recoveries, 51c7df7; the instance of a run continued as
    new) get them at their defaults."""
    lent = types.ModuleType(common.__name__)
    lent.__dict__.update(vars(common))
    columns = len(common.EXECUTION_COLUMNS)
    defaults = (0, None)  # recoveries, instance_id

    def execution_record(row: Sequence[object]) -> object:
        missing = columns - len(row)
        return common.execution_record(
            (*row, *defaults[len(defaults) - missing :]) if missing else row
        )

    lent.execution_record = execution_record  # type: ignore[attr-defined]
    return lent


#: Where names the baseline's memory.py imports have gone since: ``check_name`` and
#: ``generated_execution_id`` left ``core/model.py`` for ``core/ids.py`` (ca5143a).
MOVED = {"yieldstar_sim.core.model": "yieldstar_sim.core.ids"}


@contextlib.contextmanager
def moved_names_lent(source: str) -> Iterator[None]:
    """While the old ``source`` is loaded: each name it imports from a module of ``MOVED``
    that has since left it, lent to that module from where it went, and taken back after."""
    import ast
    import importlib

    lent: list[tuple[types.ModuleType, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module in MOVED:
            there = importlib.import_module(node.module)
            now = importlib.import_module(MOVED[node.module])
            for alias in node.names:
                if not hasattr(there, alias.name) and hasattr(now, alias.name):
                    setattr(there, alias.name, getattr(now, alias.name))
                    lent.append((there, alias.name))
    try:
        yield
    finally:
        for there, name in lent:
            delattr(there, name)


MEMORY_SCENARIOS = ("durable-start", "cancel-owner", "retry-backoff")


def measure_memory_versions(
    baseline: type[MemoryRuntime], reps: int, rounds: int, batch: int = 40
) -> dict[str, dict[str, float]]:
    """Median seconds per run (scenarios, ``batch`` runs a time) and per call (workloads), now
    and at the baseline."""
    makers: dict[str, Callable[..., Runtime]] = {"now": MemoryRuntime, "baseline": baseline}
    times: dict[str, dict[str, list[float]]] = {}
    scenarios = {name: ys.load_scenario(name) for name in MEMORY_SCENARIOS}
    for rep in range(reps):
        order = ("now", "baseline") if rep % 2 == 0 else ("baseline", "now")
        for name, scenario in scenarios.items():
            for version in order:
                make = makers[version]
                seconds = per_call(
                    [partial(_simulate_with, scenario, make) for _ in range(batch)],
                    pause_gc=False,
                )
                times.setdefault(f"run {name}", {}).setdefault(version, []).append(seconds)
        for workload in WORKLOADS:
            for version in order:
                make = makers[version]
                seconds, _ = run_workload(make, workload, rounds, tally=False)
                times.setdefault(f"calls {workload.name}", {}).setdefault(version, []).append(
                    seconds
                )
    return {
        what: {version: statistics.median(values) for version, values in by.items()}
        for what, by in times.items()
    }


def print_memory_versions(results: dict[str, dict[str, float]], revision: str) -> bool:
    """The table and its target (every whole run at most MAX_MEMORY_RATIO of the baseline)."""
    print(f"\nThe memory runtime now against it at {revision} (medians; us per run or call)\n")
    rows = [["measure", f"at {revision}", "now", "now / then"]]
    rows.extend(
        [what, us(by["baseline"]), us(by["now"]), f"{by['now'] / by['baseline']:.2f}x"]
        for what, by in results.items()
    )
    show(rows, [False, True, True, True], "  ")
    runs = [by["now"] / by["baseline"] for what, by in results.items() if what.startswith("run")]
    ok = all(ratio <= MAX_MEMORY_RATIO for ratio in runs)
    print(
        f"\n  a memory run at most {MAX_MEMORY_RATIO}x its cost at {revision}: "
        f"{verdict(ok)} (whole runs {min(runs):.2f}x-{max(runs):.2f}x)"
    )
    return ok


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    args_parser = parser(__doc__)
    args_parser.add_argument("--batch", type=int, help="timed calls per batch")
    args_parser.add_argument(
        "--setup-only", action="store_true", help="only the set-up share of a DuckDB run"
    )
    args_parser.add_argument(
        "--memory-only", action="store_true", help="only the memory runtime against --baseline"
    )
    args_parser.add_argument(
        "--baseline", default=BASELINE, help="git revision to compare memory with"
    )
    args = args_parser.parse_args(argv)
    reps: int = args.reps or (1 if args.smoke else 3 if args.quick else 7)
    batch: int = args.batch or (1 if args.smoke else 20 if args.quick else 100)
    rounds = 1 if args.smoke else 5 if args.quick else 30
    # Smoke: each section once, at the least that still runs every call and workload.
    spread_reps = reps if args.smoke else reps * 3
    began = header(
        "runtime",
        f"duckdb {duckdb.__version__}",
        details=f"{reps} repetitions, batches of {batch} calls (+{WARMUP} warm-up)" + sizes(args),
    )
    print()
    baseline = None if args.setup_only else baseline_memory(args.baseline)
    if baseline is None and not args.setup_only:
        print(f"  (no git or no revision {args.baseline}: the memory comparison is left out)")
    elif baseline is not None:
        progress("memory against the baseline")
        versions = measure_memory_versions(baseline, spread_reps, rounds, 2 if args.smoke else 40)
        print_memory_versions(versions, args.baseline)
    if args.memory_only:
        footer(began)
        return 0
    progress("set-up share")
    print_setup_share(measure_setup_share(spread_reps))
    if args.setup_only:
        footer(began)
        return 0
    results = [Result(bench, max(1, round(batch * bench.scale))) for bench in BENCHES]
    for rep in range(reps):
        progress(f"repetition {rep + 1}/{reps}")
        for result in results:
            if not result.bench.read:
                measure_write(result, rep)
        measure_reads([result for result in results if result.bench.read], rep)
    print_calls(results)
    workloads = []
    for workload in WORKLOADS:
        progress(f"workload {workload.name}")
        workloads.append(measure_workload(workload, rounds, reps))
    for workload_result in workloads:
        print_workload(workload_result)
    print_summary(results, workloads)
    footer(began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
