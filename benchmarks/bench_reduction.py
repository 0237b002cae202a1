"""Partial-order reduction (issue 49): the exhaustive search with and without it, and against a
baseline revision (default ``4fcd271``, before the search was rebuilt), in one run.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_reduction.py                  # orders 1-5 x workers 1-3
    .venv/bin/python benchmarks/bench_reduction.py --quick          # up to 3 x 3, one fault
    .venv/bin/python benchmarks/bench_reduction.py --smoke          # against HEAD, tiny (CI)
    .venv/bin/python benchmarks/bench_reduction.py --case 5x3x1 --sides reduced  # one cell

The case is ``bench_exhaustive.py``'s: ``charge-order`` -> ``step.start ship-order`` on the
memory runtime, one trigger per order, every fault kind, ``stop_at_first=False``, no DuckDB
confirmation. Three sides, each case in a child process of its own, the sides taking turns so
that load on a shared machine falls on all three: the baseline's search (``then``), this tree's
without reduction (``full``: ``Exhaustive(reduction=False)``) and with it (``reduced``). For
each: distinct states, transitions (moves explored), the moves reduction left untaken, CPU
seconds of the search, and the verdict; a search its time budget cuts is marked ``>=``. Then
each reduction's factor (full / reduced, in states, transitions and seconds) and the issue's
targets. States and transitions are exact on any machine; seconds are CPU seconds of one
single-threaded child, and only their ratios in one run mean anything. The anchor row is the
abstract model's (``../shared/anchors/spin-orders``), measured once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _harness import footer, header, parser, progress, show, sizes, target
from bench_baseline import ROOT, unpack

if TYPE_CHECKING:
    import argparse

BASELINE = "4fcd271"
#: The issue's targets: 3 x 3 with one fault this much faster than the baseline, and 5 x 3
#: with one fault verified within this many seconds.
MIN_SPEEDUP, MAX_SECONDS = 10.0, 120.0
#: The abstract model's figures at 3 x 3 x 1 (spin-orders' README): states, transitions.
ANCHOR = {
    "SPIN, the faithful model, no symmetry": (460_121, 1_440_000),
    "model.py, puts independent, with symmetry": (37_284, 88_242),
    "model.py, blocking claims, request IDs, finer relation, symmetry": (4_451, 6_975),
}

CHILD = """
import dataclasses, json, sys, time
import yieldstar_sim as ys
orders, workers, faults, budget, reduction = (int(a) for a in sys.argv[1:6])
base = ys.load_scenario("durable-start")
triggers = [ys.Trigger("charge-order", {"order": 40 + n}, execution_id=f"order-{40 + n}")
            for n in range(orders)]
scenario = dataclasses.replace(base, name=f"orders-{orders}x{workers}", faults=[],
                               workers=workers, triggers=triggers)
strategy = "exhaustive"
if reduction >= 0:
    from yieldstar_sim.simulation.explorer.strategy import Exhaustive
    strategy = Exhaustive(reduction=bool(reduction))
cpu = time.process_time()
report = ys.explore(scenario, strategy=strategy, max_faults=faults, runtime="memory",
                    confirm=None, stop_at_first=False, time_budget=budget)
cpu = time.process_time() - cpu
section = getattr(report, "exhaustive", None)
progress = getattr(section, "progress", None) or getattr(report, "search_progress", None) or {}
print(json.dumps({
    "states": report.distinct_states, "transitions": progress.get("transitions"),
    "spared": getattr(section, "spared_by_reduction", 0), "cpu": cpu,
    "exhausted": report.exhausted, "verdict": report.verdict,
}))
"""

Case = tuple[int, int, int]
SIDES = ("then", "full", "reduced")


def run_side(path: Path, case: Case, budget: float, reduction: int) -> dict[str, Any]:
    """One case searched in a child importing the package from ``path``; ``reduction``: 1 on,
    0 off, -1 the baseline's default (which has no such option)."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *(str(n) for n in case), str(int(budget)), str(reduction)],
        cwd=path, env=dict(os.environ, PYTHONPATH=str(path)), capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def plan(args: argparse.Namespace) -> tuple[list[Case], float]:
    """The cases and the seconds each search may take."""
    if args.smoke:
        return [(1, 2, 0), (1, 2, 1)], 10.0
    if args.case:
        return [_case(text) for text in args.case], args.budget or 600.0
    if args.quick:
        return [(1, 3, 1), (2, 2, 1), (2, 3, 1), (3, 3, 1)], args.budget or 1200.0
    cases = [(o, w, k) for o in (1, 2, 3, 4, 5) for w in (1, 2, 3) for k in (0, 1)]
    return cases, args.budget or 600.0


def _case(text: str) -> Case:
    """``--case 5x3x1``: orders, workers, faults."""
    try:
        orders, workers, faults = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise SystemExit(f"--case takes ORDERSxWORKERSxFAULTS, like 5x3x1, not {text!r}") from None
    return orders, workers, faults


