"""Paths in an explored state space, in words: the shortest path to each violating state
(one breadth-first search for them all), to one state, and a path as its moves.

>>> from yieldstar_sim.simulation.explorer.statespace import StateSpace
>>> space = StateSpace()
>>> space.add_state("s0", depth=0, label="start", plan=0)
True
>>> space.add_state("s1", depth=1, label="w1 claim", plan=0)
True
>>> space.add_edge("s0", "s1", choice="w1", fault="crash", plan=0)
>>> space.mark_violation("s1", "at_most_once")
>>> describe_path(shortest_paths(space)["s1"])
'w1 + crash'
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from yieldstar_sim.simulation.explorer.statespace import StateEdge, StateSpace


def edge_label(choice: str, fault: str | None) -> str:
    """The text of an edge: the actor that went, and the fault injected there, if any."""
    return choice if fault is None else f"{choice} + {fault}"


def shortest_paths(
    space: StateSpace, keys: Iterable[str] | None = None
) -> dict[str, list[StateEdge]]:
    """For each of ``keys`` (by default: each violating state) reachable from the root, a
    shortest path (fewest edges) to it; ``[]`` for the root, and for every key while there is
    no root. A key no recorded edge reaches (a cut search) is left out."""
    wanted = [node.key for node in space.violating()] if keys is None else list(keys)
    if space.root is None:
        return {key: [] for key in wanted}
    # One breadth-first search from the root for all the keys: a search per key made a space
    # of thousands of states with hundreds of violations take minutes.
    out: dict[str, list[StateEdge]] = {}
    for edge in space.edges.values():
        out.setdefault(edge.source, []).append(edge)
    came_by: dict[str, StateEdge] = {}
    queue = deque([space.root])
    seen = {space.root}
    while queue:
        here = queue.popleft()
        for edge in out.get(here, ()):
            if edge.target not in seen:
                seen.add(edge.target)
                came_by[edge.target] = edge
                queue.append(edge.target)
    paths: dict[str, list[StateEdge]] = {}
    for key in wanted:
        if key in seen:
            path: list[StateEdge] = []
            here = key
            while here != space.root:
                path.append(came_by[here])
                here = came_by[here].source
            paths[key] = path[::-1]
    return paths


def path_to(space: StateSpace, key: str) -> list[StateEdge]:
    """A shortest path (fewest edges) from the root to state ``key``; ``[]`` for the root.
    ``KeyError`` for a state the search never reached, or no recorded edge reaches."""
    if key not in space.nodes:
        raise KeyError(f"no state {key!r} in this state space")
    paths = shortest_paths(space, [key])
    if key not in paths:
        raise KeyError(f"state {key!r} is not reachable from the root")
    return paths[key]


def describe_path(path: Sequence[StateEdge]) -> str:
    """A path in words: ``"w1 → w2 + crash w2 at put_step → w1"``; ``"(the initial state)"``
    for the empty path."""
    if not path:
        return "(the initial state)"
    return " \u2192 ".join(edge_label(edge.choice, edge.fault) for edge in path)
