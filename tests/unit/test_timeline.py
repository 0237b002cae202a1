"""The worker timeline and the graph as of any event, from a run's trace."""

from __future__ import annotations

import dataclasses
import io

import pytest
from _pictures import assert_inside

import yieldstar_sim as ys
from yieldstar_sim.simulation import SimulationRun
from yieldstar_sim.views import build_timeline, draw_run, draw_timeline, graph_from_trace
from yieldstar_sim.views.grid import by_point


def run_of(name: str) -> SimulationRun:
    return ys.simulate(ys.load_scenario(name), seed=0, runtime="memory")


def test_a_frozen_worker_keeps_going_past_its_lease_on_its_lane() -> None:
    run = run_of("frozen-worker")
    timeline = build_timeline(run.trace, run.scenario.worker_names)
    assert timeline.lanes == ["w1", "w2", "scenario"]
    stale = [span for span in timeline.spans if span.expires is not None]
    assert len(stale) == 1
    (span,) = stale
    assert (span.execution_id, span.token, span.how) == ("order-42", 1, "refused")
    assert span.start < span.expires < span.end
    (frozen,) = timeline.frozen
    assert frozen[0] == span.worker
    assert [m.kind for m in timeline.marks if m.lane == span.worker].count("refused") == 2
    assert [label for _, label in timeline.ticks] == ["0", "30", "40"]


def test_a_crash_ends_the_delivery_span() -> None:
    run = run_of("trigger-in-step")
    timeline = build_timeline(run.trace, run.scenario.worker_names)
    crashed = [span for span in timeline.spans if span.how == "crash"]
    assert [(s.execution_id, s.token) for s in crashed] == [("order-42", 1)]
    assert any(mark.kind == "crash" for mark in timeline.marks)
    assert sum(mark.kind == "effect" for mark in timeline.marks) == len(run.effects) == 5


def test_the_graph_as_of_an_event_grows_with_the_trace() -> None:
    run = run_of("trigger-in-step")
    admissions = [e.seq for e in run.trace if e.data.get("name") == "workflow.triggered"]
    first, second = admissions
    assert set(graph_from_trace(run.trace, upto=first - 1).nodes) == {"order-42"}
    graph = graph_from_trace(run.trace, upto=first)
    assert set(graph.nodes) == {"order-42", "@ship-order-2"}
    assert not any(d["duplicate"] for _, _, d in graph.edges(data=True))
    final = graph_from_trace(run.trace)
    assert set(final.nodes) == {"order-42", "@ship-order-2", "@ship-order-3"}
    assert all(d["duplicate"] for _, _, d in final.edges(data=True))
    assert {final.nodes[n]["status"] for n in final.nodes} == {"completed"}
    assert second > first


def test_start_calls_are_counted_on_their_one_edge() -> None:
    run = run_of("concurrent-starts")
    graph = graph_from_trace(run.trace)
    ((_, _, data),) = graph.edges(data=True)
    assert data["calls"] == 2
    assert data["duplicate"] is False


def test_the_run_figure_renders_with_a_cursor() -> None:
    run = run_of("concurrent-starts")
    for upto in (None, 5, len(run.trace) - 1):
        figure = draw_run(run, upto=upto)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        assert buffer.getvalue().startswith(b"\x89PNG")
    timeline = build_timeline(run.trace)
    figure = draw_timeline(timeline, title="t", cursor=timeline.x_of[3])
    assert figure.axes[0].get_title() == "t"


def test_the_exploration_grid_and_the_divergence_render() -> None:
    from yieldstar_sim.views import draw_divergence, draw_exploration

    report = ys.explore(ys.load_scenario("trigger-in-step"), confirm=None, stop_at_first=False)
    labels, _kinds, verdicts = by_point(report)
    assert "w2 put_step order-42/ship" in labels
    assert verdicts[("w2 put_step order-42/ship", "crash")] == "violated"
    assert verdicts[("w2 put_step order-42/ship", "crash_after")] == "ok"
    found = report.violations[0]
    assert found.nearest_artifact is not None
    assert found.divergence_at is not None
    for figure in (draw_exploration(report), draw_divergence(found)):
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        assert buffer.getvalue().startswith(b"\x89PNG")


def test_bars_are_batched_one_collection_per_lane_and_look() -> None:
    # A hundred deliveries as a hundred artists made big timelines slow to draw and encode;
    # every bar is still drawn, at its place, in one collection per lane and look.
    from matplotlib.collections import PolyCollection

    run = run_of("frozen-worker")
    timeline = build_timeline(run.trace, run.scenario.worker_names)
    figure = draw_timeline(timeline)
    bars = [  # the deliveries' and the frozen worker's, not the instants' shade behind them
        c
        for c in figure.axes[0].collections
        if isinstance(c, PolyCollection) and c.get_gid() not in ("instants", "breaks")
    ]
    looks = {(span.worker, span.how in ("crash", "refused")) for span in timeline.spans}
    stale_lanes = {span.worker for span in timeline.spans if span.expires is not None}
    frozen_lanes = {lane for lane, _, _ in timeline.frozen}
    assert len(bars) == len(looks) + len(stale_lanes) + len(frozen_lanes)
    drawn = sum(len(c.get_paths()) for c in bars)
    stale = sum(span.expires is not None for span in timeline.spans)
    assert drawn == len(timeline.spans) + stale + len(timeline.frozen)
    starts = sorted(round(float(p.vertices[:, 0].min()), 6) for c in bars for p in c.get_paths())
    expected = sorted(
        round(x, 6)
        for x in [
            *(span.start for span in timeline.spans),
            *(span.expires for span in timeline.spans if span.expires is not None),
            *(start for _, start, _ in timeline.frozen),
        ]
    )
    assert starts == expected


