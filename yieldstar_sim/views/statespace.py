"""The explored state space as a picture: distinct states, the choices and faults between them,
violating states in red and the shortest path to each violation drawn thick.

An exhaustive search (``ys.explore(..., strategy="exhaustive")``) keeps the states it reached
as plain data (``report.state_space``); this module turns it into a networkx ``DiGraph``
(``state_graph``), draws it with matplotlib (``draw_state_graph``) and writes it in the formats
the execution graph has (``export_state_graph``).

>>> from yieldstar_sim.simulation.explorer.statespace import StateSpace
>>> space = StateSpace()
>>> for key, depth in [("s0", 0), ("s1", 1), ("s2", 1), ("s3", 2)]:
...     _ = space.add_state(key, depth=depth, label=f"point {depth}", plan=0, terminal=depth == 2)
>>> space.add_edge("s0", "s1", choice="w1", fault=None, plan=0)
>>> space.add_edge("s0", "s2", choice="w2", fault=None, plan=1)
>>> space.add_edge("s1", "s3", choice="w2", fault="crash w2 at put_step", plan=0)
>>> space.mark_violation("s3", "at_most_once")
>>> graph = state_graph(space)
>>> graph.nodes["s3"]["violating"], graph.edges["s1", "s3"]["shortest"]
(True, True)
>>> graph.edges["s1", "s3"]["label"]
'w2 + crash w2 at put_step'
"""

from __future__ import annotations

import html
import re
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.files import write_whole
from yieldstar_sim.views.statespace_bounds import DRAWN_AT_MOST, bounded_state_graph
from yieldstar_sim.views.statespace_paths import describe_path, edge_label, shortest_paths

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import networkx as nx
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from yieldstar_sim.simulation.explorer.statespace import StateEdge, StateSpace

#: Colours (Okabe-Ito, as the execution graph): plain, the initial state, an end state, a
#: violating end state, and the shortest path to a violation.
STATE_COLOUR = "#56B4E9"
ROOT_COLOUR = "#F0E442"
TERMINAL_COLOUR = "#009E73"
VIOLATING_COLOUR = "#CC0000"
PATH_COLOUR = "#CC0000"
EDGE_COLOUR = "#999999"
FAULT_COLOUR = "#D55E00"
#: A state the search reached and did not go on from: every move from it slept (the
#: reduction), led to a state already searched, or lay past a bound.
UNEXPANDED_COLOUR = "#D9D9D9"
#: The summary node standing for the states of a depth a bounded picture does not draw.
SUMMARY_COLOUR = "#BBBBBB"
#: Past this many states, node labels are left off (but for the root and violating states)
#: and the nodes and edges are rasterized: a picture of thousands of states stays small.
LABELLED_AT_MOST = 40
_CONTROLS = re.compile("[\x00-\x1f\x7f]")
#: The formats ``export_state_graph`` writes.
STATE_GRAPH_FORMATS = ("svg", "png", "pdf", "graphml", "json", "dot", "html")


def state_graph(space: StateSpace) -> nx.DiGraph:
    """The state space as a ``DiGraph``: a node per distinct state, an edge per step between
    two states (parallel choices between the same two states are one edge listing them all).

    Graph data: ``root``, and ``cut_by``: what stopped the search before its end
    (``StateSpace.cut_by``, ``"; "``-joined; empty when it searched to the end). Node data:
    ``label`` (the choice point the state stands at), ``depth``, ``plan`` (a schedule that
    reaches it), ``root``, ``terminal``, ``violating`` and ``violations`` (the invariants,
    joined by ``", "``). Edge data: ``label`` (every choice, ``"; "``-joined), ``choices`` and
    ``faults`` (counts), ``fault`` (whether any choice injected a fault), ``plan`` and
    ``shortest`` (on a shortest path from the root to a violating state).
    """
    import networkx as nx  # here, not at the top: ``import yieldstar_sim`` imports this module

    # A string, not a list: GraphML takes scalars only.
    graph = nx.DiGraph(root=space.root or "", cut_by="; ".join(space.cut_by))
    for node in space.nodes.values():
        graph.add_node(
            node.key,
            label=node.label,
            depth=node.depth,
            plan=node.plan,
            root=node.key == space.root,
            terminal=node.terminal,
            violating=node.violating,
            violations=", ".join(node.violations),
            shortest=False,
        )
    for edge in space.edges.values():
        text = edge_label(edge.choice, edge.fault)
        if graph.has_edge(edge.source, edge.target):
            data = graph.edges[edge.source, edge.target]
            data["label"] += f"; {text}"
            data["choices"] += 1
            data["faults"] += edge.fault is not None
            data["fault"] = data["fault"] or edge.fault is not None
        else:
            graph.add_edge(
                edge.source, edge.target, label=text, choices=1,
                faults=int(edge.fault is not None), fault=edge.fault is not None,
                plan=edge.plan, shortest=False,
            )  # fmt: skip
    for path in shortest_paths(space).values():
        for edge in path:
            graph.edges[edge.source, edge.target]["shortest"] = True
            graph.nodes[edge.source]["shortest"] = True
            graph.nodes[edge.target]["shortest"] = True
    return graph


