"""Families: executions of one shape drawn once, with a count.

A thousand orders that each charged and started their shipment, with nothing to see, are one
box, "998 \u00d7 charge-order \u2192 ship-order, completed"; the order a crash struck stays on
its own, with its shipment. An execution's *shape* is its workflow, its status, how it was
started (its origin, the kind of link that started it: owned, detached, a join or RFC 003's
non-durable trigger, and the pattern of its step key: ``line-17`` is ``line-#``) and the
shapes of the executions it started, however many levels down. Siblings (children of one
parent, or executions nobody started) of one shape make a family when there are at least
``GROUP_AT_LEAST`` of them and nothing in any of them is notable: no fault, no retry, no
failed or pruned status, no start that took several calls, no step that admitted several
executions, no second parent. Everything notable is drawn on its own, and nowhere else: a
family's words count what it holds and name its members as ranges only where no execution
drawn outside it falls inside one (``order-1 … order-149, order-151 … order-300`` beside
order-150), else its first few. Whether a violation names an execution is part of its shape:
the two executions of a double shipment are drawn on their own, while a bug that strikes 300
alike orders is one family, marked as named by the violation, beside the orders it spared.

A family is one node of the drawn graph; its data (``group``: how many, ``members``: the
executions it stands for, in order, ``executions``: those and everything they started,
``shape``: its shape in words, ``span``: its members named as ranges or first examples) is
what a view needs to expand it again.

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

from yieldstar_sim.views.evidence import ARROW, TIMES, edge_line, notable, notable_edge
from yieldstar_sim.views.layout import Layout, layered_layout, natural

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import networkx as nx

#: Siblings of one shape drawn as one family when at least this many have it.
GROUP_AT_LEAST = 4

__all__ = ["ARROW", "GROUP_AT_LEAST", "TIMES", "Family", "collapse_families", "families"]


@dataclass(frozen=True)
class Family:
    """One family of a graph: its node in the drawn graph, its shape in words, the executions
    it stands for (``members``, in order), everything they started (``executions``) and its
    members in words (``span``: ranges that hold no execution drawn outside the family, or its
    first few)."""

    node: str
    shape: str
    parent: Any
    """The members' parent (None: nobody started them)."""
    members: tuple[Any, ...]
    executions: tuple[Any, ...]
    span: str = ""


#: How many ranges a family's words name before they name its first few members instead.
SPAN_RANGES = 2
#: How many members a family's words name when its members are not a couple of ranges.
SPAN_EXAMPLES = 3


def _ordered(items: Iterable[Any]) -> list[Any]:
    return sorted(items, key=lambda n: (natural(str(n)), str(n)))


def span_words(chosen: Sequence[Any], everyone: Sequence[Any]) -> str:
    """``chosen`` (in ``everyone``'s order, which is natural order) in words: as at most
    ``SPAN_RANGES`` ranges ``first … last`` that hold nothing of ``everyone`` outside
    ``chosen``, else its first ``SPAN_EXAMPLES`` and how many more. A range a reader takes for
    "all of these" never takes in one drawn elsewhere (order-150 beside its 299 alike orders).

    >>> everyone = [f"order-{n}" for n in range(1, 8)]
    >>> span_words(everyone[:3] + everyone[4:], everyone)
    'order-1 … order-3, order-5 … order-7'
    >>> span_words(everyone[::2], everyone)
    'order-1, order-3, order-5 and 1 more'
    """
    if not chosen:
        return ""
    place = {item: index for index, item in enumerate(everyone)}
    runs: list[list[Any]] = []
    for item in chosen:
        if runs and place.get(item, -2) == place.get(runs[-1][-1], -9) + 1:
            runs[-1].append(item)
        else:
            runs.append([item])
    if len(runs) <= SPAN_RANGES:
        parts = []
        for run in runs:
            if len(run) == 1:
                parts.append(str(run[0]))
            elif len(run) == 2:
                parts.append(f"{run[0]}, {run[1]}")
            else:
                parts.append(f"{run[0]} \u2026 {run[-1]}")
        return ", ".join(parts)
    named = ", ".join(str(item) for item in chosen[:SPAN_EXAMPLES])
    return f"{named} and {len(chosen) - SPAN_EXAMPLES} more"


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
            how = (_key_pattern(edge.get("step_key", key)), edge_line(edge))
        started = tuple(sorted(Counter(shapes[kid] for kid in kids).items(), key=repr))
        shapes[node] = (
            str(data.get("workflow_id")),
            str(data.get("status")),
            str(data.get("origin")),
            how,
            started,
            bool(data.get("violation")),
            str(data.get("violations") or ""),  # which: their sentences differ
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
    everyone = _ordered(graph.nodes)
    roots = [node for node in order if node not in layout.tree_parent]
    pending: list[tuple[Any, list[Any]]] = [(None, roots)]
    for parent, siblings in pending:  # grows as it goes: breadth first
        alike: dict[Shape, list[Any]] = {}
        for node in siblings:
            shape = shapes[node]
            if shape is not None:
                alike.setdefault(shape, []).append(node)
        grouped: set[Any] = set()
        for shape, found_alike in alike.items():
            if len(found_alike) < at_least:
                continue
            members = _ordered(found_alike)
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
            below = _ordered(below)
            # Its own executions break no range: only those drawn outside it do.
            inside = set(below)
            others = [node for node in everyone if node not in inside or node in members]
            span = span_words(members, others)
            found.append(Family(name, words, parent, tuple(members), tuple(below), span))
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
    ``shape`` and ``span`` (in words); the edge from the members' parent, if they have one,
    carries their step keys in words as ``span`` writes members (``line-1 … line-49,
    line-51 … line-99`` beside line-50, drawn on its own; one key once).
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
            span=family.span,
            faults=0,
            fault_kinds="",
            retries=0,
            violation=bool(first.get("violation")),  # alike: the same for every member
        )
        if first.get("violations"):
            drawn.nodes[family.node]["violations"] = first["violations"]
        if family.parent is None:
            continue
        inside = set(family.members)
        keys: dict[str, dict[str, Any]] = {}  # the members' step keys, each once
        others: set[str] = set()  # the parent's other step keys: drawn outside the family
        for _, target, key, data in graph.out_edges(family.parent, keys=True, data=True):
            step = str(data.get("step_key", key))
            if target in inside:
                keys.setdefault(step, data)
            else:
                others.add(step)
        ordered = _ordered(keys)
        everyone = _ordered({*ordered, *(step for step in others if step not in keys)})
        step_key = span_words(ordered, everyone)
        edge = dict(keys[ordered[0]])
        edge.update(step_key=step_key, calls=1, duplicate=False)
        drawn.add_edge(family.parent, family.node, key=step_key, **edge)
    return drawn