def test_an_exploration_with_no_single_fault_schedule_says_so_instead_of_empty_axes() -> None:
    from yieldstar_sim.views import draw_exploration

    report = ys.explore(
        ys.load_scenario("booking-race-fixed"), strategy="exhaustive", max_faults=0, confirm=None
    )
    (axes,) = draw_exploration(report).axes
    assert not axes.axison
    assert axes.get_legend() is None
    (text,) = axes.texts
    assert "no single-fault schedules to grid (max 0 faults: interleavings only)" in text.get_text()


def test_an_exhaustive_exploration_with_faults_points_to_its_state_graph() -> None:
    from yieldstar_sim.views import draw_exploration

    report = ys.explore(
        ys.load_scenario("durable-start"), strategy="exhaustive", max_faults=1, confirm=None
    )
    (axes,) = draw_exploration(report).axes
    (text,) = axes.texts
    assert "its state graph, durable-start-states.png" in text.get_text()


def test_an_exhaustive_exploration_whose_state_graph_is_not_drawn_names_no_file_but_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # At review size (3 orders x 3 workers) the search keeps the first 100,000 states only and
    # the command line writes no state graph: the grid named a file that was not there.
    from yieldstar_sim.simulation.explorer.exhaustive import ExhaustiveSearch
    from yieldstar_sim.views import draw_exploration

    monkeypatch.setattr(ExhaustiveSearch, "graph_states", 10)
    report = ys.explore(
        ys.load_scenario("durable-start"), strategy="exhaustive", max_faults=1, confirm=None
    )
    (axes,) = draw_exploration(report).axes
    (text,) = axes.texts
    words = " ".join(text.get_text().split())
    assert "-states.png" not in words
    assert f"not drawn: the search kept the first 10 of {report.distinct_states:,} states" in words


def test_a_grid_of_one_fault_kind_keeps_its_title_and_axis_label_inside_the_picture() -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from yieldstar_sim.views import draw_exploration

    report = ys.explore(ys.load_scenario("zombie-attempt"), confirm=None)  # stops at the first
    _labels, kinds, _verdicts = by_point(report)
    assert kinds == ["crash"]
    figure = draw_exploration(report)
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    (axes,) = [a for a in figure.axes if a.get_title()]
    assert_inside(figure, renderer, axes.title, axes.yaxis.label)


def test_a_label_at_the_right_edge_ends_at_its_mark_instead_of_being_left_out() -> None:
    # One skewed worker, cut at t=80, where it reads its clock at the last instant: that
    # belief's label sits at the timeline's right edge.
    scenario = dataclasses.replace(ys.load_scenario("skewed-lease"), workers=1, max_time=80)
    run = ys.simulate(scenario, seed=0, runtime="memory")
    figure = draw_run(run)  # the graph beside the timeline: the timeline is narrow
    texts = [text.get_text() for axes in figure.axes for text in axes.texts]
    beliefs = [m.label for m in build_timeline(run.trace).marks if m.kind == "belief"]
    assert beliefs[-1] == "reads t=20"
    assert beliefs[-1] in texts


def test_a_review_size_grid_folds_alike_choice_points_into_one_row_each() -> None:
    # 100 orders gave 2,680 choice points, one row each: a grid 31,688 pixels high. Past
    # GRID_ROWS, points whose labels differ only in their numbers are one row, with the worst
    # verdict of each fault kind and how many of its points ended so.
    from yieldstar_sim.simulation.explorer import ExplorationReport
    from yieldstar_sim.simulation.explorer.systematic import SystematicCoverage
    from yieldstar_sim.views import draw_exploration
    from yieldstar_sim.views.grid import grid_rows

    verdicts = {}
    for n in range(100):
        verdicts[(f"w{n % 3 + 1} put_step order-{n}/charge", "crash")] = (
            "violated" if n % 10 == 0 else "ok"
        )
        verdicts[(f"w{n % 3 + 1} put_step order-{n}/charge", "freeze")] = "ok"
        verdicts[(f"w{n % 3 + 1} acknowledge order-{n}", "crash")] = "ok"
    verdicts[("w1 claim", "crash")] = "incomplete"
    report = ExplorationReport(
        "orders", "systematic", 1, 0, "memory", systematic=SystematicCoverage(verdicts=verdicts)
    )
    rows = grid_rows(*by_point(report))
    assert [row.label for row in rows] == [
        "100 \u00d7 w# put_step order-#/charge",
        "100 \u00d7 w# acknowledge order-#",
        "w1 claim",
    ]
    charge = rows[0]
    assert (charge.verdict("crash"), charge.count("crash")) == ("violated", (10, 100))
    assert (charge.verdict("freeze"), charge.count("freeze")) == ("ok", (100, 100))
    assert rows[1].verdict("freeze") is None
    (axes,) = draw_exploration(report).axes
    assert [label.get_text() for label in axes.get_yticklabels()] == [row.label for row in rows]
    assert "10/100" in [text.get_text() for text in axes.texts]
    assert "alike points are one row" in axes.get_ylabel()
    assert "\u2717 10/100" in report._repr_html_()
    # At most GRID_ROWS (60) choice points: one row each, as before, alike or not.
    few = {
        key: value for key, value in verdicts.items() if key[0].endswith(("-1/charge", "-2/charge"))
    }
    fewer = ExplorationReport(
        "o", "systematic", 1, 0, "memory", systematic=SystematicCoverage(verdicts=few)
    )
    labels = [row.label for row in grid_rows(*by_point(fewer))]
    assert labels == ["w2 put_step order-1/charge", "w3 put_step order-2/charge"]


