"""Timeline and state space at review size: a timeline denser than its pixels draws routine
marks once per few pixels but every fault and crash; a 20,000-state space is drawn bounded
(the paths to its violations and a summary per depth of the rest), its data kept whole."""

from __future__ import annotations

import itertools
import random
from typing import TYPE_CHECKING

import pytest

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order
from yieldstar_sim.simulation.explorer.statespace import StateSpace
from yieldstar_sim.views import build_timeline, draw_timeline
from yieldstar_sim.views.statespace import (
    _heading,
    draw_state_graph,
    export_state_graph,
    shortest_paths,
    state_graph,
    state_graph_html,
)
from yieldstar_sim.views.statespace_bounds import (
    DRAWN_AT_MOST,
    SUMMARY_BANDS,
    bounded_state_graph,
)
from yieldstar_sim.views.statespace_paths import path_to
from yieldstar_sim.views.timeline_axis import INSTANT_SHARE

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.figure import Figure


def orders(count: int) -> ys.SimulationRun:
    scenario = ys.Scenario(
        name=f"orders-{count}",
        workflows=[charge_order, ship_order],
        triggers=[
            ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}")
            for n in range(1, count + 1)
        ],
        faults=[ys.Fault("crash", op="put_step", execution_id="order-1", step_key="ship")],
        workers=4,
        max_points=40 * count + 1_000,
    )
    return ys.simulate(scenario, seed=0, runtime="memory")


def drawn_marks(figure: Figure) -> int:
    from matplotlib.collections import PathCollection

    return sum(
        len(c.get_offsets()) for c in figure.axes[0].collections if isinstance(c, PathCollection)
    )


def test_a_timeline_denser_than_its_pixels_aggregates_routine_marks_only() -> None:
    timeline = build_timeline(orders(1_000).trace, ["w1", "w2", "w3", "w4"])
    figure = draw_timeline(timeline)
    assert drawn_marks(figure) < len(timeline.marks) / 3
    notable = [m for m in timeline.marks if m.kind in {"fault", "crash"}]
    assert len([m for m in notable if m.lane not in timeline.focus_lanes]) == 2
    # order-1's own lane draws every mark of its events, the routine ones too (issue 53).
    assert timeline.focus_lanes == ["order-1"]
    notable += [m for m in timeline.marks if m.lane == "order-1"]
    from matplotlib.collections import PathCollection

    offsets = [
        tuple(point)
        for c in figure.axes[0].collections
        if isinstance(c, PathCollection)
        for point in c.get_offsets()
    ]
    for mark in notable:
        assert (mark.x, -timeline.lanes.index(mark.lane)) in offsets
    label = figure.axes[0].get_xlabel()
    assert "more than the picture has pixels" in label
    # No line wider than the axis' own words: two timelines side by side (the divergence
    # figure) each have half the figure, and a longer line ran into the other's.
    first, *rest = label.split("\n")
    assert rest
    assert all(len(line) <= len(first) for line in rest), rest


def test_every_instant_of_a_dense_timeline_has_room_and_a_readable_tick() -> None:
    # 15,000 events happen at t=0; order-1's re-delivery after the crash, at t=30, was two
    # pixels at the axis's end, unlabelled, its tick printed over t=1's ("130").
    timeline = build_timeline(orders(1_000).trace, ["w1", "w2", "w3", "w4"])
    least = len(timeline.x_of) / INSTANT_SHARE
    xs = [x for x, _ in timeline.ticks]
    assert [label for _, label in timeline.ticks] == ["0", "1", "30"]
    assert all(after - before >= least for before, after in itertools.pairwise(xs))
    figure = draw_timeline(timeline)
    axes = figure.axes[0]
    texts = [text.get_text() for text in axes.texts]
    assert "order-1 \u00b7 token 2" in texts  # the recovery is labelled before routine ones
    figure.canvas.draw()  # type: ignore[no-untyped-call]
    shown = [label for label in axes.get_xticklabels() if label.get_text()]
    assert [label.get_text() for label in shown] == ["0", "1", "30"]
    boxes = [label.get_window_extent() for label in shown]
    assert all(one.x1 <= other.x0 for one, other in itertools.pairwise(boxes))


