"""The systematic strategy: every fault kind at every choice point of the seed's run, level by
level up to ``max_faults`` (the commonest kind, a crash, first: it finds the usual violations
soonest), and every option of each draw and completion order on the way. docs/decisions.md
says each rule ("Systematic search", "A sweep follows its parent once")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.explorer.runs import Sweep, subtree
from yieldstar_sim.simulation.explorer.strategy import StopReason, Tally
from yieldstar_sim.simulation.faults import applies_at
from yieldstar_sim.simulation.moves import new_move

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.simulation.explorer.runs import Outcome
    from yieldstar_sim.simulation.explorer.shards import Runner
    from yieldstar_sim.simulation.explorer.strategy import SearchConfig, Tick
    from yieldstar_sim.simulation.moves import Move


@dataclass
class SystematicCoverage:
    """What a systematic search covered: the report's section."""

    skipped_equivalent: int = 0
    branched: int = 0
    """Draws and completion orders whose every option was tried."""
    verdicts: dict[tuple[str, str], str] = field(default_factory=dict)
    """The verdict of each single fault, by (choice point label, kind)."""


class SystematicSearch:
    """Every kind at every choice point, level by level, each state tried once (a
    ``Strategy``; see the module's docstring)."""

    def __init__(
        self,
        runner: Runner,
        config: SearchConfig,
        *,
        tick: Tick = None,
        planned: Callable[[int], None] | None = None,
    ) -> None:
        self.runner, self.config = runner, config
        self.tally = Tally(config, tick=tick)
        self.planned = planned
        """Told how many schedules are planned so far, level by level (a progress bar's
        total: at 100 orders a single-fault search is ten thousand schedules)."""
        self.covered = SystematicCoverage()

    def search(self) -> None:
        """Run the levels (see the module's docstring)."""
        config, tally, covered = self.config, self.tally, self.covered
        execution = self.runner.execution()
        level = self._take(subtree(execution, expand_from=0 if config.max_faults else None))
        seen: set[tuple[str, tuple[str, str | None, str | None], str]] = set()
        seconds = config.seconds()
        for remaining in range(config.max_faults, 0, -1):
            if tally.done:
                return
            sweeps = []
            for outcome in level:
                first = outcome.expanded or 0
                for kind in config.kinds:
                    branches: list[tuple[int, Move]] = []
                    labels: list[str] = []
                    for offset, (label, call, key) in enumerate(outcome.recorded):
                        if not applies_at(kind, call[0], exploring=True):
                            continue  # no call to lose at an elapse; no attempt to stall elsewhere
                        same = (key, call, str(kind))
                        if same in seen:
                            covered.skipped_equivalent += 1
                            if remaining == config.max_faults == 1:
                                covered.verdicts.setdefault((label, str(kind)), "equivalent")
                            continue
                        seen.add(same)
                        at = first + offset
                        went = outcome.schedule[at]
                        move = new_move(went.actor, kind, seconds.get(kind), went.choice)
                        branches.append((at, move))
                        labels.append(label)
                    if branches:
                        sweeps.append(
                            Sweep(outcome.schedule, tuple(branches), tuple(labels), str(kind),
                                  expand=remaining > 1)
                        )  # fmt: skip
            if self.planned is not None:
                self.planned(tally.runs + sum(len(s.branches) for s in sweeps))
            level = []
            for one, number, outcomes in self.runner.sweeps(sweeps):
                taken = self._take(outcomes)
                level += taken
                if remaining == config.max_faults == 1 and taken:
                    worst = max((o.verdict for o in taken), key=_WORST.index)
                    covered.verdicts[one.labels[number], one.kind] = worst
                if tally.done:
                    return

    def _take(self, outcomes: list[Outcome]) -> list[Outcome]:
        """Count ``outcomes`` into the tally, until it says stop; those it took."""
        tally, taken = self.tally, []
        if outcomes:
            self.covered.branched += outcomes[-1].branched  # its subtree's, counted at its end
        for outcome in outcomes:
            if tally.out_of_budget():
                break
            taken.append(tally.take(outcome))
            if tally.done:
                break
        return taken

    def section(self) -> dict[str, Any]:
        """What the search covered (the report's section)."""
        stopped = self.tally.stopped
        return {"systematic": self.covered, "stopped": stopped or StopReason.COVERED}


#: Verdicts from best to worst: a single fault's cell shows the worst of its runs.
_WORST = ["ok", "incomplete", "violated"]
