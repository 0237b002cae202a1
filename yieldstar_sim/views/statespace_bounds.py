"""A state space too big to draw state by state, drawn bounded: the initial state, the
shortest path to each violation (as many as fit in ``DRAWN_AT_MOST`` states, the shallowest
violations first) and, per depth (per band of depths, in a deep space), one summary node
standing for the other states there ("1,204 states, 310 end"), with the steps between them
summed.

FizzBee draws its state graph only under 250 nodes; an exhaustive search of a few workers
reaches tens of thousands of states, whose every node and edge would make a picture nobody can
read and that takes minutes to draw. The data exports (GraphML, JSON) keep every state.

>>> import networkx as nx
>>> graph = nx.DiGraph()
>>> for n, depth in enumerate([0, 1, 1, 2, 2, 2, 2, 2]):
...     graph.add_node(f"s{n}", depth=depth, label="", root=n == 0, terminal=depth == 2,
...                    violating=n == 5, violations="", shortest=n in (0, 2, 5), plan=0)
>>> steps = [("s0", "s1"), ("s0", "s2"), ("s1", "s3"), ("s1", "s4"), ("s2", "s5"),
...          ("s2", "s6"), ("s2", "s7")]
>>> graph.add_edges_from(steps, label="w1", choices=1, faults=0, fault=False, plan=0,
...                      shortest=False)
>>> for step in [("s0", "s2"), ("s2", "s5")]:
...     graph.edges[step]["shortest"] = True
>>> small = bounded_state_graph(graph, at_most=7)
>>> sorted(small.nodes)
['1 more state at depth 1', '4 more states at depth 2', 's0', 's2', 's5']
>>> small.edges["s2", "4 more states at depth 2"]["label"], small.graph["states"]
('2 steps', 8)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

    from yieldstar_sim.simulation.explorer.statespace import StateSpace

#: States drawn one by one at most; past this a state space is drawn bounded.
DRAWN_AT_MOST = 250
#: States a state space may hold to be drawn at all: building its graph takes about a second
#: per 20,000 states. Up to it, a space past ``DRAWN_AT_MOST`` is drawn bounded.
GRAPHED_AT_MOST = 100_000
#: Summary nodes at most: a deep space sums its states over bands of consecutive depths.
SUMMARY_BANDS = 30


def why_not_drawn(space: StateSpace | None, distinct_states: int) -> str | None:
    """Why the picture of an exhaustive search's state space is not drawn, in words; None when
    it is (or there is no space: another strategy).

    A space the search kept in part is never drawn: its first states could all pass where a
    later one violates, and the picture would say "no state violates".
    """
    if space is None or len(space) == 0:
        return None
    if space.full:
        return (
            f"the search kept the first {len(space):,} of {distinct_states:,} states for "
            "people, and a picture of part of them could leave out a violation"
        )
    if len(space) > GRAPHED_AT_MOST:
        return f"{distinct_states:,} states, more than the {GRAPHED_AT_MOST:,} a picture can show"
    return None


def _summary_name(count: int, first: int, last: int) -> str:
    where = f"depth {first}" if first == last else f"depths {first}-{last}"
    return f"{count:,} more state{'' if count == 1 else 's'} at {where}"


def bounded_state_graph(graph: nx.DiGraph, *, at_most: int = DRAWN_AT_MOST) -> nx.DiGraph:
    """``graph`` (a ``state_graph``) if it has at most ``at_most`` states; otherwise the
    initial state, the shortest paths to violations that fit and one summary node per depth
    for the rest (``summary``: how many states it stands for, ``terminal_count`` of them end
    states), with edges summed between what is drawn (``choices``: how many steps). The
    graph's ``states``, ``steps`` and ``violating`` say what the whole space holds."""
    import networkx as nx

    if graph.number_of_nodes() <= at_most:
        return graph
    root = next((n for n, d in graph.nodes(data=True) if d.get("root")), None)
    kept: set[Any] = {root} if root is not None else set()
    deepest = max(int(d) for _, d in graph.nodes(data="depth"))
    band = -(-(deepest + 1) // SUMMARY_BANDS)  # depths per summary node
    budget = max(at_most - -(-(deepest + 1) // band), 1)
    # Predecessors along shortest-path edges, to follow each violation back to the root.
    back: dict[Any, Any] = {}
    for source, target, data in graph.edges(data=True):
        if data.get("shortest"):
            back.setdefault(target, source)
    violating = [n for n, d in graph.nodes(data=True) if d.get("violating")]
    violating.sort(key=lambda n: int(graph.nodes[n]["depth"]))
    for node in violating:
        path = [node]
        while path[-1] in back and path[-1] not in kept and len(path) <= len(graph):
            path.append(back[path[-1]])
        fresh = [n for n in path if n not in kept]
        if len(kept) + len(fresh) > budget:
            break
        kept.update(fresh)
    bounded = nx.DiGraph(
        **graph.graph,
        states=graph.number_of_nodes(),
        steps=graph.number_of_edges(),
        violating=len(violating),
    )
    bounded.add_nodes_from((n, graph.nodes[n]) for n in graph.nodes if n in kept)
    rest: dict[int, list[Any]] = {}
    for node, data in graph.nodes(data=True):
        if node not in kept:
            rest.setdefault(int(data["depth"]) // band, []).append(node)
    stands_for: dict[Any, Any] = {}
    for _, nodes in sorted(rest.items()):
        # The depths its states have, not the band's: the first band's states past the
        # initial one stood at half a depth, over the initial state and its label.
        depths = [int(graph.nodes[n]["depth"]) for n in nodes]
        first, last = min(depths), max(depths)
        name = _summary_name(len(nodes), first, last)
        ends = sum(1 for n in nodes if graph.nodes[n].get("terminal"))
        bounded.add_node(
            name,
            label=f"{len(nodes):,} state{'' if len(nodes) == 1 else 's'}"
            + (f", {ends:,} end" if ends else ""),
            depth=(first + last) / 2, plan=-1, root=False, terminal=False, violating=False,
            violations="", shortest=False, summary=len(nodes), terminal_count=ends,
        )  # fmt: skip
        stands_for.update(dict.fromkeys(nodes, name))
    for source, target, data in graph.edges(data=True):
        one, other = stands_for.get(source, source), stands_for.get(target, target)
        if one == other:
            continue
        if (one, other) == (source, target):
            bounded.add_edge(one, other, **data)
        elif bounded.has_edge(one, other):
            summed = bounded.edges[one, other]
            summed["choices"] += data.get("choices", 1)
            summed["faults"] += data.get("faults", 0)
            summed["label"] = f"{summed['choices']:,} steps"
        else:
            bounded.add_edge(
                one, other, label=f"{data.get('choices', 1):,} steps",
                choices=data.get("choices", 1), faults=data.get("faults", 0),
                fault=False, plan=-1, shortest=False, summary=True,
            )  # fmt: skip
    return bounded
