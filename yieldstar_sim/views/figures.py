"""Figures: a run's graph beside its timeline, figures as reproducible bytes, and user text as
a font can draw it."""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING

from yieldstar_sim.views.drawn_text import (
    MAX_SENTENCE,
    drawable,
    drawable_figure,
    glyphs_missing_quietly,
    shown,
    xml_legal,
)
from yieldstar_sim.views.evidence import mark_violations
from yieldstar_sim.views.families import collapse_families
from yieldstar_sim.views.formats import FIGURE_FORMATS
from yieldstar_sim.views.graph import (
    INCHES_PER_LAYER,
    INCHES_PER_SLOT,
    draw_execution_graph,
    graph_from_trace,
)
from yieldstar_sim.views.graph_text import _bidi_visible
from yieldstar_sim.views.layout import layered_layout
from yieldstar_sim.views.timeline import build_timeline, draw_timeline

if TYPE_CHECKING:
    import networkx as nx
    from matplotlib.figure import Figure

    from yieldstar_sim.simulation.result import SimulationRun


# Fixed metadata and ID salt: the same figure gives the same bytes, and the SVG names no
# external resource (no RDF type or creator URL).
_FIGURE_METADATA: dict[str, dict[str, str | None]] = {
    "svg": {"Date": None, "Creator": None, "Type": None, "Format": None},
    "png": {"Software": None},
    "pdf": {"CreationDate": None, "Creator": None, "Producer": None},
}


def figure_bytes(figure: Figure, format: str) -> bytes:
    """The figure saved as ``"svg"``, ``"png"`` or ``"pdf"`` bytes (reproducibly).

    >>> from matplotlib.figure import Figure
    >>> figure_bytes(Figure(), "png")[:4]
    b'\\x89PNG'
    """
    if format not in FIGURE_FORMATS:
        raise ValueError(
            f"cannot render a figure as {format!r}: choose one of {', '.join(FIGURE_FORMATS)}"
        )
    import matplotlib

    drawable_figure(figure)  # whatever view put the text there
    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "yieldstar-sim"}), glyphs_missing_quietly():
        figure.savefig(buffer, format=format, metadata=_FIGURE_METADATA[format])
    if format == "svg":  # well-formed XML, whatever else put a character there
        return xml_legal(buffer.getvalue().decode("utf-8")).encode("utf-8")
    return buffer.getvalue()


def drawable_text(text: str) -> str:
    """``text`` as a font can draw it (``drawn_text.drawable``: tabs as spaces, line breaks as
    newlines, control characters and noncharacters as U+FFFD, lines bounded), with the
    bidirectional formatting characters made visible."""
    return _bidi_visible(drawable(text))


def drawable_graph(graph: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """A copy of ``graph`` whose node IDs, workflow IDs and step keys a font can draw."""
    import networkx as nx

    copy = graph.copy()
    for _, data in copy.nodes(data=True):
        data.update({k: drawable_text(v) for k, v in data.items() if isinstance(v, str)})
    for _, _, data in copy.edges(data=True):
        data.update({k: drawable_text(v) for k, v in data.items() if isinstance(v, str)})
    names = {node: drawable_text(node) for node in copy.nodes if isinstance(node, str)}
    if len(set(names.values())) == len(names):  # never merge two nodes to clean a label
        copy = nx.relabel_nodes(copy, names)
    return copy


_SVG_START = re.compile(r"<svg[\s>]")


def inline_svg(svg: str) -> str:
    """An SVG document as markup for inside HTML: its XML declaration and DOCTYPE removed."""
    match = _SVG_START.search(svg)
    if match is None:
        raise ValueError("expected an SVG document (no <svg> element found)")
    return svg[match.start() :].strip()


#: How many violations a run's caption prints in full; the rest are counted.
CAPTIONED_VIOLATIONS = 3


def violations_caption(run: SimulationRun, at_most: int = CAPTIONED_VIOLATIONS) -> str:
    """Every violation's sentence, one per line (past ``at_most``: "and N more")."""
    lines = [
        f"\u2022 {shown(str(violation), MAX_SENTENCE)}" for violation in run.violations[:at_most]
    ]
    if len(run.violations) > at_most:
        lines.append(f"and {len(run.violations) - at_most} more")
    return "\n".join(lines)


def draw_run(run: SimulationRun, *, upto: int | None = None, group: bool = True) -> Figure:
    """The execution graph (as of trace event ``upto``) beside the worker timeline, in one
    figure for reports; the title names scenario, seed and verdict, the caption every
    violation. ``group=False`` draws every sibling execution as its own box.

    >>> import yieldstar_sim as ys
    >>> figure = draw_run(ys.simulate(ys.load_scenario("durable-start"), runtime="memory"))
    """
    from matplotlib.figure import Figure

    timeline = build_timeline(run.trace, run.scenario.worker_names)
    graph = graph_from_trace(run.trace, upto)
    if upto is None:
        mark_violations(graph, run.violations)
    if group:
        graph = collapse_families(graph)
    layout = layered_layout(graph)
    graph_width = max(5.0, INCHES_PER_SLOT * layout.width + 0.6)
    timeline_width = max(8.0, min(20.0, timeline.width / 3))
    height = max(5.2 + 0.4 * len(timeline.lanes), INCHES_PER_LAYER * layout.height + 2.0)
    figure = Figure(figsize=(graph_width + timeline_width, height), layout="constrained")
    left, right = figure.subplots(1, 2, width_ratios=[graph_width, timeline_width])
    caption = ""
    if upto is None and run.violations:
        caption = violations_caption(run)
    elif upto is None and run.incomplete:
        caption = f"incomplete: {run.incomplete}"
    draw_execution_graph(graph, ax=left, caption=caption, group=False)
    cursor = None if upto is None else timeline.x_of.get(upto)
    draw_timeline(timeline, ax=right, cursor=cursor)
    figure.suptitle(
        f"{shown(run.scenario.name)}, seed {run.seed}, {run.runtime_kind}: {run.verdict_text}",
        fontsize=13,
        parse_math=False,
    )
    return figure
