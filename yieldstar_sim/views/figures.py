"""Figures: a run's graph beside its timeline, figures as reproducible bytes, and user text as
a font can draw it."""

from __future__ import annotations

import io
import re
import textwrap
from typing import TYPE_CHECKING

from yieldstar_sim.views.drawn_text import (
    MAX_SENTENCE,
    clipped,
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
from yieldstar_sim.views.layout import layered_layout, natural
from yieldstar_sim.views.timeline import build_timeline, draw_timeline

if TYPE_CHECKING:
    import networkx as nx
    from matplotlib.axes import Axes
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
    """Every violation's sentence, one per line, numbered as the executions they name say
    ("named by violation 2"); past ``at_most``: "and N more"."""
    lines = [
        f"{number}. {clipped(str(violation), MAX_SENTENCE)}"
        for number, violation in enumerate(run.violations[:at_most], start=1)
    ]
    if len(run.violations) > at_most:
        lines.append(f"and {len(run.violations) - at_most} more")
    return "\n".join(lines)


#: The run's picture's pixels per inch, and its longest side in pixels at most: past it, the
#: picture is saved at fewer pixels per inch (issue 53: at most 4,000 px a side at any scale).
FIGURE_DPI = 100.0
MAX_PIXELS = 4_000
#: Inches a line of the totals takes under the graph, and the characters that fit in an inch.
TOTALS_LINE = 0.17
TOTALS_CHARS_PER_INCH = 11.5


def violation_named(graph: nx.MultiDiGraph) -> list[str]:
    """The executions of ``graph`` a violation names, by the violations' order (a timeline
    draws them out on lanes of their own)."""
    named = [
        (str(data.get("violations") or ""), natural(str(node)), str(node))
        for node, data in graph.nodes(data=True)
        if data.get("violation")
    ]
    return [node for *_, node in sorted(named)]


def totals_text(run: SimulationRun, width: float) -> str:
    """``run.totals()`` in words, each line wrapped to ``width`` inches (continued lines
    indented), under a heading: what the picture would otherwise leave the reader to count."""
    chars = max(30, int(width * TOTALS_CHARS_PER_INCH))
    lines = ["totals"]
    for line in run.totals().lines():  # workflow IDs and keys are user text
        said = drawable_text(line).replace("\n", " ")
        lines += textwrap.wrap(said, chars, subsequent_indent="    ", break_on_hyphens=False)
    return "\n".join(lines)


def draw_totals(axes: Axes, text: str) -> None:
    """The totals, as text in an axes of their own (no frame)."""
    axes.set_axis_off()
    axes.text(0.0, 1.0, text, transform=axes.transAxes, ha="left", va="top", fontsize=8.5,
              family="monospace", color="#222222", parse_math=False)  # fmt: skip


def draw_focus(run: SimulationRun, execution_id: str | None = None) -> Figure:
    """A timeline of its own (``run.timeline(execution_id)``): with an execution ID, that
    execution's story, its deliveries, the executions it started and what befell their
    workers meanwhile, on an axis of those events alone, every mark drawn; without one, the
    whole run's timeline (at review size with its busy track and notable executions' lanes).
    An ID the run never had is a ``ValueError`` naming the nearest it has.

    >>> import yieldstar_sim as ys
    >>> run = ys.simulate(ys.load_scenario("trigger-in-step"), runtime="memory")
    >>> draw_focus(run, "order-42").axes[0].get_title()
    'order-42: its timeline and the 2 executions it started (@ship-order-2, @ship-order-3)'
    """
    from matplotlib.figure import Figure

    from yieldstar_sim.core.suggest import did_you_mean
    from yieldstar_sim.views.timeline_focus import focus_trace, started_by

    events = list(run.trace)
    if execution_id is None:
        graph = graph_from_trace(events)
        mark_violations(graph, run.violations)
        timeline = build_timeline(events, run.scenario.worker_names, notable=violation_named(graph))
        title = f"{run.scenario.name}, seed {run.seed}: {run.verdict_text}"
    else:
        known = {event.execution_id for event in events if event.execution_id}
        if execution_id not in known:
            raise ValueError(
                f"no execution {execution_id!r} in the run of {run.scenario.name!r}"
                + did_you_mean(execution_id, sorted(known))
            )
        started = started_by(events, execution_id)
        chosen = focus_trace(events, execution_id)
        workers = [w for w in run.scenario.worker_names if any(e.worker == w for e in chosen)]
        timeline = build_timeline(chosen, workers)
        # A worker whose every part in the story is an attempt that hung is drawn on that
        # attempt's own lane: its own lane stayed empty, as if it had done nothing for it.
        drawn = {span.worker for span in timeline.spans} | {mark.lane for mark in timeline.marks}
        drawn |= {lane for lane, *_ in (*timeline.frozen, *timeline.stalled)}
        timeline.lanes = [lane for lane in timeline.lanes if lane in drawn or lane not in workers]
        title = f"{execution_id}: its timeline"
        if started:
            named = ", ".join(started[:3])
            named += f" and {len(started) - 3} more" if started[3:] else ""
            title += f" and the {len(started)} executions it started ({named})"
            title = title.replace("the 1 executions", "the execution")
    figure = Figure(
        figsize=(max(8.0, min(20.0, timeline.width / 3)), 1.0 * len(timeline.lanes) + 2.0),
        layout="constrained",
    )
    draw_timeline(timeline, ax=figure.add_subplot(), title=drawable_text(title))
    return figure


def draw_run(run: SimulationRun, *, upto: int | None = None, group: bool = True) -> Figure:
    """The execution graph (as of trace event ``upto``) with the run's totals under it, beside
    the worker timeline, in one figure for reports; the title names scenario, seed and verdict,
    the caption every violation. ``group=False`` draws every sibling execution as its own box.

    >>> import yieldstar_sim as ys
    >>> figure = draw_run(ys.simulate(ys.load_scenario("durable-start"), runtime="memory"))
    """
    from matplotlib.figure import Figure

    graph = graph_from_trace(run.trace, upto)
    if upto is None:
        mark_violations(graph, run.violations)
    timeline = build_timeline(run.trace, run.scenario.worker_names, notable=violation_named(graph))
    if group:
        graph = collapse_families(graph)
    layout = layered_layout(graph)
    graph_width = max(5.0, INCHES_PER_SLOT * layout.width + 0.6)
    timeline_width = max(8.0, min(20.0, timeline.width / 3))
    totals = totals_text(run, graph_width)
    totals_height = TOTALS_LINE * (totals.count("\n") + 1) + 0.2
    graph_height = INCHES_PER_LAYER * layout.height + 2.0
    height = max(5.2 + 0.4 * len(timeline.lanes), graph_height + totals_height)
    width = graph_width + timeline_width
    # Families keep a run of any size to a few boxes; what they cannot fold (many executions,
    # each unlike the rest) is drawn smaller rather than past MAX_PIXELS a side.
    dpi = min(FIGURE_DPI, MAX_PIXELS / max(width, height))
    figure = Figure(figsize=(width, height), dpi=dpi, layout="constrained")
    grid = figure.add_gridspec(
        2, 2, width_ratios=[graph_width, timeline_width],
        height_ratios=[height - totals_height, totals_height],
    )  # fmt: skip
    left = figure.add_subplot(grid[0, 0])
    right = figure.add_subplot(grid[:, 1])
    draw_totals(figure.add_subplot(grid[1, 0]), totals)
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
