"""The systematic strategy: every fault kind at every choice point of the fault-free run, level
by level up to ``max_faults``, a fault whose point is equivalent to one tried already (same
state fingerprint, same kind) skipped."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.simulation.explorer.plans import Plan
from yieldstar_sim.simulation.explorer.strategy import Coverage, Sweeps, applies
from yieldstar_sim.simulation.faults import Fault, FaultKind, explored_seconds

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.simulation.explorer.shards import Runner
    from yieldstar_sim.simulation.explorer.strategy import SearchConfig, Tick


class Systematic:
    """Every kind at every choice point, level by level up to ``max_faults``, each state
    tried once (a ``Strategy``)."""

    def __init__(
        self,
        runner: Runner,
        config: SearchConfig,
        *,
        tick: Tick = None,
        planned: Callable[[int], None] | None = None,
    ) -> None:
        self.runner, self.config = runner, config
        # Told how many schedules are planned so far, level by level (a progress bar's total:
        # at 100 orders a single-fault search is ten thousand schedules and minutes long).
        self.planned = planned
        self.sweeps = Sweeps(runner, config, tick)
        self.tally = self.sweeps.tally
        self.skipped_equivalent = 0
        self.total_under_bound: int | None = None

    def search(self) -> None:
        """Run the levels (see the class)."""
        config, sweeps = self.config, self.sweeps
        base = Plan(0, config.seed)
        (parent,) = sweeps.run([base], expand=config.max_faults > 0)
        seen: set[tuple[str, FaultKind]] = set()
        level = [(base, parent)]
        total = 1
        for remaining in range(config.max_faults, 0, -1):
            plans: list[Plan] = []
            planned = len(self.tally.plans)
            for plan, outcome in level:
                first = plan.faults[-1].at + 1 if plan.faults else 0  # type: ignore[operator]
                # Kind by kind, each over every point: the commonest fault (a crash) is tried
                # everywhere before the rarer ones, which finds the usual violations soonest.
                for kind, point in (
                    (kind, point) for kind in config.kinds for point in range(first, outcome.points)
                ):
                    if not applies(kind, outcome, point):
                        continue  # no call to lose at an elapse; no attempt to stall elsewhere
                    total += 1
                    key = (outcome.keys[point], kind)
                    if key in seen:
                        self.skipped_equivalent += 1
                        sweeps.verdicts.setdefault((outcome.labels[point], str(kind)), "equivalent")
                        continue
                    seen.add(key)
                    fault = Fault(
                        kind, at=point, seconds=explored_seconds(kind, config.freeze),
                        label=outcome.labels[point],
                    )  # fmt: skip
                    plans.append(Plan(planned + len(plans), config.seed, (*plan.faults, fault)))
            # Known before the level runs, so that an interrupted search can say "of how many".
            self.total_under_bound = total
            room = sweeps.room()
            if room is not None:
                plans = plans[:room]
            if self.planned is not None:
                self.planned(planned + len(plans))
            outcomes = sweeps.run(plans, expand=remaining > 1, share=True)
            level = list(zip(plans, outcomes, strict=False))
            if self.tally.done or (room is not None and sweeps.room() == 0):
                break
        self.total_under_bound = total

    def coverage(self) -> Coverage:
        """How many schedules the bound holds and how many were skipped as equivalent, and the
        verdict of each single fault."""
        return {
            "skipped_equivalent": self.skipped_equivalent,
            "total_under_bound": self.total_under_bound,
            "verdicts": dict(self.sweeps.verdicts),
        }
