"""The pictures a design review reads: faults named, starts and crashes labelled, legends of
what is shown, every violation printed, fan-outs grouped, labels only where they fit."""

from __future__ import annotations

import itertools

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation import SimulationRun
from yieldstar_sim.views import draw_run, graph_from_trace
from yieldstar_sim.views.figures import violations_caption
from yieldstar_sim.views.graph import TIMES, draw_execution_graph, group_siblings


def run_of(name: str) -> SimulationRun:
    return ys.simulate(ys.load_scenario(name), seed=0, runtime="memory")


@ys.workflow("line")
def line(step, params):  # type: ignore[no-untyped-def]
    return (yield from step.run("pick", lambda: step.world.effect("picked", line=params["line"])))


@ys.workflow("order")
def order(step, params):  # type: ignore[no-untyped-def]
    for number in range(1, params["lines"] + 1):
        yield from step.start(f"line-{number}", "line", {"line": number})
    return "ok"


def fan_out(lines: int = 99) -> SimulationRun:
    """One order starts `lines` line items; a crash strikes the start of the middle one."""
    scenario = ys.Scenario(
        name="fan-out",
        workflows=[order, line],
        triggers=[ys.Trigger("order", {"lines": lines}, execution_id="order-1")],
        faults=[ys.Fault("crash", op="start", step_key=f"line-{(lines + 1) // 2}")],
    )
    return ys.simulate(scenario, seed=0, runtime="memory")


def texts(figure) -> list[str]:  # type: ignore[no-untyped-def]
    return [text.get_text() for axes in figure.axes for text in axes.texts]


def legend(axes) -> list[str]:  # type: ignore[no-untyped-def]
    return [text.get_text() for text in axes.get_legend().get_texts()]


def test_the_fault_and_the_crash_are_named_on_the_timeline() -> None:
    drawn = texts(draw_run(run_of("trigger-in-step")))
    assert "crash before put_step ship" in drawn
    assert "w2 crashed" in drawn
    frozen = texts(draw_run(run_of("frozen-worker")))
    assert "freeze 40s before put_step ship" in frozen


def test_start_calls_are_labelled() -> None:
    assert "start ship" in texts(draw_run(run_of("durable-start")))


def test_the_legends_list_only_what_the_picture_shows() -> None:
    figure = draw_run(run_of("trigger-in-step"))
    graph_legend, timeline_legend = legend(figure.axes[0]), legend(figure.axes[1])
    assert "worker frozen" not in timeline_legend
    assert "lease expired, worker unaware" not in timeline_legend
    assert "start call" not in timeline_legend  # a trigger inside a step is no start call
    assert {"fault injected", "crash", "delivery ended badly"} <= set(timeline_legend)
    assert "parent link (owned)" not in graph_legend
    assert "non-durable trigger" in graph_legend
    frozen = legend(draw_run(run_of("frozen-worker")).axes[1])
    assert {"worker frozen", "lease expired, worker unaware", "start call"} <= set(frozen)


def test_every_violation_is_printed_under_the_graph() -> None:
    run = run_of("trigger-in-step")
    assert len(run.violations) == 2
    caption = "\n".join(texts(draw_run(run)))
    for violation in run.violations:
        assert violation.invariant in caption
    assert violations_caption(run, at_most=1).endswith("and 1 more")


def test_siblings_that_share_workflow_parent_pattern_and_status_are_one_group() -> None:
    graph = graph_from_trace(fan_out().trace)
    assert graph.number_of_nodes() == 100
    grouped = group_siblings(graph)
    assert sorted(grouped.nodes) == [f"99 {TIMES} line, completed", "order-1"]
    group = grouped.nodes[f"99 {TIMES} line, completed"]
    assert group["group"] == 99
    assert len(group["members"]) == 99
    ((_, _, data),) = grouped.edges(data=True)
    assert data["step_key"] == "line-1 … line-99"


def test_a_red_or_unusual_sibling_stays_apart_from_its_group() -> None:
    graph = graph_from_trace(fan_out(8).trace)
    failed = next(node for node in graph if node != "order-1")
    graph.nodes[failed]["status"] = "failed"
    (parent, child, key), *_ = [e for e in graph.edges(keys=True) if e[1] != failed]
    graph.edges[parent, child, key]["duplicate"] = True
    grouped = group_siblings(graph)
    assert failed in grouped
    assert child in grouped
    assert f"6 {TIMES} line, completed" in grouped
    assert group_siblings(graph_from_trace(fan_out(3).trace)).number_of_nodes() == 4


def test_the_fan_out_graph_draws_one_box_not_99() -> None:
    graph = graph_from_trace(fan_out().trace)
    line_id = "@line:order-1/line-"  # each line item's ID: its request's
    boxes = [t for t in texts(draw_execution_graph(graph)) if line_id in t]
    assert boxes
    assert all(f"99 {TIMES} line" in t for t in boxes)
    every = [t for t in texts(draw_execution_graph(graph, group=False)) if line_id in t]
    assert len(every) == 99


@pytest.mark.parametrize("run", [fan_out, lambda: run_of("frozen-worker")], ids=["fan", "frozen"])
def test_timeline_labels_never_print_over_each_other(run) -> None:  # type: ignore[no-untyped-def]
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure = draw_run(run())
    FigureCanvasAgg(figure).draw()
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    boxes = [text.get_window_extent(renderer) for text in figure.axes[1].texts if text.get_text()]
    assert len(boxes) > 3
    for first, second in itertools.combinations(boxes, 2):
        assert not first.overlaps(second), (first, second)


def test_the_stepper_expands_a_group_when_asked() -> None:
    stepper = ys.Stepper(fan_out(6))
    stepper.go(len(stepper.view.events) - 1)
    grouped = stepper.graph_image.value
    stepper.group_siblings.value = False
    expanded = stepper.graph_image.value
    assert expanded != grouped
    stepper.group_siblings.value = True
    assert stepper.graph_image.value == grouped
