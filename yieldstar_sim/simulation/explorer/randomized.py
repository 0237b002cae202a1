"""The random strategies: seeded random fault plans and seeds (hence interleavings), and with
``pct_depth`` PCT-style priority scheduling (``depth`` priority change points) as well."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from yieldstar_sim.simulation.explorer.plans import Plan
from yieldstar_sim.simulation.explorer.strategy import Coverage, Sweeps, applies
from yieldstar_sim.simulation.faults import Fault, explored_seconds

if TYPE_CHECKING:
    from yieldstar_sim.simulation.explorer.shards import Runner
    from yieldstar_sim.simulation.explorer.strategy import SearchConfig, Tick

#: The schedules a random search runs when no budget is given.
DEFAULT_BUDGET = 200


class Randomized:
    """Seeded random fault plans and seeds; with ``config.pct_depth``, PCT priorities too (a
    ``Strategy``)."""

    def __init__(self, runner: Runner, config: SearchConfig, *, tick: Tick = None) -> None:
        self.runner, self.config = runner, config
        self.sweeps = Sweeps(runner, config, tick)
        self.tally = self.sweeps.tally

    def search(self) -> None:
        """Run random plans in batches until the budget is spent or a violation stops it."""
        config, tally = self.config, self.tally
        rng = random.Random(config.seed)
        (base,) = self.sweeps.run([Plan(0, config.seed)], expand=False)
        budget = config.budget if config.budget is not None else DEFAULT_BUDGET
        workers = self.runner.scenario.worker_names
        while len(tally.plans) < budget and not tally.done:
            batch: list[Plan] = []
            for _ in range(min(budget - len(tally.plans), max(1, self.runner.jobs * 64))):
                count = rng.randint(1, config.max_faults) if config.max_faults else 0
                points = sorted(
                    rng.sample(range(max(base.points, 1)), min(count, max(base.points, 1)))
                )
                faults = []
                for point in points:
                    applicable = [kind for kind in config.kinds if applies(kind, base, point)]
                    if not applicable:
                        continue
                    kind = rng.choice(applicable)
                    faults.append(
                        Fault(kind, at=point, seconds=explored_seconds(kind, config.freeze))
                    )
                priorities: tuple[str, ...] = ()
                changes: tuple[int, ...] = ()
                if config.pct_depth:
                    order = list(workers)
                    rng.shuffle(order)
                    priorities = tuple(order)
                    span = max(base.points * 2, 2)
                    depth = config.pct_depth - 1
                    changes = tuple(sorted(rng.sample(range(span), min(depth, span))))
                batch.append(
                    Plan(
                        len(tally.plans) + len(batch),
                        rng.randrange(2**32),
                        tuple(faults),
                        priorities,
                        changes,
                    )
                )
            self.sweeps.run(batch, expand=False)

    def coverage(self) -> Coverage:
        """A sample covers no bound: only the verdicts of single labelled faults (none)."""
        return {"verdicts": dict(self.sweeps.verdicts)}
