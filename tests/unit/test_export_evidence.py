"""The text exports carry the evidence the pictures show: start calls, duplicate admissions,
faults and the executions a violation names, in DOT (read back with pydot), Mermaid, GraphML
(read back with networkx) and node-link JSON; and Mermaid stays within its default limits."""

from __future__ import annotations

import importlib
import json
import warnings
from typing import TYPE_CHECKING

import networkx as nx
import pytest

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order
from yieldstar_sim.views import export
from yieldstar_sim.views.graph_text import MERMAID_MAX_EDGES

if TYPE_CHECKING:
    from pathlib import Path

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # see test_exports.py
    importlib.import_module("pydot.dot_parser")

import pydot

REPLAYED = "ship\n2 start calls, one target"


def orders(count: int) -> ys.SimulationRun:
    """``count`` orders; a crash makes order-1 replay its start of ship-order."""
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


def unquote(text: str | None) -> str:
    assert text is not None
    assert text.startswith('"')
    return text[1:-1].replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("evidence")
    return export(orders(10), folder, ["dot", "mermaid", "graphml", "json"], stem="orders")


def test_dot_labels_the_replayed_start_and_the_fault(written: dict[str, Path]) -> None:
    (dot,) = pydot.graph_from_dot_data(written["dot"].read_text("utf-8"))
    edges = {unquote(e.get("label")) for e in dot.get_edges()}
    assert REPLAYED in edges
    nodes = {unquote(n.get_name()): unquote(n.get("label")) for n in dot.get_nodes()
             if n.get("label")}  # fmt: skip
    assert nodes["order-1"] == "order-1\ncharge-order · completed\nfault: crash"
    family = [label for label in nodes.values() if "\u00d7" in label]
    assert family == [
        "9 \u00d7 charge-order\n\u2192 ship-order\ncompleted\norder-2 \u2026 order-10"
    ]


def test_mermaid_labels_the_replayed_start_and_draws_families(written: dict[str, Path]) -> None:
    text = written["mermaid"].read_text("utf-8")
    assert '|"ship<br>2 start calls, one target"|' in text
    assert "fault#58; crash" in text
    assert "9 \u00d7 charge-order" in text
    assert text.count("-->") == 1  # order-1's start; the nine others are one family box


def test_graphml_and_json_keep_every_execution_with_its_evidence(written: dict[str, Path]) -> None:
    for graph in (
        nx.read_graphml(written["graphml"], force_multigraph=True),
        nx.node_link_graph(json.loads(written["json"].read_text("utf-8")), edges="edges"),
    ):
        assert graph.number_of_nodes() == 20
        replayed = [d for _, _, d in graph.edges(data=True) if d["calls"] == 2]
        assert [d["label"] for d in replayed] == [REPLAYED]
        assert graph.nodes["order-1"]["fault_kinds"] == "crash"
        assert graph.nodes["order-1"]["faults"] == 1
        assert "family" not in graph.nodes["order-1"]
        assert graph.nodes["order-7"]["family"].startswith("9 \u00d7 charge-order")
        assert graph.nodes["order-7"]["violation"] is False


def test_every_text_export_marks_what_a_violation_names(tmp_path: Path) -> None:
    run = ys.simulate(ys.load_scenario("trigger-in-step"), seed=0, runtime="memory")
    paths = export(run, tmp_path, ["dot", "mermaid", "graphml", "json"], stem="bug")
    (dot,) = pydot.graph_from_dot_data(paths["dot"].read_text("utf-8"))
    named = {unquote(n.get_name()) for n in dot.get_nodes() if n.get("color") == '"#CC0000"'}
    assert named == {"order-42", "@ship-order-2", "@ship-order-3"}
    duplicate = [unquote(e.get("label")) for e in dot.get_edges()]
    assert duplicate == ["ship\nduplicate admission"] * 2
    assert "class n0,n1,n2 violation" in paths["mermaid"].read_text("utf-8")
    graphml = nx.read_graphml(paths["graphml"], force_multigraph=True)
    assert all(d["violation"] for _, d in graphml.nodes(data=True))
    data = json.loads(paths["json"].read_text("utf-8"))
    assert all(node["violation"] for node in data["nodes"])


def test_a_thousand_orders_make_a_mermaid_diagram_within_its_limits(tmp_path: Path) -> None:
    text = export(orders(1_000), tmp_path, ["mermaid"], stem="big")["mermaid"].read_text("utf-8")
    assert text.count("-->") + text.count("-.->") <= MERMAID_MAX_EDGES
    assert "maxEdges" not in text
    assert len(text) < 50_000  # Mermaid's default maxTextSize
    assert "999 \u00d7 charge-order" in text


def test_a_diagram_past_mermaids_edge_limit_says_so() -> None:
    from yieldstar_sim.views.graph_text import to_mermaid

    graph = nx.MultiDiGraph()
    for n in range(MERMAID_MAX_EDGES + 1):  # a workflow each: no two are alike, none fold
        graph.add_node(f"t-{n}", workflow_id=f"w{n}", status="completed", origin="trigger")
        graph.add_edge("root", f"t-{n}", key=f"k{n}", step_key=f"k{n}", kind="trigger")
    graph.nodes["root"].update(workflow_id="w", status="completed", origin="trigger")
    lines = to_mermaid(graph, title="big").splitlines()
    assert lines[:4] == ["---", 'title: "big"', "---", "flowchart TD"]  # front matter first
    said = f"    %% {MERMAID_MAX_EDGES + 1} edges: past Mermaid's default maxEdges"
    assert lines[4].startswith(said)
