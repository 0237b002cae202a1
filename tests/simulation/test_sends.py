"""External events in the simulation: ``ys.SendEvent`` items made by a sender through a
``send_event`` choice point, the event's own faults (lost, duplicated, delayed) branched by
the searches, and the built-in "every accepted event is consumed or reported"."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.events import EventRecord, EventRequest, EventResult
from yieldstar_sim.core.model import ExecutionRecord, ExecutionStatus, InfrastructureError
from yieldstar_sim.core.ops import Op
from yieldstar_sim.runtime.memory import MemoryRuntime
from yieldstar_sim.simulation.execution import Execution
from yieldstar_sim.simulation.faults import EVENT_KINDS, FAULT_KINDS, FaultKind, applies_at
from yieldstar_sim.simulation.invariants import AcceptedEventsConsumedOrReported
from yieldstar_sim.simulation.invariants.events import EVENT_FIX
from yieldstar_sim.simulation.trace import Trace
from yieldstar_sim.simulation.trace_payloads import DeliveryData, SendData, TraceKind
from yieldstar_sim.views.graph import graph_from_trace

FIXED = "continue-as-new-event-fixed"
BUGGY = "continue-as-new-event"
INVARIANT = "every accepted event is consumed or reported"


def _sends(run: ys.SimulationRun) -> list[SendData]:
    return [e.data for e in run.trace.of_kind(TraceKind.SEND) if isinstance(e.data, SendData)]


def _delivery(run: ys.SimulationRun) -> list[DeliveryData]:
    return [
        e.data for e in run.trace.of_kind(TraceKind.DELIVERY) if isinstance(e.data, DeliveryData)
    ]


def _run(*faults: ys.Fault, name: str = FIXED) -> ys.SimulationRun:
    return ys.simulate(ys.load_scenario(name), seed=0, runtime="memory", faults=list(faults))


# ----------------------------------------------------------------------- sends, as scenario items


def test_each_send_is_a_choice_point_of_its_sender_and_its_acceptance_is_traced() -> None:
    run = _run()
    assert run.ok, run.explain()
    points = [e for e in run.trace if e.op == Op.SEND_EVENT and e.worker == "sender"]
    assert points
    assert all(e.point is not None for e in points)
    assert [(s.event_id, s.answer, s.target, s.instance_id) for s in _sends(run)] == [
        ("add-1", "accepted", "instance counter", "counter"),
        ("add-2", "accepted", "instance counter", "counter"),
    ]
    assert [(e.event_id, e.status, e.consumed_by) for e in run.events] == [
        ("add-1", "consumed", "counter"),
        ("add-2", "consumed", "@counter:counter/~2"),
    ]


def test_a_send_names_one_run_or_one_instance_and_a_sender_is_no_worker() -> None:
    counter = ys.load_scenario(FIXED)

    def with_sends(*sends: ys.SendEvent) -> ys.Scenario:
        return dataclasses.replace(counter, sends=sends)

    with pytest.raises(ys.ScenarioError, match="not both"):
        with_sends(ys.SendEvent("add", 1, execution_id="counter", instance_id="counter"))
    with pytest.raises(ys.ScenarioError, match="not neither"):
        with_sends(ys.SendEvent("add", 1))
    with pytest.raises(ys.ScenarioError, match="payload must be plain data"):
        with_sends(ys.SendEvent("add", object(), instance_id="counter"))
    with pytest.raises(ValueError, match="the name of a worker"):
        with_sends(ys.SendEvent("add", 1, instance_id="counter", client=ys.Client("w1")))
    with pytest.raises(ValueError, match="finite seconds"):
        with_sends(ys.SendEvent("add", 1, instance_id="counter", at=-1))
    assert with_sends(
        ys.SendEvent("add", 1, instance_id="counter", client=ys.Client("api"))
    ).client_names == ["api"]


def test_the_event_s_faults_are_placed_at_a_send_only() -> None:
    for kind in EVENT_KINDS:
        assert applies_at(kind, Op.SEND_EVENT, exploring=True)
        assert not applies_at(kind, Op.PUT_STEP)
    with pytest.raises(ValueError, match="a lose_event cannot be placed at put_step"):
        ys.Fault("lose_event", op="put_step")
    assert ys.Fault("delay_event").seconds == 40.0
    assert ys.Fault("duplicate_event", worker="sender").describe() == (
        "deliver twice the event of any send_event of sender"
    )


# ----------------------------------------------------------------------- the event's faults


def test_a_lost_event_never_reaches_the_runtime_and_its_sender_takes_it_as_sent() -> None:
    run = _run(ys.Fault("lose_event", op="send_event"))
    assert run.ok, run.explain()
    assert [(d.what, d.name) for d in _delivery(run)] == [("lost", "add")]
    assert [s.event_id for s in _sends(run)] == ["add-2"]  # add-1 was never sent again
    assert [e.event_id for e in run.events] == ["add-2"]


def test_a_duplicated_event_reaches_the_runtime_twice_and_is_kept_once_by_its_id() -> None:
    run = _run(ys.Fault("duplicate_event", op="send_event"))
    assert run.ok, run.explain()
    assert [(s.event_id, s.answer) for s in _sends(run)][:2] == [
        ("add-1", "accepted"),
        ("add-1", "duplicate"),
    ]
    assert [e.event_id for e in run.events] == ["add-1", "add-2"]


def test_an_event_without_an_id_sent_again_after_a_lost_answer_is_two_events() -> None:
    counter = ys.load_scenario(FIXED)
    scenario = dataclasses.replace(counter, sends=[ys.SendEvent("add", 1, instance_id="counter")])
    run = ys.simulate(
        scenario, seed=0, runtime="memory", faults=[ys.Fault("lose_response", op="send_event")]
    )
    assert [(s.attempt, s.answer, s.lost) for s in _sends(run)] == [
        (1, "accepted", True),
        (2, "accepted", False),
    ]
    assert len(run.events) == 2  # both taken, one run after the other
    assert run.ok, run.explain()


def test_a_delayed_event_arrives_later_and_the_sender_waits_for_it() -> None:
    run = _run(ys.Fault("delay_event", op="send_event", seconds=15))
    assert [(d.what, d.seconds) for d in _delivery(run)] == [("delayed", 15.0)]
    sent = run.trace.of_kind(TraceKind.SEND)
    assert [e.t for e in sent] == [15.0, 30.0]
    assert run.ok, run.explain()


def test_the_searches_branch_every_event_fault_at_a_send() -> None:
    scenario = ys.load_scenario(FIXED)
    run = Execution(scenario, runtime="memory")
    kinds = set()
    while not run.done():
        for move in run.moves(FAULT_KINDS, {FaultKind.DELAY_EVENT: 40.0}):
            if move.fault is not None and run.point(move.actor).info.op == Op.SEND_EVENT:
                kinds.add(move.fault)
        run.take(run.default_move())
    run.close()
    assert kinds >= EVENT_KINDS
    report = ys.explore(scenario, max_faults=1, confirm=None)
    tried = {kind for (label, kind) in report.verdicts if "send_event" in label}
    assert {str(kind) for kind in EVENT_KINDS} <= tried


# ----------------------------------------------------------------------- the bundled pair


def test_an_event_sent_while_its_run_continues_as_new_is_lost_on_the_flawed_engine() -> None:
    report = ys.explore(ys.load_scenario(BUGGY), max_faults=1, confirm=None)
    assert report.verdict == "violated"
    found = report.violations[0]
    assert found.invariant == INVARIANT
    assert "event 'add' (add-2), accepted for instance counter" in found.message
    assert "is gone" in found.message
    assert "continued as new" in found.message


def test_the_fix_keeps_the_event_for_the_instance_under_one_fault_of_each_search() -> None:
    scenario = ys.load_scenario(FIXED)
    systematic = ys.explore(scenario, max_faults=1, confirm=None)
    assert systematic.verdict == "ok", systematic.summary()
    exhaustive = ys.explore(scenario, strategy="exhaustive", max_faults=1, confirm=None)
    assert exhaustive.verdict == "ok", exhaustive.summary()
    assert exhaustive.exhausted


def test_without_a_fault_the_flawed_engine_loses_nothing() -> None:
    run = ys.simulate(ys.load_scenario(BUGGY), seed=0)
    assert run.ok, run.explain()


# ----------------------------------------------------------------------- the invariant itself


def _record(execution_id: str, status: ExecutionStatus, seq: int) -> ExecutionRecord:
    return ExecutionRecord(
        execution_id, "counter", None, "trigger", None, status, created_at=0.0, seq=seq
    )


def _accepted(trace: Trace, event_id: str) -> None:
    trace.add(
        5.0, TraceKind.SEND, f"send_event 'add' to run r-1: accepted as {event_id}",
        worker="sender", op=Op.SEND_EVENT, execution_id="r-1",
        data=SendData("sender", 1, "add", "run r-1", "accepted", event_id, 1, event_id, "r-1"),
    )  # fmt: skip


def test_an_event_left_pending_on_a_run_that_ended_is_a_violation() -> None:
    trace = Trace()
    _accepted(trace, "e-1")
    pending = EventRecord(1, "e-1", "r-1", "r-1", "add", None, 5.0)
    run = SimpleNamespace(
        trace=trace, events=[pending], executions=[_record("r-1", ExecutionStatus.COMPLETED, 1)]
    )
    (found,) = AcceptedEventsConsumedOrReported().check(run)  # type: ignore[arg-type]
    assert found.message == (
        "event 'add' (e-1), accepted for run r-1 at t=5, is still pending, but its run r-1 has "
        "ended (completed): nothing will ever take it, and the runtime does not report it "
        f"undelivered; {EVENT_FIX}"
    )


def test_an_event_reported_undelivered_or_consumed_holds() -> None:
    trace = Trace()
    _accepted(trace, "e-1")
    for status in ("undelivered", "consumed"):
        event = EventRecord(1, "e-1", "r-1", "r-1", "add", None, 5.0, status)  # type: ignore[arg-type]
        run = SimpleNamespace(
            trace=trace, events=[event], executions=[_record("r-1", ExecutionStatus.COMPLETED, 1)]
        )
        assert AcceptedEventsConsumedOrReported().check(run) == []  # type: ignore[arg-type]


def test_an_event_that_arrives_after_its_instance_ended_is_refused_and_nothing_is_kept() -> None:
    run = _run(ys.Fault("delay_event", op="send_event", occurrence=2, seconds=200))
    refused = [s for s in _sends(run) if s.answer == "refused"]
    assert [(s.sent_id, s.code) for s in refused] == [("add-2", "EXECUTION_ENDED")]
    assert [e.event_id for e in run.events] == ["add-1"]
    assert run.ok, run.explain()  # refused, so never accepted: the sender knows


def test_a_saved_counterexample_with_an_event_fault_replays_to_the_same_violation(
    tmp_path: Path,
) -> None:
    scenario = ys.load_scenario(BUGGY)
    report = ys.explore(scenario, max_faults=1, kinds=["delay_event"], confirm=None)
    assert report.verdict == "violated"
    artifact = report.counterexample
    assert artifact is not None
    assert any(fault.kind == FaultKind.DELAY_EVENT for fault in artifact.faults)
    path = artifact.save(tmp_path / "lost-add.json")
    again = ys.replay(path, scenario=scenario)
    assert [v.invariant for v in again.violations] == [INVARIANT]


def test_an_event_sent_at_the_instant_its_run_continues_as_new_is_an_interleaving() -> None:
    """No fault: the send and the run's acknowledgement are moves of two actors at t=20. The
    seed's order sends after the continue-as-new; the exhaustive search takes the other too,
    where the flawed engine binds the event to the ending run, and the fix does not."""

    def at_twenty(name: str) -> ys.Scenario:
        return dataclasses.replace(
            ys.load_scenario(name),
            sends=[
                ys.SendEvent("add", 1, instance_id="counter", event_id="add-1"),
                ys.SendEvent("add", 2, instance_id="counter", event_id="add-2", at=20),
            ],
        )

    assert ys.explore(at_twenty(BUGGY), max_faults=0, confirm=None).verdict == "ok"
    found = ys.explore(at_twenty(BUGGY), strategy="exhaustive", max_faults=0, confirm=None)
    assert found.verdict == "violated"
    assert "continued as new at t=20 (as @counter:counter/~2) without taking it" in (
        found.violations[0].message
    )
    fixed = ys.explore(at_twenty(FIXED), strategy="exhaustive", max_faults=0, confirm=None)
    assert fixed.verdict == "ok"
    assert fixed.exhausted


def test_a_client_that_mints_fresh_ids_turns_a_lost_answer_into_a_second_event() -> None:
    counter = ys.load_scenario(FIXED)
    api = ys.Client("api", ys.ClientRetry(reuse_request_id=False))
    scenario = dataclasses.replace(
        counter, sends=[dataclasses.replace(send, client=api) for send in counter.sends]
    )
    run = ys.simulate(
        scenario, seed=0, runtime="memory",
        faults=[ys.Fault("lose_response", worker="api", op="send_event")],
    )  # fmt: skip
    assert [e.event_id for e in run.events] == ["add-1", "add-1~retry-2", "add-2"]
    assert run.ok, run.explain()  # each consumed: the duplicate is the counter's to notice


def test_the_totals_count_the_sends_and_what_became_of_the_events() -> None:
    run = _run(ys.Fault("duplicate_event", op="send_event"))
    totals = run.totals()
    assert str(totals).splitlines()[-1] == "events: 3 sends (2 accepted, 1 duplicate); 2 consumed"
    assert totals.to_json()["events"]["duplicates"] == 1
    plain = ys.simulate(ys.load_scenario("durable-start"), runtime="memory")
    assert "events" not in plain.totals().to_json()


def test_the_graph_built_from_the_trace_holds_every_run_of_a_continued_instance() -> None:
    graph = graph_from_trace(_run().trace)
    assert {node: data["status"] for node, data in graph.nodes(data=True)} == {
        "counter": "continued-as-new",
        "@counter:counter/~2": "continued-as-new",
        "@counter:counter/~3": "completed",
    }
    assert graph.nodes["@counter:counter/~2"]["origin"] == "continue"


class _FailsFirstSend(MemoryRuntime):
    """The reference runtime, whose first ``send_event`` fails with an infrastructure error
    before anything is written."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.failed = False

    def send_event(self, request: EventRequest) -> EventResult:
        if not self.failed:
            self.failed = True
            raise InfrastructureError("connection reset")
        return super().send_event(request)


