"""The timeline at review size, second pass (issue 53, item 3): time to scale between instants
with marked breaks where stretches of nothing are cut, the workers' busy share as a counter
track, the notable executions' lanes drawn out in full while the rest aggregate, and one
execution's own timeline (``run.timeline(execution_id)``, ``yieldstar-sim run --focus ID``)."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from _review_size import trigger_in_step

import yieldstar_sim as ys
from yieldstar_sim.simulation.trace import TraceEvent
from yieldstar_sim.simulation.trace_payloads import TraceKind
from yieldstar_sim.views import build_timeline, draw_timeline
from yieldstar_sim.views.timeline_axis import time_axis
from yieldstar_sim.views.timeline_focus import BUSY_LANE, FOCUS_LANES, started_by

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.figure import Figure


@pytest.fixture(scope="module")
def bug300() -> ys.SimulationRun:
    return ys.simulate(trigger_in_step(300, crashed=150), seed=0, runtime="memory")


def test_time_runs_to_scale_between_instants() -> None:
    run = ys.simulate(ys.load_scenario("frozen-worker"), seed=0, runtime="memory")
    timeline = build_timeline(run.trace, run.scenario.worker_names)
    instants = {instant.t: instant for instant in timeline.instants}
    assert sorted(instants) == [0.0, 30.0, 40.0]
    # Two gaps of 30 s and 10 s: three times as wide, whatever the events in between.
    first = instants[30.0].start - instants[0.0].end
    second = instants[40.0].start - instants[30.0].end
    assert first == pytest.approx(3 * second)
    assert [label for _, label in timeline.scale_ticks] == ["5", "10", "15", "20", "25", "35"]
    assert timeline.breaks == []
    # The worker frozen for 40 s: its hatched bar is the 40 s, to scale.
    ((_, start, end),) = timeline.frozen
    assert end - start > first


def events_at(times: list[float]) -> list[TraceEvent]:
    return [TraceEvent(seq, t, TraceKind.TRIGGER) for seq, t in enumerate(times)]


def test_a_long_stretch_of_nothing_is_cut_and_marked() -> None:
    axis = time_axis(events_at([0, 0, 1, 1, 2, 2, 3600, 3600]))
    (cut,) = axis.breaks
    assert (cut.t_from, cut.t_to, cut.seconds) == (2, 3600, 3598)
    assert cut.end - cut.start < 0.05 * axis.width  # a break, not an hour to scale
    assert axis.x_at(1801) == pytest.approx((cut.start + cut.end) / 2)
    # The second to scale on each side of the cut: one scale for the axis.
    assert axis.scale == pytest.approx(axis.instants[1].start - axis.instants[0].end)
    figure = draw_timeline(build_timeline(events_at([0, 0, 1, 1, 2, 2, 3600, 3600])))
    texts = [text.get_text() for text in figure.axes[0].texts]
    assert "3,598 s\ncut" in texts
    assert "a stretch of nothing, cut" in figure.axes[0].get_xlabel()
    # The same hour with a delivery held across it is time, not nothing: to scale.
    assert time_axis(events_at([0, 3600])).breaks == []


def drawn_offsets(figure: Figure) -> set[tuple[float, float]]:
    from matplotlib.collections import PathCollection

    return {
        (float(x), float(y))
        for collection in figure.axes[0].collections
        if isinstance(collection, PathCollection)
        for x, y in collection.get_offsets()
    }


def test_the_busy_share_and_the_notable_executions_lanes(bug300: ys.SimulationRun) -> None:
    from yieldstar_sim.views.evidence import mark_violations
    from yieldstar_sim.views.figures import violation_named
    from yieldstar_sim.views.graph import graph_from_trace

    graph = graph_from_trace(bug300.trace)
    mark_violations(graph, bug300.violations)
    timeline = build_timeline(bug300.trace, ["w1", "w2", "w3"], notable=violation_named(graph))
    assert timeline.lanes[0] == BUSY_LANE
    shares = [share for _, share in timeline.busy]
    assert min(shares) == 0.0
    assert max(shares) == 1.0  # all three at once
    assert all(share in (0.0, 1 / 3, 2 / 3, 1.0) for share in shares)
    # order-150 and its two shipments, in the story's order, on lanes of their own.
    named = {"order-150", *graph.successors("order-150")}
    assert set(timeline.focus) == named
    assert timeline.focus[0] == "order-150"
    assert timeline.lanes[-3:] == timeline.focus_lanes
    own = [span for span in timeline.spans if span.worker == "order-150"]
    assert [(span.label, span.how) for span in own] == [
        ("w2 \u00b7 token 1", "crash"),
        ("w1 \u00b7 token 2", "acknowledge"),
    ]
    figure = draw_timeline(timeline)
    drawn = drawn_offsets(figure)
    lane_y = {lane: -index for index, lane in enumerate(timeline.lanes)}
    focused = [mark for mark in timeline.marks if mark.lane in timeline.focus_lanes]
    assert len(focused) > 10
    assert all((mark.x, lane_y[mark.lane]) in drawn for mark in focused)  # every one
    routine = [mark for mark in timeline.marks if mark.lane == "w1" and mark.kind == "effect"]
    assert len([m for m in routine if (m.x, 0 - 1) in drawn]) < len(routine)  # aggregated


def test_a_story_size_run_has_neither_busy_track_nor_lanes_per_execution() -> None:
    run = ys.simulate(ys.load_scenario("trigger-in-step"), seed=0, runtime="memory")
    timeline = build_timeline(run.trace, run.scenario.worker_names)
    assert (timeline.busy, timeline.focus) == ([], [])
    assert BUSY_LANE not in timeline.lanes


def test_at_most_a_few_executions_get_lanes_of_their_own() -> None:
    # Every order crashes once: each is notable, a handful get lanes.
    scenario = ys.Scenario(
        name="every-order-crashes",
        workflows=trigger_in_step(1, crashed=1).workflows,
        triggers=[
            ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}")
            for n in range(1, 41)
        ],
        faults=[
            ys.Fault("crash", op="put_step", execution_id=f"order-{n}", step_key="charge")
            for n in range(1, 41)
        ],
        workers=3,
    )
    run = ys.simulate(scenario, seed=0, runtime="memory")
    timeline = build_timeline(run.trace, run.scenario.worker_names)
    assert len(timeline.focus) == FOCUS_LANES


def test_one_execution_s_own_timeline(bug300: ys.SimulationRun) -> None:
    figure = bug300.timeline("order-150")
    axes = figure.axes[0]
    assert axes.get_title() == (
        "order-150: its timeline and the 2 executions it started "
        f"({', '.join(started_by(bug300.trace, 'order-150'))})"
    )
    lanes = [label.get_text() for label in axes.get_yticklabels()]
    # Only w1 and w2 touch order-150 and its shipments: rows due at one instant are claimed
    # by ID, so w1 (not w3) runs the first shipment, @ship-order-358, at t=0.
    assert lanes == ["w1", "w2", "scenario"]
    spans = {text.get_text() for text in axes.texts}
    assert {"order-150 \u00b7 token 1", "order-150 \u00b7 token 2"} <= spans
    assert "w2 crashed" in spans
    assert bug300.timeline().axes[0].get_title().startswith("trigger-in-step-300, seed 0")
    with pytest.raises(ValueError, match=r"no execution 'order-1500' .*did you mean 'order-150'"):
        bug300.timeline("order-1500")


def test_the_command_line_draws_an_execution_s_own_timeline(tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "yieldstar_sim.cli", "run", "trigger-in-step", "--runtime",
           "memory", "--out", "out", "--quiet"]  # fmt: skip
    done = subprocess.run([*cli, "--focus", "order-42", "--format", "svg,dot"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 1, done.stderr
    drawn = tmp_path / "out" / "trigger-in-step-seed0-order-42-timeline.svg"
    assert f"order-42's timeline: out/{drawn.name}" in done.stdout
    assert "order-42: its timeline" in drawn.read_text("utf-8")
    typo = subprocess.run([*cli, "--focus", "order-24"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert typo.returncode == 2
    assert "no execution 'order-24' in the run of 'trigger-in-step' (did you mean 'order-42'?)" in (
        typo.stderr
    )
