"""A runtime's own actions are trace events (issue 54, item 6): an adapter may report what it
decided by itself (``ReportsActions``, an optional part of the adapter Protocol); each action
is traced where it was taken, and a violation's sentence names it instead of a step that never
failed. An adapter that does not report is never asked, and keeps working."""

from __future__ import annotations

import random
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.examples.flawed_runtimes import (
    ArchivesExpiredLeasesRuntime,
    RequeuesExpiredLeasesRuntime,
    StaleStepWritesRuntime,
)
from yieldstar_sim.runtime import ReportsActions, RuntimeAction
from yieldstar_sim.runtime.memory import MemoryRuntime
from yieldstar_sim.simulation.execution import Execution
from yieldstar_sim.simulation.runtime_actions import reports
from yieldstar_sim.simulation.trace_payloads import RuntimeActionData, TraceKind


def actions(run: Any) -> list[Any]:
    return [event for event in run.trace if event.kind == TraceKind.RUNTIME]


def test_reporting_is_optional_and_a_runtime_that_does_not_report_is_never_asked() -> None:
    assert not reports(MemoryRuntime())
    assert not reports(StaleStepWritesRuntime())  # forwards everything else to memory
    assert reports(ArchivesExpiredLeasesRuntime())
    assert isinstance(RequeuesExpiredLeasesRuntime(), ReportsActions)
    run = ys.simulate(ys.load_scenario("durable-start"), seed=0, runtime="memory")
    assert not actions(run)


def test_an_archived_run_is_explained_by_the_runtimes_action_not_by_a_step() -> None:
    run = ys.simulate(ys.load_scenario("expired-lease-archived"), seed=0)
    (archived,) = actions(run)
    assert archived.execution_id == "order-42"
    assert archived.t == 50.0
    assert isinstance(archived.data, RuntimeActionData)
    assert archived.data.action == "archived"
    assert archived.data.status == "failed"  # the views draw it so
    (violation,) = run.violations
    assert violation.invariant == "executions end as expected"
    assert violation.message.startswith(
        "order-42 (confirm) failed by the runtime, which archived it at t=50 (w2's lease "
        "expired at t=50, which it counted as a failed attempt"
    )
    assert "at step send" not in violation.message
    assert "no delivery failed it: the runtime ended it on its own" in violation.message
    # The action is traced at the call during which the runtime took it (a claim).
    (claim,) = [e for e in run.trace if e.seq == archived.seq + 1]
    assert claim.op == "claim"


def test_the_fix_reports_that_it_sends_the_task_back_to_the_queue() -> None:
    run = ys.simulate(ys.load_scenario("expired-lease-requeued"), seed=0)
    assert run.ok, run.explain()
    (requeued,) = actions(run)
    assert requeued.data == RuntimeActionData(
        "requeued", "w2's lease expired at t=50; it runs again", status="pending"
    )
    assert "the runtime requeued order-42" in requeued.text


def test_the_views_draw_what_the_runtime_did() -> None:
    from yieldstar_sim.views.graph import graph_from_trace
    from yieldstar_sim.views.timeline import build_timeline

    run = ys.simulate(ys.load_scenario("expired-lease-archived"), seed=0)
    assert graph_from_trace(run.trace).nodes["order-42"]["status"] == "failed"
    marks = [mark for mark in build_timeline(run.trace).marks if mark.kind == "runtime"]
    assert len(marks) == 1


def test_each_action_is_reported_once() -> None:
    runtime = ArchivesExpiredLeasesRuntime()
    runtime.actions.append(RuntimeAction("archived", "x"))
    assert runtime.take_actions() == [RuntimeAction("archived", "x")]
    assert runtime.take_actions() == []


def test_a_run_on_a_reporting_runtime_restores_at_any_point_as_it_went() -> None:
    # The adapter keeps state of its own (its counts and reports) and saves it with the
    # reference runtime's records: a restored run goes on as the run did.
    scenario = ys.load_scenario("expired-lease-archived")
    execution = Execution(
        scenario, runtime=ArchivesExpiredLeasesRuntime, saving=True, scenario_faults=True
    )
    assert execution.can_restore
    rng = random.Random(3)
    saved, schedule = {}, []
    while not execution.done():
        saved[execution.points] = execution.save()
        move = execution.planned(rng.choice(execution.moves()))
        schedule.append(move)
        execution.take(move)
    expected = execution.state.trace.to_jsonl()
    for index in sorted(saved, reverse=True):
        execution.restore(saved[index])
        for move in schedule[index:]:
            execution.take(move)
        assert execution.state.trace.to_jsonl() == expected, f"restored at point {index}"
    execution.close()


def test_an_adapter_that_reports_something_else_is_told_what_to_report() -> None:
    class Junk(MemoryRuntime):
        def take_actions(self) -> list[Any]:
            return ["archived order-42"]

    scenario = ys.load_scenario("durable-start")
    with pytest.raises(TypeError, match=r"Junk.take_actions\(\) returned 'archived order-42'"):
        ys.simulate(scenario, seed=0, runtime=Junk)
