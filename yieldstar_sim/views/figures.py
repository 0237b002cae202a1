"""Figures that combine views: a run's graph beside its timeline."""

from __future__ import annotations

from typing import TYPE_CHECKING

import networkx as nx

from yieldstar_sim.views.graph import (
    ROW_WIDTH,
    draw_execution_graph,
    graph_from_trace,
    group_siblings,
)
from yieldstar_sim.views.timeline import build_timeline, draw_timeline

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from yieldstar_sim.simulation.result import SimulationRun


#: How many violations a run's caption prints in full; the rest are counted.
CAPTIONED_VIOLATIONS = 3


def violations_caption(run: SimulationRun, at_most: int = CAPTIONED_VIOLATIONS) -> str:
    """Every violation's sentence, one per line (past ``at_most``: "and N more")."""
    lines = [f"\u2022 {violation}" for violation in run.violations[:at_most]]
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
    if group:
        graph = group_siblings(graph)
    layers = [len(layer) for layer in nx.topological_generations(graph)]
    widest = min(max(layers, default=1), ROW_WIDTH)
    rows = sum(-(-count // ROW_WIDTH) for count in layers) or 1
    graph_width = max(5.0, 2.9 * widest)
    timeline_width = max(8.0, min(20.0, timeline.width / 3))
    height = max(5.2 + 0.4 * len(timeline.lanes), 1.5 * rows + 2.0)
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
        f"{run.scenario.name}, seed {run.seed}, {run.runtime_kind}: {run.verdict_text}",
        fontsize=13,
        parse_math=False,
    )
    return figure
