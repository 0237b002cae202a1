"""The exhaustive search in several processes (``jobs`` > 1, or any executor): each process
searches the whole tree, depth first, in an order of its own, and they share the states they
reach in a table in shared memory (``visited.SharedVisited``): a state one process reached is
cut by the others. This is how multi-core model checkers share a search without dividing the
tree up front (LTSmin's shared table): the tree of a scenario is too uneven to divide by its
first moves, and its branches meet again (a partition of the first fault's moves between two
processes had each search 93% of the states).

Every process explores every state it reaches that no one had reached, so together they reach
exactly the states one process would (the count is of the union of the states they reached)
and the same violations; the schedules run and the cuts differ. A process on another machine
of a cluster (a Dask executor's) cannot reach the table: it searches on its own, and the report
says how many processes shared it.
"""

from __future__ import annotations

import dataclasses
import time
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from yieldstar_sim.engine.worker import frozen_heap
from yieldstar_sim.simulation.explorer.exhaustive import ExhaustiveSearch
from yieldstar_sim.simulation.explorer.seen import SeenStates
from yieldstar_sim.simulation.explorer.shards import Runner, shard_scenario
from yieldstar_sim.simulation.explorer.statespace import StateSpace
from yieldstar_sim.simulation.explorer.strategy import Coverage, Tally
from yieldstar_sim.simulation.explorer.visited import DEFAULT_SLOTS, SharedVisited

if TYPE_CHECKING:
    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.explorer.plans import Outcome, Plan
    from yieldstar_sim.simulation.explorer.strategy import SearchConfig, Tick

#: Counts summed over the processes (the rest of a part's progress is read apart).
_SUMMED = (
    "kernel_steps", "transitions", "restores", "actors_rebuilt", "rebuild_steps",
)  # fmt: skip


@dataclasses.dataclass
class Part:
    """What one process's search found, small enough to cross back."""

    plans: list[Plan]
    outcomes: list[Outcome]
    failures: list[tuple[int, Outcome, str]]
    incomplete_reasons: list[str]
    warnings: set[str] | None
    done: bool
    coverage: Coverage
    lengths: list[int]
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
    runner = Runner(shard_scenario(reference), runtime, 1, None, timeout)
    search = ExhaustiveSearch(runner, config)
    search.part = part
    shared = None if table is None else SharedVisited.attach(*table)
    search.shared = shared
    try:
        search.search()
    finally:
        if shared is not None:
            shared.close()
    tally = search.tally
    coverage = search.coverage()
    return Part(
        tally.plans, tally.outcomes, tally.failures, tally.incomplete_reasons, tally.warnings,
        tally.done, coverage, search.lengths, shared is not None, search.states.fingerprints(),
    )  # fmt: skip


