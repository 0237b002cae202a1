"""The exhaustive search at scale (issue 32): orders x workers x faults, now against a baseline
revision (default ``b9007de``, the issue's), in one run.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_exhaustive.py --quick
    .venv/bin/python benchmarks/bench_exhaustive.py --smoke            # against HEAD, tiny
    .venv/bin/python benchmarks/bench_exhaustive.py --baseline b9007de --budget 300
    .venv/bin/python benchmarks/bench_exhaustive.py --memory   # a million states, peak RSS
    .venv/bin/python benchmarks/bench_exhaustive.py --reductions   # what each variant spares

The case is the issue's: ``charge-order`` -> ``step.start ship-order`` on the memory runtime,
one trigger per order, every fault kind, ``stop_at_first=False`` (the whole space), no DuckDB
confirmation. Each side (the baseline's ``yieldstar_sim`` unpacked with ``git archive``, and
this tree) runs each case in a child process of its own, the two sides alternating so that
load on a shared machine falls on both; a search its time budget cuts reports how far it got.
For each: distinct states, schedules run, runs cut at a known state, seconds, states per
second, kernel steps per explored transition, and peak RSS of the child. A kernel step is an
actor resumed at a choice point, a path's replayed moves and a restored actor's resumptions
included; a transition is a move the search explored. Before ``7857e99`` they are counted by
wrapping ``Kernel.step`` and the search's ``arrive``; since, by wrapping ``Kernel.take`` (which
a restore checked against a replay calls too) and adding each journal's ``resumed``, over the
search's own count of ``transitions``. The ratio is the baseline's median seconds over this
tree's, for cases both searched to the end with the same states and verdict.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _harness import count_instructions, footer, header, parser, progress, show, sizes, target
from bench_baseline import ROOT, unpack

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

#: The issue's targets: 2 orders x 3 workers, 1 fault, this much faster than b9007de; 3 x 3
#: verified within this many seconds.
MIN_SPEEDUP, MAX_SECONDS = 10.0, 300.0

CHILD = """
import dataclasses, json, resource, sys, time
import yieldstar_sim as ys
from yieldstar_sim.simulation import kernel
from yieldstar_sim.simulation.explorer import exhaustive
orders, workers, faults, budget = (int(a) for a in sys.argv[1:5])
jobs = int(sys.argv[5]) if len(sys.argv) > 5 else 1
if len(sys.argv) > 6:  # --reductions: a variant of this tree's search (_exhaustive_variants)
    sys.path.insert(0, "benchmarks")
    import _exhaustive_variants
    _exhaustive_variants.apply(sys.argv[6])
count = {"steps": 0, "arrivals": 0}
journals = []
if hasattr(kernel.Kernel, "step"):
    # Before 7857e99: a kernel step passes one choice point; every arrival past the first
    # point of a run is an explored transition.
    step = kernel.Kernel.step
    def counted_step(self, *args, **kwargs):
        count["steps"] += 1
        return step(self, *args, **kwargs)
    kernel.Kernel.step = counted_step
    arrive = exhaustive.ExhaustiveSearch.arrive
    def counted_arrive(self, probe, index, *args, **kwargs):
        count["arrivals"] += index > 0
        return arrive(self, probe, index, *args, **kwargs)
    exhaustive.ExhaustiveSearch.arrive = counted_arrive
else:
    # Since: a move taken is a kernel step (explored, replayed or checked against a replay),
    # and each resumption a journal feeds an actor made again stands for one.
    from yieldstar_sim.simulation import saving
    take = kernel.Kernel.take
    def counted_take(self, *args, **kwargs):
        count["steps"] += 1
        return take(self, *args, **kwargs)
    kernel.Kernel.take = counted_take
    made = saving.Journal.__init__
    def kept(self, *args, **kwargs):
        made(self, *args, **kwargs)
        journals.append(self)
    saving.Journal.__init__ = kept
base = ys.load_scenario("durable-start")
triggers = [ys.Trigger("charge-order", {"order": 40 + n}, execution_id=f"order-{40 + n}")
            for n in range(orders)]
