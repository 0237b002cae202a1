"""bench_explorer's scaling sections, on one workflow of N ``step.run`` steps (2 workers):

* **scaling**: single-fault systematic exploration (``max_faults=1``) for N = 10, 100 and 1,000
  (with a budget where the whole bound would take too long): choice points, schedules under
  the bound, run, skipped, the time per schedule (and per schedule and choice point), total,
  and the whole bound extrapolated; the cost of the base run (the fault-free run with a state
  key at every choice point: ``budget=1``) beside a plain run.
* **state keys**: one schedule with one fault (a crash after the call at the middle choice
  point) or two, of the chain and of 50 workflows of 4 steps, run four ways on an
  ``Execution``, alternating, medians of repetitions (``_explorer_keys.py``): plain; with a key
  after the last fault (as the systematic search reads them in a run it may place another
  fault in); with a key at every point (its first run, and the exhaustive search); and every
  point read whole (``WholeReads``, what a runtime that reports no changes costs). One key
  serves every search since 7857e99 (the systematic search's fingerprints are gone). Ratios to
  the plain run; ``--keys-only`` runs just this section.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from _explorer_keys import MODES, keyed_run, schedule
from _explorer_kit import chain_scenario, explore, timed_simulate, wide_scenario
from _harness import median, ms, progress, show, target

if TYPE_CHECKING:
    from collections.abc import Sequence

    import yieldstar_sim as ys

MAX_KEY_RATIO = 1.2
"""The target for a run with keys read as a search reads them, against a plain run."""


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
    # Not report.ok: a budget cuts the search short, which is no violation.
    result.ok = not report.violations
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
    show(rows, [True] * 12, "  ")
    print(
        "  base run: the fault-free run with a state key at every choice point (explore with "
        "budget=1); whole bound (est.): ms/schedule x (under bound - skipped), where a budget "
        "cut the run short. Every exploration held every invariant: "
        f"{'yes' if all(r.ok for r in results) else 'NO'}."
    )


@dataclass
class KeyCost:
    """One schedule run every way of ``_explorer_keys.MODES``, repetition by repetition."""

    workload: str
    faults: int
    points: int = 0
    times: dict[str, list[float]] = field(default_factory=lambda: {mode: [] for mode in MODES})

    def ratio(self, mode: str) -> float:
        """Median over repetitions of this mode's time / the plain run's."""
        return median([t / p for t, p in zip(self.times[mode], self.times["plain"], strict=True)])


def measure_keys(workload: str, scenario: ys.Scenario, reps: int, faults: int = 1) -> KeyCost:
    """The modes' runs of one schedule with ``faults`` faults, alternating."""
    plan = schedule(scenario, faults)
    result = KeyCost(workload, faults)
    keyed_run(scenario, plan, "every")  # warm-up
    for rep in range(reps):
        for mode in MODES if rep % 2 == 0 else MODES[::-1]:
            seconds, _, result.points = keyed_run(scenario, plan, mode)
            result.times[mode].append(seconds)
    return result


def print_keys(results: Sequence[KeyCost]) -> bool:
    print(
        "\nState keys: one schedule with one fault (a crash after the middle point) or two "
        "(crashes after the points at a third and two thirds) of one workflow of N step.run "
        "steps, and of 50 workflows of 4; medians, ms, ratios to the plain run"
    )
    print(
        "  after: a key at every point after the last fault (as a systematic search reads them "
        "where it may place another);\n  every: at every point (the systematic search's first "
        "run, the exhaustive search); whole: every point, read whole (WholeReads)"
    )
    rows = [["workload", "faults", "points", "plain", "after", "every", "whole", "after/plain",
             "every/plain", "whole/plain"]]  # fmt: skip
    rows.extend(
        [
            r.workload,
            str(r.faults),
            f"{r.points:,}",
            *(ms(median(r.times[mode])) for mode in MODES),
            f"{r.ratio('after'):.2f}x",
            f"{r.ratio('every'):.2f}x",
            f"{r.ratio('whole'):.2f}x",
        ]
        for r in results
    )
    show(rows, [False] + [True] * 9, "  ")
    after = all(r.ratio("after") <= MAX_KEY_RATIO for r in results)
    target(
        after,
        f"a schedule keyed as the systematic search keys it at most {MAX_KEY_RATIO}x a plain "
        "run, every workload",
    )
    every = all(r.ratio("every") <= MAX_KEY_RATIO for r in results)
    target(every, f"a key at every point at most {MAX_KEY_RATIO}x a plain run, every workload")
    return after and every


def key_section(quick: bool, smoke: bool = False) -> bool:
    """Measure and print the key costs at 10, 100 and 1,000 steps and on 50 workflows of 4,
    with one fault and with two (smoke: 10 and 30 steps and 5 workflows, once each)."""
    costs = []
    sizes = (10, 30) if smoke else (10, 100, 1000)
    workloads = [(f"{steps:,} steps", chain_scenario(steps), steps <= 10) for steps in sizes]
    wide = 5 if smoke else 50
    workloads.append((f"{wide} x 4 steps", wide_scenario(wide, 4), False))
    for faults in (1, 2):
        for name, scenario, short in workloads:
            progress(f"state keys, {name}, {faults} fault{'s' * (faults > 1)}")
            # Short runs are noisier: more repetitions of them.
            reps = 1 if smoke else (3 if quick else 7) * (5 if short else 1)
            costs.append(measure_keys(name, scenario, reps, faults))
    return print_keys(costs)
