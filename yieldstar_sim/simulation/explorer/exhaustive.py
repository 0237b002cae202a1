"""The exhaustive strategy: every move at every choice point (every ready actor, each option of
a draw or a completion order, every fault kind up to ``max_faults``), depth first, cutting a
state reached before with no fewer faults and no less depth left, and restoring the deepest
state with a move left to backtrack. docs/decisions.md says each rule ("`strategy="exhaustive"`",
"State caching", "Completeness", "Shortest first").

In several processes (``jobs`` > 1, any executor, or a Dask cluster: ``ParallelExhaustive``)
each searches the whole tree in an order of its own, sharing the states searched to their end
and those being searched (``simulation.shared_states``, ``simulation.cluster``), as LTSmin's
multi-core search does: dividing the tree up front fails, as its branches meet again. Together
they reach the states one process would, so the count is of the union ("The exhaustive search
in several processes").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from yieldstar_sim.engine.worker import frozen_heap
from yieldstar_sim.simulation.explorer.paths import Paths
from yieldstar_sim.simulation.explorer.runs import outcome_of
from yieldstar_sim.simulation.explorer.seen import SeenStates, peak_rss_mb
from yieldstar_sim.simulation.explorer.shards import Runner, shard_scenario, turned
from yieldstar_sim.simulation.explorer.statespace import StateSpace
from yieldstar_sim.simulation.explorer.strategy import (
    Exhaustive,
    StopReason,
    Tally,
    keep_shortest,
    paced_collector,
)
from yieldstar_sim.simulation.persistent import Held, Reduction
from yieldstar_sim.simulation.shared_states import DEFAULT_SLOTS, SharedVisited

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.execution import Execution, SavedExecution
    from yieldstar_sim.simulation.explorer.runs import Outcome
    from yieldstar_sim.simulation.explorer.strategy import SearchConfig, Tick
    from yieldstar_sim.simulation.moves import Move
    from yieldstar_sim.simulation.shared_states import SharedStates, SharesStates
    from yieldstar_sim.simulation.trail import Trail

#: How often, at most, the search tells its ``watch`` how far it got.
WATCH_SECONDS = 0.5


@dataclass
class _Node:
    """A state on the current path, with the moves left to take from it."""

    key: str
    pending: list[Move]
    faults_used: int
    options: int
    saved: SavedExecution | None = None
    taken: int = 0
    estimate: float = 0.0  # the naive search's schedules under the moves taken so far
    held: Held | None = None  # its part in partial-order reduction (simulation.persistent)
    deferred: list[Move] = field(default_factory=list)
    """Moves to states another process is searching: taken last (``ExhaustiveSearch._arrive``)."""
    again: bool = False  # the deferred moves are being taken: none is deferred twice
    cut: str = ""  # its verdict key (``Execution.verdict_key``): what the cache reads


@dataclass
class ExhaustiveCoverage:
    """What an exhaustive search covered: the report's section."""

    distinct_states: int = 0
    pruned_by_cache: int = 0
    """Runs cut where they reached a state searched already (state caching)."""
    spared_by_reduction: int = 0
    """Moves not taken because one worker's moves were enough there (partial-order
    reduction: ``simulation.persistent``)."""
    reduced_states: int = 0
    """States where partial-order reduction left moves untaken."""
    cut_by: list[StopReason] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    """What a search on a cluster lost (a worker that died...), a sentence each."""
    searched_to_the_end: bool = False
    """It backtracked out of its first state (nothing cut it)."""
    naive_schedules: int | None = None
    """The schedules the search without caching would run, estimated from the subtrees."""
    order: str = "dfs"
    max_depth: int | None = None
    workers: int = 0
    state_space: StateSpace | None = None
    state_paths: Paths = field(default_factory=Paths)
    """The schedule of each run that added a state to the graph (``StateNode.plan``)."""
    progress: dict[str, Any] = field(default_factory=dict)
    """How far it got: states, states per second, the frontier, the depth, transitions,
    restores, peak memory (decisions.md, "Progress as model checkers show it")."""


