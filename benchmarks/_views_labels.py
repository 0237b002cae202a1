"""bench_views' readability section: on the Agg renderer of a drawn picture, the window extents
of the graph's node labels (text only, and the visible box drawn around it), of its edge
labels, and of the timeline's delivery labels; the overlapping pairs of each (touching is not
overlapping); and the edge labels standing nearer to a node that is neither end of their edge.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Any

from matplotlib.backends.backend_agg import FigureCanvasAgg

from yieldstar_sim.views import draw_run, graph_from_trace
from yieldstar_sim.views.evidence import node_label
from yieldstar_sim.views.graph import group_siblings

if TYPE_CHECKING:
    from collections.abc import Sequence

    from matplotlib.figure import Figure
    from matplotlib.text import Text

    from yieldstar_sim.simulation import SimulationRun

DPI = 100


def rasterised(run: SimulationRun) -> tuple[Figure, FigureCanvasAgg, float]:
    """A fresh figure of the run on an Agg canvas, drawn once; the draw's seconds."""
    figure = draw_run(run)
    figure.set_dpi(DPI)
    canvas = FigureCanvasAgg(figure)
    gc.collect()
    started = time.perf_counter()
    canvas.draw()  # type: ignore[no-untyped-call]
    return figure, canvas, time.perf_counter() - started


@dataclass
class Labels:
    """Overlaps among the rendered labels of one picture."""

    name: str
    count: int
    overlapping_pairs: int
    labels_involved: int
    fontsize: float


def extent(artist: Any, renderer: Any) -> tuple[float, float, float, float]:
    box = artist.get_window_extent(renderer)
    return box.x0, box.y0, box.x1, box.y1


def overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    """Strict overlap of two extents (sharing an edge does not count)."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def overlap_count(
    name: str,
    extents: Sequence[tuple[float, float, float, float]],
    others: Sequence[tuple[float, float, float, float]] | None,
    fontsize: float,
) -> Labels:
    """Overlapping pairs within ``extents`` (or between ``extents`` and ``others``)."""
    if others is None:
        pairs = combinations(range(len(extents)), 2)
        hits = [(i, j) for i, j in pairs if overlaps(extents[i], extents[j])]
        involved = {i for pair in hits for i in pair}
    else:
        hits = [
            (i, j)
            for i in range(len(extents))
            for j in range(len(others))
            if overlaps(extents[i], others[j])
        ]
        involved = {i for i, _ in hits}
    return Labels(name, len(extents), len(hits), len(involved), fontsize)


def centre(box: tuple[float, float, float, float]) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


@dataclass
class Readability:
    """What the picture's reader gets: label overlaps, size, stray edge labels."""

    labels: list[Labels]
    pixels: tuple[int, int]
    edge_labels: int
    stray_edge_labels: int
    """Edge labels whose nearest node box is neither end of their own edge."""


def readability(run: SimulationRun, picture: str) -> Readability:
    """Label overlaps of the run's picture, measured on its Agg renderer; saves the picture."""
    figure, canvas, _ = rasterised(run)
    renderer = canvas.get_renderer()  # type: ignore[no-untyped-call]
    graph_axes, timeline_axes = figure.axes[0], figure.axes[1]
    # The graph as draw_run draws it: siblings grouped (their one box, their one edge label).
    graph = group_siblings(graph_from_trace(run.trace))
    step_keys = {str(data["step_key"]) for _, _, data in graph.edges(data=True)}

    def first_line(text: Text) -> str:
        return text.get_text().split("\n", 1)[0]

    # A group's stack has a box behind its own, its text invisible: not a label to read.
    shown = [t for t in graph_axes.texts if t.get_color() != "none"]
    # A node's label starts with its ID; a family's with its count and first workflow.
    firsts = {node_label(node, data).split("\n", 1)[0] for node, data in graph.nodes(data=True)}
    nodes = [t for t in shown if first_line(t) in firsts]
    edges = [t for t in shown if first_line(t) in step_keys]
    spans = [t for t in timeline_axes.texts if " · token " in t.get_text()]
    if len(nodes) != graph.number_of_nodes():
        print(f"  [WARN] found {len(nodes)} node labels for {graph.number_of_nodes()} nodes")

    def boxes(texts: list[Text]) -> list[tuple[float, float, float, float]]:
        """The visible box around each text (its bbox patch), or the text itself."""
        result = []
        for text in texts:
            patch = text.get_bbox_patch()
            result.append(extent(patch if patch is not None else text, renderer))
        return result

    def size(texts: list[Text]) -> float:
        return max((float(t.get_fontsize()) for t in texts), default=0.0)

    node_text = [extent(t, renderer) for t in nodes]
    node_boxes, edge_boxes = boxes(nodes), boxes(edges)
    span_text = [extent(t, renderer) for t in spans]
    results = [
        overlap_count("graph node labels (text)", node_text, None, size(nodes)),
        overlap_count("graph node labels (box)", node_boxes, None, size(nodes)),
        overlap_count("graph edge labels (box)", edge_boxes, None, size(edges)),
        overlap_count("edge label (box) on a node box", edge_boxes, node_boxes, size(edges)),
        overlap_count("timeline delivery labels (text)", span_text, None, size(spans)),
    ]
    ends = {str(d["step_key"]): {str(a), str(b)} for a, b, d in graph.edges(data=True)}
    node_at = [(first_line(t), centre(box)) for t, box in zip(nodes, node_boxes, strict=True)]
    stray = 0
    for text, box in zip(edges, edge_boxes, strict=True):
        x, y = centre(box)
        nearest, _ = min(node_at, key=lambda item: (item[1][0] - x) ** 2 + (item[1][1] - y) ** 2)
        stray += nearest not in ends[first_line(text)]
    figure.savefig(picture, format="png", dpi=DPI)
    return Readability(results, canvas.get_width_height(), len(edges), stray)
