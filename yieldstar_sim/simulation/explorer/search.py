"""The search strategies: systematic (every fault kind at every choice point, equivalent
points tried once), random fault plans, and PCT priority scheduling."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.explorer.plans import Outcome, Plan
from yieldstar_sim.simulation.faults import Fault, FaultKind, applies_at, explored_seconds

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.simulation.explorer.report import ExplorationReport
    from yieldstar_sim.simulation.explorer.shards import Runner

STRATEGIES = ("systematic", "random", "pct", "exhaustive")


def progress_bar(enabled: bool, total: int | None) -> Any:
    """A tqdm bar counting schedules (imported only when asked for)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="schedule", desc="exploring", disable=not enabled)


class Search:
    """Plans schedules strategy by strategy and runs them in order."""

    def __init__(
        self,
        report: ExplorationReport,
        runner: Runner,
        *,
        seed: int,
        budget: int | None,
        stop_at_first: bool,
        tick: Callable[[int], None] | None,
        bar: Any,
    ) -> None:
        self.report = report
        self.runner = runner
        self.seed = seed
        self.budget = budget
        self.stop_at_first = stop_at_first
        self.tick = tick
        self.bar = bar
        self.plans: list[Plan] = []
        self.outcomes: list[Outcome] = []
        self.failures: list[tuple[int, Outcome, str]] = []
        self.seen_invariants: set[str] = set()
        self.warnings: set[str] | None = None
        """The warnings every schedule run so far gave (an invariant that watched nothing)."""
        self.done = False

    def _room(self) -> int | None:
        return None if self.budget is None else self.budget - len(self.plans)

    def _run(self, plans: list[Plan], *, expand: bool, share: bool = False) -> list[Outcome]:
        """Run plans in order; stop after the first violation (``stop_at_first``). With
        ``share``, plans that extend one parent share its prefix where that pays."""
        results: list[Outcome] = []

        def take(plan: Plan, outcome: Outcome) -> bool:
            self.plans.append(plan)
            self.outcomes.append(outcome)
            results.append(outcome)
            self.report.schedules_run += 1
            self._record(plan, outcome)
            if self.bar is not None:
                self.bar.update(1)
            if self.tick is not None:
                self.tick(self.report.schedules_run)
            if outcome.violations and self.stop_at_first:
                self.done = True
            return not self.done

        if not self.done:
            self.runner.each(plans, expand=expand, take=take, share=share)
        return results

    def _record(self, plan: Plan, outcome: Outcome) -> None:
        if len(plan.faults) == 1 and plan.faults[0].label:
            key = (plan.faults[0].label, str(plan.faults[0].kind))
            self.report.verdicts[key] = outcome.verdict
        if outcome.incomplete is not None and not outcome.violations:
            self.report.incomplete_schedules += 1
            if len(self.report.incomplete_reasons) < 3:
                faults = ", ".join(f.describe() for f in plan.faults) or "no faults"
                self.report.incomplete_reasons.append(
                    f"schedule #{plan.index} ({faults}): {outcome.incomplete}"
                )
        warnings = set(outcome.warnings)
        self.warnings = warnings if self.warnings is None else self.warnings & warnings
        for name, _ in outcome.violations:
            if name not in self.seen_invariants:
                self.seen_invariants.add(name)
                self.failures.append((len(self.plans) - 1, outcome, name))

    def systematic(self, max_faults: int, kinds: tuple[FaultKind, ...], freeze: float) -> None:
        """Every kind at every choice point, level by level up to ``max_faults``, each state
        tried once."""
        base = Plan(0, self.seed)
        (parent,) = self._run([base], expand=max_faults > 0)
        seen: set[tuple[str, FaultKind]] = set()
        level = [(base, parent)]
        total = 1
        for remaining in range(max_faults, 0, -1):
            plans: list[Plan] = []
            for plan, outcome in level:
                first = plan.faults[-1].at + 1 if plan.faults else 0  # type: ignore[operator]
                # Kind by kind, each over every point: the commonest fault (a crash) is tried
                # everywhere before the rarer ones, which finds the usual violations soonest.
                for kind, point in (
                    (kind, point) for kind in kinds for point in range(first, outcome.points)
                ):
                    if not _applies(kind, outcome, point):
                        continue  # no call to lose at an elapse; no attempt to stall elsewhere
                    total += 1
                    key = (outcome.keys[point], kind)
                    if key in seen:
                        self.report.skipped_equivalent += 1
                        self.report.verdicts.setdefault(
                            (outcome.labels[point], str(kind)), "equivalent"
                        )
                        continue
                    seen.add(key)
                    fault = Fault(
                        kind, at=point, seconds=explored_seconds(kind, freeze),
                        label=outcome.labels[point],
                    )  # fmt: skip
                    plans.append(
                        Plan(len(self.plans) + len(plans), self.seed, (*plan.faults, fault))
                    )
            # Known before the level runs, so that an interrupted search can say "of how many".
            self.report.total_under_bound = total
            room = self._room()
            if room is not None:
                plans = plans[:room]
            outcomes = self._run(plans, expand=remaining > 1, share=True)
            level = list(zip(plans, outcomes, strict=False))
            if self.done or (room is not None and self._room() == 0):
                break
        self.report.total_under_bound = total

    def randomized(
        self, max_faults: int, kinds: tuple[FaultKind, ...], freeze: float, *, pct_depth: int
    ) -> None:
        """Seeded random fault plans and seeds; with ``pct_depth``, PCT priorities too."""
        rng = random.Random(self.seed)
        (base,) = self._run([Plan(0, self.seed)], expand=False)
        budget = self.budget if self.budget is not None else 200
        workers = self.runner.scenario.worker_names
        while len(self.plans) < budget and not self.done:
            batch: list[Plan] = []
            for _ in range(min(budget - len(self.plans), max(1, self.runner.jobs * 64))):
                count = rng.randint(1, max_faults) if max_faults else 0
                points = sorted(
                    rng.sample(range(max(base.points, 1)), min(count, max(base.points, 1)))
                )
                faults = []
                for point in points:
                    applicable = [kind for kind in kinds if _applies(kind, base, point)]
                    if not applicable:
                        continue
                    kind = rng.choice(applicable)
                    faults.append(Fault(kind, at=point, seconds=explored_seconds(kind, freeze)))
                priorities: tuple[str, ...] = ()
                changes: tuple[int, ...] = ()
                if pct_depth:
                    order = list(workers)
                    rng.shuffle(order)
                    priorities = tuple(order)
                    span = max(base.points * 2, 2)
                    changes = tuple(sorted(rng.sample(range(span), min(pct_depth - 1, span))))
                batch.append(
                    Plan(
                        len(self.plans) + len(batch),
                        rng.randrange(2**32),
                        tuple(faults),
                        priorities,
                        changes,
                    )
                )
            self._run(batch, expand=False)


def _applies(kind: FaultKind, outcome: Outcome, point: int) -> bool:
    """Whether the explorer places ``kind`` at ``point`` of the run ``outcome`` describes."""
    if point >= len(outcome.ops):
        return True  # a point past the run's end: no fault fires there anyway
    return applies_at(kind, outcome.ops[point], exploring=True)