def _cell(result: dict[str, Any], field: str) -> str:
    value = result.get(field)
    if value is None:
        return "-"
    mark = "" if result["exhausted"] else ">="
    return f"{mark}{int(value):,}"


def _targets(found: dict[Case, dict[str, dict[str, Any]]], baseline: str) -> None:
    """The issue's two targets, where their cases were run."""
    three = found.get((3, 3, 1))
    if three is not None and "then" in three and "reduced" in three:
        whole = three["then"]["exhausted"] and three["reduced"]["exhausted"]
        ratio = three["then"]["cpu"] / max(three["reduced"]["cpu"], 1e-9)
        target(
            whole and ratio >= MIN_SPEEDUP,
            f"3 x 3, 1 fault: {ratio:.2f}x faster than {baseline} (target >= {MIN_SPEEDUP:g}x)"
            if whole
            else "3 x 3, 1 fault: a side was cut by the budget (--budget SECONDS)",
        )
    five = found.get((5, 3, 1))
    if five is not None and "reduced" in five:
        now = five["reduced"]
        took = float(now["cpu"])
        done = "verified" if now["exhausted"] and now["verdict"] == "ok" else "not verified"
        target(
            bool(now["exhausted"]) and took <= MAX_SECONDS,
            f"5 x 3, 1 fault: {done} in {took:.0f} s (target: within {MAX_SECONDS:g} s)",
        )


def main(argv: list[str] | None = None) -> None:
    """Search every case on each side, print the table, the factors and the targets."""
    made = parser(__doc__)
    made.add_argument(
        "--baseline", default=BASELINE, help=f"revision to compare (default {BASELINE})"
    )
    made.add_argument("--budget", type=float, default=0.0, help="seconds per search")
    made.add_argument(
        "--case", action="append", help="only this case, ORDERSxWORKERSxFAULTS (repeatable)"
    )
    made.add_argument(
        "--sides", default=",".join(SIDES), help=f"the sides to run, of {', '.join(SIDES)}"
    )
    args = made.parse_args(argv)
    sides_asked = tuple(side for side in SIDES if side in args.sides.split(","))
    if not sides_asked:
        raise SystemExit(f"--sides names none of {', '.join(SIDES)}: {args.sides!r}")
    baseline = "HEAD" if args.smoke else args.baseline
    cases, budget = plan(args)
    began = header("reduction", f"baseline {baseline}", details=sizes(args).lstrip(", "))
    found: dict[Case, dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        unpack(baseline, Path(tmp))
        paths = {"then": Path(tmp), "full": ROOT, "reduced": ROOT}
        modes = {"then": -1, "full": 0, "reduced": 1}
        for number, case in enumerate(cases):
            sides = sides_asked if number % 2 == 0 else sides_asked[::-1]
            found[case] = {}
            for side in sides:
                progress("{} x {}, {}: ".format(*case) + side)
                found[case][side] = run_side(paths[side], case, budget, modes[side])
    rows = []
    for case, results in found.items():
        for side in sides_asked:
            result = results[side]
            rows.append([
                "{} x {}, {}".format(*case), side, _cell(result, "states"),
                _cell(result, "transitions"), f"{int(result.get('spared') or 0):,}",
                f"{result['cpu']:.2f}", str(result["verdict"]),
            ])  # fmt: skip
    heading = ["case", "side", "states", "transitions", "left untaken", "CPU s", "verdict"]
    show([heading, *rows], [False, False, True, True, True, True, False])
    print("\nThe reduction's factor (full / reduced) and against the baseline (then / reduced)")
    for case, results in found.items():
        name = "{} x {}, {}".format(*case)
        if len(results) < len(SIDES):
            print(f"  {name}: not every side was run (--sides)")
            continue
        full, reduced, then = results["full"], results["reduced"], results["then"]
        if not (full["exhausted"] and reduced["exhausted"]):
            print(f"  {name}: cut by the budget on a side")
            continue
        same = full["verdict"] == reduced["verdict"]
        print(
            f"  {name}: states {full['states'] / max(reduced['states'], 1):.2f}x, transitions "
            f"{(full['transitions'] or 0) / max(reduced['transitions'] or 1, 1):.2f}x, CPU "
            f"{full['cpu'] / max(reduced['cpu'], 1e-9):.2f}x; against {baseline}: "
            f"{then['cpu'] / max(reduced['cpu'], 1e-9):.2f}x; same verdict: "
            + ("yes" if same else "NO")
        )
    print("\nThe abstract model at 3 x 3, 1 fault (states, transitions), measured once")
    for name, (states, transitions) in ANCHOR.items():
        print(f"  {name}: {states:,}, {transitions:,}")
    print()
    _targets(found, baseline)
    footer(began)


if __name__ == "__main__":
    main()
