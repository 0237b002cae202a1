"""Where each execution of a graph is drawn: one layered layout for the PNG, the SVG and the
review page, so the three never show a run differently.

The layout is a tidy tree: every execution hangs under one parent (its *tree parent*, the one
on the layer just above it), siblings side by side in the order of the step keys that started
them, and each parent centred over its children, so a tree is drawn without a crossing. A
run's other links (a join, a trigger from an execution already placed) are drawn between the
places the tree gave; they are the only lines that may cross. Wide pictures wrap: more than
``ROW_WIDTH`` childless siblings make a grid under their parent, and trees side by side that
would be wider than ``FOREST_WIDTH`` slots continue on a band below, so a run of many
independent executions grows downwards, not into a strip.

Coordinates are in slots: ``x`` is a slot's centre (a box is about 0.8 of a slot wide), ``y``
is 0 for the top layer and falls by 1 per layer (by ``ROW_GAP`` between the rows of a grid).

>>> import networkx as nx
>>> graph = nx.MultiDiGraph()
>>> graph.add_edge("order", "ship", key="ship")
'ship'
>>> graph.add_edge("order", "bill", key="bill")
'bill'
>>> layered_layout(graph).positions
{'order': (1.0, 0.0), 'bill': (0.5, -1.0), 'ship': (1.5, -1.0)}
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

#: Childless siblings side by side before they wrap into a grid under their parent.
ROW_WIDTH = 8
#: Slots of trees side by side before the next tree starts a band below.
FOREST_WIDTH = 12
#: Vertical distance between the rows of a grid of siblings, and between bands, in layers.
ROW_GAP = 0.7
BAND_GAP = 0.5


@dataclass(frozen=True)
class Layout:
    """Positions of a graph's nodes, in slots (``x``) and layers (``y``, 0 at the top, down is
    negative), with the extent they cover: ``width`` slots by ``height`` layers."""

    positions: dict[Any, tuple[float, float]]
    width: float
    height: float
    tree_parent: dict[Any, Any]
    """Each node's tree parent (absent for a root): the edge the layout hangs it from."""
    children: dict[Any, list[Any]]
    """Each node's tree children, in drawing order (step-key order)."""


def natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key that puts child-5 before child-49 (numbers compared as numbers)."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part
    )


def _name(node: Any) -> tuple[Any, str]:
    """A node's place in an order that never ties: natural order, then the text itself."""
    return natural(str(node)), str(node)


def _depths(graph: nx.MultiDiGraph) -> dict[Any, int]:
    """Each node's layer: the longest path to it from a root (parents above children); in a
    graph with a cycle (which a run does not make, but a hand-built graph may), the
    breadth-first distance from the roots instead."""
    import networkx as nx

    if nx.is_directed_acyclic_graph(graph):
        return {
            node: layer
            for layer, nodes in enumerate(nx.topological_generations(graph))
            for node in nodes
        }
    depth: dict[Any, int] = {}
    order = sorted(graph.nodes, key=lambda n: (graph.in_degree(n) > 0, _name(n)))
    for start in order:
        if start in depth:
            continue
        depth[start] = 0
        frontier = [start]
        while frontier:
            following = []
            for node in frontier:
                for child in sorted(graph.successors(node), key=_name):
                    if child not in depth:
                        depth[child] = depth[node] + 1
                        following.append(child)
            frontier = following
    return depth


def _tree(graph: nx.MultiDiGraph) -> tuple[dict[Any, Any], dict[Any, list[Any]], list[Any]]:
    """Tree parent of each node, children of each node in drawing order, and the roots."""
    depth = _depths(graph)
    parent: dict[Any, Any] = {}
    link: dict[Any, tuple[Any, str]] = {}
    for node in graph.nodes:
        candidates = [
            ((natural(str(key)), str(key)), (natural(str(source)), str(source)), source)
            for source, _, key in graph.in_edges(node, keys=True)
            if source != node and depth[source] == depth[node] - 1
        ]
        if candidates:
            best = min(candidates, key=lambda c: (c[0], c[1]))
            parent[node] = best[2]
            link[node] = best[0]
    children: dict[Any, list[Any]] = {node: [] for node in graph.nodes}
    for node, source in parent.items():
        children[source].append(node)
    for kids in children.values():
        kids.sort(key=lambda n: (link[n], _name(n)))
    roots = sorted((n for n in graph.nodes if n not in parent), key=_name)
    return parent, children, roots


