"""The records as of each event, derived from the trace, agree with the runtime's own records."""

from __future__ import annotations

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation import SimulationRun
from yieldstar_sim.simulation.scenario_files import bundled_scenarios
from yieldstar_sim.views.records import CHANGED, NEW, TERMINAL
from yieldstar_sim.widgets import RecordBook, describe_event, narrate, records_html
from yieldstar_sim.widgets.whatif import WHAT_IF_KINDS, choice_points

SCENARIOS = sorted(bundled_scenarios())


def book_of(run: SimulationRun) -> RecordBook:
    return RecordBook.of_run(run)


def assert_final_records_agree(run: SimulationRun) -> None:
    """At the last event the derived tables say what the runtime holds."""
    final = book_of(run).at(len(run.trace) - 1)
    executions = {row.cells[0]: row.cells for row in final.table("executions").rows}
    assert set(executions) == {record.execution_id for record in run.executions}
    for record in run.executions:
        _, workflow, origin, parent, status, lease = executions[record.execution_id]
        assert (workflow, origin, status) == (record.workflow_id, record.origin, str(record.status))
        if record.parent is None:
            assert parent.startswith("none")
        else:
            assert parent.startswith(f"{record.parent.execution_id} / {record.parent.step_key}")
        if record.lease is None:
            assert lease == "none"
        else:
            assert lease.startswith(f"{record.lease.owner}, token {record.lease.token}, until ")
    steps = {(row.cells[0], row.cells[1]): row.cells[2] for row in final.table("steps").rows}
    assert steps == {
        (record.execution_id, step.step_key): step.status
        for record in run.executions
        for step in run.steps[record.execution_id]
    }
    targets = {
        row.cells[0]: row.cells[2]
        for row in final.table("start requests").rows
        if row.cells[2] != "nothing admitted"
    }
    assert targets == {
        f"{r.request_id.execution_id} / {r.request_id.step_key}": r.target_execution_id
        for r in run.start_requests
    }
    assert len(final.table("effects").rows) == len(run.effects)
    wakes = {row.cells[0]: row.cells[1] for row in final.table("wakes").rows}
    for record in run.executions:
        if str(record.status) in TERMINAL:
            assert record.execution_id not in wakes
        elif record.lease is not None:
            assert wakes[record.execution_id] == f"t={record.lease.expires_at:g}"
        elif record.due_at is not None:
            assert wakes[record.execution_id] == f"t={record.due_at:g}"


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_last_event_shows_what_the_runtime_holds(name: str) -> None:
    assert_final_records_agree(ys.simulate(ys.load_scenario(name), seed=0, runtime="memory"))


def test_so_do_runs_with_any_fault_anywhere() -> None:
    """Every what-if fault at every choice point of the fix: the trace still tells the records."""
    run = ys.simulate(ys.load_scenario("durable-start"), seed=0, runtime="memory")
    for index in choice_points(run.trace):
        for kind in WHAT_IF_KINDS:
            faulty = ys.simulate(
                run.scenario,
                0,
                runtime="memory",
                faults=[ys.Fault(kind, at=index)],
                check_faults=False,  # the new fault may move the scenario's own one away
            )
            assert_final_records_agree(faulty)


def test_rows_an_event_adds_or_changes_are_marked() -> None:
    run = ys.simulate(ys.load_scenario("durable-start"), seed=0, runtime="memory")
    book = book_of(run)
    first = book.at(0)
    assert [row.mark for row in first.table("executions").rows] == [NEW]
    claim = next(e for e in run.trace if e.kind == "call" and e.op == "claim" and e.token)
    at_claim = book.at(claim.seq)
    (order,) = at_claim.table("executions").rows
    assert order.mark == CHANGED
    assert order.cells[-1] == "w2, token 1, until t=30"
    assert [row.mark for row in at_claim.table("leases").rows] == [NEW]
    assert set(at_claim.changed) == {"executions", "leases", "wakes"}
    start = next(e for e in run.trace if e.op == "start")
    at_start = book.at(start.seq)
    marked = [r.cells[0] for r in at_start.table("executions").marked]
    assert marked == ["@ship-order:order-42/ship"]
    assert at_start.table("start requests").rows[0].mark == NEW
    html = records_html(at_start)
    assert "<tr class='new'" in html
    assert html.count("<table") == 6


