"""The exhaustive search's probe: it steers one run along a path of moves and reads, at each
choice point past the path's prefix, the state's key and the footprint of the transition that
led there (``exhaustive.ExhaustiveSearch``).

A run either replays its prefix from the start or, when the search restores states, starts
where a saved state was restored (``restart``): the kernel asks it at every point, so that
the state can be saved before the point is taken, and it decides the faults itself
(``fault_at``), the move at each point naming its fault.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from yieldstar_sim.simulation.explorer.footprints import footprint
from yieldstar_sim.simulation.faults import Fault, explored_seconds
from yieldstar_sim.simulation.kernel import Point

if TYPE_CHECKING:
    from yieldstar_sim.simulation.explorer.nodes import Move, Node
    from yieldstar_sim.simulation.explorer.statekeys import StateKeys
    from yieldstar_sim.simulation.simulator import Simulator


class Steering(Protocol):
    """What a probe asks of the search it steers for (``exhaustive.ExhaustiveSearch``)."""

    freeze: float
    max_depth: int | None
    reduce: bool
    """Whether the search puts moves to sleep (sleep sets): only then are footprints read."""

    def state_keys(self) -> StateKeys:
        """New keys for a run."""
        ...

    def node_at(self, index: int) -> Node | None:
        """The node of choice point ``index`` on the current path."""
        ...

    def arrive(
        self,
        probe: Probe,
        index: int,
        ready: tuple[str, ...],
        key: str,
        *,
        labels: dict[str, str],
        ops: dict[str, str],
    ) -> None:
        """A run reached choice point ``index`` past its prefix."""
        ...


class Probe:
    """Steers one run along its prefix, then along the first untried transitions, and reads
    each transition's footprint from the trace."""

    def __init__(self, search: Steering, simulator: Simulator, prefix: list[Move]):
        self.search, self.simulator, self.prefix = search, simulator, prefix
        self.keys = search.state_keys()
        self.arrived = -1
        self.span = 0
        self.fed = 0
        """How much of the trace the keys have had (none of a replayed prefix until its end)."""
        self.clock = simulator.clock.now()
        self.cut_key: str | None = None

    def choose(self, index: int, ready: list[str]) -> str:
        """The kernel's chooser: the prefix's actor, then the node's first untried one."""
        if index != self.arrived:  # asked again at the point a run was restored to
            self._arrive(index, tuple(ready), None)
        move = self._move(index)
        return ready[0] if move is None else move.actor

    def fault_at(self, index: int, actor: str, point: Point) -> Fault | None:
        """The fault of the move taken at choice point ``index``, if it names one (the
        kernel's fault source, when the search restores states)."""
        move = self._move(index)
        if move is None or move.fault is None or move.actor != actor:
            return None
        fault = Fault(
            move.fault, at=index, seconds=explored_seconds(move.fault, self.search.freeze),
            label=point.label,
        )  # fmt: skip
        return self.simulator.plan.inject(index, fault, point.label)

    def restart(self, prefix: list[Move], node: Node) -> None:
        """Go on from the state saved at the last move of ``prefix`` (``node``'s), restored:
        with a copy of the keys kept there, the next point asked being that one."""
        assert node.keys is not None, "a restored node kept its keys"
        span, keys = node.keys
        self.prefix = prefix
        self.arrived = len(prefix) - 1
        self.keys = keys.copy().caught_up()
        self.span = self.fed = span
        self.clock = self.simulator.clock.now()
        self.cut_key = None

    def observe(self, index: int, name: str, point: Point, fault: Any) -> None:
        """The kernel's observer: a choice point with one ready actor arrives here."""
        if self.arrived < index:
            self._arrive(index, tuple(self.simulator.kernel.choices[-1].among), (name, point))

    def _move(self, index: int) -> Move | None:
        if index < len(self.prefix):
            return self.prefix[index]
        node = self.search.node_at(index)
        return None if node is None else node.current

    def close_span(self) -> None:
        """The footprint of the transition that just ended (at the last choice point)."""
        sim, index = self.simulator, self.arrived
        trace = sim.trace.events
        events = trace[self.span :]
        moved = sim.clock.now() != self.clock
        if index >= len(self.prefix) - 1:
            # Inside the replayed prefix no key is read: the keys are fed from its end.
            if self.fed < self.span:
                self._catch_up()
            self.keys.remember(events)
            self.fed = len(trace)
        self.span, self.clock = len(trace), sim.clock.now()
        node = self.search.node_at(index) if index >= max(0, len(self.prefix) - 1) else None
        if node is None:
            return  # before the first choice, inside the replayed prefix, or past the depth
        if node.current is not None and self.search.reduce:
            # Only sleep sets read a footprint: a search without them would pay for the
            # trace walk at every transition and read nothing of it.
            node.current_fp = footprint(
                events, fault=node.current.fault is not None, time_moved=moved
            )

    def _catch_up(self) -> None:
        """Bring the keys' histories to the end of the replayed prefix: those its last node
        kept when a run first arrived there (the same path replays to the same trace), or,
        should the trace's length differ, those the whole trace so far gives."""
        last = len(self.prefix) - 1
        node = self.search.node_at(last) if last >= 0 else None
        kept = None if node is None else node.histories
        if kept is not None and kept[0] == self.span:
            self.keys.restore(kept[1])
        else:
            self.keys = self.search.state_keys()
            self.keys.remember(self.simulator.trace.events[: self.span])
        self.fed = self.span

    def final_key(self) -> str:
        """The key of the state the run ended in (after ``close_span``)."""
        if self.fed < self.span:
            self._catch_up()  # it ended inside its prefix (a replay does not)
        return self.keys.key(self.simulator, None, ended=True)

    def _arrive(self, index: int, ready: tuple[str, ...], chosen: tuple[str, Point] | None) -> None:
        self.close_span()
        self.arrived = index
        search = self.search
        if index < len(self.prefix):
            return
        if search.max_depth is not None and index > search.max_depth:
            return
        # The actors waiting at a point are those the kernel chooses among.
        at_point = {
            name: state
            for name, state in self.simulator.kernel.waits.items()
            if isinstance(state, Point)
        }
        if chosen is not None:
            at_point[chosen[0]] = chosen[1]
        labels = {name: point.label for name, point in at_point.items()}
        ops = {name: point.info.op for name, point in at_point.items()}
        key = self.keys.key(self.simulator, chosen)
        search.arrive(self, index, ready, key, labels=labels, ops=ops)
