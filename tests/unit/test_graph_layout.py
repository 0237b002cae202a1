"""The execution graph at review size: a layered layout (parents above children, siblings side
by side, no crossing in a tree, the same positions whatever the insertion order) and families
(alike executions drawn once with a count; everything notable on its own)."""

from __future__ import annotations

import itertools
import random

import networkx as nx
import pytest

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order
from yieldstar_sim.simulation.invariants.protocol import Violation
from yieldstar_sim.views import graph_from_trace
from yieldstar_sim.views.evidence import TIMES, mark_violations, node_label
from yieldstar_sim.views.families import collapse_families, families
from yieldstar_sim.views.graph import draw_execution_graph
from yieldstar_sim.views.layout import FOREST_WIDTH, ROW_WIDTH, layered_layout


def orders(count: int) -> ys.Scenario:
    """``count`` independent orders, each starting its shipment; a crash strikes order-1
    between its start and the record of its ship step (so its start is replayed)."""
    return ys.Scenario(
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


def random_tree(size: int, seed: int, fan: int = 3) -> nx.MultiDiGraph:
    """A tree of ``size`` executions; node ``i`` is started by a random earlier one."""
    chooser = random.Random(seed)
    tree = nx.MultiDiGraph()
    tree.add_node("e-0", workflow_id="w", status="completed", origin="trigger")
    for index in range(1, size):
        parent = f"e-{chooser.randrange(max(0, index - fan * 4), index)}"
        tree.add_node(f"e-{index}", workflow_id="w", status="completed", origin="start")
        tree.add_edge(parent, f"e-{index}", key=f"k-{index}", step_key=f"k-{index}",
                      kind="start", detached=False, duplicate=False)  # fmt: skip
    return tree


def _crosses(a: tuple[tuple[float, float], ...], b: tuple[tuple[float, float], ...]) -> bool:
    """Whether two segments cross at a point inside both (not at a shared end)."""

    def side(p: tuple[float, float], q: tuple[float, float], r: tuple[float, float]) -> float:
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])

    (p1, p2), (q1, q2) = a, b
    d1, d2 = side(q1, q2, p1), side(q1, q2, p2)
    d3, d4 = side(p1, p2, q1), side(p1, p2, q2)
    return d1 * d2 < 0 and d3 * d4 < 0


@pytest.mark.parametrize("seed", range(12))
def test_a_tree_is_drawn_without_a_crossing_and_parents_above_children(seed: int) -> None:
    tree = random_tree(60, seed, fan=1 + seed % 4)
    positions = layered_layout(tree).positions
    segments = []
    for source, target in tree.edges():
        assert positions[source][1] > positions[target][1], (source, target)
        segments.append(((source, target), (positions[source], positions[target])))
    for (one, first), (other, second) in itertools.combinations(segments, 2):
        if set(one) & set(other):
            continue
        assert not _crosses(first, second), (one, other)
    assert len(set(positions.values())) == len(positions)  # no two boxes in one place


def test_the_layout_does_not_depend_on_insertion_order() -> None:
    tree = random_tree(40, 3)
    shuffled = nx.MultiDiGraph()
    nodes = list(tree.nodes(data=True))
    random.Random(1).shuffle(nodes)
    shuffled.add_nodes_from(nodes)
    edges = list(tree.edges(keys=True, data=True))
    random.Random(2).shuffle(edges)
    shuffled.add_edges_from(edges)
    assert layered_layout(shuffled).positions == layered_layout(tree).positions


def test_siblings_sit_side_by_side_in_step_key_order_under_their_parent() -> None:
    graph = nx.MultiDiGraph()
    for key in ("line-10", "line-2", "line-1"):
        graph.add_edge("order", f"@{key}", key=key, step_key=key)
    positions = layered_layout(graph).positions
    xs = [positions[f"@line-{n}"][0] for n in (1, 2, 10)]
    assert xs == sorted(xs)
    assert {positions[f"@line-{n}"][1] for n in (1, 2, 10)} == {positions["order"][1] - 1}
    assert positions["order"][0] == pytest.approx((xs[0] + xs[-1]) / 2)


def test_a_wide_fan_out_wraps_into_rows_and_many_trees_into_bands() -> None:
    fan = nx.MultiDiGraph()
    for n in range(30):
        fan.add_edge("order", f"@line-{n}", key=f"line-{n}", step_key=f"line-{n}")
    assert layered_layout(fan).width == ROW_WIDTH
    forest = nx.MultiDiGraph()
    for n in range(100):
        forest.add_edge(f"order-{n}", f"@ship-{n}", key="ship", step_key="ship")
    layout = layered_layout(forest)
    assert layout.width <= FOREST_WIDTH
    assert layout.height > 2 * 100 / FOREST_WIDTH