class ExhaustiveSearch:
    """The search and its counts, in one process (a ``Strategy``)."""

    graph_states: int | None = 100_000
    """How many states the report's state graph, kept for people, holds (None: every one)."""

    def __init__(self, runner: Runner, config: SearchConfig, *, tick: Tick = None) -> None:
        options = config.strategy
        assert isinstance(options, Exhaustive)
        self.runner, self.config, self.options = runner, config, options
        self.tally = Tally(config, every_violation=options.order == "shortest", tick=tick)
        self.space = StateSpace(limit=self.graph_states)
        self.covered = ExhaustiveCoverage(
            order=options.order, max_depth=options.max_depth,
            workers=len(runner.scenario.worker_names), state_space=self.space,
        )  # fmt: skip
        self.states = SeenStates()
        """Every distinct state reached, over every fault level (the statement's count)."""
        self._seen, self._limit, self._seconds = self.states, config.max_faults, config.seconds()
        self.shared: SharedStates | None = None
        """The states shared with the other processes (``ParallelExhaustive``) searching the
        same tree, each in an order of its own (``part``)."""
        self.part = self.transitions = self.max_depth_reached = 0
        self.watch: Callable[[dict[str, Any]], None] | None = None
        """Called with ``progress()`` about every ``WATCH_SECONDS`` (the CLI's progress bar)."""
        self._watched, self._depth, self._frontier = 0.0, 0, 0
        self._execution: Execution | None = None
        self.paths: list[Trail] = []
        """The path of each run that added a state to the graph (``StateNode.plan``)."""
        self.reduction = Reduction() if options.reduction and options.max_depth is None else None
        """Partial-order reduction, where asked for and the search is not bounded in depth (a
        bound cuts runs that the reduction's argument needs whole)."""

    def search(self) -> None:
        """Search until every path under the bound is covered, or a bound or budget cuts it."""
        shortest = self.options.order == "shortest"
        levels = range(self.config.max_faults + 1) if shortest else [self.config.max_faults]
        tally = self.tally
        for limit in levels:
            self._limit = limit
            self._seen = SeenStates()  # by verdict key: the states count by their own key
            before = len(tally.failures)
            self._level(cache=self.options.cache)
            if shortest and len(tally.failures) > before:
                # Caching keeps every state, not every path to it: the shortest path to a
                # violation is found by searching this level again without it.
                self._seen = SeenStates()
                del tally.failures[before:]
                self._level(cache=False)
                keep_shortest(tally, before)
                if self.config.stop_at_first:
                    tally.stopped = StopReason.VIOLATION
            if tally.done:
                break

    def _level(self, *, cache: bool) -> None:
        execution = self._execution = self.runner.execution(footprints=bool(self.reduction))
        root = self._arrive(execution, None, None, cache=cache)
        stack = [] if root is None else [root]
        tally = self.tally
        while stack:
            if self._stop():
                self._depth, self._frontier = len(stack), sum(len(n.pending) for n in stack)
                self._cut(tally.stopped or StopReason.VIOLATION)
                return
            node = stack[-1]
            if not node.pending:
                if node.deferred:
                    node.pending, node.deferred, node.again = node.deferred, [], True
                    continue
                if node.held is not None and self.reduction is not None:
                    node.pending = self.reduction.release(node.held)
                    if node.pending:
                        continue  # the moves held back are taken after all
                stack.pop()
                self._searched(node, stack, cache)
                continue
            move = node.pending.pop(0)
            if node.taken:
                execution.restore(node.saved)  # type: ignore[arg-type]
            node.taken += 1
            if (
                not node.pending
                and (node.held is None or not node.held.moves)
                and (self.shared is None or node.again)
            ):
                node.saved = None  # its last move: nothing comes back here
            execution.take(move)
            self.transitions += 1
            if node.held is not None:
                Reduction.took(node.held, execution.footprint)
            child = self._arrive(execution, node, move, cache=cache, depth=len(stack))
            if child is not None:
                stack.append(child)
            if (
                self.watch is not None
                and (now := time.perf_counter()) - self._watched >= WATCH_SECONDS
            ):
                self._watched = now
                self._depth, self._frontier = len(stack), sum(len(n.pending) for n in stack)
                self.watch(self.progress())
        self._depth = self._frontier = 0
        self.covered.searched_to_the_end = not tally.done

    def _stop(self) -> bool:
        if self.shared is not None and self.shared.stopped:
            self.tally.stopped = StopReason.VIOLATION  # another process found one
        if self.tally.stopped is StopReason.VIOLATION and self.options.order == "dfs":
            if self.shared is not None:
                self.shared.stop()
            return True
        return self.tally.out_of_budget() and self.tally.stopped is not StopReason.VIOLATION

    def _cut(self, why: StopReason) -> None:
        if why is not StopReason.VIOLATION and why not in self.covered.cut_by:
            self.covered.cut_by.append(why)

    def _searched(self, node: _Node, stack: list[_Node], cache: bool) -> None:
        """``node``'s subtree is searched to its end: share it, estimate it, and hand what
        its actor touched alone to the move it is part of."""
        if node.held is not None and self.reduction is not None:
            self.reduction.searched(node.key, node.held, stack[-1].held if stack else None)
        depth_left = self._depth_left(len(stack))
        if self.shared is not None and cache:
            self.shared.add(node.key, self._limit - node.faults_used, depth_left, node.cut)
        estimate = max(node.estimate, 1.0)
        self._seen.keep_estimate(node.cut, estimate)
        if stack:
            stack[-1].estimate += estimate
        elif node.options:
            self.covered.naive_schedules = round(estimate)

    def _depth_left(self, depth: int) -> int | None:
        bound = self.options.max_depth
        return None if bound is None else max(bound - depth, 0)

    def _arrive(
        self,
        execution: Execution,
        parent: _Node | None,
        move: Move | None,
        *,
        cache: bool,
        depth: int = 0,
    ) -> _Node | None:
        """A run reached a new choice point (or its end) after ``move``: its node, or None
        where the run ends or is cut."""
        space = self.space
        self.max_depth_reached = max(self.max_depth_reached, depth)
        faults = 0 if parent is None else parent.faults_used + (move.fault is not None)  # type: ignore[union-attr]
        key = execution.key()
        ended = execution.done()
        held = None
        if self.reduction is not None and not ended:
            above = None if parent is None else parent.held
            held = self.reduction.arrive(execution, above, None if move is None else move.actor)
        new = self.states.add(key)
        plan = len(self.paths)
        if new and not space.full:
            label = "end of the run" if ended else _label(execution)
            space.add_state(key, depth=depth, label=label, plan=plan, terminal=ended)
            self.paths.append(execution.trail())
        elif ended:
            space.mark_terminal(key)
        if parent is not None and move is not None:
            space.add_edge(
                parent.key, key, choice=move.actor,
                fault=None if move.fault is None else str(move.fault), plan=plan,
            )  # fmt: skip
        if ended:
            self._ended(execution.result(), key, parent, (self._limit - faults, depth), cache)
            return None
        left, depth_left = self._limit - faults, self._depth_left(depth)
        # A state stands for another only with the same past (``Execution.verdict_key``): the
        # processes share one with a past under that key, as one process caches it.
        cut = execution.verdict_key(key) if cache else key
        shared = self.shared if cache else None
        if (
            shared is not None
            and parent is not None
            and move is not None
            and not parent.again
            and parent.saved is not None  # a state with one move is not saved to come back to
            and shared.claimed(cut)
            and not shared.covers(cut, left, depth_left)
        ):
            # Another process is searching this state now: its other siblings first, so that
            # the processes spread out, and by the time this one comes back the state may be
            # searched to its end (then it is cut). Deferring reorders; it never cuts.
            parent.deferred.append(move)
            return None
        seen = cache and self._seen.reached(cut, left, depth_left)
        elsewhere = not seen and shared is not None and shared.covers(cut, left, depth_left)
        if (seen or elsewhere) and self._trusted(key, held, parent, cut if elsewhere else None):
            self._cached(key, held, parent, elsewhere=elsewhere, cut=cut)
            return None
        kinds = self.config.kinds if faults < self._limit else ()
        moves = turned(execution.moves(kinds, self._seconds), key, self.part)
        options = len(moves)
        if depth_left is not None and depth_left <= 0 and len(moves) > 1:
            self._cut(StopReason.DEPTH)
            moves = moves[:1]
        if shared is not None:
            shared.claim(key, cut)
        node = _Node(key, moves, faults, options, held=held, cut=cut)
        if held is not None and self.reduction is not None:
            node.pending = self.reduction.split(execution, held, moves)
        if len(moves) > 1:
            node.saved = execution.save()  # a later move starts here
        return node

    def _cached(
        self, key: str, held: Held | None, parent: _Node | None, *, elsewhere: bool, cut: str
    ) -> None:
        """A run reached a state searched before, here or in another process (``elsewhere``),
        and is cut there."""
        self.covered.pruned_by_cache += 1
        if held is not None and self.reduction is not None:
            if elsewhere:
                self.reduction.unseen(key, held)
            # A move back to its own state (a fault that changed nothing but the budget) adds
            # nothing below it that its state's other runs do not.
            above = None if parent is None or parent.key == key else parent.held
            self.reduction.cached(key, held, above)
        if parent is not None:
            parent.estimate += self._seen.estimate(cut)

    def _trusted(
        self, key: str, held: Held | None, parent: _Node | None, elsewhere: str | None
    ) -> bool:
        """Whether a state searched before, here or in another process (``elsewhere``: the key
        it is filed under there, and what it shared of the runs below it is taken), may be cut
        here: unless a vouch above waits on what was touched below it and that is not known
        whole; a move back to its own state is always cut. So a process vouches as one
        process would."""
        if held is None or self.reduction is None:
            return True
        known = self.reduction.known(key, self.shared, elsewhere)
        return not held.needs_below or (parent is not None and parent.key == key) or known

    def _ended(
        self, run: Any, key: str, parent: _Node | None, left: tuple[int, int], share: bool
    ) -> None:
        """A run ended at ``key`` with ``left`` faults and depth: its outcome counted, its
        violations marked, and shared with ``share``."""
        for violation in run.violations:
            self.space.mark_violation(key, violation.invariant)
        self.tally.take(outcome_of(run))
        if self.shared is not None and share:
            # Searched to its end, and shared as such, so that a table that counts the
            # states (a cluster's progress) counts those the statement counts. A run's
            # end is never cut, so sharing it spares no process a run.
            self.shared.add(key, left[0], self._depth_left(left[1]))
        if parent is not None:
            parent.estimate += 1.0

    def progress(self) -> dict[str, Any]:
        """How far the search got (see ``ExhaustiveCoverage.progress``)."""
        seconds = time.perf_counter() - self.tally.started
        states = len(self.states)
        execution = self._execution
        return {
            "states": states, "seconds": round(seconds, 3),
            "states_per_second": round(states / seconds, 1) if seconds > 0 else 0.0,
            "frontier": self._frontier, "depth": self._depth,
            "max_depth_reached": self.max_depth_reached, "transitions": self.transitions,
            "restores": 0 if execution is None else execution.restores,
            "replayed_moves": 0 if execution is None else execution.replayed_steps,
            "peak_rss_mb": peak_rss_mb(), "processes": 1, "sharing": 1,
        }  # fmt: skip

    def section(self) -> dict[str, Any]:
        """What the search covered (the report's section)."""
        covered = self.covered
        covered.distinct_states = len(self.states)
        if self.reduction is not None:
            covered.spared_by_reduction = self.reduction.spared
            covered.reduced_states = self.reduction.states
        covered.progress = self.progress()
        covered.state_paths = Paths.of(self.paths)
        return _section(self.tally, covered)


