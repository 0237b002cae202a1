"""The execution graph built from a runtime's records."""

from __future__ import annotations

import io

import networkx as nx

import yieldstar_sim as ys
from yieldstar_sim.views import draw_execution_graph, execution_graph


def shop() -> ys.MemoryRuntime:
    runtime = ys.MemoryRuntime()
    order = runtime.trigger("charge-order", {"order": 42}, execution_id="order-42")
    runtime.start(ys.StartRequest(ys.RequestId(order, "ship"), "ship-order", {"order": 42}))
    runtime.start(ys.StartRequest(ys.RequestId(order, "survey"), "send-survey", None, True))
    return runtime


def test_every_start_request_is_one_edge_from_caller_to_target() -> None:
    graph = execution_graph(shop())
    assert isinstance(graph, nx.MultiDiGraph)
    assert sorted(graph.edges(keys=True)) == [
        ("order-42", "@send-survey:order-42/survey", "survey"),
        ("order-42", "@ship-order:order-42/ship", "ship"),
    ]
    assert graph.nodes["@ship-order:order-42/ship"] == {
        "workflow_id": "ship-order",
        "status": "pending",
        "origin": "start",
    }
    survey = graph.edges["order-42", "@send-survey:order-42/survey", "survey"]
    assert survey["detached"] is True
    assert survey["retained"] is True


def test_a_pruned_caller_stays_visible_through_its_targets_links() -> None:
    runtime = shop()
    delivery = runtime.claim("w1", lease_seconds=30, execution_id="order-42")
    assert delivery is not None
    runtime.acknowledge(delivery.lease, ys.Completed(None))
    runtime.prune("order-42")
    graph = execution_graph(runtime)
    assert graph.nodes["order-42"]["status"] == "pruned"
    assert graph.edges["order-42", "@ship-order:order-42/ship", "ship"]["retained"] is False


def test_the_drawing_is_a_png_with_a_title() -> None:
    figure = draw_execution_graph(execution_graph(shop()), title="shop")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    assert buffer.getvalue().startswith(b"\x89PNG")
    assert figure.axes[0].get_title() == "shop"


def test_an_empty_runtime_draws_an_empty_graph() -> None:
    figure = draw_execution_graph(execution_graph(ys.MemoryRuntime()))
    figure.savefig(io.BytesIO(), format="png")