class ParallelExhaustive:
    """The exhaustive search in ``runner.jobs`` processes (or on ``runner``'s executor)
    sharing their states (a ``Strategy``; see the module's docstring)."""

    def __init__(
        self, runner: Runner, config: SearchConfig, *, processes: int, tick: Tick = None
    ) -> None:
        self.runner, self.config = runner, config
        self.tally = Tally(
            config.stop_at_first, every_violation=config.order == "shortest",
            faults_in_reasons=False, tick=tick,
        )  # fmt: skip
        self.processes = processes
        self._coverage: Coverage = {}

    def search(self) -> None:
        """Run every part, then merge what they found."""
        runner, config = self.runner, self.config
        started = time.perf_counter()
        # Shortest first searches its fault levels one after another, each with its own
        # cache: processes at different levels would cut each other's states.
        table = None if config.order == "shortest" else SharedVisited.create(DEFAULT_SLOTS)
        shipped = None if table is None else (table.name, table.slots)
        try:
            reference = runner.own_pool(self.processes)
            executor = runner.executor
            assert executor is not None, "own_pool gives the runner an executor"
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
        tally, space = self.tally, StateSpace(limit=ExhaustiveSearch.graph_states)
        reached = SeenStates()
        paths: list[Any] = []
        lengths: list[int] = []
        progress: dict[str, Any] = dict.fromkeys(_SUMMED, 0)
        coverage: dict[str, Any] = {}
        for part in parts:
            offset, shift = len(tally.plans), len(paths)
            for plan, outcome in zip(part.plans, part.outcomes, strict=True):
                tally.plans.append(dataclasses.replace(plan, index=plan.index + offset))
                tally.outcomes.append(dataclasses.replace(outcome, index=outcome.index + offset))
            seen = {name for *_, name in tally.failures}
            for index, outcome, name in part.failures:
                if name not in seen or tally.every_violation:
                    seen.add(name)
                    tally.failures.append(
                        (index + offset, dataclasses.replace(outcome, index=index + offset), name)
                    )
            tally.incomplete += sum(
                1 for o in part.outcomes if o.incomplete is not None and not o.violations
            )
            tally.incomplete_reasons += part.incomplete_reasons[: 3 - len(tally.incomplete_reasons)]
            if part.warnings is not None:
                tally.warnings = (
                    set(part.warnings) if tally.warnings is None else tally.warnings & part.warnings
                )
            tally.done = tally.done or part.done
            got = part.coverage
            part_space = got.get("state_space")
            if part_space is not None:
                space.merge(part_space, shift)
            paths += got.get("state_paths", [])
            lengths += part.lengths
            reached.add_fingerprints(part.fingerprints)
            for name in _SUMMED:
                progress[name] += got.get("search_progress", {}).get(name, 0)
            for name in ("pruned_by_reduction", "pruned_by_cache", "pruned_by_symmetry"):
                coverage[name] = coverage.get(name, 0) + got.get(name, 0)
            coverage["cut_by"] = sorted({*coverage.get("cut_by", []), *got.get("cut_by", [])})
            for name in ("freeze_seconds", "order", "max_depth", "workers"):
                coverage[name] = got.get(name)
        if tally.every_violation:
            # Shortest first: each process kept its level's shortest; keep the shortest of all.
            best: dict[str, tuple[int, Outcome, str]] = {}
            for failure in tally.failures:
                held = best.get(failure[2])
                rank = (len(failure[1].faults), lengths[failure[0]])
                if held is None or rank < (len(held[1].faults), lengths[held[0]]):
                    best[failure[2]] = failure
            tally.failures = sorted(best.values(), key=lambda f: (len(f[1].faults), lengths[f[0]]))
        exhausted = all(part.coverage.get("searched_to_the_end") for part in parts)
        states = len(reached)
        progress.update(
            states=states, seconds=round(seconds, 3),
            states_per_second=round(states / seconds, 1) if seconds > 0 else 0.0,
            frontier=0, depth=0, root_moves=0, root_moves_done=0,
            peak_rss_mb=max(
                p.coverage.get("search_progress", {}).get("peak_rss_mb", 0.0) for p in parts
            ),
            max_depth_reached=max(
                p.coverage.get("search_progress", {}).get("max_depth_reached", 0) for p in parts
            ),
            kernel_steps_per_transition=round(
                (progress["kernel_steps"] + progress["rebuild_steps"])
                / max(progress["transitions"], 1), 2,
            ),
            processes=len(parts), sharing=sum(part.shared for part in parts),
            transitions_per_process=[
                p.coverage.get("search_progress", {}).get("transitions", 0) for p in parts
            ],
        )  # fmt: skip
        naive = [part.coverage.get("naive_schedules") for part in parts]
        coverage.update(
            state_space=space, state_paths=paths, distinct_states=states,
            search_progress=progress, searched_to_the_end=exhausted and not tally.done,
        )  # fmt: skip
        if exhausted and not tally.done and all(n is not None for n in naive):
            # Each process's estimate is of the whole tree: the largest is the report's.
            coverage["naive_schedules"] = max(n for n in naive if n is not None)
            coverage["naive_how"] = "estimated"
        self._coverage = cast("Coverage", coverage)

    def coverage(self) -> Coverage:
        """The merged parts' coverage (empty before ``search`` ends)."""
        return self._coverage