def _section(tally: Tally, covered: ExhaustiveCoverage) -> dict[str, Any]:
    """The report's section: what was covered, and why it stopped (or the first bound)."""
    stopped = tally.stopped or (covered.cut_by[0] if covered.cut_by else StopReason.COVERED)
    return {"exhaustive": covered, "stopped": stopped}


#: Progress counts summed over the processes.
_SUMMED = ("transitions", "restores", "replayed_moves")


@dataclass
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
    table: SharesStates | None,
    graph_states: int | None = None,
) -> Part:
    """Search the whole tree as process ``part``, sharing the table ``table`` reaches where
    this process can reach it, keeping ``graph_states`` states of the state graph (None:
    ``ExhaustiveSearch.graph_states``)."""
    runner = Runner(shard_scenario(reference), runtime, seed=config.seed, timeout=timeout)
    search = ExhaustiveSearch(runner, config)
    if graph_states is not None:
        search.space.limit = graph_states
    search.part = part
    shared = None if table is None else table.attach(part)
    search.shared = shared
    if shared is not None:
        search.watch = shared.heard
        shared.summarised(search.reduction)
    try:
        with paced_collector():  # as in one process (``explore``'s ``_search``)
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


class Cluster(Protocol):
    """Machines a search's processes run on, sharing a table of their own
    (``simulation.cluster.DaskCluster``) instead of this machine's shared memory."""

    name: str
    """What the statement calls its processes ("Dask workers")."""
    figures: dict[str, Any]
    """What sharing cost the last search (the report's progress takes them)."""

    def processes(self) -> int:
        """How many processes search (one a worker)."""
        ...

    def search(
        self,
        task: Callable[..., Part],
        watch: Callable[[dict[str, Any]], None] | None,
        *,
        share: bool,
    ) -> tuple[list[Part], list[str]]:
        """Run ``task(part=, table=)`` once a process, sharing a new table (with ``share``;
        else each searches alone); the parts that came back, and what was lost (a sentence
        each: a worker that died, a part that failed)."""
        ...


