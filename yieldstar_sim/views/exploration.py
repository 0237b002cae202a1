"""Views of an exploration: its summary in words, which fault at which choice point broke what,
and how a violation differs from its nearest passing schedule."""

from __future__ import annotations

from dataclasses import dataclass, field
from textwrap import fill
from typing import TYPE_CHECKING

from yieldstar_sim.core.filenames import file_stem
from yieldstar_sim.views.drawn_text import MAX_LINE, MAX_TICK, drawable, shown
from yieldstar_sim.views.grid import by_point, grid_rows
from yieldstar_sim.views.statespace_bounds import why_not_drawn

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.figure import Figure

    from yieldstar_sim.simulation.explorer import ExplorationReport, FoundViolation
    from yieldstar_sim.simulation.scenario import Scenario

VERDICT_COLOURS = {
    "ok": "#009E73",
    "violated": "#CC0000",
    "incomplete": "#E69F00",
    "equivalent": "#BBBBBB",
}


def exploration_summary(report: ExplorationReport) -> str:
    """A few lines for people (``report.summary()``): verdict, coverage, and each violation
    explained."""
    lines = [
        f"{report.scenario}: {report.strategy} exploration, max {report.max_faults} fault(s), seed "
        f"{report.seed}, {report.runtime}: {report.verdict}",
        f"  {report.coverage()}, in {report.elapsed:.1f}s",
    ]
    if report.incomplete_schedules:
        lines.append(
            f"  {report.incomplete_schedules} schedule(s) did not finish (neither ok nor "
            f"violated): {'; '.join(report.incomplete_reasons)}"
        )
    if report.unfair_schedules:
        lines.append(
            f"  {report.unfair_schedules} schedule(s) cut on a loop only an unfair scheduler "
            f"keeps up (not counted incomplete): {'; '.join(report.unfair_reasons)}"
        )
    lines += [
        f"  RUNTIME ADAPTER fails the conformance case {failure}"
        for failure in report.adapter_failures
    ]
    if not report.violations and not report.runtime_mismatches:
        lines.append("  no invariant was violated")
    for found in report.violations:
        lines.append(f"  VIOLATED {found.invariant}: {found.message}")
        if found.faults:
            lines.append(f"    shrunk to {len(found.faults)} fault(s): {'; '.join(found.faults)}")
        else:
            # Not "seed N's interleaving": a draw or a completion order the seed would not
            # take may be what breaks it.
            lines.append(
                "    with no fault: the schedule alone violates it (its interleaving, draws "
                "and completion orders are in the replay artifact)"
            )
        if found.nearest_passing is not None:
            lines.append(f"    nearest passing: {'; '.join(found.nearest_passing) or 'no faults'}")
        if found.divergence:
            lines.append(f"    first divergence: {found.divergence}")
        if found.artifact_path is not None:
            lines.append(f"    replay artifact: {found.artifact_path}")
    if report.broken_by() and not report.stopped_at_first:
        lines.append("  single faults that break it:")
        lines += [f"    {kind} at {points}" for kind, points in _broken_rows(report).items()]
    lines += [f"  runtime mismatch: {m}" for m in report.runtime_mismatches]
    lines += [f"  NOT DETERMINISTIC: {m}" for m in report.nondeterminism]
    lines += [f"  {c}" for c in report.confirmations]
    lines += [f"  warning: {w}" for w in report.warnings]
    return "\n".join(lines)


def _broken_rows(report: ExplorationReport) -> dict[str, str]:
    """Per fault kind, the choice points where that single fault broke an invariant, in the
    grid's rows: past ``GRID_ROWS`` points, alike points are one ("100 \u00d7 w# put_step
    order-#/charge (100 of 100)"), since at 100 orders the points named one by one made a line
    thousands of characters long (``report.broken_by()`` still names each)."""
    rows = grid_rows(*by_point(report))
    broken: dict[str, str] = {}
    for kind in report.broken_by():
        named = []
        for row in rows:
            if row.verdict(kind) == "violated":
                worst, of = row.count(kind)
                named.append(
                    row.label if len(row.points) == 1 else f"{row.label} ({worst} of {of})"
                )
        broken[kind] = ", ".join(named)
    return broken


