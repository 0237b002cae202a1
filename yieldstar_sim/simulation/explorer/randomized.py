"""The random strategies: each schedule a plain run (``simulate``) of a seed and faults drawn at
random, hence random interleavings and draws; with ``Pct``, PCT-style priority scheduling too
(``PctScheduler``, ``depth`` priority change points)."""

from __future__ import annotations

import random
from functools import partial
from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.explorer.runs import outcome_of, subtree
from yieldstar_sim.simulation.explorer.strategy import Pct, StopReason, Tally
from yieldstar_sim.simulation.faults import Fault, applies_at
from yieldstar_sim.simulation.moves import Move, plain_move
from yieldstar_sim.simulation.run import simulate

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.execution import Execution
    from yieldstar_sim.simulation.explorer.runs import Outcome
    from yieldstar_sim.simulation.explorer.shards import Runner
    from yieldstar_sim.simulation.explorer.strategy import SearchConfig, Tick
    from yieldstar_sim.simulation.scenario import Scenario

#: The schedules a random search runs when no budget is given.
DEFAULT_BUDGET = 200


class PctScheduler:
    """PCT: where several actors are ready, the one with the highest priority goes; at each
    change point the actor that goes drops to the lowest priority. A point's options are drawn
    from the run's own random numbers."""

    def __init__(self, priorities: Sequence[str], change_points: Sequence[int], seed: int):
        self.rank = {name: len(priorities) - i for i, name in enumerate(priorities)}
        self.change_points = set(change_points)
        self.lowest = 0
        self.rng = random.Random(seed)

    def __call__(self, execution: Execution) -> Move:
        ready = execution.ready()
        chosen = ready[0]
        if len(ready) > 1:
            chosen = max(ready, key=lambda name: (self.rank.get(name, 0), name))
            if execution.points in self.change_points:
                self.lowest -= 1
                self.rank[chosen] = self.lowest
        options = execution.point(chosen).options
        choice = self.rng.randrange(len(options)) if options else None
        return execution.planned(plain_move(chosen, choice))


def run_plan(
    scenario: Scenario,
    runtime: RuntimeChoice,
    timeout: float | None,
    *,
    seed: int,
    faults: tuple[Fault, ...],
    priorities: tuple[str, ...],
    change_points: tuple[int, ...],
) -> Outcome:
    """Run one random schedule (in whatever process): its seed, its faults (placed by
    choice-point index) and PCT's priorities and change points (none: the seed's
    interleaving); its outcome."""
    scheduler = PctScheduler(priorities, change_points, seed) if priorities else None
    run = simulate(
        scenario, seed, runtime=runtime, faults=faults, scenario_faults=False,
        timeout=timeout, check_faults=False, scheduler=scheduler,
    )  # fmt: skip
    try:
        return outcome_of(run)
    finally:
        run.runtime.close()


class RandomizedSearch:
    """Seeded random fault plans and seeds; PCT priorities too with ``Pct`` options (a
    ``Strategy``)."""

    def __init__(self, runner: Runner, config: SearchConfig, *, tick: Tick = None) -> None:
        self.runner, self.config = runner, config
        self.tally = Tally(config, tick=tick)

    def search(self) -> None:
        """Run random plans in batches until the budget is spent or a violation stops it."""
        config, tally, runner = self.config, self.tally, self.runner
        rng = random.Random(config.seed)
        (base,) = subtree(runner.execution(), expand_from=0, branch=False)
        ops = [call[0] for _, call, _ in base.recorded]
        tally.take(base)
        budget = config.budget if config.budget is not None else DEFAULT_BUDGET
        workers = runner.scenario.worker_names
        seconds = config.seconds()
        depth = config.strategy.depth if isinstance(config.strategy, Pct) else 0
        while tally.runs < budget and not tally.done:
            batch: list[Any] = []
            for _ in range(min(budget - tally.runs, max(1, runner.jobs * 64))):
                count = rng.randint(1, config.max_faults) if config.max_faults else 0
                span = range(max(len(ops), 1))
                faults = []
                for point in sorted(rng.sample(span, min(count, len(span)))):
                    op = ops[point] if point < len(ops) else ""
                    kinds = [kind for kind in config.kinds if applies_at(kind, op, exploring=True)]
                    if kinds:
                        kind = rng.choice(kinds)
                        faults.append(Fault(kind, at=point, seconds=seconds.get(kind)))
                seed, order, changes = rng.randrange(2**32), list(workers), []
                if depth:
                    rng.shuffle(order)
                    span = range(max(len(ops) * 2, 2))
                    changes = sorted(rng.sample(span, min(depth - 1, len(span))))
                priorities = tuple(order) if depth else ()
                batch.append(
                    partial(
                        run_plan,
                        seed=seed,
                        faults=tuple(faults),
                        priorities=priorities,
                        change_points=tuple(changes),
                    )
                )
            for outcome in runner.runs(batch):
                if tally.out_of_budget():
                    break
                tally.take(outcome)
                if tally.done:
                    break
            if tally.out_of_budget():
                break

    def section(self) -> dict[str, Any]:
        """A sample covers no bound: only how it ended."""
        stopped = self.tally.stopped
        if stopped is StopReason.BUDGET:
            stopped = StopReason.SAMPLED  # the budget is what a sample runs
        return {"stopped": stopped or StopReason.SAMPLED}
