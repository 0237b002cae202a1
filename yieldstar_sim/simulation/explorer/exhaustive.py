"""The exhaustive strategy: every interleaving, and every fault kind at every choice point up to
``max_faults``, by depth-first search.

At each choice point the search may let any ready actor go (a *transition*), with or without a
fault. A run goes on with the first transition not yet tried to the end of the run, where the
invariants are checked, or to a cut; the search then backtracks to the deepest choice point
with a transition left, and restores the state saved there (``checkpoint.py``), or, on a
runtime that cannot save its records, replays the path to it from the start.

Two things keep this from being the naive product of every choice:

- **sleep sets** (partial-order reduction): after exploring transition ``t`` from a state,
  a sibling ``u`` that is independent of ``t`` need not be tried again after ``u`` in the
  subtree where ``t`` came first: both orders reach the same state. ``dependent`` is the
  relation (docs/decisions.md): two transitions are dependent when they touch one execution's
  records (which covers its start requests and business ID), the queue of due work (claims,
  acknowledgements, releases, starts, cancels: anything that changes what a claim returns),
  the same key of the world's store with at least one write, the effect ledger, the world's
  random numbers, or virtual time, or when either is a fault;
- **state caching**: a state reached again (same fingerprint, with no fewer faults and no
  more depth left, and a sleep set no larger) is not explored again.

The footprint of a transition is read from the trace events it left, so the simulator needs no
hooks beyond the kernel's chooser and observers.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.checkpoint import restorable
from yieldstar_sim.simulation.explorer.footprints import EVERYTHING, Footprint, dependent
from yieldstar_sim.simulation.explorer.nodes import Move, Node, blinded, label_of, path_of, turned
from yieldstar_sim.simulation.explorer.plans import Outcome, Plan, _simulator
from yieldstar_sim.simulation.explorer.probe import Probe
from yieldstar_sim.simulation.explorer.seen import SeenStates, peak_rss_mb
from yieldstar_sim.simulation.explorer.statekeys import StateKeys
from yieldstar_sim.simulation.explorer.statespace import StateSpace
from yieldstar_sim.simulation.explorer.strategy import Coverage, Tally
from yieldstar_sim.simulation.faults import Fault, applies_at, explored_seconds
from yieldstar_sim.simulation.run import finish
from yieldstar_sim.simulation.simulator import Simulator

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.simulation.explorer.shards import Runner
    from yieldstar_sim.simulation.explorer.strategy import SearchConfig, Tick
    from yieldstar_sim.simulation.explorer.visited import SharedVisited

#: How often, at most, the search tells its ``watch`` how far it got.
WATCH_SECONDS = 0.5


class _Cut(BaseException):
    """Ends a run early: its state was explored already, or every ready actor is asleep."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class ExhaustiveSearch:
    """The search and its counts (a ``Strategy``); ``explore(strategy="exhaustive")`` builds
    and runs one.

    ``config.reduce`` (sleep sets) and ``config.cache`` (state caching) can be switched off,
    giving the naive search the reduction is measured against. Every state reached is kept as
    a fingerprint (``seen.SeenStates``); the first ``graph_states`` with their edges as the
    report's state graph.
    """

    state_keys: type[StateKeys] = StateKeys
    """What keys each run's states (one per run): incremental on the memory runtime."""
    sleep_sets: bool = False
    """Whether the reduction puts moves to sleep (sleep sets) beside caching states. Off: on
    the bundled scenarios and the issue's orders they spared 0-3% of the transitions, and
    with keys blind to which worker is which they made what the search reaches depend on
    the order it tries moves in (docs/decisions.md), which a search in several processes,
    each in an order of its own, cannot have."""
    restore_states: bool = True
    """Whether to restore a saved state to take the next move from it (on a runtime that can
    save its records: the memory runtime) instead of replaying the path to it from the start.
    Off, every run replays its prefix: the reference the tests compare the restoring search
    with."""
    graph_states: int | None = 100_000
    """How many states the report's state graph keeps (``report.state_space``; None: every
    one). The search counts and caches every state as a 16-byte fingerprint (``seen.py``);
    the graph, with a label and edges a state, is what a million states would not fit in
    memory with, and no picture draws more than a few thousand."""
    symmetric_workers: bool = False
    """Whether a move of a worker interchangeable with another (``_twins``) is cut without
    running it once the other's same move reached a choice point (off, the default: it runs,
    and state caching cuts it there). Off since it missed states of a fan-out group."""

    def __init__(self, runner: Runner, config: SearchConfig, *, tick: Tick = None) -> None:
        self.runner, self.config = runner, config
        self.scenario = runner.scenario
        self.tally = Tally(
            config.stop_at_first, every_violation=config.order == "shortest",
            faults_in_reasons=False, tick=tick,
        )  # fmt: skip
        self.seed, self.max_faults, self.kinds, self.freeze = (
            config.seed, config.max_faults, config.kinds, config.freeze,
        )  # fmt: skip
        self.max_depth, self.order = config.max_depth, config.order
        # Switched off for a second pass of a level when the order is shortest-first.
        self.reduce, self.cache = config.reduce and self.sleep_sets, config.cache
        self.space = StateSpace(limit=self.graph_states)
        self.lengths: list[int] = []
        """The trace length of each schedule run (shortest-first picks by it)."""
        self.attempts = 0
        self.paths: list[tuple[tuple[str, str | None], ...]] = []
        """Each attempt's moves (actor, fault kind) in order: ``StateNode.plan`` indexes it."""
        self.pruned_by_reduction = 0
        self.pruned_by_cache = 0
        self.pruned_by_symmetry = 0
        """Of ``pruned_by_cache``: the moves never run, their worker's twin having reached
        the state they reach (``symmetry``)."""
        self.symmetry = config.cache and self.symmetric_workers
        self._workers = frozenset(self.scenario.worker_names)
        self.kernel_steps = 0
        """Choice points passed by every run, its replayed prefix included."""
        self.restores = 0
        """States restored to take a move from them (instead of replaying the path there)."""
        self.actors_rebuilt = 0
        """Actors made again from what they were told, over all restores."""
        self.rebuild_steps = 0
        """Resumptions fed to actors made again: restoring's work, in kernel steps."""
        self._live: Simulator | None = None
        self._pairs: dict[Move, tuple[str, str | None]] = {}
        """Each move as its paths keep it (``nodes.path_of``), made once."""
        self.shared: SharedVisited | None = None
        """The states this search shares with the other processes searching the same tree
        (``parallel.py``), each in an order of its own (``part``)."""
        self.part = 0
        self.transitions = 0
        """Moves run past a replayed prefix: the transitions the search explored."""
        self.max_depth_reached = 0
        self.watch: Callable[[dict[str, Any]], None] | None = None
        """Called with ``progress()`` about every ``WATCH_SECONDS`` (the CLI's progress bar)."""
        self._watched = 0.0
        self.cut_by: list[str] = []
        self.naive_estimate = 0.0
        self._limit = config.max_faults
        self._stack: list[Node] = []
        self.states = SeenStates()
        """Every distinct state reached, over every fault level (the statement's count)."""
        self._seen = self.states
        """The states this level reached, with the faults and depth left (state caching) and
        the naive-count estimate of each searched to its end."""
        self._new_state = False
        """Whether this attempt added a state to the graph (its path is then kept)."""
        self._started = time.perf_counter()

    def node_at(self, index: int) -> Node | None:
        """The node of choice point ``index`` on the current path (None past its end): the
        seam a probe steers and records by."""
        return self._stack[index] if index < len(self._stack) else None

    # ------------------------------------------------------------------ the search

    def search(self) -> None:
        """Search until every path under the bound is covered, or a bound or budget cuts it."""
        levels = range(self.max_faults + 1) if self.order == "shortest" else [self.max_faults]
        for limit in levels:
            self._limit = limit
            self._stack = []
            self._seen = self.states if len(levels) == 1 else SeenStates()
            before = len(self.tally.failures)
            self._level()
            if self.order == "shortest" and len(self.tally.failures) > before:
                # The reduction keeps every state, not every path to it: the shortest path to
                # a violation is found by searching this level again without it.
                reduce, cache = self.reduce, self.cache
                self.reduce = self.cache = False
                self._stack, self._seen = [], SeenStates()
                del self.tally.failures[before:]
                self._level()
                self.reduce, self.cache = reduce, cache
                self._shortest_first(before)
                if self.config.stop_at_first:
                    self.tally.done = True
            if self.tally.done or self.cut_by:
                break

    def _level(self) -> None:
        live = self._live_run()
        prefix: list[Move] = []
        estimate = 0.0
        try:
            while True:
                if self._budget_spent():
                    return
                if live is None:
                    self._run_once(prefix)
                else:
                    self._go_on(*live, close=False)
                if self.tally.done and self.order == "dfs":
                    if self.shared is not None:
                        self.shared.stop()
                    return
                next_prefix, popped = self._backtrack()
                estimate += popped
                if next_prefix is None:
                    self.naive_estimate += max(estimate, 1.0)
                    return
                prefix = next_prefix
                if live is not None:
                    self._restore(*live, prefix)
        finally:
            if live is not None:
                self._counted(live[0])
                live[0].kernel.close()
                live[0].runtime.close()
                self._live = None

    def _counted(self, simulator: Simulator) -> None:
        """Add what restoring ``simulator``'s states cost to the counts (``progress``)."""
        recorder = simulator.state.recorder
        if recorder is not None:
            self.actors_rebuilt += recorder.rebuilt
            self.rebuild_steps += recorder.resumed
            recorder.rebuilt = recorder.resumed = 0

    def _budget_spent(self) -> bool:
        if self.shared is not None and self.shared.stopped:
            return True  # another process found a violation and stops the search
        budget, seconds = self.config.budget, self.config.time_budget
        if budget is not None and len(self.tally.plans) >= budget:
            self._cut(f"the budget of {budget} schedule{'s' if budget != 1 else ''}")
            return True
        if seconds is not None and time.perf_counter() - self._started > seconds:
            self._cut(f"the time budget of {seconds:g}s")
            return True
        return False

    def _cut(self, why: str) -> None:
        if why not in self.cut_by:
            self.cut_by.append(why)

    def _shortest_first(self, start: int) -> None:
        """Keep, per invariant, the violation of this level with the fewest faults, then
        events (every violating schedule of the level was kept)."""
        best: dict[str, tuple[int, Outcome, str]] = {}
        for failure in self.tally.failures[start:]:
            index, outcome, name = failure
            mine = (len(outcome.faults), self.lengths[index])
            held = best.get(name)
            if held is None or mine < (len(held[1].faults), self.lengths[held[0]]):
                best[name] = failure
        self.tally.failures[start:] = sorted(
            best.values(), key=lambda f: (len(f[1].faults), self.lengths[f[0]])
        )

    def _backtrack(self) -> tuple[list[Move] | None, float]:
        """The next prefix to run, and the naive-count estimate of any root finished."""
        while self._stack:
            node = self._stack[-1]
            if node.current is not None:
                node.done.append((node.current, node.current_fp or frozenset({EVERYTHING})))
                node.current, node.current_fp = None, None
            while node.pending:
                node.current = node.pending.pop(0)
                node.explored += 1
                if not self._mirrored(node, node.current):
                    return [n.current for n in self._stack if n.current is not None], 0.0
                node.current = None
            self._stack.pop()
            if self.shared is not None and not node.sleep and self.cache:
                # Searched to the end: another process reaching it may cut it. Only then, and
                # only with an empty sleep set, whose subtree owes nothing to moves outside it.
                depth = None if self.max_depth is None else self.max_depth - len(self._stack)
                self.shared.add(node.key, self._limit - node.faults_used, depth)
            estimate = max(node.subtotal, 1.0) * node.options / max(node.explored, 1)
            self._seen.keep_estimate(node.key, estimate)
            if self._stack:
                self._stack[-1].subtotal += estimate
            else:
                return None, estimate
        return None, 0.0

    def _mirrored(self, node: Node, move: Move) -> bool:
        """Whether ``move`` mirrors a move of an interchangeable worker that arrived at a
        choice point: it would arrive at a state of the same key (keys are blind to which
        worker is which), which state caching would cut. It is counted so, as that run would
        have been (its done entry, the naive estimate), without running it."""
        twin = node.twins.get(move)
        child = None if twin is None else node.children.get(twin)
        if twin is None or child is None:
            return False
        fp = next((f for m, f in node.done if m == twin), None)
        node.done.append((move, fp or frozenset({EVERYTHING})))
        node.children[move] = child
        self.pruned_by_cache += 1
        self.pruned_by_symmetry += 1
        node.subtotal += self._seen.estimate(child)
        return True

    def _keep_path(self) -> None:
        """Remember the moves this attempt made: a state it reached first replays from them."""
        self.paths.append(path_of(self._stack, self._pairs) if self._new_state else ())
        self._new_state = False

    def progress(self) -> dict[str, Any]:
        """How far the search got, as a model checker shows it (``report.search_progress``)."""
        if self._live is not None:
            self._counted(self._live)
        elapsed = time.perf_counter() - self._started
        root = self._stack[0] if self._stack else None
        root_moves = 0 if root is None else root.explored + len(root.pending)
        running = root is not None and root.current is not None
        return {
            "states": len(self.states), "seconds": round(elapsed, 3),
            "states_per_second": round(len(self.states) / elapsed, 1) if elapsed > 0 else 0.0,
            "frontier": sum(len(node.pending) for node in self._stack),
            "depth": len(self._stack), "max_depth_reached": self.max_depth_reached,
            "root_moves": root_moves,
            "root_moves_done": 0 if root is None else root.explored - running,
            "kernel_steps": self.kernel_steps, "transitions": self.transitions,
            "restores": self.restores, "actors_rebuilt": self.actors_rebuilt,
            "rebuild_steps": self.rebuild_steps, "peak_rss_mb": peak_rss_mb(),
            "seen_table_mb": round(self.states.nbytes / 2**20, 1),
            # The work of restoring counted as kernel steps: each resumption fed to an actor
            # made again is one (a cheaper one: nothing is written).
            "kernel_steps_per_transition": round(
                (self.kernel_steps + self.rebuild_steps) / max(self.transitions, 1), 2
            ),
        }  # fmt: skip

    def _watch(self) -> None:
        now = time.perf_counter()
        if self.watch is not None and now - self._watched >= WATCH_SECONDS:
            self._watched = now
            self.watch(self.progress())

    def coverage(self) -> Coverage:
        """The completeness counts: the states and paths explored, what the reduction and the
        caching pruned, what cut the search, and the naive search's count when it was
        exhausted."""
        coverage: Coverage = {
            "state_space": self.space, "state_paths": self.paths, "freeze_seconds": self.freeze,
            "distinct_states": len(self.states), "pruned_by_reduction": self.pruned_by_reduction,
            "pruned_by_cache": self.pruned_by_cache, "cut_by": list(self.cut_by),
            "order": self.order, "max_depth": self.max_depth,
            "workers": len(self.scenario.worker_names),
            "pruned_by_symmetry": self.pruned_by_symmetry, "search_progress": self.progress(),
        }  # fmt: skip
        naive = not (self.reduce or self.cache)
        # Stopping at a violation (either order) leaves paths, or fault levels, unsearched.
        exhausted = not self.cut_by and not self.tally.done
        if naive and exhausted:
            coverage["naive_schedules"], coverage["naive_how"] = len(self.tally.plans), "computed"
        elif exhausted:
            coverage["naive_schedules"] = max(round(self.naive_estimate), len(self.tally.plans))
            coverage["naive_how"] = "estimated"
        coverage["searched_to_the_end"] = exhausted
        return coverage

    # ------------------------------------------------------------------ one run

    def _run_once(self, prefix: list[Move]) -> None:
        """Run ``prefix`` from the start, then on to the end or a cut."""
        faults = tuple(
            Fault(
                move.fault, at=index,
                seconds=explored_seconds(move.fault, self.freeze),
                label=self._stack[index].labels.get(move.actor),
            )
            for index, move in enumerate(prefix)
            if move.fault is not None
        )  # fmt: skip
        plan = Plan(len(self.tally.plans), self.seed, faults)
        simulator = _simulator(self.scenario, plan, self.runner.runtime, self.runner.timeout)
        probe = Probe(self, simulator, prefix)
        simulator.kernel.chooser = probe.choose
        simulator.kernel.observers.append(probe.observe)
        simulator.start()
        try:
            self._go_on(simulator, probe, close=True)
        finally:
            simulator.runtime.close()

    def _live_run(self) -> tuple[Simulator, Probe] | None:
        """A run the search restores states of, its actors started; None when its runtime
        cannot save its records (the search then replays each path from the start)."""
        if not self.restore_states:
            return None
        simulator = Simulator(
            self.scenario, seed=self.seed, runtime=self.runner.runtime, scenario_faults=False,
            timeout=self.runner.timeout, restorable=True,
        )  # fmt: skip
        if not restorable(simulator.state):
            simulator.runtime.close()
            return None
        probe = Probe(self, simulator, [])
        kernel = simulator.kernel
        kernel.chooser, kernel.faults, kernel.always_choose = probe.choose, probe, True
        simulator.start()
        self._live = simulator
        return simulator, probe

    def _restore(self, simulator: Simulator, probe: Probe, prefix: list[Move]) -> None:
        """Put the run back at the last node of ``prefix``, to take its current move."""
        node = self._stack[-1]
        assert node.saved is not None, "a node with a move left saved the run's state"
        simulator.restore(node.saved)
        self.restores += 1
        probe.restart(prefix, node)
        if not node.pending:
            node.saved = node.keys = None  # its last move: nothing will restore it again

    def _go_on(self, simulator: Simulator, probe: Probe, *, close: bool) -> None:
        """Run on from where ``simulator`` stands to the end of the run or a cut, and record
        what the run found."""
        started = simulator.kernel.points
        self.attempts += 1
        try:
            simulator.advance(close=close)
        except _Cut as cut:
            self.kernel_steps += simulator.kernel.points - started
            self._watch()
            self._keep_path()
            if cut.why == "cache":
                self.pruned_by_cache += 1
                if self._stack:
                    cut_key = probe.cut_key
                    self._stack[-1].subtotal += (
                        1.0 if cut_key is None else self._seen.estimate(cut_key)
                    )
            return
        probe.close_span()
        self.kernel_steps += simulator.kernel.points - started
        self._watch()
        run = finish(simulator)
        final = probe.final_key()
        last = self._stack[-1] if self._stack else None
        self._add_state(final, simulator.kernel.points, None)
        self._keep_path()
        if last is not None and last.current is not None:
            self.transitions += 1
            self.space.add_edge(
                last.key, final, choice=last.current.actor,
                fault=str(last.current.fault) if last.current.fault else None,
                plan=self.attempts - 1,
            )  # fmt: skip
            last.subtotal += 1.0
        for violation in run.violations:
            self.space.mark_violation(final, violation.invariant)
        index = len(self.tally.plans)
        plan = Plan(index, self.seed, tuple(run.faults), schedule=tuple(run.schedule))
        outcome = Outcome(
            index=index, ok=run.ok,
            violations=tuple((v.invariant, v.message) for v in run.violations),
            digest="", points=run.points, faults=tuple(run.faults), incomplete=run.incomplete,
            warnings=tuple(run.warnings),
        )  # fmt: skip
        self.lengths.append(len(run.trace))
        self.tally.take(plan, outcome)

    # ------------------------------------------------------------------ choice points

    def arrive(self, probe: Probe, index: int, ready: tuple[str, ...], key: str, *,
               labels: dict[str, str], ops: dict[str, str]) -> None:  # fmt: skip
        """A run reached choice point ``index`` past its prefix: make its node (or cut)."""
        parent = self._stack[index - 1] if index > 0 else None
        sleep: dict[str, tuple[str, Footprint]] = {}
        faults_used = 0
        self.max_depth_reached = max(self.max_depth_reached, index)
        if parent is not None and parent.current is not None:
            self.transitions += 1
            parent.children[parent.current] = key
            fp = parent.current_fp or frozenset({EVERYTHING})
            faults_used = parent.faults_used + (parent.current.fault is not None)
            if self.reduce and parent.current.fault is None:
                candidates = dict(parent.sleep)
                for move, done_fp in parent.done:
                    if move.fault is None:
                        label = blinded(parent.labels[move.actor], move.actor)
                        candidates[move.actor] = (label, done_fp)
                sleep = {
                    actor: entry
                    for actor, entry in candidates.items()
                    if actor != parent.current.actor and actor in ready
                    and not dependent(entry[1], fp)
                }  # fmt: skip
            self._add_state(key, index, labels)
            self.space.add_edge(
                parent.key, key, choice=parent.current.actor,
                fault=str(parent.current.fault) if parent.current.fault else None,
                plan=self.attempts - 1,
            )  # fmt: skip
        else:
            self._add_state(key, index, labels)
        depth_left = None if self.max_depth is None else self.max_depth - index
        if self.cache:
            asleep = Counter(sleep.values()) if sleep else None
            self._visit(probe, key, self._limit - faults_used, depth_left, asleep)
        moves = [Move(actor) for actor in ready if actor not in sleep]
        self.pruned_by_reduction += len(ready) - len(moves)
        moves = turned(moves, key, self.part)
        options = len(ready)
        if faults_used < self._limit:
            # A kind is tried only where it can fire (a stall at a body's elapse, no lost
            # response where there is no call): elsewhere it would pass the point by, a
            # fault spent on nothing.
            faulted = [
                Move(actor, kind)
                for actor in ready
                for kind in self.kinds
                if applies_at(kind, ops.get(actor, ""), exploring=True)
            ]
            moves += turned(faulted, key, self.part)
            options += len(faulted)
        if depth_left is not None and depth_left <= 0:
            if len(moves) > 1:
                self._cut(f"the depth bound of {self.max_depth} choice points")
            moves = moves[:1]
        node = Node(key, ready, labels, sleep, moves, faults_used, options=options)
        if self.symmetry and len(ready) > 1:
            node.twins = self._twins(probe, ready, sleep, moves)
        self._stack.append(node)
        if len(moves) > 1 or (moves and moves[0].fault is not None):
            _save(node, probe)  # a later run starts here (a move is left after the first)
        if not moves or moves[0].fault is not None:
            raise _Cut("sleep")  # every ready actor is asleep: the faults are tried later
        node.current = moves.pop(0)
        node.explored = 1

    def _add_state(self, key: str, depth: int, labels: dict[str, str] | None) -> None:
        """Count state ``key`` (``labels`` None: a run's end) and keep it in the graph while
        the graph has room."""
        if self.states.add(key):
            label = "end of the run" if labels is None else label_of(labels)
            plan = self.attempts - 1
            if self.space.add_state(key, depth=depth, label=label, plan=plan,
                                    terminal=labels is None):  # fmt: skip
                self._new_state = True
        elif labels is None:
            self.space.mark_terminal(key)

    def _visit(
        self,
        probe: Probe,
        key: str,
        left: int,
        depth_left: int | None,
        asleep: Counter[tuple[str, Footprint]] | None,
    ) -> None:
        """Cut the run at state ``key`` when it was reached before with no fewer faults
        (``left``) and no less depth left, and a sleep set no larger (here), or searched to
        its end so by another process sharing this search's states; else record the visit."""
        if self._seen.reached(key, left, depth_left, asleep):
            probe.cut_key = key
            raise _Cut("cache")
        shared = self.shared
        if shared is not None and shared.covers(key, left, depth_left):
            probe.cut_key = key  # another process reached it: that process searches it
            raise _Cut("cache")

    def _twins(
        self,
        probe: Probe,
        ready: tuple[str, ...],
        sleep: dict[str, tuple[str, Footprint]],
        moves: list[Move],
    ) -> dict[Move, Move]:
        """Each move of a worker interchangeable with an earlier ready worker, with that
        worker's same move: two workers are interchangeable at a state when what the key
        holds of each (its history and its wait, its name blinded) and its clock's skew are
        the same, so that swapping their names maps the state to itself."""
        first: dict[tuple[int, float], str] = {}
        mirror: dict[str, str] = {}
        behind = probe.simulator.clocks.behind
        for actor in ready:
            if actor not in self._workers or actor in sleep:
                continue
            sign = (probe.keys.actor_term(probe.simulator, actor), behind.get(actor, 0.0))
            mirror[actor] = first.setdefault(sign, actor)
        return {
            move: Move(mirror[move.actor], move.fault)
            for move in moves
            if mirror.get(move.actor, move.actor) != move.actor
        }


def _save(node: Node, probe: Probe) -> None:
    """Keep at ``node`` what a later run that starts there needs: the state and the keys when
    the search restores states, the actors' histories when it replays the path."""
    if probe.simulator.state.recorder is None:
        node.histories = (probe.span, probe.keys.snapshot())
    else:
        node.keys = (probe.span, probe.keys.copy())
        node.saved = probe.simulator.checkpoint()
