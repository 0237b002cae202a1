"""bench_explorer's prefix-sharing section (``--prefix-only``): systematic explorations with
every schedule replayed from the start (``prefix_sharing=False``: the explorer before), with
each schedule forked from one run of its parent at its fault's choice point (where the prefix
replays slower than a fork; restoring switched off), and with the default (the last level's
schedules run on from the parent's state restored at their point, ``restoring.py``).
Alternating, medians of repetitions; the three reports must be identical.

Two cases: one workflow of N ``step.run`` steps, 2 workers, single fault, crashes at every
point, no budget (a budget keeps only the first points, whose prefixes are the shortest; the
ratio per schedule does not depend on the kind: every kind's schedule runs to the same end);
and bundled scenarios at two faults, every kind, the first 3,000 schedules (their prefixes are
shorter than a fork pays for: only restoring shares them).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from _explorer_kit import chain_scenario, essentials, explore
from _harness import median, progress, show, target

import yieldstar_sim as ys
from yieldstar_sim.simulation.explorer import Plan, prefix, run_plan

if TYPE_CHECKING:
    from collections.abc import Iterator

MAX_RATIO = 1.0
"""Restored over forked, every case: restoring hands a point to forking where it would cost
more (``restoring.MAX_LOG``), so the default is never slower than forking alone."""

MODES = ("replay", "forked", "restored")
SCENARIOS = ("durable-start", "lost-response", "zombie-attempt")


@dataclass
class PrefixCost:
    case: str
    schedules: int = 0
    threshold: int | None = None
    times: dict[str, list[float]] = field(default_factory=lambda: {mode: [] for mode in MODES})
    identical: bool = True

    def ratio(self, mode: str) -> float:
        """``mode``'s time over replaying's."""
        return median(self.times[mode]) / median(self.times["replay"])


@contextlib.contextmanager
def _mode(mode: str) -> Iterator[dict[str, Any]]:
    """The explore options of ``mode``; ``forked`` switches restoring off for its duration."""
    if mode == "replay":
        yield {"prefix_sharing": False}
        return
    if mode == "restored":
        yield {}
        return
    serve = prefix.serve_restoring
    prefix.serve_restoring = lambda *args, **options: None
    try:
        yield {}
    finally:
        prefix.serve_restoring = serve


def measure(case: str, scenario: ys.Scenario, reps: int, **options: Any) -> PrefixCost:
    """The three modes' explorations of ``scenario``, alternating."""
    result = PrefixCost(case)
    reports = {}
    for rep in range(reps):
        for mode in MODES[rep % 3 :] + MODES[: rep % 3]:
            progress(f"prefix sharing, {case}, {mode}, repetition {rep + 1}/{reps}")
            with _mode(mode) as chosen:
                seconds, report = explore(scenario, stop_at_first=False, **options, **chosen)
            result.times[mode].append(seconds)
            reports[mode] = (essentials(report), report.verdicts, report.warnings)
            result.schedules = report.schedules_run
    result.identical = reports["replay"] == reports["forked"] == reports["restored"]
    return result


def prefix_section(quick: bool, smoke: bool = False) -> bool:
    """Measure and print prefix sharing's speed-ups; True when the target is met (smoke: 20
    steps and one scenario, once)."""
    steps, reps = (20, 1) if smoke else (300, 3) if quick else (1000, 3)
    chain = chain_scenario(steps)
    costs = [measure(f"chain-{steps}", chain, reps, max_faults=1, kinds=("crash",))]
    # The point forking starts at, as the explorer measures it (a run timed, points counted).
    started = time.perf_counter()
    points = run_plan(chain, Plan(0, 0)).points
    costs[0].threshold = prefix.threshold(time.perf_counter() - started, points)
    for name in SCENARIOS[:1] if smoke else SCENARIOS:
        budget = 100 if smoke else 3000
        costs.append(measure(name, ys.load_scenario(name), reps, max_faults=2, budget=budget))
    print(
        "\nPrefix sharing: systematic explorations, every schedule replayed against schedules "
        f"forked from a shared prefix and run on from a restored state; medians of {reps}, "
        "alternating. The chain: one workflow of N step.run steps, 2 workers, crashes at every "
        "point; the scenarios: two faults, every kind, at most 3,000 schedules"
    )
    rows = [
        [
            "case",
            "schedules",
            "fork from point",
            "replayed s",
            "forked s",
            "restored s",
            "forked / replayed",
            "restored / replayed",
            "restored / forked",
            "same report",
        ]
    ]
    rows.extend(
        [
            cost.case,
            f"{cost.schedules:,}",
            "-" if cost.threshold is None else f"{cost.threshold:,}",
            *(f"{median(cost.times[mode]):.2f}" for mode in MODES),
            f"{cost.ratio('forked'):.2f}x",
            f"{cost.ratio('restored'):.2f}x",
            f"{cost.ratio('restored') / cost.ratio('forked'):.2f}x",
            "yes" if cost.identical else "NO",
        ]
        for cost in costs
    )
    show(rows, [False] + [True] * 9, "  ")
    ok = all(cost.identical for cost in costs) and all(
        cost.ratio("restored") / cost.ratio("forked") <= MAX_RATIO for cost in costs
    )
    target(ok, f"restoring at most {MAX_RATIO}x of forking alone on every case, same reports")
    return ok