@dataclass
class _Block:
    """A laid-out subtree: offsets of its nodes from its top-left corner, and its extent."""

    offsets: dict[Any, tuple[float, float]]
    width: float
    height: float
    anchor: float  # the x of the subtree's root within the block


def _grid(leaves: list[Any], row_width: int) -> _Block:
    """Childless siblings in rows of ``row_width`` (each row centred), ROW_GAP apart."""
    width = float(min(len(leaves), row_width))
    offsets = {}
    for start in range(0, len(leaves), row_width):
        row = leaves[start : start + row_width]
        left = (width - len(row)) / 2
        for index, node in enumerate(row):
            offsets[node] = (left + index + 0.5, -(start // row_width) * ROW_GAP)
    rows = -(-len(leaves) // row_width)
    return _Block(offsets, width, 1.0 + (rows - 1) * ROW_GAP, width / 2)


def _beside(blocks: list[_Block]) -> _Block:
    """Blocks side by side, tops aligned."""
    offsets: dict[Any, tuple[float, float]] = {}
    x = 0.0
    for block in blocks:
        for node, (dx, dy) in block.offsets.items():
            offsets[node] = (x + dx, dy)
        x += block.width
    return _Block(offsets, x, max((b.height for b in blocks), default=0.0), x / 2)


def layered_layout(
    graph: nx.MultiDiGraph, *, row_width: int = ROW_WIDTH, forest_width: int = FOREST_WIDTH
) -> Layout:
    """The layered layout of ``graph``: parents above children, siblings side by side in
    step-key order, each parent centred over its children; deterministic (the same graph, in
    any insertion order, gets the same positions)."""
    parent, children, roots = _tree(graph)
    blocks: dict[Any, _Block] = {}
    # Children before parents, without recursion: a chain of executions may be deep.
    order: list[Any] = []
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(reversed(children[node]))
    for node in reversed(order):
        kids = children[node]
        if not kids:
            blocks[node] = _Block({node: (0.5, 0.0)}, 1.0, 1.0, 0.5)
            continue
        parts: list[_Block] = []
        leaves: list[Any] = []
        for kid in [*kids, None]:
            if kid is not None and not children[kid]:
                leaves.append(kid)
                continue
            if leaves:
                parts.append(_grid(leaves, row_width))
                leaves = []
            if kid is not None:
                parts.append(blocks.pop(kid))
        below = _beside(parts)
        # The parent sits over the middle of its first and last child's top row.
        tops = [below.offsets[kid][0] for kid in kids if below.offsets[kid][1] == 0.0]
        anchor = (min(tops) + max(tops)) / 2
        offsets = {kid: (dx, dy - 1.0) for kid, (dx, dy) in below.offsets.items()}
        offsets[node] = (anchor, 0.0)
        blocks[node] = _Block(offsets, max(below.width, 1.0), below.height + 1.0, anchor)
    positions: dict[Any, tuple[float, float]] = {}
    band: list[_Block] = []
    top = 0.0
    widest = 0.0

    def place(band: list[_Block], top: float) -> float:
        row = _beside(band)
        for node, (dx, dy) in row.offsets.items():
            positions[node] = (dx, top + dy)
        return row.width

    for root in roots:
        block = blocks[root]
        if band and sum(b.width for b in band) + block.width > forest_width:
            widest = max(widest, place(band, top))
            top -= max(b.height for b in band) + BAND_GAP
            band = []
        band.append(block)
    if band:
        widest = max(widest, place(band, top))
        top -= max(b.height for b in band)
    ordered = {node: positions[node] for node in order}
    return Layout(ordered, widest, -top if ordered else 0.0, parent, children)