scenario = dataclasses.replace(base, name=f"orders-{orders}x{workers}", faults=[],
                               workers=workers, triggers=triggers)
if budget < 0:
    raise SystemExit(0)  # everything but the search (--instructions takes it off)
started = time.perf_counter()
options = {"jobs": jobs} if jobs > 1 else {}
report = ys.explore(scenario, strategy="exhaustive", max_faults=faults, runtime="memory",
                    confirm=None, stop_at_first=False, time_budget=budget, **options)
seconds = time.perf_counter() - started
section = getattr(report, "exhaustive", None)
if section is not None:
    progress, cut = section.progress, section.pruned_by_cache
    steps = count["steps"] + sum(journal.resumed for journal in journals)
    transitions = progress.get("transitions", 0)
else:
    progress, cut = getattr(report, "search_progress", None) or {}, report.pruned_by_cache
    # A restored actor's resumptions are work too: counted as the kernel steps they stand for.
    steps = count["steps"] + progress.get("rebuild_steps", 0)
    # Kernel steps that passed no point (a run's last, which finds nothing to do) are left
    # out: they pass no choice point, on either side.
    transitions = count["arrivals"] + report.schedules_run
    if jobs > 1:
        transitions = progress.get("transitions", transitions)
print(json.dumps({
    "states": report.distinct_states, "schedules": report.schedules_run, "cut": cut,
    "seconds": seconds, "exhausted": report.exhausted, "verdict": report.verdict,
    "steps": steps, "transitions": transitions,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def run_side(
    path: Path, case: tuple[int, int, int], budget: float, jobs: int = 1, variant: str = ""
) -> dict[str, Any]:
    """One case searched in a child importing the package from ``path`` (with ``variant``,
    this tree's search so patched: ``_exhaustive_variants``)."""
    env = dict(os.environ, PYTHONPATH=str(path))
    more = [variant] if variant else []
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *(str(n) for n in case), str(int(budget)), str(jobs),
         *more],
        cwd=path, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


Side = dict[str, list[dict[str, Any]]]


def plan(args: argparse.Namespace) -> tuple[list[tuple[int, int, int]], float, int]:
    """The cases, the seconds each search may take, and the repetitions ``args`` ask for."""
    if args.smoke:
        cases, budget, reps = [(1, 1, 0), (1, 2, 0)], 10.0, 1
    elif args.quick:
        cases = [(1, 1, 1), (1, 2, 1), (1, 3, 1), (2, 2, 0), (2, 3, 0), (2, 3, 1), (3, 3, 1)]
        budget, reps = 120.0, 1
    else:
        cases = [(o, w, k) for o in (1, 2, 3) for w in (1, 2, 3) for k in (0, 1, 2)]
        budget, reps = MAX_SECONDS, 3
    return cases, args.budget or budget, args.reps or reps


def seconds_of(results: list[dict[str, Any]]) -> float:
    """The median seconds of a side's repetitions."""
    return statistics.median(float(r["seconds"]) for r in results)


def row(case: tuple[int, int, int], side: str, results: list[dict[str, Any]]) -> list[str]:
    """One line of the table: a case on one side."""
    last = results[-1]
    seconds = seconds_of(results)
    states = int(last["states"])
    mark = "" if last["exhausted"] else ">="
    per = float(last["steps"]) / max(int(last["transitions"]), 1)
    return [
        "{} x {}, {}".format(*case), side, f"{mark}{states:,}", f"{last['schedules']:,}",
        f"{last['cut']:,}", f"{seconds:.2f}",
        f"{states / max(seconds, 1e-9):,.0f}", f"{per:.1f}", f"{float(last['rss_mb']):.0f}",
        str(last["verdict"]),
    ]  # fmt: skip


def ratios(found: dict[tuple[int, int, int], Side], baseline: str) -> None:
    """Now against then where both searched to the end, and the issue's targets."""
    print("\nNow against then, where both searched to the end (median seconds, same run)")
    for case, sides in found.items():
        then, now = sides["then"][-1], sides["now"][-1]
        name = "{} x {}, {}".format(*case)
        if not (then["exhausted"] and now["exhausted"]):
            print(f"  {name}: cut by the budget on a side")
            continue
        same = then["states"] == now["states"] and then["verdict"] == now["verdict"]
        ratio = seconds_of(sides["then"]) / max(seconds_of(sides["now"]), 1e-9)
        print(f"  {name}: {ratio:.2f}x, same states and verdict: {'yes' if same else 'NO'}")
    print()
    two = found.get((2, 3, 1))
    if two is not None:
        ratio = seconds_of(two["then"]) / max(seconds_of(two["now"]), 1e-9)
        target(
            ratio >= MIN_SPEEDUP,
            f"2 x 3, 1 fault: {ratio:.2f}x faster than {baseline} (target >= {MIN_SPEEDUP:g}x)",
        )
    three = found.get((3, 3, 1))
    if three is not None:
        now = three["now"][-1]
        took = float(now["seconds"])
        done = "verified" if now["exhausted"] else "not finished"
        target(
            bool(now["exhausted"]) and took <= MAX_SECONDS,
            f"3 x 3, 1 fault: {done} in {took:.0f} s (target: verified within {MAX_SECONDS:g} s)",
        )


#: The cases ``--instructions`` counts: small enough for callgrind (about 50x slower).
COUNTED_CASES = ((1, 2, 1), (1, 3, 1))


def instructions(baseline: str, cases: Sequence[tuple[int, int, int]]) -> None:
    """Machine instructions of each search, now against ``baseline``, counted by callgrind: a
    ratio other sessions' load cannot move (a child with no search is counted and taken off)."""
    import shutil

    if shutil.which("valgrind") is None:
        print("instructions: skipped (no valgrind; `apt-get install valgrind`)")
        return
    print(f"\nInstructions per search, now against {baseline} (callgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        unpack(baseline, Path(tmp))
        for case in cases:
            counts = {}
            for side, path in (("then", Path(tmp)), ("now", ROOT)):
                progress(f"{case} {side} (callgrind)")
                # Compiled once before counting: else the first child pays for the .pyc files.
                subprocess.run(
                    [sys.executable, "-c", "import yieldstar_sim"], cwd=path, check=True,
                    env=dict(os.environ, PYTHONPATH=str(path)),
                )  # fmt: skip
                made = [
                    count_instructions(
                        ["-c", CHILD, *(str(n) for n in case), "100000" if run else "-1"],
                        pythonpath=str(path),
                        cwd=str(path),
                    )
                    for run in (False, True)
                ]
                counts[side] = None if None in made else made[1] - made[0]  # type: ignore[operator]
            then, now = counts["then"], counts["now"]
            if then is None or now is None:
                print("  {} x {}, {}: valgrind printed no count".format(*case))
                continue
            print(
                "  {} x {}, {}: ".format(*case)
                + f"then {then / 1e9:.2f}G, now {now / 1e9:.2f}G: {now / then:.3f}x"
            )


#: The issue's target for ``--jobs 2`` against one process on the 3 x 3 case.
MIN_JOBS_SPEEDUP = 1.4


def jobs_section(case: tuple[int, int, int], jobs: int, budget: float, reps: int) -> None:
    """This tree's search of ``case`` in one process and in ``jobs``, alternating: seconds,
    states and verdict, and the speed-up against the target."""
    print(f"\nOne process against {jobs} (this tree), " + "{} x {}, {} fault(s)".format(*case))
    sides: dict[int, list[dict[str, Any]]] = {1: [], jobs: []}
    for rep in range(reps):
        for n in (1, jobs) if rep % 2 == 0 else (jobs, 1):
            progress(f"{case} jobs={n}")
            sides[n].append(run_side(ROOT, case, budget, n))
    for n, results in sides.items():
        last = results[-1]
        print(
            f"  jobs={n}: {seconds_of(results):.2f} s, {int(last['states']):,} states, "
            f"{int(last['transitions']):,} transitions, {last['verdict']}"
            + ("" if last["exhausted"] else " (cut by the budget)")
        )
    one, many = sides[1][-1], sides[jobs][-1]
    ratio = seconds_of(sides[1]) / max(seconds_of(sides[jobs]), 1e-9)
    same = one["states"] == many["states"] and one["verdict"] == many["verdict"]
    print(f"  same states and verdict: {'yes' if same else 'NO'}")
    target(
        ratio >= MIN_JOBS_SPEEDUP and same,
        f"--jobs {jobs}: {ratio:.2f}x faster than --jobs 1 (target >= {MIN_JOBS_SPEEDUP:g}x)",
    )


def reductions_section(case: tuple[int, int, int], baseline: str, budget: float) -> None:
    """What each reduction the issue names spares on ``case``, against the search as shipped
    (``_exhaustive_variants``), and what a transition may cost for the issue's speed-up: the
    measured answer to "why not 10x" (docs/decisions.md)."""
    from _exhaustive_variants import VARIANTS

    print(f"\nReductions on {case[0]} x {case[1]}, {case[2]} fault(s) (this tree, one run each)")
    progress(f"{case} shipped")
    shipped = run_side(ROOT, case, budget)
    rows = [["search", "states", "transitions", "s", "us/transition", "transitions x"]]

    def line(name: str, got: dict[str, Any]) -> None:
        moves = max(int(got["transitions"]), 1)
        rows.append([
            name, f"{int(got['states']):,}", f"{moves:,}", f"{float(got['seconds']):.1f}",
            f"{float(got['seconds']) / moves * 1e6:.0f}",
            f"{int(shipped['transitions']) / moves:.2f}",
        ])  # fmt: skip

    line("as shipped", shipped)
    for variant in VARIANTS:
        progress(f"{case} {variant}")
        line(variant, run_side(ROOT, case, budget, variant=variant))
    show(rows, [False, True, True, True, True, True])
    print("  transitions x: the shipped search's transitions over the variant's (above 1: fewer)")
    with tempfile.TemporaryDirectory() as tmp:
        unpack(baseline, Path(tmp))
        progress(f"{case} {baseline}")
        then = run_side(Path(tmp), case, budget)
    moves = max(int(shipped["transitions"]), 1)
    allowed, now = float(then["seconds"]) / MIN_SPEEDUP / moves, float(shipped["seconds"]) / moves
    print(
        f"  {baseline}: {float(then['seconds']):.1f} s; {MIN_SPEEDUP:g}x of it at the shipped "
        f"search's {moves:,} transitions leaves {allowed * 1e6:.0f} us a transition, against "
        f"{now * 1e6:.0f} us now;\n  a kernel step of a plain run of the case (no search) costs "
        f"{_plain_step(case) * 1e6:.0f} us"
    )


PLAIN = """
import dataclasses, sys, time
import yieldstar_sim as ys
orders, workers = int(sys.argv[1]), int(sys.argv[2])
base = ys.load_scenario("durable-start")
triggers = [ys.Trigger("charge-order", {"order": 40 + n}, execution_id=f"order-{40 + n}")
            for n in range(orders)]
scenario = dataclasses.replace(base, faults=[], workers=workers, triggers=triggers)
points, began = 0, time.perf_counter()
for seed in range(200):
    points += ys.simulate(scenario, seed=seed, runtime="memory").points
print((time.perf_counter() - began) / points)
"""


def _plain_step(case: tuple[int, int, int]) -> float:
    """Seconds a kernel step of a plain memory run of ``case`` costs, everything included
    (the run's set-up and its invariants too): what a transition cannot go below."""
    done = subprocess.run(
        [sys.executable, "-c", PLAIN, str(case[0]), str(case[1])], cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(done.stdout.strip())


#: The issue's memory target: this many states within this many MB of peak RSS.
MEMORY_STATES, MEMORY_MB = 1_000_000, 500.0


def memory_section(case: tuple[int, int, int], budget: float) -> None:
    """This tree's search of ``case`` for its states and peak RSS (the child's, the whole
    process's: the interpreter and the package included), against the memory target."""
    print("\nMemory (this tree), {} x {}, {} fault(s), budget {:g} s".format(*case, budget))
    progress(f"{case} memory")
    got = run_side(ROOT, case, budget)
    states, rss = int(got["states"]), float(got["rss_mb"])
    done = "all" if got["exhausted"] else "cut by the budget at"
    print(
        f"  {done} {states:,} states in {float(got['seconds']):.0f} s, peak RSS {rss:.0f} MB "
        f"({rss * 2**20 / max(states, 1):,.0f} bytes a state, everything included)"
    )
    target(
        states >= MEMORY_STATES and rss <= MEMORY_MB,
        f"{states:,} states within {rss:.0f} MB (target: {MEMORY_STATES:,} within {MEMORY_MB:g})",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table and the targets; returns 0."""
    made = parser(__doc__)
    made.add_argument("--baseline", default=None, help="the revision to compare with")
    made.add_argument("--budget", type=float, default=None, help="seconds per search")
    made.add_argument(
        "--jobs", type=int, default=0, metavar="N",
        help="instead: this tree's search in one process against N (3 x 3, 1 fault; --quick 2 x 3)",
    )  # fmt: skip
    made.add_argument(
        "--instructions", action="store_true",
        help="instead: machine instructions of small searches (valgrind), now against then",
    )  # fmt: skip
    made.add_argument(
        "--memory", action="store_true",
        help="instead: this tree's states and peak RSS on 4 x 3, 1 fault (--smoke 1 x 2)",
    )  # fmt: skip
    made.add_argument(
        "--reductions", action="store_true",
        help="instead: what each named reduction spares on 2 x 3, 1 fault (--smoke 1 x 2)",
    )  # fmt: skip
    args = made.parse_args(argv)
    baseline = args.baseline or ("HEAD" if args.smoke else "b9007de")
    if args.reductions:
        case = (1, 2, 1) if args.smoke else (2, 3, 1)
        reductions_section(case, baseline, args.budget or MAX_SECONDS)
        return 0
    if args.instructions:
        instructions(baseline, [(1, 1, 0)] if args.smoke else COUNTED_CASES)
        return 0
    if args.memory:
        memory_section((1, 2, 1) if args.smoke else (4, 3, 1), args.budget or 1500.0)
        return 0
    if args.jobs > 1:
        case = (1, 2, 1) if args.smoke else (2, 3, 1) if args.quick else (3, 3, 1)
        jobs_section(case, args.jobs, args.budget or MAX_SECONDS, args.reps or 1)
        return 0
    cases, budget, reps = plan(args)
    began = header("exhaustive", details=f"against {baseline}, budget {budget:g} s{sizes(args)}")
    rows = [["case", "side", "states", "runs", "cut", "s", "states/s", "steps/tr", "RSS MB",
             "verdict"]]  # fmt: skip
    found: dict[tuple[int, int, int], Side] = {}
    with tempfile.TemporaryDirectory() as tmp:
        unpack(baseline, Path(tmp))
        for case in cases:
            sides: Side = {"then": [], "now": []}
            for _ in range(reps):
                for side, path in (("then", Path(tmp)), ("now", ROOT)):
                    progress(f"{case} {side}")
                    sides[side].append(run_side(path, case, budget))
            found[case] = sides
            rows += [row(case, side, results) for side, results in sides.items()]
    print("\nExhaustive search: N orders x W workers, k faults (charge-order -> ship-order)")
    show(rows, [False, False, *[True] * 7, False])
    print(
        "  states: distinct states (>=: the time budget cut the search); runs: schedules run "
        "to the end; cut: runs cut at a known state;\n  s: median seconds; steps/tr: kernel "
        "steps per explored transition"
    )
    ratios(found, baseline)
    footer(began)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
