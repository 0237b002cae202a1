"""The explored state space as a picture and as files: violating states red, the shortest path
to each violation marked, every export readable by the tool it is meant for."""

from __future__ import annotations

import io
import json
from pathlib import Path

import networkx as nx
import pydot
import pytest

from yieldstar_sim.simulation.explorer.statespace import StateSpace
from yieldstar_sim.views.statespace import (
    describe_path,
    draw_state_graph,
    export_state_graph,
    shortest_paths,
    state_graph,
    state_space_summary,
)
from yieldstar_sim.views.statespace_paths import path_to


def diamond() -> StateSpace:
    """Two bookings in either order; one order (a long way round) ends oversold."""
    space = StateSpace()
    space.add_state("s0", depth=0, label="start", plan=0)
    space.add_state("a", depth=1, label="book-1 read", plan=0)
    space.add_state("b", depth=1, label="book-2 read", plan=1)
    space.add_state("c", depth=2, label="book-2 write", plan=0)
    space.add_state("bad", depth=3, label="end", plan=1, terminal=True)
    space.add_state("good", depth=3, label="end", plan=0, terminal=True)
    space.add_edge("s0", "a", choice="w1", fault=None, plan=0)
    space.add_edge("s0", "b", choice="w2", fault=None, plan=1)
    space.add_edge("a", "c", choice="w2", fault=None, plan=0)
    space.add_edge("c", "good", choice="w1", fault=None, plan=0)
    space.add_edge("c", "bad", choice="w1", fault="crash w1 at put_step", plan=2)
    space.add_edge("b", "bad", choice="w1", fault=None, plan=1)
    space.mark_violation("bad", "seats are never oversold")
    return space


def test_the_shortest_path_to_a_violation_is_marked_not_the_first_found() -> None:
    space = diamond()
    graph = state_graph(space)
    assert graph.nodes["bad"]["violating"]
    assert not graph.nodes["good"]["violating"]
    assert [(e.source, e.target) for e in shortest_paths(space)["bad"]] == [
        ("s0", "b"),
        ("b", "bad"),
    ]
    marked = {(s, t) for s, t, shortest in graph.edges(data="shortest") if shortest}
    assert marked == {("s0", "b"), ("b", "bad")}


def test_parallel_choices_between_two_states_are_one_edge_listing_both() -> None:
    space = diamond()
    space.add_edge("c", "good", choice="w2", fault=None, plan=3)
    data = state_graph(space).edges["c", "good"]
    assert data["label"] == "w1; w2"
    assert data["choices"] == 2
    assert not data["fault"]


def test_a_path_in_words_names_each_choice_and_fault() -> None:
    space = diamond()
    path = [space.edges[("s0", "a", "w1", None)], space.edges[("a", "c", "w2", None)]]
    assert describe_path(path) == "w1 \u2192 w2"
    assert describe_path([]) == "(the initial state)"
    fault = space.edges[("c", "bad", "w1", "crash w1 at put_step")]
    assert describe_path([fault]) == "w1 + crash w1 at put_step"


def test_an_unreached_state_has_no_path() -> None:
    space = diamond()
    with pytest.raises(KeyError, match="no state 'nowhere'"):
        path_to(space, "nowhere")


def test_every_export_reads_back_in_its_own_tool(tmp_path: Path) -> None:
    written = export_state_graph(
        diamond(), tmp_path, "svg,png,pdf,graphml,json,dot,html", stem="race"
    )
    assert written["png"].read_bytes()[:4] == b"\x89PNG"
    assert written["pdf"].read_bytes()[:4] == b"%PDF"
    assert b"<svg" in written["svg"].read_bytes()
    back = nx.read_graphml(io.BytesIO(written["graphml"].read_bytes()))
    assert back.nodes["bad"]["violating"] is True
    data = json.loads(written["json"].read_text(encoding="utf-8"))
    assert {node["id"] for node in data["nodes"]} == {"s0", "a", "b", "c", "bad", "good"}
    (dot,) = pydot.graph_from_dot_data(written["dot"].read_text(encoding="utf-8"))
    assert len(dot.get_edges()) == 6
    page = written["html"].read_text(encoding="utf-8")
    assert "seats are never oversold" in page
    assert "w2 \u2192 w1" in page


def test_an_unknown_format_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown state-space format 'gif'"):
        export_state_graph(diamond(), tmp_path / "out", ["svg", "gif"])
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="plain file name"):
        export_state_graph(diamond(), tmp_path, ["svg"], stem="../up")


def test_a_big_space_is_drawn_without_labels_and_as_pixels() -> None:
    space = StateSpace()
    space.add_state("root", depth=0, label="start", plan=0)
    previous = ["root"]
    for depth in range(1, 9):
        layer = [f"{depth}-{i}" for i in range(depth + 2)]
        for i, key in enumerate(layer):
            space.add_state(key, depth=depth, label=f"w{i} call", plan=i, terminal=depth == 8)
            space.add_edge(previous[i % len(previous)], key, choice=f"w{i}", fault=None, plan=i)
        previous = layer
    space.mark_violation("8-3", "at_most_once")
    figure = draw_state_graph(space)
    axes = figure.axes[0]
    texts = [text.get_text() for text in axes.texts]
    assert len(texts) == 2  # the root and the one violating state
    assert any(collection.get_rasterized() for collection in axes.collections)


def test_user_text_in_a_label_is_drawn_as_text_not_math(tmp_path: Path) -> None:
    space = StateSpace()
    space.add_state("s0", depth=0, label="charge $5 to\x07 order $", plan=0)
    figure = draw_state_graph(space)
    (label,) = [t.get_text() for t in figure.axes[0].texts]
    assert label == "charge $5 to\ufffd\norder $"  # wrapped in two lines of 16
    written = export_state_graph(space, tmp_path, ["png", "svg"])  # an unbalanced $ draws
    assert written["png"].read_bytes()[:4] == b"\x89PNG"


def test_the_summary_is_plain_data() -> None:
    summary = state_space_summary(diamond())
    assert json.loads(json.dumps(summary)) == summary
    assert summary["violating"] == [
        {"state": "bad", "violations": ["seats are never oversold"],
         "shortest_path": ["w2", "w1"]},
    ]  # fmt: skip


def legend_labels(space: StateSpace) -> list[str]:
    legend = draw_state_graph(space).axes[0].get_legend()
    return [text.get_text() for text in legend.get_texts()]


def test_the_legend_names_only_what_the_picture_shows() -> None:
    assert legend_labels(diamond()) == [
        "initial state", "state", "end: ok", "end: violated", "choice with a fault",
        "shortest path to a violation",
    ]  # fmt: skip
    verified = StateSpace()
    verified.add_state("s0", depth=0, label="start", plan=0)
    verified.add_state("end", depth=1, label="end", plan=0, terminal=True)
    verified.add_edge("s0", "end", choice="w1", fault=None, plan=0)
    assert legend_labels(verified) == ["initial state", "end: ok"]


def test_a_state_the_search_did_not_go_on_from_is_drawn_and_explained() -> None:
    # A search cut before it took a move from a state it reached (a budget, another process
    # that searched it) leaves it with no way out that is not an end.
    cut = StateSpace()
    cut.add_state("s0", depth=0, label="w1 claim", plan=0)
    cut.add_state("s1", depth=1, label="w2 claim", plan=0)
    cut.add_edge("s0", "s1", choice="w1", fault=None, plan=0)
    assert "not expanded (pruned, cached or past a bound)" in legend_labels(cut)
