"""bench_explorer's prefix-sharing section (``--prefix-only``): single-fault systematic
exploration (``max_faults=1``, every point, no budget: a budget keeps only the first points,
whose prefixes are the shortest) of one workflow of N ``step.run`` steps, 2 workers, with
``prefix_sharing=False`` (every schedule replayed from the start: the explorer before) and
with the default (each schedule forked from one run of its parent at its fault's choice point,
where the prefix replays slower than a fork). Alternating, medians of repetitions; the two
reports must be identical. Crashes only, by default: the whole bound of all kinds at 1,000
steps is ~6,000 schedules, too long to repeat; the ratio per schedule does not depend on the
kind (every kind's schedule runs to the same end).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from _explorer_kit import chain_scenario, essentials, explore
from _harness import median, progress, show, target

from yieldstar_sim.simulation.explorer import Plan, prefix, run_plan

MIN_RATIO = 1.7


@dataclass
class PrefixCost:
    steps: int
    kinds: tuple[str, ...]
    schedules: int = 0
    points: int = 0
    threshold: int | None = None
    times: dict[str, list[float]] = field(default_factory=lambda: {"replay": [], "shared": []})
    identical: bool = True

    def ratio(self) -> float:
        return median(self.times["replay"]) / median(self.times["shared"])


def measure_prefix(steps: int, reps: int, kinds: tuple[str, ...] = ("crash",)) -> PrefixCost:
    """Replayed and shared explorations of the N-step chain, alternating."""
    scenario = chain_scenario(steps)
    result = PrefixCost(steps, kinds)
    reports = {}
    for rep in range(reps):
        modes = ["replay", "shared"] if rep % 2 == 0 else ["shared", "replay"]
        for mode in modes:
            progress(f"prefix sharing, {steps} steps, {mode}, repetition {rep + 1}/{reps}")
            seconds, report = explore(
                scenario, max_faults=1, stop_at_first=False, kinds=kinds,
                prefix_sharing=None if mode == "shared" else False,
            )  # fmt: skip
            result.times[mode].append(seconds)
            reports[mode] = (essentials(report), report.verdicts, report.warnings)
            result.schedules = report.schedules_run
    # The point forking starts at, as the explorer measures it (a run timed, points counted).
    started = time.perf_counter()
    points = run_plan(scenario, Plan(0, 0)).points
    result.threshold = prefix.threshold(time.perf_counter() - started, points)
    result.identical = reports["replay"] == reports["shared"]
    return result


def prefix_section(quick: bool, smoke: bool = False) -> bool:
    """Measure and print the prefix-sharing speed-up; True when the target is met (smoke: 20
    steps, once)."""
    steps, reps = (20, 1) if smoke else (1000, 1) if quick else (1000, 3)
    cost = measure_prefix(steps, reps)
    print(
        "\nPrefix sharing: single-fault systematic exploration (max_faults=1, crashes at every "
        "point, no budget) of one workflow of N step.run steps, 2 workers; medians"
    )
    rows = [["N", "kinds", "schedules", "fork from point", "replayed s", "shared s", "speed-up",
             "same report"]]  # fmt: skip
    rows.append(
        [
            f"{cost.steps:,}",
            ",".join(cost.kinds),
            f"{cost.schedules:,}",
            "-" if cost.threshold is None else f"{cost.threshold:,}",
            f"{median(cost.times['replay']):.2f}",
            f"{median(cost.times['shared']):.2f}",
            f"{cost.ratio():.2f}x",
            "yes" if cost.identical else "NO",
        ]
    )
    show(rows, [True] * 8, "  ")
    ok = cost.identical and cost.ratio() >= MIN_RATIO
    target(ok, f"prefix sharing at least {MIN_RATIO}x faster, with the same report")
    return ok