def test_a_thousand_orders_are_one_family_beside_the_order_a_crash_struck() -> None:
    run = ys.simulate(orders(1_000), seed=0, runtime="memory")
    graph = graph_from_trace(run.trace)
    (family,) = families(graph)
    assert family.node == f"999 {TIMES} charge-order \u2192 ship-order, completed"
    assert family.members[0] == "order-2"
    assert len(family.members) == 999
    assert len(family.executions) == 1_998
    drawn = collapse_families(graph)
    assert sorted(drawn.nodes, key=str) == sorted(
        [family.node, "order-1", "@ship-order:order-1/ship"], key=str
    )
    assert drawn.nodes[family.node]["executions"] == list(family.executions)
    assert "fault: crash" in node_label("order-1", drawn.nodes["order-1"])


def test_the_thousand_order_picture_is_at_most_4000_pixels_a_side() -> None:
    from PIL import Image

    from yieldstar_sim.views.figures import draw_run, figure_bytes

    run = ys.simulate(orders(1_000), seed=0, runtime="memory")
    import io

    for figure in (draw_run(run), draw_execution_graph(graph_from_trace(run.trace))):
        width, height = Image.open(io.BytesIO(figure_bytes(figure, "png"))).size
        assert max(width, height) <= 4_000


def test_what_is_notable_stays_out_of_a_family() -> None:
    run = ys.simulate(orders(8), seed=0, runtime="memory")
    graph = graph_from_trace(run.trace)
    graph.nodes["order-5"]["status"] = "failed"
    graph.nodes["order-6"]["retries"] = 1
    mark_violations(graph, [Violation("made up", "order-7 did something", {})])
    (family,) = families(graph)
    assert family.members == ("order-2", "order-3", "order-4", "order-8")
    assert graph.nodes["order-7"]["violation"]
    few = graph_from_trace(ys.simulate(orders(4), seed=0, runtime="memory").trace)
    assert families(few) == []  # three alike orders are drawn one by one


def test_alike_executions_a_violation_names_are_one_family_marked_as_named() -> None:
    # A bug that strikes every order: the picture is one family named by the violation, beside
    # the family of orders it spared, not 300 boxes.
    run = ys.simulate(orders(12), seed=0, runtime="memory")
    graph = graph_from_trace(run.trace)
    struck = [f"order-{n}" for n in range(2, 8)]
    mark_violations(graph, [Violation("made up", "see the data", {"executions": struck})])
    named, spared = families(graph)
    assert named.members == tuple(struck)
    assert spared.members == ("order-8", "order-9", "order-10", "order-11", "order-12")
    drawn = collapse_families(graph)
    assert drawn.nodes[named.node]["violation"]
    assert not drawn.nodes[spared.node]["violation"]
    assert "named by violation 1" in node_label(named.node, drawn.nodes[named.node])
    assert not drawn.nodes["order-1"].get("group")  # the crash is still drawn on its own


def test_a_family_of_children_keeps_its_edge_from_the_parent() -> None:
    graph = nx.MultiDiGraph()
    graph.add_node("order-1", workflow_id="order", status="completed", origin="trigger",
                   faults=1, fault_kinds="crash")  # fmt: skip
    for n in range(1, 6):
        graph.add_node(f"@line-{n}", workflow_id="line", status="completed", origin="start")
        graph.add_edge("order-1", f"@line-{n}", key=f"line-{n}", step_key=f"line-{n}",
                       kind="start", detached=False, duplicate=False, calls=1)  # fmt: skip
    drawn = collapse_families(graph)
    ((_, child, data),) = drawn.edges(data=True)
    assert child == f"5 {TIMES} line, completed"
    assert data["step_key"] == "line-1 \u2026 line-5"


def test_the_steppers_graph_is_sized_for_what_it_draws_grouped_or_not() -> None:
    from yieldstar_sim.views.pictures import RunPictures

    pictures = RunPictures(ys.simulate(orders(40), seed=0, runtime="memory"))
    grouped = pictures.graph_size
    pictures.group = False
    assert pictures.graph_size[1] > grouped[1]  # 40 trees in bands, not one family box
    pictures.group = True
    assert pictures.graph_size == grouped


def test_sibling_edge_labels_never_print_over_each_other() -> None:
    # trigger-in-step's two "ship / duplicate admission" labels touched: the README's picture.
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from yieldstar_sim.views import draw_run

    run = ys.simulate(ys.load_scenario("trigger-in-step"), seed=0, runtime="memory")
    figure = draw_run(run)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()  # type: ignore[no-untyped-call]
    renderer = canvas.get_renderer()
    labels = [t for t in figure.axes[0].texts if t.get_fontsize() == 9 and t.get_bbox_patch()]
    assert [t.get_text() for t in labels] == ["ship\nduplicate\nadmission"] * 2  # wrapped
    boxes = [t.get_bbox_patch().get_window_extent(renderer) for t in labels]  # type: ignore[union-attr]
    for one, other in itertools.combinations(boxes, 2):
        assert one.x1 < other.x0 or other.x1 < one.x0 or one.y1 < other.y0 or other.y1 < one.y0