class ParallelExhaustive:
    """The exhaustive search in ``processes`` processes (on ``runner``'s executor, a pool of
    its own, or a ``cluster``) sharing their states (a ``Strategy``)."""

    def __init__(
        self,
        runner: Runner,
        config: SearchConfig,
        *,
        processes: int,
        tick: Tick = None,
        cluster: Cluster | None = None,
    ) -> None:
        self.runner, self.config, self.cluster = runner, config, cluster
        self.processes = processes if cluster is None else cluster.processes()
        self.shortest = getattr(config.strategy, "order", "dfs") == "shortest"
        self.tally = Tally(config, every_violation=self.shortest, tick=tick)
        self.covered = ExhaustiveCoverage()
        self.watch: Callable[[dict[str, Any]], None] | None = None
        """Called with the whole search's progress, where the cluster gathers it."""

    def search(self) -> None:
        """Run every part, then merge what they found."""
        runner, config = self.runner, self.config
        started = time.perf_counter()
        reference = runner._pool(self.processes)
        # Each part keeps its share of the state graph, so that what the parts ship back and
        # the merge stay the size of one process's graph, whatever the number of processes.
        bound = ExhaustiveSearch.graph_states
        share = None if bound is None else max(bound // self.processes, 1)
        task = partial(
            search_part, reference, runner.shipped, config, runner.timeout, graph_states=share
        )
        if self.cluster is not None:
            parts, lost = self.cluster.search(task, self.watch, share=not self.shortest)
            self._merge(parts, time.perf_counter() - started, lost)
            return
        # Shortest first searches its fault levels one after another, each with its own
        # cache: processes at different levels would cut each other's states.
        table = None if self.shortest else SharedVisited.create(DEFAULT_SLOTS)
        shipped = None if table is None else table.shipped()
        try:
            executor = runner.executor
            assert executor is not None, "a pool gives the runner an executor"
            with frozen_heap():  # submitting may fork the pool's processes
                futures = [
                    executor.submit(task, part=part, table=shipped)
                    for part in range(self.processes)
                ]
            parts = [future.result() for future in futures]
        finally:
            if table is not None:
                table.close(unlink=True)
        self._merge(parts, time.perf_counter() - started)

    def _merge(self, parts: list[Part], seconds: float, lost: list[str] | None = None) -> None:
        tally, covered = self.tally, self.covered
        if lost:
            # What a lost process searched is gone, and the others cut states it shared:
            # nothing the parts that came back say covers the tree.
            tally.stopped, covered.lost = StopReason.LOST, list(lost)
        space = StateSpace(limit=ExhaustiveSearch.graph_states)
        reached = SeenStates()
        for part in parts:
            shift = len(covered.state_paths)
            for outcome in part.outcomes:
                tally.take(outcome)  # numbered again, over every part
            tally.stopped = tally.stopped or part.stopped
            got = part.covered
            if got.state_space is not None and not space.nodes:
                # The first graph is taken as it came (merged into an empty one, it was
                # copied state by state: a second at 3 x 3), and the others merged into it.
                space = got.state_space
                space.limit = ExhaustiveSearch.graph_states
            elif got.state_space is not None:
                space.merge(got.state_space, shift)
            covered.state_paths.extend(got.state_paths)
            reached.add_fingerprints(part.fingerprints)
            covered.pruned_by_cache += got.pruned_by_cache
            covered.spared_by_reduction += got.spared_by_reduction
            covered.reduced_states += got.reduced_states
            covered.cut_by += [why for why in got.cut_by if why not in covered.cut_by]
            covered.order, covered.max_depth = got.order, got.max_depth
            covered.workers = got.workers
        if tally.every_violation:
            keep_shortest(tally)  # shortest first: the shortest of every part's
        states = len(reached)
        figures = [part.covered.progress for part in parts]
        progress: dict[str, Any] = {name: sum(f.get(name, 0) for f in figures) for name in _SUMMED}
        progress.update(
            states=states, seconds=round(seconds, 3),
            states_per_second=round(states / seconds, 1) if seconds > 0 else 0.0,
            frontier=0, depth=0, processes=self.processes,
            sharing=sum(part.shared for part in parts),
            peak_rss_mb=max((f.get("peak_rss_mb", 0.0) for f in figures), default=0),
            max_depth_reached=max((f.get("max_depth_reached", 0) for f in figures), default=0),
            transitions_per_process=[f.get("transitions", 0) for f in figures],
        )  # fmt: skip
        if self.cluster is not None:
            progress.update(self.cluster.figures, cluster=self.cluster.name)
        searched = bool(parts) and all(part.covered.searched_to_the_end for part in parts)
        naive = [part.covered.naive_schedules for part in parts]
        covered.state_space, covered.distinct_states = space, states
        covered.progress, covered.searched_to_the_end = progress, searched and not tally.done
        if covered.searched_to_the_end and not progress["sharing"] and None not in naive:
            # Each process that searched alone estimated the whole tree: the largest is the
            # report's. One that cut what another searched knows nothing of those subtrees,
            # and its estimate is low by what they held: none is given.
            covered.naive_schedules = max(n for n in naive if n is not None)

    def section(self) -> dict[str, Any]:
        """The merged parts' coverage (empty before ``search`` ends)."""
        return _section(self.tally, self.covered)


def _label(execution: Execution) -> str:
    """A state's label in the state graph: each ready actor's point, by name."""
    return " | ".join(execution.point(name).label for name in execution.ready()) or "(none)"
