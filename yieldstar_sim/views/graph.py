"""The parent-child execution graph: who started whom, through which step.

>>> import yieldstar_sim as ys
>>> runtime = ys.MemoryRuntime()
>>> caller = runtime.trigger("charge-order", execution_id="order-42")
>>> _ = runtime.start(ys.StartRequest(ys.RequestId(caller, "ship"), "ship-order"))
>>> graph = execution_graph(runtime)
>>> sorted(graph.edges(keys=True))
[('order-42', '@ship-order:order-42/ship', 'ship')]
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.ops import Op
from yieldstar_sim.engine.world import TRIGGERED
from yieldstar_sim.simulation.trace_payloads import (
    ClientAnswerData,
    EffectData,
    RuntimeActionData,
    StartChildData,
    StartData,
    StatusData,
    TraceKind,
    TriggerData,
)
from yieldstar_sim.views.drawn_text import fitted, wrapped
from yieldstar_sim.views.evidence import (
    CONTINUED_AS,
    TIMES,
    edge_label,
    edge_line,
    mark_trace_evidence,
    mark_violations,
    node_label,
)
from yieldstar_sim.views.families import GROUP_AT_LEAST, collapse_families
from yieldstar_sim.views.layout import Layout, layered_layout

# networkx loads where a graph is made, not at import: ``import yieldstar_sim`` imports the views
# (through the widgets and the composition root) and must stay quick.
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    import networkx as nx
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from yieldstar_sim.engine.world import Effect
    from yieldstar_sim.runtime.protocol import ExecutionClient
    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.trace import TraceEvent

#: The colour of what a reviewer must see: a duplicate admission, a violation's execution.
DUPLICATE_COLOUR = "#CC0000"
#: Matplotlib line styles by ``edge_line``: the exports map the same five words to their own.
#: A run's next run is a solid line in its own colour (``CONTINUED_COLOUR``): matplotlib has
#: four named dash patterns, and the other four kinds take them.
EDGE_STYLES = {"owned": "-", "detached": "--", "joined": "-.", "trigger": ":", "continued": "-"}
#: The colour of the edge between consecutive runs of one instance (Okabe-Ito blue).
CONTINUED_COLOUR = "#0072B2"
#: Horizontal distance between the centres of two slots of the layout, in data units (boxes
#: are ~1.7 wide).
NODE_SPACING = 2.2
#: Inches a slot and a layer of the layout take in a figure of the graph alone.
INCHES_PER_SLOT = 2.6
INCHES_PER_LAYER = 1.9
#: Where an edge's label sits between parent and child: nearer the child, which it names; a
#: label that would print over its left sibling's, even wrapped, sits nearer the parent.
LABEL_AT = 0.62
LABEL_NEAR_PARENT = 0.36
#: Data units per character of an edge label: 9 pt is about 0.075 in a character, and the
#: axes are narrower than the layout's inches (margins, the legend): 0.1 in, to be safe.
_LABEL_CHAR = 0.1 * NODE_SPACING / INCHES_PER_SLOT
#: Data units per character of a node's label (10 pt, about 0.083 in a character).
_BOX_CHAR = 0.083 * NODE_SPACING / INCHES_PER_SLOT
#: Line width of the outline of an execution a violation names.
VIOLATION_OUTLINE = 3.0

#: Node colours by execution status (colour-blind-safe Okabe-Ito palette).
STATUS_COLOURS = {
    "running": "#F0E442",
    "pending": "#E69F00",
    "suspended": "#56B4E9",
    "completed": "#009E73",
    "failed": "#D55E00",
    "cancelled": "#999999",
    "dead-lettered": "#CC79A7",
    "continued-as-new": "#56B4E9",
    "pruned": "#DDDDDD",
}


def execution_graph(runtime: ExecutionClient, effects: Iterable[Effect] = ()) -> nx.MultiDiGraph:
    """Build the graph of executions (nodes) and parent links (edges keyed by step key).

    Node attributes: ``workflow_id``, ``status``, ``origin``; edge attributes: ``kind``
    (``"start"``, or ``"trigger"`` for a non-durable trigger made from a step body, found in
    ``effects`` by its provenance), ``step_key``, ``detached``, ``retained`` (whether the
    start-request record still exists) and ``duplicate`` (the step admitted more than one
    execution). A run that continued as new has an edge of kind ``"continued"`` (keyed
    ``CONTINUED_AS``) to the run of its instance that it admitted.
    """
    import networkx as nx

    graph = nx.MultiDiGraph()
    retained = {
        (r.request_id.execution_id, r.request_id.step_key, r.target_execution_id)
        for r in runtime.start_requests()
    }
    records = runtime.executions()
    for record in records:
        graph.add_node(
            record.execution_id,
            workflow_id=record.workflow_id,
            status=str(record.status),
            origin=record.origin,
        )
    for record in records:
        link = record.parent
        if link is None:
            continue
        if link.execution_id not in graph:
            # A pruned caller: keep the link visible, the node marked as gone.
            graph.add_node(link.execution_id, workflow_id="?", status="pruned", origin="?")
        graph.add_edge(
            link.execution_id,
            record.execution_id,
            key=link.step_key,
            kind="start",
            step_key=link.step_key,
            detached=link.detached,
            retained=(link.execution_id, link.step_key, record.execution_id) in retained,
            duplicate=False,
        )
    for record in records:
        after = record.result.get("continuedAs") if isinstance(record.result, dict) else None
        if record.status == "continued-as-new" and after in graph:
            _continued(graph, record.execution_id, str(after))
    for effect in effects:
        if effect.name != TRIGGERED:
            continue
        target = str(effect.data.get("execution_id"))
        if effect.execution_id in graph and target in graph:
            graph.add_edge(
                effect.execution_id,
                target,
                key=f"{effect.step_key}#{target}",
                kind="trigger",
                step_key=effect.step_key,
                detached=True,
                retained=False,
                duplicate=False,
            )
    _mark_duplicates(graph)
    return graph


def run_graph(run: SimulationRun) -> nx.MultiDiGraph:
    """The run's execution graph from the runtime's records (``execution_graph``), with the
    trace's evidence and the run's violations marked on it, and the run's totals as the
    graph's ``totals`` (``run.totals().to_json()``): what every export of a run draws or
    writes."""
    graph = execution_graph(run.runtime, run.effects)
    mark_trace_evidence(graph, run.trace)
    mark_violations(graph, run.violations)
    graph.graph["totals"] = run.totals().to_json()
    return graph


def graph_from_trace(trace: Iterable[TraceEvent], upto: int | None = None) -> nx.MultiDiGraph:
    """The execution graph as of trace event ``upto`` (inclusive; default: the end).

    Built from the trace alone (admissions, clients' admissions, accepted starts, body
    triggers, claims and acknowledgements, a continue-as-new's next run), so a stepper can
    show the graph at any event.
    Edges of started targets carry ``calls``: how many start calls their request took (replays
    included); nodes the evidence of ``mark_trace_evidence`` (faults, retries).
    """
    import networkx as nx

    graph = nx.MultiDiGraph()
    calls: dict[tuple[str, str], int] = {}
    for event in trace:
        if upto is not None and event.seq > upto:
            break
        data = event.data
        if isinstance(data, TriggerData) and event.execution_id:
            graph.add_node(event.execution_id, workflow_id=data.workflow_id,
                           status="pending", origin="trigger")  # fmt: skip
        elif isinstance(data, ClientAnswerData) and data.answer == "admitted":
            graph.add_node(str(data.execution_id), workflow_id=data.workflow_id or "?",
                           status="pending", origin="trigger")  # fmt: skip
        elif (
            isinstance(data, StartChildData)
            and event.execution_id
            and event.step_key
            and data.accepted is not None
        ):
            child = data.accepted
            origin = "spawn" if data.detached else "child"
            if child not in graph:
                graph.add_node(child, workflow_id=data.workflow_id,
                               status="pending", origin=origin)  # fmt: skip
            kind = "start" if data.created else "joined"
            if not graph.has_edge(event.execution_id, child, key=event.step_key):
                graph.add_edge(event.execution_id, child, key=event.step_key, kind=kind,
                               step_key=event.step_key, detached=data.detached,
                               retained=True, duplicate=False, calls=1)  # fmt: skip
        elif isinstance(data, StartData) and event.execution_id and event.step_key:
            request = (event.execution_id, event.step_key)
            calls[request] = calls.get(request, 0) + 1
            target = data.accepted
            if target is None:
                continue
            if target not in graph:
                graph.add_node(target, workflow_id=data.workflow_id,
                               status="pending", origin="start")  # fmt: skip
            if not graph.has_edge(event.execution_id, target, key=event.step_key):
                graph.add_edge(event.execution_id, target, key=event.step_key, kind="start",
                               step_key=event.step_key, detached=data.detached,
                               retained=True, duplicate=False, calls=0)  # fmt: skip
            graph.edges[event.execution_id, target, event.step_key]["calls"] = calls[request]
        elif isinstance(data, EffectData) and data.name == TRIGGERED:
            admitted = data.data
            target = str(admitted["execution_id"])
            graph.add_node(target, workflow_id=str(admitted["workflow_id"]), status="pending",
                           origin="trigger")  # fmt: skip
            if event.execution_id in graph:
                graph.add_edge(event.execution_id, target, key=f"{event.step_key}#{target}",
                               kind="trigger", step_key=event.step_key, detached=True,
                               retained=False, duplicate=False, calls=1)  # fmt: skip
        elif isinstance(data, RuntimeActionData) and data.status and event.execution_id in graph:
            graph.nodes[event.execution_id]["status"] = data.status  # what the runtime did
        elif event.kind == TraceKind.CALL and event.op == Op.CLAIM and event.execution_id in graph:
            if graph.nodes[event.execution_id]["status"] in ("pending", "suspended"):
                graph.nodes[event.execution_id]["status"] = "running"
        elif event.op == Op.ACKNOWLEDGE and event.execution_id in graph:
            _acknowledged(graph, str(event.execution_id), data)
        elif (
            event.kind in (TraceKind.CRASH, TraceKind.REJECT)
            and event.execution_id in graph
            and graph.nodes[event.execution_id]["status"] == "running"
        ):
            graph.nodes[event.execution_id]["status"] = "pending"
    _mark_duplicates(graph)
    mark_trace_evidence(graph, trace, upto)
    return graph


def _acknowledged(graph: nx.MultiDiGraph, execution_id: str, data: object) -> None:
    """An acknowledgement's status on its node; a run that continued as new adds the
    instance's next run, which the acknowledgement admitted."""
    status = data.status if isinstance(data, StatusData) else "?"
    graph.nodes[execution_id]["status"] = status
    after = data.execution_id if isinstance(data, StatusData) else None
    if status == "continued-as-new" and after and after not in graph:
        workflow_id = graph.nodes[execution_id]["workflow_id"]
        graph.add_node(after, workflow_id=workflow_id, status="pending", origin="continue")
        _continued(graph, execution_id, after)


def _continued(graph: nx.MultiDiGraph, run: str, after: str) -> None:
    """The edge from ``run``, which continued as new, to ``after``, the run it admitted."""
    graph.add_edge(run, after, key=CONTINUED_AS, kind="continued", step_key=CONTINUED_AS,
                   detached=False, retained=True, duplicate=False, calls=1)  # fmt: skip


def _mark_duplicates(graph: nx.MultiDiGraph) -> None:
    per_step: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for source, target, key, data in graph.edges(keys=True, data=True):
        per_step.setdefault((source, data["step_key"]), []).append((source, target, key))
    for edges in per_step.values():
        if len(edges) > 1:
            for source, target, key in edges:
                graph.edges[source, target, key]["duplicate"] = True


def group_siblings(graph: nx.MultiDiGraph, at_least: int = GROUP_AT_LEAST) -> nx.MultiDiGraph:
    """A copy of ``graph`` with each family of alike executions drawn as one node: the
    stepper's *group alike executions* and ``draw_execution_graph(group=True)``. See
    ``yieldstar_sim.views.families`` for what makes a family; a family node has ``group``
    (how many), ``members`` (their IDs, in order), ``executions`` and ``shape``.

    >>> import yieldstar_sim as ys
    >>> runtime = ys.MemoryRuntime()
    >>> order = runtime.trigger("order", execution_id="order-1")
    >>> for i in range(1, 6):
    ...     _ = runtime.start(ys.StartRequest(ys.RequestId(order, f"line-{i}"), "line"))
    >>> grouped = group_siblings(execution_graph(runtime))
    >>> [(n, d.get("group")) for n, d in grouped.nodes(data=True)]
    [('order-1', None), ('5 \u00d7 line, pending', 5)]
    """
    return collapse_families(graph, at_least=at_least)


def graph_size(layout: Layout) -> tuple[float, float]:
    """The size in inches at which a graph of this layout is drawn readably on its own."""
    return (
        max(6.0, INCHES_PER_SLOT * layout.width + 0.6),
        max(3.5, INCHES_PER_LAYER * layout.height + 1.5),
    )


def _legend(graph: nx.MultiDiGraph) -> list[Any]:
    """Legend entries for what ``graph`` shows, and nothing else."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = [
        Patch(facecolor=colour, edgecolor="#222222", label=status)
        for status, colour in STATUS_COLOURS.items()
        if any(d["status"] == status for _, d in graph.nodes(data=True))
    ]
    kinds = {(d["kind"], d["detached"], d["duplicate"]) for _, _, d in graph.edges(data=True)}
    if ("start", False, False) in kinds or ("start", False, True) in kinds:
        handles.append(Line2D([], [], color="#333333", label="parent link (owned)"))
    if ("start", True, False) in kinds or ("start", True, True) in kinds:
        handles.append(
            Line2D([], [], color="#333333", linestyle="--", label="parent link (detached)")
        )
    if any(kind == "trigger" for kind, _, _ in kinds):
        handles.append(Line2D([], [], color="#333333", linestyle=":", label="non-durable trigger"))
    if any(kind == "joined" for kind, _, _ in kinds):
        handles.append(Line2D([], [], color="#333333", linestyle="-.", label="joined (not owned)"))
    if any(kind == "continued" for kind, _, _ in kinds):
        handles.append(
            Line2D([], [], color=CONTINUED_COLOUR, linewidth=2.0, label="continued as new")
        )
    if any(d.get("group") for _, d in graph.nodes(data=True)):
        handles.append(
            Patch(
                facecolor="white",
                edgecolor="#222222",
                label=f"N {TIMES} shape: a family of alike executions",
            )
        )
    if any(d.get("violation") for _, d in graph.nodes(data=True)):
        handles.append(
            Patch(
                facecolor="white",
                edgecolor=DUPLICATE_COLOUR,
                linewidth=VIOLATION_OUTLINE,
                label="named by a violation",
            )
        )
    if any(duplicate for _, _, duplicate in kinds):
        handles.append(
            Line2D(
                [], [], color=DUPLICATE_COLOUR, linewidth=2.2, label="one step, several admissions"
            )
        )
    return handles


def _label_places(
    graph: nx.MultiDiGraph, positions: Mapping[Any, tuple[float, float]]
) -> dict[tuple[Any, Any, Any], tuple[float, str]]:
    """Each edge's label and where along its edge it sits, at ``LABEL_AT``. When a parent's
    labels would print over each other, all of them are wrapped narrower, and one that still
    would sits at ``LABEL_NEAR_PARENT`` (two "duplicate admission" labels of trigger-in-step
    touched)."""
    places: dict[tuple[Any, Any, Any], tuple[float, str]] = {}
    for source in graph.nodes:
        x1 = positions[source][0]
        edges = sorted(graph.out_edges(source, keys=True, data=True),
                       key=lambda edge: positions[edge[1]])  # fmt: skip
        for wrap in (False, True):
            right_end: dict[float, float] = {}  # per row of children, where the last label ends
            collided = False
            for _, target, key, data in edges:
                x2, row = positions[target]
                lines = edge_label(data["step_key"], data).split("\n")
                if wrap:  # each line broken at its middle space: about half as wide
                    lines = [part for line in lines for part in _halves(line)]
                half = _LABEL_CHAR * (max(len(line) for line in lines) + 1) / 2
                at = LABEL_AT
                if x1 + (x2 - x1) * at - half < right_end.get(row, -math.inf):
                    collided, at = True, LABEL_NEAR_PARENT
                right_end[row] = max(right_end.get(row, -math.inf), x1 + (x2 - x1) * at + half)
                places[source, target, key] = (at, "\n".join(lines))
            if not collided:
                break
    return places


def _halves(line: str) -> list[str]:
    """``line`` broken at the space nearest its middle (a step key, one word, stays whole)."""
    spaces = [i for i, char in enumerate(line) if char == " "]
    if not spaces:
        return [line]
    cut = min(spaces, key=lambda i: abs(i - len(line) / 2))
    return [line[:cut], line[cut + 1 :]]


def draw_execution_graph(
    graph: nx.MultiDiGraph,
    *,
    title: str = "",
    caption: str = "",
    ax: Axes | None = None,
    group: bool = True,
) -> Figure:
    """Render the execution graph with matplotlib; returns the Figure (never shows it).

    ``caption`` goes under the graph (the invariants' sentences for a violation, in the
    duplicate colour); with ``ax``, the graph is drawn into that axes of an existing figure.
    With ``group`` (the default), plain siblings are drawn as one box (``group_siblings``);
    ``group=False`` draws every execution.
    """
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyArrowPatch

    if group:
        graph = collapse_families(graph)
    layout = layered_layout(graph)
    positions = {node: (NODE_SPACING * x, y) for node, (x, y) in layout.positions.items()}
    if ax is None:
        figure = Figure(figsize=graph_size(layout), layout="constrained")
        axes = figure.add_subplot()
    else:
        figure, axes = ax.figure, ax  # type: ignore[assignment]
    axes.set_axis_off()
    places = _label_places(graph, positions)
    for source, target, key, data in graph.edges(keys=True, data=True):
        (x1, y1), (x2, y2) = positions[source], positions[target]
        line = edge_line(data)
        colour = DUPLICATE_COLOUR if data["duplicate"] else "#333333"
        if line == "continued":
            colour = CONTINUED_COLOUR
        style = EDGE_STYLES[line]
        # A bare arrow patch, not an annotation: no empty text to lay out, and no shrinking
        # (the ends already stand off the boxes), whose path clipping cost a tenth of a big
        # graph's PNG. Added as an artist, not with add_patch: the limits are set below, and
        # add_patch's update of the data limits draws each arrow's path once more (a tenth of
        # drawing a 100-execution graph).
        axes.add_artist(
            FancyArrowPatch(
                (x1, y1 - 0.18),
                (x2, y2 + 0.18),
                arrowstyle="-|>",
                mutation_scale=10,
                shrinkA=0,
                shrinkB=0,
                color=colour,
                linestyle=style,
                linewidth=2.2 if data["duplicate"] else 2.0 if line == "continued" else 1.4,
            )
        )
        at, text = places[source, target, key]
        axes.text(
            x1 + (x2 - x1) * at,
            y1 + (y2 - y1) * at,
            text,
            ha="center",
            va="center",
            fontsize=9,
            bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "#BBBBBB"},
            parse_math=False,  # a step key is user input: "$" is a dollar, not math
        )
    for node, data in graph.nodes(data=True):
        x, y = positions[node]
        members = data.get("members")
        label = node_label(node, data)
        bbox = {
            "boxstyle": "square,pad=0.5" if data["origin"] == "trigger" else "round,pad=0.5",
            "facecolor": STATUS_COLOURS.get(str(data["status"]), "#FFFFFF"),
            "edgecolor": DUPLICATE_COLOUR if data.get("violation") else "#222222",
            "linewidth": VIOLATION_OUTLINE if data.get("violation") else 1.0,
            "alpha": 0.9,
        }
        if members:  # a stack of boxes: the one behind peeks out
            axes.text(x + 0.07, y - 0.07, label, ha="center", va="center", fontsize=10,
                      bbox=bbox, color="none", parse_math=False)  # fmt: skip
        axes.text(x, y, label, ha="center", va="center", fontsize=10, bbox=bbox,
                  parse_math=False)  # fmt: skip
    xs = [p[0] for p in positions.values()] or [0.0]
    ys = [p[1] for p in positions.values()] or [0.0]
    # Room for the widest box at either end: a family's words were cut off at the left edge.
    widest = max(
        (len(line) for node, data in graph.nodes(data=True)
         for line in node_label(node, data).split("\n")),
        default=0,
    )  # fmt: skip
    margin = max(NODE_SPACING / 2, _BOX_CHAR * (widest + 2) / 2) + 0.2
    axes.set_xlim(min(xs) - margin, max(xs) + margin)
    axes.set_ylim(min(ys) - 0.9, max(ys) + 0.5)
    handles = _legend(graph)
    axes.legend(handles=handles, loc="lower left", fontsize=8, frameon=False, ncols=2)
    if title:
        # As wide as the axes: one of two panels side by side ran its title into the other's.
        root = axes.get_figure(root=True)
        width = axes.get_position().width * root.get_figwidth() if root is not None else 1e9
        axes.set_title(fitted(title, width, 12), fontsize=12, parse_math=False)
    if caption:
        # As wide as the axes: a caption wrapped wider ran off a narrow panel's left edge.
        root = axes.get_figure(root=True)
        inches = axes.get_position().width * (root.get_figwidth() if root is not None else 10)
        columns = max(40, min(120, int(inches * 72 / (8.5 * 0.6))))
        text = wrapped(caption, columns)
        axes.text(
            0.5, -0.01, text, transform=axes.transAxes, ha="center",
            va="top", fontsize=8.5, color=DUPLICATE_COLOUR, parse_math=False,
        )  # fmt: skip
    return figure