def draw_exploration(report: ExplorationReport) -> Figure:
    """Single-fault verdicts as a grid: choice points (rows, in run order) x fault kinds.
    Past ``GRID_ROWS`` choice points, those whose labels differ only in their numbers are one
    row, each cell the worst verdict with how many of its points ended so
    (``views.grid``).

    >>> import yieldstar_sim as ys
    >>> report = ys.explore(ys.load_scenario("trigger-in-step"), confirm=None, stop_at_first=False)
    >>> figure = draw_exploration(report)
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    points, kinds, verdicts = by_point(report)
    rows = grid_rows(points, kinds, verdicts)  # past GRID_ROWS points: one row per pattern
    # Tick labels: their text is set as the figure is drawn, after drawn_text's pass: made
    # drawable here, and no wider than a grid can give them.
    labels = [drawable(shown(row.label, MAX_TICK)) for row in rows]
    folded = any(len(row.points) > 1 for row in rows)
    order = list(VERDICT_COLOURS)
    grid = [
        [order.index(verdict) if (verdict := row.verdict(kind)) else -1 for kind in kinds]
        for row in rows
    ]
    runs = report.schedules_run
    title = f"{shown(report.scenario)}: {runs} schedule{'s' if runs != 1 else ''}, "
    title += report.verdict + (
        f", {len(report.violations)} violation(s)" if report.violations else ""
    )
    # A search cut short fills only the grid's first columns or rows: the empty rest reads as
    # faults that were tried and broke nothing unless the title says why it stopped.
    if report.why_stopped():
        title += f"\n{report.why_stopped()}"
    # Wide enough for the title and tall enough for the axis label: a search that stopped at
    # its first violation has one column and few rows, and both were cut off.
    size = (
        (
            max(2.5 + 1.1 * len(kinds), 2.0 + 0.075 * max(map(len, title.splitlines()))),
            max(1.6 + 0.28 * len(labels), 2.8),
        )
        if labels and kinds
        else (6.0, 1.8)
    )
    figure = Figure(figsize=size, layout="constrained")
    ax = figure.add_subplot()
    if labels and kinds:
        masked = [[value if value >= 0 else float("nan") for value in row] for row in grid]
        ax.imshow(masked, cmap=ListedColormap(list(VERDICT_COLOURS.values())), vmin=0,
                  vmax=len(order) - 1, aspect="auto", interpolation="nearest")  # fmt: skip
        ax.set_xticks(range(len(kinds)), kinds, rotation=30, ha="right", fontsize=8)
        ax.set_yticks(range(len(labels)), labels, fontsize=7, parse_math=False)
        for y, row in enumerate(rows):
            for x, kind in enumerate(kinds):
                worst, of = row.count(kind)
                if of > 1:  # a folded row's cell: how many of its points ended so
                    ax.text(x, y, f"{worst}/{of}", ha="center", va="center", fontsize=7,
                            color="white", parse_math=False)  # fmt: skip
    if not (labels and kinds):
        # An empty grid drew bare 0-1 axes, clipped labels and a legend of colours it did not
        # use (max_faults=0: interleavings only): say in words what there is instead.
        ax.set_axis_off()
        why = (
            " (max 0 faults: interleavings only)"
            if report.max_faults == 0
            # Its schedules are interleavings with their faults, not one fault on one run.
            else _state_graph_words(report)
            if report.strategy == "exhaustive"
            else ""
        )
        what = f"no single-fault schedules to grid{why}"
        if report.strategy in ("random", "pct") and report.max_faults > 0:
            # Its schedules had faults, placed at random: "no single-fault schedules" read as
            # if none had run.
            what = (
                f"no grid: {report.strategy} samples schedules;\nthe systematic strategy tries "
                "every fault kind at every choice point"
            )
        ax.text(0.5, 0.5, f"{title}\n{what}", ha="center", va="center", fontsize=10,
                transform=ax.transAxes, parse_math=False)  # fmt: skip
        return figure
    ax.set_xlabel("fault kind")
    # The note wrapped no wider than the label's first line: a folded grid of one fault kind
    # and a few rows is 2.8 inches high, and on one line it ran past the picture's edges.
    ax.set_ylabel(
        "choice point of the fault-free run"
        + ("\n(# any number:\nalike points are one row)" if folded else "")
    )
    ax.set_title(title, fontsize=10, parse_math=False)
    ax.legend(
        handles=[Patch(color=c, label=v) for v, c in VERDICT_COLOURS.items()],
        loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False,
    )  # fmt: skip
    return figure


def _state_graph_words(report: ExplorationReport) -> str:
    """Where the exhaustive search's picture is instead of the grid: its state graph's file,
    or why there is none (a grid that named a file the search did not write sent the reader
    looking for it)."""
    why = why_not_drawn(report.state_space, report.distinct_states)
    if why is None:
        stem = file_stem(report.scenario)
        return f"\n(the exhaustive search's picture is its state graph, {stem}-states.png)"
    return (
        "\n(the exhaustive search's picture is its state graph, not drawn:\n" + fill(why, 60) + ")"
    )


def draw_divergence(found: FoundViolation, scenario: Scenario | None = None) -> Figure:
    """The violation beside its nearest passing schedule: both graphs on top, both timelines
    below with a cursor at the first event where they differ."""
    from matplotlib.figure import Figure

    from yieldstar_sim.simulation.run import replay
    from yieldstar_sim.views.evidence import mark_violations
    from yieldstar_sim.views.families import collapse_families
    from yieldstar_sim.views.figures import FIGURE_DPI, MAX_PIXELS

    # Here, not at the top: a process that only reads ExplorationPictures (the command line's,
    # whose pictures are drawn in another process) need not load networkx.
    from yieldstar_sim.views.graph import INCHES_PER_LAYER, draw_execution_graph, graph_from_trace
    from yieldstar_sim.views.layout import layered_layout
    from yieldstar_sim.views.timeline import build_timeline, draw_timeline, frame_timeline

    failing = replay(found.artifact, scenario=scenario, check_trace=False)
    # Each title whole up to a line: the faults are what tells the two runs apart, and a
    # name's length (``MAX_LABEL``) cut them in the middle; the graph wraps its title.
    runs = [(shown("violation: " + "; ".join(found.faults), MAX_LINE), failing)]
    if found.nearest_artifact is not None:
        passing = replay(found.nearest_artifact, scenario=scenario, check_trace=False)
        faults = "; ".join(found.nearest_passing or []) or "no faults"
        runs.append((shown("nearest passing: " + faults, MAX_LINE), passing))
    graphs = [graph_from_trace(run.trace) for _, run in runs]
    # Outlined as the run's own picture does, by the violation this figure is about.
    mark_violations(graphs[0], [v for v in failing.violations if v.invariant == found.invariant])
    timelines = [build_timeline(run.trace, run.scenario.worker_names) for _, run in runs]
    # Families folded as the run's own picture folds them: a thousand orders laid out one a
    # box made a panel 240 inches tall.
    graphs = [collapse_families(graph) for graph in graphs]
    # Each row as tall as its deeper panel needs (as draw_run sizes its parts): at half the
    # figure each, two boxes of a graph sat in inches of white above a crowded timeline.
    layers = max(layered_layout(graph).height for graph in graphs)
    heights = [
        INCHES_PER_LAYER * layers + 2.0,
        max(4.0, 1.0 + 0.9 * max(len(t.lanes) for t in timelines)),
    ]
    width, height = 9.0 * len(runs), sum(heights)
    dpi = min(FIGURE_DPI, MAX_PIXELS / max(width, height))  # as draw_run: never past a side
    figure = Figure(figsize=(width, height), dpi=dpi, layout="constrained")
    axes = figure.subplots(2, len(runs), squeeze=False, height_ratios=heights)
    for column, timeline in enumerate(timelines):
        frame_timeline(timeline, axes[1][column])  # each takes its room before any is drawn
    for column, (graph, timeline) in enumerate(zip(graphs, timelines, strict=True)):
        draw_execution_graph(graph, ax=axes[0][column], title=runs[column][0], group=False)
        cursor = None if found.divergence_at is None else timeline.x_of.get(found.divergence_at)
        draw_timeline(timeline, ax=axes[1][column], cursor=cursor)
    divergence = shown(found.divergence or "?", MAX_LINE)
    figure.suptitle(f"{shown(found.invariant)}: first divergence at {divergence}",
                    fontsize=10, parse_math=False)  # fmt: skip
    return figure


@dataclass
class ExplorationPictures:
    """The files ``write_exploration_pictures`` wrote, each as ``{format: path}``."""

    grid: dict[str, Path] = field(default_factory=dict)
    """The choice point x fault kind grid (``draw_exploration``)."""
    divergences: list[dict[str, Path]] = field(default_factory=list)
    """Per violation, in the report's order: the violation beside its nearest passing schedule."""
    graphs: list[dict[str, Path]] = field(default_factory=list)
    """Per violation: its execution graph beside its timeline (``export`` of the replayed run);
    empty when the run could not be made again (``not_drawn`` says why)."""
    not_drawn: dict[int, str] = field(default_factory=dict)
    """Per violation (numbered from 1) whose graph was not drawn: why (its artifact did not
    replay: a scenario that is not deterministic takes another path)."""

    def lines(self) -> list[str]:
        """One line per file, for people: ``grid (png): out/x-explore.png``."""
        lines = [f"grid ({format}): {path}" for format, path in self.grid.items()]
        for number, (divergence, graph) in enumerate(
            zip(self.divergences, self.graphs, strict=True), start=1
        ):
            lines += [f"violation {number} divergence ({f}): {p}" for f, p in divergence.items()]
            lines += [f"violation {number} graph ({f}): {p}" for f, p in graph.items()]
            if number in self.not_drawn:
                lines.append(f"violation {number} graph: not drawn: {self.not_drawn[number]}")
        return lines
