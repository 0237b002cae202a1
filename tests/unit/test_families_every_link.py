"""Families at review size, second pass (issue 53): every kind of link folds (owned, detached,
call, spawn, a child, RFC 003's non-durable trigger, chains of several levels); the
executions a violation or a fault names are drawn on their own and nowhere else; and a
family's words count what it holds and never name a range that takes in an execution drawn
outside it."""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING, Any

import pytest
from _review_size import durable_start, trigger_in_step

import yieldstar_sim as ys
from yieldstar_sim.views import graph_from_trace
from yieldstar_sim.views.evidence import TIMES, mark_violations, node_label
from yieldstar_sim.views.families import collapse_families, families, span_words
from yieldstar_sim.views.layout import natural

if TYPE_CHECKING:
    from collections.abc import Generator

    import networkx as nx


def ranges_hold_only_their_family(drawn: nx.MultiDiGraph, graph: nx.MultiDiGraph) -> None:
    """No family's words name a range ``a … b`` that takes in, in natural order, an execution
    drawn outside the family; and every execution is drawn once: alone or in one family."""
    everyone = sorted(map(str, graph.nodes), key=lambda n: (natural(n), n))
    place = {node: index for index, node in enumerate(everyone)}
    seen: list[str] = []
    for node, data in drawn.nodes(data=True):
        if not data.get("group"):
            seen.append(str(node))
            continue
        inside = set(map(str, data["executions"]))
        seen += inside
        assert data["group"] == len(data["members"])
        label = node_label(node, data)
        assert label.startswith(f"{data['group']} {TIMES} "), label  # it counts what it holds
        for first, last in re.findall(r"(\S+) \u2026 ([^\s,]+)", data["span"]):
            between = everyone[place[first] : place[last] + 1]
            outside = [n for n in between if n not in inside]
            assert not outside, f"{node}: {first} \u2026 {last} takes in {outside[:3]}"
    assert sorted(seen) == sorted(map(str, graph.nodes))


def test_the_trigger_in_step_pattern_at_300_orders_folds_around_the_broken_order() -> None:
    run = ys.simulate(trigger_in_step(300, crashed=150), seed=0, runtime="memory")
    assert run.verdict == "violated"
    graph = graph_from_trace(run.trace)
    mark_violations(graph, run.violations)
    (family,) = families(graph)
    assert family.node == f"299 {TIMES} charge-order \u2192 ship-order, completed"
    assert "order-150" not in family.members
    assert len(family.executions) == 598
    assert family.span == "order-1 \u2026 order-149, order-151 \u2026 order-300"
    drawn = collapse_families(graph)
    ranges_hold_only_their_family(drawn, graph)
    # The broken order and its two shipments are drawn on their own, in red, and nowhere else.
    alone = {str(node) for node, data in drawn.nodes(data=True) if not data.get("group")}
    broken = {"order-150", *(str(n) for n in graph.successors("order-150"))}
    assert alone == broken
    assert len(broken) == 3
    assert all(drawn.nodes[node]["violation"] for node in broken)
    assert all(data["duplicate"] for *_, data in drawn.out_edges("order-150", data=True))
    assert "order-150" not in node_label(family.node, drawn.nodes[family.node])


def test_the_passing_run_names_no_range_that_takes_in_the_order_drawn_alone() -> None:
    # At 300 orders the family read "order-1 … order-300" beside order-150, drawn on its own.
    run = ys.simulate(durable_start(300, crashed=150), seed=0, runtime="memory")
    assert run.ok
    graph = graph_from_trace(run.trace)
    drawn = collapse_families(graph)
    ranges_hold_only_their_family(drawn, graph)
    (family,) = families(graph)
    assert family.span == "order-1 \u2026 order-149, order-151 \u2026 order-300"
    assert "fault: crash" in node_label("order-150", drawn.nodes["order-150"])


