"""Families: executions of one shape drawn once, with a count.

A thousand orders that each charged and started their shipment, with nothing to see, are one
box, "998 \u00d7 charge-order \u2192 ship-order, completed"; the order a crash struck stays on
its own, with its shipment. An execution's *shape* is its workflow, its status, how it was
started (its origin, the kind of link that started it: owned, detached, a join or RFC 003's
non-durable trigger, and the pattern of its step key: ``line-17`` is ``line-#``) and the
shapes of the executions it started, however many levels down. Siblings (children of one
parent, or executions nobody started) of one shape make a family when there are at least
``GROUP_AT_LEAST`` of them. What a reviewer must see is part of the shape: the faults that
struck an execution, its retries, its status, whether its start took several calls or its
step admitted several executions, and which invariants' violations name it. So the order a
crash broke is drawn on its own (it is the only one of its shape) beside the 999 it spared,
while a bug that strikes 300 alike orders is one family, marked red as named by the violation,
with its count and its first members; only a second parent, or a link to an execution drawn
elsewhere, keeps an execution out of every family. A family's words count what it holds and
name its members as ranges only where no execution drawn outside it falls inside one
(``order-1 … order-149, order-151 … order-300`` beside order-150), else its first few.

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

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yieldstar_sim.views.evidence import ARROW, TIMES, edge_line
from yieldstar_sim.views.layout import Layout, layered_layout, natural

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

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


def _evidence(data: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a reviewer must see on an execution, as part of its shape: the faults that struck
    it, its retries, and the invariants a violation of which names it."""
    return (
        str(data.get("fault_kinds") or ""),
        int(data.get("retries") or 0),
        bool(data.get("violation")),
        str(data.get("invariants") or ""),
    )