def _positions(graph: nx.DiGraph) -> dict[str, tuple[float, float]]:
    """States in columns by depth (left to right, one column a unit apart), each column
    centred, in the order found.

    A column is a rank, not a depth: a bounded picture's summaries stand at the middle of
    their bands of depths (7, 20.5, 34, ... of a space 391 deep), and placed by depth its ends
    stood at the axes' edges, half cut off, and the initial state's label ran into the first
    summary's, half a band away."""
    columns: dict[float, list[str]] = {}
    for node, data in graph.nodes(data=True):
        columns.setdefault(float(data["depth"]), []).append(node)
    positions: dict[str, tuple[float, float]] = {}
    for rank, depth in enumerate(sorted(columns)):
        nodes = columns[depth]
        top = (len(nodes) - 1) / 2
        for i, node in enumerate(nodes):
            positions[node] = (float(rank), top - i)
    return positions


def draw_state_graph(
    space_or_graph: StateSpace | nx.DiGraph,
    *,
    title: str = "",
    highlight: Sequence[StateEdge] = (),
    ax: Axes | None = None,
) -> Figure:
    """Draw the state space; returns the matplotlib Figure (never shows it).

    A space of more than ``DRAWN_AT_MOST`` states is drawn bounded (``bounded_state_graph``):
    the shortest paths to its violations, and one grey summary node per depth for the rest.

    Columns are depths (choice points from the initial state). Violating end states are red,
    other end states green, the initial state yellow; the shortest path to each violation is
    drawn thick and red, edges that inject a fault orange and dashed. ``highlight`` draws one
    more path (the one a reader picked) thick and black.
    """
    import networkx as nx
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    graph = (
        space_or_graph if isinstance(space_or_graph, nx.DiGraph) else state_graph(space_or_graph)
    )
    graph = bounded_state_graph(graph)
    positions = _positions(graph)
    depths = 1 + max((int(d) for _, d in graph.nodes(data="depth")), default=0)
    tallest = max(
        (sum(1 for _, d in graph.nodes(data="depth") if d == depth) for depth in range(depths)),
        default=1,
    )
    big = graph.number_of_nodes() > LABELLED_AT_MOST
    if ax is None:
        figure = Figure(
            figsize=(
                min(16.0, max(6.0, 1.6 * depths + 2)),
                min(12.0, max(3.5, 0.45 * tallest + 2)),
            ),
            layout="constrained",
        )
        axes = figure.add_subplot()
    else:
        figure, axes = ax.figure, ax  # type: ignore[assignment]
    axes.set_axis_off()
    picked = {(edge.source, edge.target) for edge in highlight}

    def edges(where: Any) -> list[tuple[str, str]]:
        return [(s, t) for s, t, data in graph.edges(data=True) if where(s, t, data)]

    layers = [
        (edges(lambda s, t, d: not d["shortest"] and not d["fault"] and (s, t) not in picked),
         EDGE_COLOUR, 0.8, "solid"),
        (edges(lambda s, t, d: not d["shortest"] and d["fault"] and (s, t) not in picked),
         FAULT_COLOUR, 0.9, "dashed"),
        (edges(lambda s, t, d: d["shortest"] and (s, t) not in picked), PATH_COLOUR, 2.4, "solid"),
        (sorted(picked & set(graph.edges)), "#111111", 2.8, "solid"),
    ]  # fmt: skip
    for edgelist, colour, width, style in layers:
        if not edgelist:
            continue
        if big:  # one LineCollection (left to right is the direction), drawn as pixels
            drawn = nx.draw_networkx_edges(
                graph, positions, edgelist=edgelist, ax=axes, edge_color=colour, width=width,
                style=style, arrows=False,
            )  # fmt: skip
            drawn.set_rasterized(True)
        else:
            nx.draw_networkx_edges(
                graph, positions, edgelist=edgelist, ax=axes, edge_color=colour, width=width,
                style=style, arrows=True, arrowsize=12, node_size=300,
            )  # fmt: skip
    colours = [
        SUMMARY_COLOUR if data.get("summary")
        else VIOLATING_COLOUR if data["violating"]
        else ROOT_COLOUR if data["root"]
        else TERMINAL_COLOUR if data["terminal"]
        else UNEXPANDED_COLOUR if graph.out_degree(node) == 0
        else STATE_COLOUR
        for node, data in graph.nodes(data=True)
    ]  # fmt: skip
    _draw_nodes(axes, graph, positions, colours, big=big)
    if positions:
        xs = [p[0] for p in positions.values()]
        ys = [p[1] for p in positions.values()]
        axes.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
        axes.set_ylim(min(ys) - 0.8, max(ys) + 0.5)
    _draw_labels(figure, axes, graph, positions, big=big)
    # Only what the picture shows: a search with no fault draws no fault edge, a verified one
    # no red state and no path to it.
    shown = {
        "initial state": ROOT_COLOUR in colours,
        "state": STATE_COLOUR in colours,
        "end: ok": TERMINAL_COLOUR in colours,
        "end: violated": VIOLATING_COLOUR in colours,
        "not expanded (pruned, cached or past a bound)": UNEXPANDED_COLOUR in colours,
        "the other states at a depth, summed": SUMMARY_COLOUR in colours,
        "choice with a fault": bool(layers[1][0]),
        "shortest path to a violation": bool(layers[2][0]),
    }
    legend = [
        Line2D([], [], marker="o", linestyle="", color=ROOT_COLOUR, label="initial state"),
        Line2D([], [], marker="o", linestyle="", color=STATE_COLOUR, label="state"),
        Line2D([], [], marker="o", linestyle="", color=TERMINAL_COLOUR, label="end: ok"),
        Line2D([], [], marker="o", linestyle="", color=VIOLATING_COLOUR, label="end: violated"),
        Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            color=UNEXPANDED_COLOUR,
            label="not expanded (pruned, cached or past a bound)",
        ),
        Line2D(
            [],
            [],
            marker="s",
            linestyle="",
            color=SUMMARY_COLOUR,
            label="the other states at a depth, summed",
        ),
        Line2D([], [], color=FAULT_COLOUR, linestyle="--", label="choice with a fault"),
        Line2D([], [], color=PATH_COLOUR, linewidth=2.4, label="shortest path to a violation"),
    ]
    legend = [entry for entry in legend if shown[str(entry.get_label())]]
    axes.legend(handles=legend, loc="upper left", fontsize=7, frameon=False, ncols=3,
                bbox_to_anchor=(0, 1.0))  # fmt: skip
    axes.set_title(_title(figure, graph, title), fontsize=11, parse_math=False)
    return figure