def test_the_300_order_pictures_stay_small_with_the_broken_order_and_its_sentence() -> None:
    from PIL import Image

    from yieldstar_sim.views.figures import draw_run, figure_bytes

    run = ys.simulate(trigger_in_step(300, crashed=150), seed=0, runtime="memory")
    figure = draw_run(run)
    width, height = Image.open(io.BytesIO(figure_bytes(figure, "png"))).size
    assert max(width, height) <= 4_000
    texts = [text.get_text() for axes in figure.axes for text in axes.texts]
    (box,) = [text for text in texts if text.startswith("order-150\n")]
    assert box.endswith("named by violations 1, 2")
    caption = " ".join(" ".join(texts).split())  # the caption is wrapped
    assert "1. at most one admitted execution per step: step (order-150, ship) admitted" in caption
    assert "2. at_most_once(courier.booked, by=order)" in caption


@ys.workflow("receipt")
def receipt(step: ys.StepRunner, params: Any) -> Generator[Any, Any, Any]:
    """The bottom of a chain: one step."""
    return (yield from step.run("print", lambda: params["order"]))


@ys.workflow("payment")
def payment(step: ys.StepRunner, params: Any) -> Generator[Any, Any, Any]:
    """A level of the chain: starts its receipt (owned), which starts nothing."""
    yield from step.start("receipt", "receipt", params)
    return "paid"


@ys.workflow("audit")
def audit(step: ys.StepRunner, params: Any) -> Generator[Any, Any, Any]:
    """Spawned, detached: one step."""
    return (yield from step.run("note", lambda: params["order"]))


@ys.workflow("notify")
def notify(step: ys.StepRunner, params: Any) -> Generator[Any, Any, Any]:
    """Triggered without a request ID from a step body."""
    return (yield from step.run("send", lambda: params["order"]))


@ys.workflow("pack")
def pack(step: ys.StepRunner, params: Any) -> Generator[Any, Any, Any]:
    """A child with a business ID."""
    return (yield from step.run("box", lambda: params["order"]))


@ys.workflow("order")
def every_link(step: ys.StepRunner, params: Any) -> Generator[Any, Any, Any]:
    """Every kind of link a step makes: call (owned, and a chain of levels under it), a
    detached start, spawn, child and a non-durable trigger from a step body."""
    order = params["order"]
    yield from step.call("pay", "payment", {"order": order})
    yield from step.start("label", "receipt", {"order": order}, detached=True)
    yield from step.spawn("audit", "audit", f"audit-{order}", {"order": order})
    yield from step.child("pack", "pack", f"pack-{order}", {"order": order})
    yield from step.run("notify", lambda: step.world.trigger("notify", {"order": order}))
    return "done"


def every_link_orders(count: int, faults: list[ys.Fault]) -> ys.Scenario:
    return ys.Scenario(
        name=f"every-link-{count}",
        workflows=[every_link, payment, receipt, audit, notify, pack],
        triggers=[
            ys.Trigger("order", {"order": n}, execution_id=f"order-{n}")
            for n in range(1, count + 1)
        ],
        faults=faults,
        workers=3,
    )


@pytest.mark.parametrize("struck", [None, "order-5"])
def test_every_kind_of_link_and_a_chain_of_levels_fold_into_one_family(struck: str | None) -> None:
    faults = [] if struck is None else [ys.Fault("crash", op="put_step", execution_id=struck)]
    run = ys.simulate(every_link_orders(12, faults), seed=0, runtime="memory")
    assert run.ok, run.verdict_text
    graph = graph_from_trace(run.trace)
    lines = {data["kind"] if data["kind"] != "start" else ("detached" if data["detached"]
             else "owned") for *_, data in graph.edges(data=True)}  # fmt: skip
    assert lines == {"owned", "detached", "trigger"}
    (family,) = families(graph)
    assert len(family.members) == (12 if struck is None else 11)
    # Every order's five links and its receipt two levels down fold with it.
    assert len(family.executions) == len(family.members) * 7
    assert family.shape.startswith("order \u2192 (")
    assert "payment \u2192 receipt" in family.shape
    assert "notify" in family.shape
    drawn = collapse_families(graph)
    ranges_hold_only_their_family(drawn, graph)
    if struck is not None:
        # The struck order and what it started stay on their own, outside the family's words.
        assert struck in drawn
        assert not drawn.nodes[struck].get("group")
        assert family.span == "order-1 \u2026 order-4, order-6 \u2026 order-12"


