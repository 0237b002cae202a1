"""Families: executions of one shape drawn once, with a count.

A thousand orders that each charged and started their shipment, with nothing to see, are one
box, "998 \u00d7 charge-order \u2192 ship-order, completed"; the order a crash struck stays on
its own, with its shipment. An execution's *shape* is its workflow, its status, how it was
started (its origin, whether detached, the pattern of the step key that started it:
``line-17`` is ``line-#``) and the shapes of the executions it started. Siblings (children
of one parent, or executions nobody started) of one shape make a family when there are at least
``GROUP_AT_LEAST`` of them and nothing in any of them is notable: no fault, no retry, no
failed or pruned status, no start that took several calls, no step that admitted several
executions, no join or trigger. Everything notable is drawn on its own. Whether a violation
names an execution is part of its shape: the two executions of a double shipment are drawn on
their own, while a bug that strikes 300 alike orders is one family, marked as named by the
violation, beside the orders it spared.

A family is one node of the drawn graph; its data (``group``: how many, ``members``: the
executions it stands for, in order, ``executions``: those and everything they started,
``shape``: its shape in words) is what a view needs to expand it again.

>>> import yieldstar_sim as ys
>>> runtime = ys.MemoryRuntime()
>>> for n in range(1, 6):
...     order = runtime.trigger("order", execution_id=f"order-{n}")
...     _ = runtime.start(ys.StartRequest(ys.RequestId(order, "ship"), "ship"))
>>> from yieldstar_sim.views.graph import execution_graph
>>> drawn = collapse_families(execution_graph(runtime))
>>> [(node, data["group"]) for node, data in drawn.nodes(data=True)]
[('5 \u00d7 order \u2192 ship, pending', 5)]
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yieldstar_sim.views.evidence import ARROW, TIMES, notable, notable_edge
from yieldstar_sim.views.layout import Layout, layered_layout, natural

if TYPE_CHECKING:
    from collections.abc import Sequence

    import networkx as nx

#: Siblings of one shape drawn as one family when at least this many have it.
GROUP_AT_LEAST = 4

__all__ = ["ARROW", "GROUP_AT_LEAST", "TIMES", "Family", "collapse_families", "families"]


@dataclass(frozen=True)
class Family:
    """One family of a graph: its node in the drawn graph, its shape in words, the executions
    it stands for (``members``, in order) and everything they started (``executions``)."""

    node: str
    shape: str
    parent: Any
    """The members' parent (None: nobody started them)."""
    members: tuple[Any, ...]
    executions: tuple[Any, ...]


def _key_pattern(step_key: object) -> str:
    """``line-17`` -> ``line-#``: step keys that differ only in their numbers share a pattern."""
    return re.sub(r"\d+", "#", str(step_key))


Shape = tuple[Any, ...]


def _shapes(
    graph: nx.MultiDiGraph, children: dict[Any, list[Any]], order: list[Any]
) -> dict[Any, Shape | None]:
    """Each node's shape, or None when it or anything under it is notable (or not a tree)."""
    shapes: dict[Any, Shape | None] = {}
    for node in reversed(order):  # children first
        data = graph.nodes[node]
        edges = list(graph.in_edges(node, keys=True, data=True))
        kids = children[node]
        ok = (
            not notable(data)
            and len(edges) <= 1
            and not any(notable_edge(edge) for *_, edge in edges)
            and graph.out_degree(node) == len(kids)
            and all(shapes[kid] is not None for kid in kids)
        )
        if not ok:
            shapes[node] = None
            continue
        how: tuple[Any, ...] = ()
        if edges:
            _, _, key, edge = edges[0]
            how = (_key_pattern(edge.get("step_key", key)), bool(edge.get("detached")))
        started = tuple(sorted(Counter(shapes[kid] for kid in kids).items(), key=repr))
        shapes[node] = (
            str(data.get("workflow_id")),
            str(data.get("status")),
            str(data.get("origin")),
            how,
            started,
            bool(data.get("violation")),
        )
    return shapes


def _statuses(shape: Shape, into: set[str]) -> set[str]:
    into.add(shape[1])
    for kid, _ in shape[4]:
        _statuses(kid, into)
    return into