def test_a_send_the_runtime_fails_is_traced_as_an_error_and_sent_again() -> None:
    run = ys.simulate(ys.load_scenario(FIXED), seed=0, runtime=_FailsFirstSend)
    assert run.ok, run.explain()
    assert [(e.worker, e.text) for e in run.trace.of_kind(TraceKind.ERROR)] == [
        ("sender", "send_event failed: connection reset"),
    ]
    assert [(s.attempt, s.event_id, s.answer) for s in _sends(run)] == [
        (2, "add-1", "accepted"),
        (1, "add-2", "accepted"),
    ]
    assert [(e.event_id, e.status) for e in run.events] == [
        ("add-1", "consumed"),
        ("add-2", "consumed"),
    ]


def test_consecutive_runs_of_an_instance_are_joined_by_a_continued_as_edge_in_every_view() -> None:
    from yieldstar_sim.views.evidence import edge_line
    from yieldstar_sim.views.graph import draw_execution_graph, execution_graph, run_graph
    from yieldstar_sim.views.graph_text import to_dot, to_mermaid

    run = _run()
    runs = [("counter", "@counter:counter/~2"), ("@counter:counter/~2", "@counter:counter/~3")]
    for graph in (graph_from_trace(run.trace), execution_graph(run.runtime), run_graph(run)):
        assert [
            (s, t, key, edge_line(d)) for s, t, key, d in graph.edges(keys=True, data=True)
        ] == [(source, target, "continued as", "continued") for source, target in runs]
    graph = run_graph(run)
    legend = draw_execution_graph(graph).axes[0].get_legend()
    assert "continued as new" in [text.get_text() for text in legend.get_texts()]
    assert to_dot(graph).count('style="bold", color="#0072B2"') == 2
    assert to_mermaid(graph).count("==>") == 2