def test_a_family_of_children_names_its_step_keys_around_the_sibling_drawn_alone() -> None:
    import networkx as nx

    graph = nx.MultiDiGraph()
    graph.add_node("order-1", workflow_id="order", status="completed", origin="trigger")
    for n in range(1, 10):
        graph.add_node(f"@line-{n}", workflow_id="line", status="completed", origin="start",
                       faults=int(n == 5), fault_kinds="crash" if n == 5 else "")  # fmt: skip
        graph.add_edge("order-1", f"@line-{n}", key=f"line-{n}", step_key=f"line-{n}",
                       kind="start", detached=False, duplicate=False, calls=1)  # fmt: skip
    drawn = collapse_families(graph)
    edges = {data["step_key"] for *_, data in drawn.edges(data=True)}
    assert edges == {"line-1 \u2026 line-4, line-6 \u2026 line-9", "line-5"}
    ranges_hold_only_their_family(drawn, graph)


def test_members_past_two_ranges_are_named_by_their_first_few() -> None:
    everyone = [f"order-{n}" for n in range(1, 21)]
    members = [node for node in everyone if node not in ("order-4", "order-9", "order-15")]
    assert span_words(members, everyone) == "order-1, order-2, order-3 and 14 more"
    assert span_words(everyone[:2], everyone) == "order-1, order-2"
    assert span_words(["order-7"], everyone) == "order-7"


def test_what_a_reviewer_must_see_is_part_of_the_shape_not_a_reason_to_draw_each() -> None:
    # At 1,000 copies of a story whose every execution retries, each was drawn on its own (a
    # picture 5,180 px wide at 20); alike evidence folds, and says itself on the family.
    import networkx as nx

    graph = nx.MultiDiGraph()
    for n in range(1, 11):
        graph.add_node(f"job-{n}", workflow_id="job", status="completed", origin="trigger",
                       faults=int(n <= 6), fault_kinds="crash" if n <= 6 else "",
                       retries=2 if n > 6 else 0, violation=False)  # fmt: skip
    struck, retried = families(graph)
    assert struck.members == tuple(f"job-{n}" for n in range(1, 7))
    assert retried.members == tuple(f"job-{n}" for n in range(7, 11))
    drawn = collapse_families(graph)
    assert "fault: crash" in node_label(struck.node, drawn.nodes[struck.node])
    assert "2 retries" in node_label(retried.node, drawn.nodes[retried.node])
    # Three struck alike are still drawn one by one (a family takes four).
    assert len(families(graph.subgraph([f"job-{n}" for n in (1, 2, 3, 7, 8, 9, 10)]))) == 1


def test_alike_groups_of_linked_executions_fold_into_one_family(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # join-child copied: order-N owns fulfillment-N, recheck-N joins it (a second parent: no
    # tree). Ten such trios drew thirty boxes; they are one family, beside the story's own
    # trio, whose recheck was cancelled.
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).parents[2] / "benchmarks"))
    from _views_copies import copied

    run = ys.simulate(copied(ys.load_scenario("join-child"), 20), seed=0, runtime="memory")
    graph = graph_from_trace(run.trace)
    (family,) = families(graph)
    assert family.node.startswith(f"9 {TIMES} order + recheck + fulfil (linked), ")
    assert len(family.executions) == 27
    assert family.members[0] == "order-1042"
    drawn = collapse_families(graph)
    ranges_hold_only_their_family(drawn, graph)
    assert {"order-42", "recheck-42"} <= set(drawn.nodes)