def test_a_repeated_start_shows_two_calls_and_one_target() -> None:
    run = ys.simulate(ys.load_scenario("durable-start"), seed=0, runtime="memory")
    starts = [e for e in run.trace if e.op == "start" and e.kind == "call"]
    book = book_of(run)
    (request,) = book.at(starts[1].seq).table("start requests").rows
    assert request.cells == (
        "order-42 / ship",
        "ship-order",
        "@ship-order:order-42/ship",
        "2",
        "accepted @ship-order:order-42/ship",
    )
    assert request.mark == CHANGED


def test_a_crashed_holders_lease_expires_and_is_taken_over() -> None:
    run = ys.simulate(ys.load_scenario("durable-start"), seed=0, runtime="memory")
    book = book_of(run)
    crash = next(e for e in run.trace if e.kind == "crash")
    lease = book.at(crash.seq).table("leases").rows[0]
    assert lease.cells[-1] == "held; w2 crashed at t=0"
    takeover = next(e for e in run.trace if e.kind == "call" and e.op == "claim" and e.token == 2)
    states = [row.cells[-1] for row in book.at(takeover.seq).table("leases").rows]
    assert states[0] == "expired; taken over by token 2 at t=30"


def test_a_frozen_worker_is_fenced_and_the_table_says_why() -> None:
    run = ys.simulate(ys.load_scenario("frozen-worker"), seed=0, runtime="memory")
    book = book_of(run)
    freeze = next(e for e in run.trace if e.kind == "freeze")
    assert book.at(freeze.seq).table("leases").rows[0].cells[-1] == "held; w2 frozen since t=0"
    refused = next(e for e in run.trace if e.kind == "refused")
    sentence = narrate(run.trace)[refused.seq]
    assert "fencing" in sentence
    assert "token 1" in sentence


def test_a_terminal_callers_refused_child_is_explained() -> None:
    run = ys.simulate(ys.load_scenario("orphan-after-cancel-fixed"), seed=0, runtime="memory")
    refused = next(e for e in run.trace if e.kind == "refused")
    sentence = narrate(run.trace)[refused.seq]
    assert sentence.startswith(
        "The runtime refuses w2's start_child for order-42: order-42 has already ended, and a "
        "terminal execution admits no new targets"
    )
    assert "token 1" in sentence


def test_an_invalid_start_admits_nothing() -> None:
    run = ys.simulate(ys.load_scenario("invalid-params"), seed=0, runtime="memory")
    final = book_of(run).at(len(run.trace) - 1)
    (request,) = final.table("start requests").rows
    assert request.cells[2:] == ("nothing admitted", "1", "rejected INVALID_START_PARAMETERS")
    assert [row.cells[0] for row in final.table("executions").rows] == ["order-42"]


def test_values_are_escaped_in_html() -> None:
    run = ys.simulate(ys.load_scenario("durable-start"), seed=0, runtime="memory")
    html = records_html(book_of(run).at(len(run.trace) - 1))
    assert "{'order': 42}" not in html
    assert "{&#x27;order&#x27;: 42}" in html


def test_every_event_has_words() -> None:
    for name in SCENARIOS:
        run = ys.simulate(ys.load_scenario(name), seed=0, runtime="memory")
        sentences = narrate(run.trace)
        assert len(sentences) == len(run.trace)
        assert all(sentence.strip() for sentence in sentences)
        assert sentences[0] == describe_event(run.trace.events[0])


def test_an_event_outside_the_trace_is_refused() -> None:
    run = ys.simulate(ys.load_scenario("durable-start"), seed=0, runtime="memory")
    with pytest.raises(IndexError, match="not in a trace of 20 events"):
        book_of(run).at(25)
