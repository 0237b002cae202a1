"""bench_explorer's scaling sections, on one workflow of N ``step.run`` steps (2 workers):

* **scaling**: single-fault systematic exploration (``max_faults=1``) for N = 10, 100 and 1,000
  (with a budget where the whole bound would take too long): choice points, schedules under
  the bound, run, skipped, the time per schedule (and per schedule and choice point), total,
  and the whole bound extrapolated; the cost of the base run (the fault-free run with every
  choice point fingerprinted: ``budget=1``) beside a plain run.
* **fingerprints**: one schedule with one fault (a crash after the call at the middle choice
  point) run four ways, alternating, medians of repetitions: plain (``run_plan``); as the
  systematic search runs it (``run_plan(expand=True)``: the per-run cache, and keys only after
  the fault, the only ones the search reads of a child schedule); every choice point
  fingerprinted with the cache (what a parent run does: the cost per point); and every point
  fingerprinted by reading every record and formatting the whole state (the fingerprint before
  the cache, kept here). Ratios to the plain run; ``--fingerprints-only`` runs just this
  section.
"""

from __future__ import annotations

import gc
import hashlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from _explorer_kit import chain_scenario, explore, fault, timed_simulate
from _harness import median, ms, progress, show, target

from yieldstar_sim.simulation import FaultKind
from yieldstar_sim.simulation.explorer import plans

if TYPE_CHECKING:
    from collections.abc import Sequence

    import yieldstar_sim as ys

MAX_FINGERPRINT_RATIO = 1.2


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
        "  base run: the fault-free run with every choice point fingerprinted (explore with "
        "budget=1); whole bound (est.): ms/schedule x (under bound - skipped), where a budget "
        "cut the run short. Every exploration held every invariant: "
        f"{'yes' if all(r.ok for r in results) else 'NO'}."
    )


def _state_key_before(simulator: Any, name: str, point: Any) -> str:
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


class _Before(plans.Fingerprints):
    """Fingerprints as they were before the cache."""

    def key(self, simulator: Any, name: str, point: Any) -> str:
        return _state_key_before(simulator, name, point)


@dataclass
class FingerprintCost:
    steps: int
    points: int = 0
    faults: int = 1
    times: dict[str, list[float]] = field(
        default_factory=lambda: {"plain": [], "cached": [], "every": [], "before": []}
    )

    def ratio(self, mode: str) -> float:
        """Median over repetitions of this mode's time / the plain run's."""
        return median([t / p for t, p in zip(self.times[mode], self.times["plain"], strict=True)])


def faulted_plan(scenario: ys.Scenario, faults: int) -> plans.Plan:
    """A schedule of ``scenario`` with one fault (a crash after the middle choice point) or
    two (crashes after the points at a third and at two thirds of the run), placed as the
    systematic search places them: the second in the run the first one gave."""
    base = plans.run_plan(scenario, plans.Plan(0, 0))
    if faults == 1:
        return plans.Plan(0, 0, (fault(FaultKind.CRASH_AFTER, base.points // 2, scenario),))
    first = fault(FaultKind.CRASH_AFTER, base.points // 3, scenario)
    after = plans.run_plan(scenario, plans.Plan(0, 0, (first,)))
    second = fault(FaultKind.CRASH_AFTER, after.points * 2 // 3, scenario)
    return plans.Plan(0, 0, (first, second))


def measure_fingerprints(steps: int, reps: int, faults: int = 1) -> FingerprintCost:
    """Plain, cached and full-read fingerprinted runs of one schedule with ``faults`` faults
    (``faulted_plan``)."""
    scenario = chain_scenario(steps)
    plan = faulted_plan(scenario, faults)
    result = FingerprintCost(steps, plans.run_plan(scenario, plan).points, faults)
    cached, keys_from = plans.Fingerprints, plans.keys_from
    plans.run_plan(scenario, plan, expand=True)  # warm-up
    for rep in range(reps):
        modes = ["plain", "cached", "every", "before"]
        for mode in modes if rep % 2 == 0 else modes[::-1]:
            plans.Fingerprints = _Before if mode == "before" else cached  # type: ignore[misc]
            if mode in ("every", "before"):
                plans.keys_from = lambda plan: 0  # every point, as a parent run
            try:
                gc.collect()  # the full-read mode's garbage is not collected in another's time
                start = time.perf_counter()
                plans.run_plan(scenario, plan, expand=mode != "plain")
                result.times[mode].append(time.perf_counter() - start)
            finally:
                plans.Fingerprints, plans.keys_from = cached, keys_from  # type: ignore[misc]
    return result


def print_fingerprints(results: Sequence[FingerprintCost]) -> bool:
    print(
        "\nFingerprints: one schedule with one fault (crash after the middle point) or two "
        "(crashes after the points at a third and two thirds) of one workflow of N step.run "
        "steps; medians, ms, ratios to the plain run"
    )
    print(
        "  search: as the systematic search runs it (keys after the last fault); every: every "
        "point fingerprinted (a parent run); before: every point, read whole (before the cache)"
    )
    rows = [["N", "faults", "points", "plain", "search", "every", "before", "search/plain",
             "every/plain", "before/plain"]]  # fmt: skip
    rows.extend(
        [
            f"{r.steps:,}",
            str(r.faults),
            f"{r.points:,}",
            *(ms(median(r.times[mode])) for mode in ("plain", "cached", "every", "before")),
            f"{r.ratio('cached'):.2f}x",
            f"{r.ratio('every'):.2f}x",
            f"{r.ratio('before'):.2f}x",
        ]
        for r in results
    )
    show(rows, [True] * 10, "  ")
    ok = all(r.ratio("cached") <= MAX_FINGERPRINT_RATIO for r in results)
    target(
        ok,
        f"a schedule fingerprinted as the search runs it at most {MAX_FINGERPRINT_RATIO}x a plain "
        "run at every length",
    )
    every = all(r.ratio("every") <= MAX_FINGERPRINT_RATIO for r in results)
    target(
        every,
        f"every point fingerprinted at most {MAX_FINGERPRINT_RATIO}x a plain run at every length",
    )
    return ok and every


def fingerprint_section(quick: bool, smoke: bool = False) -> bool:
    """Measure and print the fingerprint costs at 10, 100 and 1,000 steps, with one fault and
    with two (smoke: 10 and 30 steps, once each)."""
    costs = []
    for faults in (1, 2):
        for steps in (10, 30) if smoke else (10, 100, 1000):
            progress(f"fingerprints, {steps} steps, {faults} fault{'s' * (faults > 1)}")
            # Short runs are noisier: more repetitions of them.
            reps = 1 if smoke else (3 if quick else 7) * (5 if steps <= 10 else 1)
            costs.append(measure_fingerprints(steps, reps, faults))
    return print_fingerprints(costs)
