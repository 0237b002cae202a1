"""The exhaustive search in several processes (``jobs`` > 1, or any executor): each searches the
whole tree depth first in an order of its own, sharing the states searched to their end
(``seen.SharedVisited``), as LTSmin's multi-core search does; dividing the tree up front fails,
as its branches meet again. Together they reach the states one process would, so the count is
of the union; docs/decisions.md says the rest ("The exhaustive search in several processes").
"""

from __future__ import annotations

import dataclasses
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from yieldstar_sim.engine.worker import frozen_heap
from yieldstar_sim.simulation.explorer.exhaustive import (
    ExhaustiveCoverage,
    ExhaustiveSearch,
    keep_shortest,
)
from yieldstar_sim.simulation.explorer.seen import DEFAULT_SLOTS, SeenStates, SharedVisited
from yieldstar_sim.simulation.explorer.shards import Runner, shard_scenario
from yieldstar_sim.simulation.explorer.statespace import StateSpace
from yieldstar_sim.simulation.explorer.strategy import StopReason, Tally

if TYPE_CHECKING:
    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.explorer.runs import Outcome
    from yieldstar_sim.simulation.explorer.strategy import SearchConfig, Tick

#: Progress counts summed over the processes.
_SUMMED = ("transitions", "restores", "replayed_moves")


@dataclasses.dataclass
class Part:
    """What one process's search found, small enough to cross back."""

    outcomes: list[Outcome]
    stopped: StopReason | None
    covered: ExhaustiveCoverage
    shared: bool
    """Whether this process reached the shared table (False: it searched on its own)."""
    fingerprints: bytes
    """The 16 bytes of every state it reached: the states are counted once over all."""


def search_part(
    reference: str | None,
    runtime: RuntimeChoice,
    config: SearchConfig,
    timeout: float | None,
    *,
    part: int,
    table: tuple[str, int] | None,
) -> Part:
    """Search the whole tree as process ``part``, sharing the table ``table`` (its name and
    slots) when this machine has it."""
    runner = Runner(shard_scenario(reference), runtime, seed=config.seed, timeout=timeout)
    search = ExhaustiveSearch(runner, config)
    search.part = part
    shared = None if table is None else SharedVisited.attach(*table)
    search.shared = shared
    try:
        search.search()
    finally:
        runner.close()
        if shared is not None:
            shared.close()
    tally = search.tally
    covered = search.section()["exhaustive"]
    return Part(
        tally.outcomes, tally.stopped, covered, shared is not None, search.states.fingerprints()
    )


class ParallelExhaustive:
    """The exhaustive search in ``processes`` processes (on ``runner``'s executor, or a pool
    of its own) sharing their states (a ``Strategy``; see the module's docstring)."""

    def __init__(
        self, runner: Runner, config: SearchConfig, *, processes: int, tick: Tick = None
    ) -> None:
        self.runner, self.config, self.processes = runner, config, processes
        order = getattr(config.strategy, "order", "dfs")
        self.tally = Tally(config, every_violation=order == "shortest", tick=tick)
        self.covered = ExhaustiveCoverage()

    def search(self) -> None:
        """Run every part, then merge what they found."""
        runner, config = self.runner, self.config
        started = time.perf_counter()
        # Shortest first searches its fault levels one after another, each with its own
        # cache: processes at different levels would cut each other's states.
        shortest = getattr(config.strategy, "order", "dfs") == "shortest"
        table = None if shortest else SharedVisited.create(DEFAULT_SLOTS)
        shipped = None if table is None else (table.name, table.slots)
        try:
            reference = runner._pool(self.processes)
            executor = runner.executor
            assert executor is not None, "a pool gives the runner an executor"
            task = partial(
                search_part, reference, runner.shipped, config, runner.timeout, table=shipped
            )
            with frozen_heap():  # submitting may fork the pool's processes
                futures = [executor.submit(task, part=part) for part in range(self.processes)]
            parts = [future.result() for future in futures]
        finally:
            if table is not None:
                table.close(unlink=True)
        self._merge(parts, time.perf_counter() - started)

    def _merge(self, parts: list[Part], seconds: float) -> None:
        tally, covered = self.tally, self.covered
        space = StateSpace(limit=ExhaustiveSearch.graph_states)
        reached = SeenStates()
        progress: dict[str, Any] = dict.fromkeys(_SUMMED, 0)
        for part in parts:
            shift = len(covered.state_paths)
            for outcome in part.outcomes:
                tally.take(outcome)  # numbered again, over every part
            tally.stopped = tally.stopped or part.stopped
            got = part.covered
            if got.state_space is not None:
                space.merge(got.state_space, shift)
            covered.state_paths += got.state_paths
            reached.add_fingerprints(part.fingerprints)
            for name in _SUMMED:
                progress[name] += got.progress.get(name, 0)
            covered.pruned_by_cache += got.pruned_by_cache
            covered.cut_by += [why for why in got.cut_by if why not in covered.cut_by]
            covered.order, covered.max_depth = got.order, got.max_depth
            covered.workers = got.workers
        if tally.every_violation:
            keep_shortest(tally)  # shortest first: the shortest of every part's
        states = len(reached)
        progress.update(
            states=states, seconds=round(seconds, 3),
            states_per_second=round(states / seconds, 1) if seconds > 0 else 0.0,
            frontier=0, depth=0, processes=len(parts),
            sharing=sum(part.shared for part in parts),
            peak_rss_mb=max(p.covered.progress.get("peak_rss_mb", 0.0) for p in parts),
            max_depth_reached=max(p.covered.progress.get("max_depth_reached", 0) for p in parts),
            transitions_per_process=[p.covered.progress.get("transitions", 0) for p in parts],
        )  # fmt: skip
        searched = all(part.covered.searched_to_the_end for part in parts)
        naive = [part.covered.naive_schedules for part in parts]
        covered.state_space, covered.distinct_states = space, states
        covered.progress, covered.searched_to_the_end = progress, searched and not tally.done
        if covered.searched_to_the_end and all(n is not None for n in naive):
            # Each process's estimate is of the whole tree: the largest is the report's.
            covered.naive_schedules = max(n for n in naive if n is not None)

    def section(self) -> dict[str, Any]:
        """The merged parts' coverage (empty before ``search`` ends)."""
        stopped = self.tally.stopped
        if stopped is None:
            stopped = self.covered.cut_by[0] if self.covered.cut_by else StopReason.COVERED
        return {"exhaustive": self.covered, "stopped": stopped}