def _title(figure: Figure, graph: nx.DiGraph, title: str) -> str:
    """``title`` (or what the space holds), with what a bounded picture draws, wrapped to the
    figure: a report's coverage sentence ran off the picture's edge."""
    heading = _heading(graph)
    if title and "states" in graph.graph:  # bounded: the title says what is drawn, too
        title = f"{title}\n{heading.splitlines()[-1]}"
    characters = max(40, int(figure.get_figwidth() / 0.09))
    return "\n".join(textwrap.fill(line, characters) for line in (title or heading).split("\n"))


class _LabelRoom:
    """Where the labels of a big picture already stand, in inches on the figure: a label that
    would print over one of them is left out (twenty violating end states in one column all
    said "end of the run", one over the other)."""

    #: Inches per character and per line of 7-point text, roughly.
    CHAR, LINE = 0.055, 0.11

    #: Inches a state's marker takes each way from its centre.
    NODE = 0.05

    def __init__(
        self, figure: Figure, axes: Axes, nodes: Iterable[tuple[float, float]] = ()
    ) -> None:
        (left, right), (bottom, top) = axes.get_xlim(), axes.get_ylim()
        self.x_inches = 0.9 * figure.get_figwidth() / max(right - left, 1e-9)
        self.y_inches = 0.85 * figure.get_figheight() / max(top - bottom, 1e-9)
        self.right = right * self.x_inches  # the axes' right edge, in inches
        self.taken = [
            (x * self.x_inches - self.NODE, y * self.y_inches - self.NODE,
             x * self.x_inches + self.NODE, y * self.y_inches + self.NODE)
            for x, y in nodes
        ]  # fmt: skip

    def take(self, x: float, y: float, text: str, *, upright: bool) -> float | None:
        """Where a label for (x, y) (centred, hanging down) goes: its x, moved left to end at
        the picture's edge if it would pass it; None when that place is taken."""
        lines = text.split("\n")
        width = self.CHAR * max(len(line) for line in lines)
        height = self.LINE * len(lines)
        if upright:
            width, height = height, width
        left, top = min(x * self.x_inches, self.right - width / 2) - width / 2, y * self.y_inches
        box = (left, top - height, left + width, top)
        if any(
            box[0] < other[2] and other[0] < box[2] and box[1] < other[3] and other[1] < box[3]
            for other in self.taken
        ):
            return None
        self.taken.append(box)
        return (left + width / 2) / self.x_inches