def test_a_sampled_exploration_says_why_it_has_no_grid_not_that_nothing_ran() -> None:
    from yieldstar_sim.views import draw_exploration

    report = ys.explore(
        ys.load_scenario("trigger-in-step"), strategy="pct", budget=5, confirm=None,
        stop_at_first=False,
    )  # fmt: skip
    (axes,) = draw_exploration(report).axes
    (text,) = axes.texts
    words = text.get_text()
    assert "no single-fault schedules" not in words
    assert "no grid: pct samples schedules" in words
    assert "systematic strategy tries every fault kind at every choice point" in words


def test_an_execution_s_own_timeline_draws_no_empty_worker_lane() -> None:
    # zombie-attempt: w2's only part in order-42's story is the attempt that hung, drawn on
    # that attempt's own lane; w2's own lane was drawn empty above it.
    run = ys.simulate(ys.load_scenario("zombie-attempt"), seed=0, runtime="memory")
    (axes,) = run.timeline("order-42").axes
    lanes = [label.get_text() for label in axes.get_yticklabels()]
    assert lanes == ["w1", "w2: stalled attempt (token 1)", "scenario"]
    # The whole run's timeline keeps w2's lane: it runs order-43 there.
    (whole,) = run.timeline().axes
    assert "w2" in [label.get_text() for label in whole.get_yticklabels()]


def _label_overlaps(figure: object) -> list[tuple[str, str]]:
    """The pairs of a timeline's labels (its 7 pt texts) that print over each other."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    assert isinstance(figure, Figure)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [
        (text.get_text(), text.get_window_extent(renderer))
        for ax in figure.axes
        for text in ax.texts
        if isinstance(text, Text) and text.get_fontsize() == 7 and text.get_text()
    ]
    return [
        (a, b)
        for i, (a, box) in enumerate(boxes)
        for b, other in boxes[i + 1 :]
        if box.overlaps(other) and box.intersection(box, other).width > 1.0  # type: ignore[union-attr]
    ]


def test_a_skewed_worker_s_clock_readings_are_labelled_without_printing_over_each_other() -> None:
    """A worker whose clock runs behind gets a label per instant under its lane: they were
    spaced for the axes' width before the layout took the lanes' names and the legend out of
    it, and ran into each other. Alone and as one of the divergence figure's two panels."""
    from yieldstar_sim.views.exploration import draw_divergence

    scenario = dataclasses.replace(
        ys.load_scenario("zombie-attempt-fixed"), max_time=900, workers=1
    )
    skew = ys.Fault("skew", worker="w1", op="elapse", execution_id="order-43", seconds=70)
    run = ys.simulate(scenario, runtime="memory", faults=[skew])
    figure = run.timeline()
    assert sum("reads t=" in text.get_text() for text in figure.axes[0].texts) > 10
    assert _label_overlaps(figure) == []
    report = ys.explore(
        dataclasses.replace(scenario, workers=2), strategy="exhaustive", max_faults=2,
        kinds=["skew"], confirm=None,
    )  # fmt: skip
    (found,) = report.violations
    divergence = draw_divergence(found)
    titles = [ax.get_title().replace("\n", " ") for ax in divergence.axes[:2]]
    assert titles[0] == "violation: " + "; ".join(found.faults)  # whole, wrapped to its panel
    assert _label_overlaps(divergence) == []


def test_the_divergence_figure_outlines_the_executions_its_violation_names() -> None:
    from yieldstar_sim.views.exploration import draw_divergence

    report = ys.explore(ys.load_scenario("trigger-in-step"), confirm=None)
    found = report.violations[0]
    figure = draw_divergence(found)
    violation, passing = (
        {text.get_text() for text in ax.texts if "named by violation" in text.get_text()}
        for ax in figure.axes[:2]
    )
    assert len(violation) == 3  # the caller and both of the targets its one step admitted
    assert all(text.endswith("named by violation 1") for text in violation)
    assert passing == set()