def _shapes(
    graph: nx.MultiDiGraph, children: dict[Any, list[Any]], order: list[Any]
) -> dict[Any, Shape | None]:
    """Each node's shape, or None when it or anything under it is not a tree (a second
    parent, a link to an execution placed elsewhere)."""
    shapes: dict[Any, Shape | None] = {}
    for node in reversed(order):  # children first
        data = graph.nodes[node]
        edges = list(graph.in_edges(node, keys=True, data=True))
        kids = children[node]
        ok = (
            len(edges) <= 1
            and graph.out_degree(node) == len(kids)
            and all(shapes[kid] is not None for kid in kids)
        )
        if not ok:
            shapes[node] = None
            continue
        how: tuple[Any, ...] = ()
        if edges:
            _, _, key, edge = edges[0]
            how = (
                _key_pattern(edge.get("step_key", key)),
                edge_line(edge),
                bool(edge.get("duplicate")),  # one of several a step admitted
                int(edge.get("calls", 1) or 1) > 1,  # its request took several start calls
            )
        started = tuple(sorted(Counter(shapes[kid] for kid in kids).items(), key=repr))
        shapes[node] = (
            str(data.get("workflow_id")),
            str(data.get("status")),
            str(data.get("origin")),
            how,
            started,
            _evidence(data),
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
            span = _span(members, below, everyone)
            found.append(Family(name, words, parent, tuple(members), tuple(below), span))
            grouped.update(members)
        pending.extend(
            (node, children[node]) for node in siblings if node not in grouped and children[node]
        )
    found += _linked_families(graph, found, at_least, everyone, taken)
    return found


def _span(members: Sequence[Any], below: Sequence[Any], everyone: Sequence[Any]) -> str:
    """A family's members in words; its own executions break no range, only those drawn
    outside it do."""
    chosen = set(members)
    inside = set(below) - chosen
    return span_words(members, [node for node in everyone if node not in inside])


#: The most executions a group of linked ones may hold to be compared with others.
LINKED_AT_MOST = 24


def _linked_key(graph: nx.MultiDiGraph, nodes: set[Any]) -> tuple[Any, ...]:
    """What makes two groups of linked executions alike: each execution's workflow, status,
    origin and evidence and each link's kind and step-key pattern, refined over the links
    (colour refinement, as a Weisfeiler-Lehman hash: a few rounds tell small groups apart),
    as sorted lists."""
    colour = {
        node: repr((graph.nodes[node].get("workflow_id"), graph.nodes[node].get("status"),
                    graph.nodes[node].get("origin"), _evidence(graph.nodes[node])))
        for node in nodes
    }  # fmt: skip
    links = [
        (source, target, repr((_key_pattern(data.get("step_key", key)), edge_line(data),
                               bool(data.get("duplicate")), int(data.get("calls", 1) or 1) > 1)))
        for source, target, key, data in graph.edges(nbunch=nodes, keys=True, data=True)
        if target in nodes
    ]  # fmt: skip
    for _ in range(3):
        outs: dict[Any, list[str]] = {node: [] for node in nodes}
        ins: dict[Any, list[str]] = {node: [] for node in nodes}
        for source, target, link in links:
            outs[source].append(link + colour[target])
            ins[target].append(link + colour[source])
        colour = {
            node: hashlib.sha1(
                repr((colour[node], sorted(outs[node]), sorted(ins[node]))).encode(),
                usedforsecurity=False,
            ).hexdigest()
            for node in nodes
        }
    edges = sorted((colour[source], colour[target], link) for source, target, link in links)
    return tuple(sorted(colour.values())), tuple(edges)


def _linked_families(
    graph: nx.MultiDiGraph,
    found: list[Family],
    at_least: int,
    everyone: list[Any],
    taken: set[str],
) -> list[Family]:
    """Families of alike groups of linked executions that are no tree (a run a step joined
    has two parents: order-42 owns fulfil-42, recheck-42 joins it): a thousand such trios
    are one box. A group is a connected part of the graph no tree family touches, of at most
    ``LINKED_AT_MOST`` executions; its first execution (natural order) is its member."""
    import networkx as nx

    folded = {node for family in found for node in family.executions}
    alike: dict[tuple[Any, ...], list[list[Any]]] = {}
    for part in nx.weakly_connected_components(graph):
        if len(part) < 2 or len(part) > LINKED_AT_MOST or part & folded:
            continue
        alike.setdefault(_linked_key(graph, part), []).append(_ordered(part))
    linked = []
    for groups in alike.values():
        if len(groups) < at_least:
            continue
        # Each group stands by its first execution nobody started (order-1042, not the
        # fulfillment-1042 it owns), the groups in that one's order.
        firsts = [
            next((node for node in group if graph.in_degree(node) == 0), group[0])
            for group in groups
        ]
        members = _ordered(firsts)
        below = _ordered(node for group in groups for node in group)
        sample = groups[0]
        workflows = Counter(
            (graph.in_degree(node) > 0, str(graph.nodes[node].get("workflow_id")))
            for node in sample
        )  # the started ones after those nobody started
        statuses = sorted({str(graph.nodes[node].get("status")) for node in sample})
        words = " + ".join(
            (f"{count} {TIMES} " if count > 1 else "") + workflow
            for (_, workflow), count in sorted(workflows.items())
        )
        words = f"{words} (linked), {'/'.join(statuses)}"
        name, number = f"{len(groups)} {TIMES} {words}", 2
        while name in taken:
            name, number = f"{len(groups)} {TIMES} {words} ({number})", number + 1
        taken.add(name)
        span = _span(members, below, everyone)
        linked.append(Family(name, words, None, tuple(members), tuple(below), span))
    return linked


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
            # Alike: the same evidence for every member (the numbers of the violations that
            # name them aside: each order may have its own sentence).
            faults=int(first.get("faults") or 0),
            fault_kinds=str(first.get("fault_kinds") or ""),
            retries=int(first.get("retries") or 0),
            violation=bool(first.get("violation")),
        )
        numbers = {
            int(part)
            for member in family.members
            for part in str(graph.nodes[member].get("violations") or "").split(", ")
            if part
        }
        if numbers:
            drawn.nodes[family.node]["violations"] = ", ".join(map(str, sorted(numbers)))
            drawn.nodes[family.node]["invariants"] = first.get("invariants", "")
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