def _draw_labels(
    figure: Figure,
    axes: Axes,
    graph: nx.DiGraph,
    positions: dict[str, tuple[float, float]],
    *,
    big: bool,
) -> None:
    """Every state's label; in a big picture only the root's, the summaries' and the
    violating states' (the axes' limits must be set: a big picture's labels are placed where
    they fit)."""
    labels = {
        node: _node_text(data)
        for node, data in graph.nodes(data=True)
        if not big or data["root"] or data["violating"] or data.get("summary")
    }
    fits = _LabelRoom(figure, axes, positions.values()) if big else None
    said: set[str] = set()
    for node, text in sorted(labels.items(), key=lambda item: graph.nodes[item[0]]["depth"]):
        x, y = positions[node]
        violating = graph.nodes[node]["violating"]
        colour = VIOLATING_COLOUR if violating else "#222222"
        # A summary's label stands upright: one summary per column, columns close together.
        turn = 90 if graph.nodes[node].get("summary") else 0
        if fits is not None:
            # Red states saying the same thing are labelled once, the shallowest, and no label
            # prints over another or over a state: twenty said "end of the run" in a column.
            if violating and text in said:
                continue
            placed = fits.take(x, y - 0.28, text, upright=bool(turn))
            if placed is None:
                continue
            x = placed
            said.add(text)
        # On a big picture a label stands on white: red words on the red paths were lost.
        box = {"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none",
               "alpha": 0.85} if big else None  # fmt: skip
        axes.text(x, y - 0.28, text, ha="center", va="top", fontsize=7, parse_math=False,
                  color=colour, rotation=turn, bbox=box)  # fmt: skip


def _draw_nodes(
    axes: Axes,
    graph: nx.DiGraph,
    positions: dict[str, tuple[float, float]],
    colours: list[str],
    *,
    big: bool,
) -> None:
    """The states as circles and the summaries of a bounded picture as squares."""
    import networkx as nx

    every = list(graph.nodes)
    for shape, summary in (("o", False), ("s", True)):  # a summary is a square
        chosen = [
            i
            for i, (_, d) in enumerate(graph.nodes(data=True))
            if bool(d.get("summary")) == summary
        ]
        if not chosen:
            continue
        nodes = nx.draw_networkx_nodes(
            graph, positions, ax=axes, nodelist=[every[i] for i in chosen],
            node_color=[colours[i] for i in chosen], node_size=60 if big else 300,
            edgecolors="#222222", linewidths=0.5, node_shape=shape,
        )  # fmt: skip
        nodes.set_rasterized(big)


def _heading(graph: nx.DiGraph) -> str:
    """The default title: what the whole space holds (a bounded picture says what it draws)."""
    violating = sum(1 for _, v in graph.nodes(data="violating") if v)
    states = graph.graph.get("states", graph.number_of_nodes())
    steps = graph.graph.get("steps", graph.number_of_edges())
    in_all = graph.graph.get("violating", violating)
    cut_by = graph.graph.get("cut_by", "")
    heading = f"{states:,} distinct states, {steps:,} steps, {in_all:,} violating"
    if cut_by:  # a cut search reached these states, not every state: it verified nothing
        heading = f"{heading}\nreached, not all there are: {cut_by}"
    # Whether any state violates is the whole space's count: a bound may draw none of them.
    if "states" in graph.graph and in_all:
        heading += f"\ndrawn: the paths to {violating:,} of them; the other states summed by depth"
    elif "states" in graph.graph:
        none = "no state reached violates" if cut_by else "no state violates"
        heading += f"\ndrawn: {none}; the states summed by depth"
    return heading


def _node_text(data: dict[str, Any]) -> str:
    """A state's label as a font can draw it (step keys are user input), shortened."""
    if data.get("summary"):
        return str(data["label"])  # ours, upright in its column: one line ("1,093 states, 2 end")
    text = textwrap.shorten(_CONTROLS.sub("\ufffd", str(data["label"])), 28, placeholder="…")
    # Two short lines, not one long one: neighbouring states along a path stand about an inch
    # apart, and their one-line labels printed over each other.
    text = textwrap.fill(text, 16)
    if data["violating"]:
        text += f"\n{textwrap.shorten(str(data['violations']), 28, placeholder='…')}"
    return text