def test_a_small_timeline_draws_every_mark() -> None:
    run = ys.simulate(ys.load_scenario("durable-start"), seed=0, runtime="memory")
    timeline = build_timeline(run.trace, run.scenario.worker_names)
    figure = draw_timeline(timeline)
    assert drawn_marks(figure) == len(timeline.marks)
    assert "pixels" not in figure.axes[0].get_xlabel()


def layered_space(states: int, *, depth: int = 24, violations: int = 12) -> StateSpace:
    """A state space of ``states`` states in ``depth`` layers, each state reached from two
    states of the layer before; ``violations`` of the deepest states violate."""
    chooser = random.Random(7)
    space = StateSpace()
    space.add_state("s0", depth=0, label="start", plan=0)
    layers, made = [["s0"]], 1
    for level in range(1, depth + 1):
        count = (states - 1) // depth if level < depth else states - made
        layer = []
        for _ in range(count):
            key = f"s{made}"
            made += 1
            space.add_state(key, depth=level, label=f"point {level}", plan=made,
                            terminal=level == depth)  # fmt: skip
            for parent in chooser.sample(layers[-1], min(2, len(layers[-1]))):
                fault = "crash w1" if chooser.random() < 0.1 else None
                space.add_edge(parent, key, choice="w1", fault=fault, plan=made)
            layer.append(key)
        layers.append(layer)
    for key in chooser.sample(layers[-1], violations):
        space.mark_violation(key, "at most one admitted execution per step")
    return space


@pytest.fixture(scope="module")
def big_space() -> StateSpace:
    return layered_space(20_000)


def test_one_search_finds_the_shortest_path_to_every_violation(big_space: StateSpace) -> None:
    paths = shortest_paths(big_space)
    assert len(paths) == 12
    for key, path in list(paths.items())[:3]:
        assert path == path_to(big_space, key)


def test_a_20000_state_space_is_drawn_bounded(big_space: StateSpace) -> None:
    graph = state_graph(big_space)
    bounded = bounded_state_graph(graph)
    assert bounded.number_of_nodes() <= DRAWN_AT_MOST + SUMMARY_BANDS
    violating = {n for n, d in graph.nodes(data=True) if d["violating"]}
    assert violating <= set(bounded.nodes)
    for source, target, data in graph.edges(data=True):
        if data["shortest"]:
            assert bounded.has_edge(source, target)
    summed = sum(d.get("summary", 0) for _, d in bounded.nodes(data=True))
    drawn = sum(1 for _, d in bounded.nodes(data=True) if not d.get("summary"))
    assert summed + drawn == 20_000
    assert bounded.graph["states"] == 20_000
    title = draw_state_graph(graph).axes[0].get_title()
    assert title.startswith("20,000 distinct states")
    assert "the paths to 12 of them" in title


def test_a_bounded_picture_says_what_it_draws_and_labels_alike_violations_once(
    big_space: StateSpace,
) -> None:
    # A report's title (its coverage sentence) hid what a bounded picture leaves out, and ran
    # off the figure; twelve red end states each printed the same words over the paths.
    title = "orders: exhausted: all 20,000 distinct states " + "and every interleaving " * 8
    figure = draw_state_graph(state_graph(big_space), title=title)
    axes = figure.axes[0]
    heading = axes.get_title()
    assert "drawn: the paths to 12 of them" in heading
    assert max(len(line) for line in heading.splitlines()) <= figure.get_figwidth() / 0.09
    assert "".join(heading.split()) == "".join(
        (title + "drawn: the paths to 12 of them; the other states summed by depth").split()
    )
    red = [text for text in axes.texts if text.get_color() == "#CC0000"]
    assert len(red) == 1
    assert "at most one admitted" in red[0].get_text()