def _words(shape: Shape) -> str:
    """``charge-order \u2192 ship-order``; several kinds of children in parentheses."""
    workflow, started = shape[0], shape[4]
    if not started:
        return str(workflow)
    parts = [(f"{count} {TIMES} " if count > 1 else "") + _words(kid) for kid, count in started]
    below = parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"
    return f"{workflow} {ARROW} {below}"


def shape_words(shape: Shape) -> str:
    """A shape in words: ``charge-order \u2192 ship-order, completed``."""
    return f"{_words(shape)}, {'/'.join(sorted(_statuses(shape, set())))}"


def families(
    graph: nx.MultiDiGraph, *, at_least: int = GROUP_AT_LEAST, layout: Layout | None = None
) -> list[Family]:
    """The families of ``graph``, top-down: once siblings form a family, nothing under them is
    looked at again. ``layout``: the graph's ``layered_layout``, if the caller has it."""
    if layout is None:
        layout = layered_layout(graph)
    children = layout.children
    order = list(layout.positions)  # parents before children
    shapes = _shapes(graph, children, order)
    found: list[Family] = []
    taken = {str(node) for node in graph.nodes}
    roots = [node for node in order if node not in layout.tree_parent]
    pending: list[tuple[Any, list[Any]]] = [(None, roots)]
    for parent, siblings in pending:  # grows as it goes: breadth first
        alike: dict[Shape, list[Any]] = {}
        for node in siblings:
            shape = shapes[node]
            if shape is not None:
                alike.setdefault(shape, []).append(node)
        grouped: set[Any] = set()
        for shape, members in alike.items():
            if len(members) < at_least:
                continue
            members.sort(key=lambda n: (natural(str(n)), str(n)))
            words = shape_words(shape)
            name = f"{len(members)} {TIMES} {words}"
            number = 2
            while name in taken:
                name, number = f"{len(members)} {TIMES} {words} ({number})", number + 1
            taken.add(name)
            below: list[Any] = []
            stack = list(members)
            while stack:
                node = stack.pop()
                below.append(node)
                stack.extend(children[node])
            below.sort(key=lambda n: (natural(str(n)), str(n)))
            found.append(Family(name, words, parent, tuple(members), tuple(below)))
            grouped.update(members)
        pending.extend(
            (node, children[node]) for node in siblings if node not in grouped and children[node]
        )
    return found


def collapse_families(
    graph: nx.MultiDiGraph,
    *,
    at_least: int = GROUP_AT_LEAST,
    found: Sequence[Family] | None = None,
) -> nx.MultiDiGraph:
    """A copy of ``graph`` with each family (``families``, or ``found`` when the caller has
    them) drawn as one node.

    A family's node has its members' ``workflow_id``, ``status`` and ``origin``, and
    ``group`` (how many members), ``members`` and ``executions`` (their IDs, in order) and
    ``shape`` (in words); the edge from the members' parent, if they have one, carries the
    step keys as ``first … last``.
    """
    drawn = graph.copy()
    for family in families(graph, at_least=at_least) if found is None else found:
        first = graph.nodes[family.members[0]]
        drawn.remove_nodes_from(family.executions)
        drawn.add_node(
            family.node,
            workflow_id=first.get("workflow_id"),
            status=first.get("status"),
            origin=first.get("origin"),
            group=len(family.members),
            members=list(family.members),
            executions=list(family.executions),
            shape=family.shape,
            faults=0,
            fault_kinds="",
            retries=0,
            violation=bool(first.get("violation")),  # alike: the same for every member
        )
        if family.parent is None:
            continue
        keys = [
            (str(data.get("step_key", key)), data)
            for member in family.members
            for _, _, key, data in graph.in_edges(member, keys=True, data=True)
        ]
        keys.sort(key=lambda item: (natural(item[0]), item[0]))
        step_key = keys[0][0] if len(keys) == 1 else f"{keys[0][0]} \u2026 {keys[-1][0]}"
        edge = dict(keys[0][1])
        edge.update(step_key=step_key, calls=1, duplicate=False)
        drawn.add_edge(family.parent, family.node, key=step_key, **edge)
    return drawn