def _multi(graph: nx.DiGraph) -> nx.MultiDiGraph:
    """The graph as the exporters take it (a multigraph keyed by edge label)."""
    import networkx as nx

    multi = nx.MultiDiGraph(**graph.graph)
    multi.add_nodes_from(graph.nodes(data=True))
    for source, target, data in graph.edges(data=True):
        multi.add_edge(source, target, key=data["label"], **data)
    return multi


def state_graph_html(space: StateSpace, *, title: str = "") -> str:
    """A self-contained page: the drawing (SVG) and each violating state with the shortest
    path that reaches it."""
    from yieldstar_sim.views.figures import figure_bytes

    svg = figure_bytes(draw_state_graph(space, title=title), "svg").decode("utf-8")
    svg = svg[svg.index("<svg") :]
    rows = "".join(
        f"<tr><td>{html.escape(', '.join(space.nodes[key].violations))}</td>"
        f"<td>{len(path)}</td><td>{html.escape(describe_path(path))}</td></tr>"
        for key, path in shortest_paths(space).items()
    )
    table = (
        "<table><tr><th>violated</th><th>steps</th><th>shortest path</th></tr>" + rows + "</table>"
        if rows
        else "<p>No violating state.</p>"
    )
    heading = html.escape(title or "The explored state space")
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{heading}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "td,th{padding:.2em .6em;text-align:left;vertical-align:top}</style></head>"
        f"<body><h1>{heading}</h1><p>{len(space)} distinct states, {len(space.edges)} steps"
        f"{html.escape(_reached(space))}.</p>"
        f"{svg}{table}</body></html>\n"
    )


def _reached(space: StateSpace) -> str:
    return f"; reached, not all there are: {'; '.join(space.cut_by)}" if space.cut_by else ""


def export_state_graph(
    space: StateSpace,
    folder: str | Path,
    formats: Sequence[str] | str = ("svg", "graphml"),
    *,
    stem: str = "state-space",
    title: str = "",
) -> dict[str, Path]:
    """Write ``folder/stem.<ext>`` in each of ``formats`` (among ``svg, png, pdf, graphml,
    json, dot, html``); returns ``{format: path}``. Unknown formats are refused before anything
    is written."""
    from yieldstar_sim.views.figures import figure_bytes
    from yieldstar_sim.views.graph_text import to_dot, to_graphml, to_node_link_json

    requested = formats.split(",") if isinstance(formats, str) else list(formats)
    chosen: list[str] = []
    for name in (str(f).strip().lower() for f in requested):
        if name not in STATE_GRAPH_FORMATS:
            raise ValueError(
                f"unknown state-space format {name!r}: "
                f"choose among {', '.join(STATE_GRAPH_FORMATS)}"
            )
        if name not in chosen:
            chosen.append(name)
    if not stem or stem in {".", ".."} or Path(stem).name != stem or "\\" in stem:
        raise ValueError(f"stem must be a plain file name, not {stem!r}")
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    graph = state_graph(space)
    figure: Figure | None = None
    written: dict[str, Path] = {}
    for format in chosen:
        path = out / f"{stem}.{format}"
        if format in {"svg", "png", "pdf"}:
            figure = figure or draw_state_graph(graph, title=title)
            write_whole(path, figure_bytes(figure, format))
        elif format == "graphml":
            write_whole(path, to_graphml(_multi(graph)))
        elif format == "json":
            write_whole(path, to_node_link_json(_multi(graph)))
        elif format == "dot":  # drawn by Graphviz: as bounded as the picture
            bounded = _multi(bounded_state_graph(graph))
            write_whole(path, to_dot(bounded, title=title, group=False))
        else:
            write_whole(path, state_graph_html(space, title=title))
        written[format] = path
    return written


def state_space_summary(space: StateSpace) -> dict[str, Any]:
    """Counts a reader wants first, as plain data (``json.dumps``-able)."""
    paths = shortest_paths(space)
    return {
        "states": len(space),
        "steps": len(space.edges),
        "end_states": sum(1 for node in space.nodes.values() if node.terminal),
        "violating": [
            {
                "state": key,
                "violations": list(space.nodes[key].violations),
                "shortest_path": [edge_label(e.choice, e.fault) for e in path],
            }
            for key, path in paths.items()
        ],
    }


__all__ = [
    "DRAWN_AT_MOST",
    "STATE_GRAPH_FORMATS",
    "describe_path",
    "draw_state_graph",
    "edge_label",
    "export_state_graph",
    "shortest_paths",
    "state_graph",
    "state_graph_html",
    "state_space_summary",
]