def test_a_bounded_picture_of_a_space_with_no_violation_says_so() -> None:
    # It said "drawn: the paths to 0 of them" of a verified space.
    graph = state_graph(layered_space(3_000, violations=0))
    heading = draw_state_graph(graph).axes[0].get_title()
    assert "0 violating" in heading
    assert "drawn: no state violates; the states summed by depth" in heading
    assert "the paths to" not in heading
    # A bound too small for any path still says the space has violations.
    squeezed = bounded_state_graph(state_graph(layered_space(3_000)), at_most=1)
    assert "drawn: the paths to 0 of them" in _heading(squeezed)


def test_a_picture_of_a_cut_search_says_its_states_were_reached_not_verified() -> None:
    # A search its time budget cut drew "75,028 distinct states ... drawn: no state violates":
    # a picture shown alone in a review read as a verified space.
    space = layered_space(3_000, violations=0)
    space.cut_by = ["the time budget of 40s cut the search"]
    heading = draw_state_graph(state_graph(space)).axes[0].get_title()
    assert "reached, not all there are: the time budget of 40s cut the search" in (
        " ".join(heading.split())
    )
    assert "drawn: no state reached violates" in heading
    assert "no state violates" not in heading
    small = layered_space(20, violations=0)
    small.cut_by = ["Ctrl-C stopped it"]
    assert "reached, not all there are: Ctrl-C stopped it" in " ".join(
        draw_state_graph(state_graph(small)).axes[0].get_title().split()
    )
    page = state_graph_html(small)
    assert "20 distinct states" in page
    assert "reached, not all there are: Ctrl-C stopped it." in page
    labels = [t.get_text() for t in draw_state_graph(state_graph(space)).axes[0].texts]
    assert any(label.endswith(" end") and "\n" not in label for label in labels)


def test_a_summary_stands_at_its_states_depths_not_over_the_initial_state() -> None:
    # Past 30 depths a summary sums two; the first one's states are all past the initial
    # state, and it stood at depth 0.5, its box and label over the initial state's.
    bounded = bounded_state_graph(state_graph(layered_space(3_000, depth=40, violations=0)))
    summaries = [d for _, d in bounded.nodes(data=True) if d.get("summary")]
    assert min(float(d["depth"]) for d in summaries) >= 1
    assert all(d["label"].startswith("1 state") == (d["summary"] == 1) for d in summaries)


def test_a_deep_bounded_picture_keeps_its_ends_inside_and_its_columns_evenly_apart() -> None:
    # A cut search 391 deep: its summaries stood at their bands' middle depths (7, 20.5, ...),
    # so the initial state and the last summary sat at the axes' edges, half cut off, and the
    # initial state's label ran into the first summary's, half a band away.
    figure = draw_state_graph(state_graph(layered_space(3_000, depth=391, violations=0)))
    (axes,) = figure.axes
    xs = sorted({round(float(x), 6) for c in axes.collections for x, _ in c.get_offsets()})
    assert xs == [float(n) for n in range(len(xs))]  # one column a unit apart
    left, right = axes.get_xlim()
    assert left <= xs[0] - 0.5
    assert right >= xs[-1] + 0.5


def test_a_small_space_is_drawn_state_by_state() -> None:
    space = layered_space(60, depth=4, violations=2)
    graph = state_graph(space)
    assert bounded_state_graph(graph) is graph


def test_the_data_exports_keep_every_state_the_dot_is_bounded(tmp_path: Path) -> None:
    import networkx as nx

    space = layered_space(1_000, depth=10, violations=3)
    paths = export_state_graph(space, tmp_path, ["graphml", "dot"])
    assert nx.read_graphml(paths["graphml"]).number_of_nodes() == 1_000
    dot = paths["dot"].read_text("utf-8")
    assert dot.count(" -> ") < 1_000
    assert "more states at depth" in dot
