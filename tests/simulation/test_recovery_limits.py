"""Recurring faults and recovery limits: a step body that crashes its own worker
(``step.world.crash_worker()``), the scenario's ``max_recovery_attempts`` that dead-letters an
execution recovered too often, and the invariant that nothing is recovered without end."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.model import MAX_RECOVERY_ATTEMPTS_EXCEEDED, Delivery, ExecutionStatus
from yieldstar_sim.examples.flawed_runtimes import _Wrapped
from yieldstar_sim.simulation.execution import Execution
from yieldstar_sim.simulation.faults import TIMED_KINDS, FaultKind
from yieldstar_sim.simulation.invariants import NothingRecoveredWithoutEnd
from yieldstar_sim.simulation.invariants.recoveries import RecoveryLog
from yieldstar_sim.simulation.moves import Move, plain_move
from yieldstar_sim.simulation.result import SimulationRun
from yieldstar_sim.simulation.trace_payloads import OutcomeData, TraceKind

LIMIT = "nothing is recovered without end"


def _render(step: Any, pages: int) -> int:
    step.world.elapse(5)
    if pages > 1_000:
        step.world.crash_worker()
    step.world.effect("report.rendered", report=step.execution_id)
    return pages


@ys.workflow("render-report")
def render_report(step: Any, params: Any) -> Any:
    pages = yield from step.run("render", _render, step, params["pages"])
    return {"pages": pages}


def _scenario(**options: Any) -> ys.Scenario:
    return ys.Scenario(
        name="poison",
        workflows=[render_report],
        triggers=[
            ys.Trigger("render-report", {"pages": 12}, execution_id="report-1"),
            ys.Trigger("render-report", {"pages": 250_000}, execution_id="report-huge"),
        ],
        **{"max_time": 600, **options},
    )


@pytest.mark.parametrize("runtime", ["memory", "duckdb"])
def test_a_body_that_crashes_its_worker_crashes_it_where_its_work_reaches_the_call(
    runtime: str,
) -> None:
    run = ys.simulate(_scenario(max_recovery_attempts=1), runtime=runtime)
    crashes = [e for e in run.trace if e.kind == TraceKind.CRASH]
    assert crashes
    first = crashes[0]
    assert first.t == 5.0  # after the body's 5 s of work, not when it ran
    assert (first.execution_id, first.step_key) == ("report-huge", "render")
    assert "called step.world.crash_worker()" in first.text
    # Its worker restarted, and what the body would have done after the call never happened.
    assert any(e.kind == TraceKind.RESTART and e.worker == first.worker for e in run.trace)
    assert [effect.data["report"] for effect in run.effects] == ["report-1"]


def test_crash_worker_belongs_in_a_step_body() -> None:
    @ys.workflow("crashes-in-code")
    def crashes_in_code(step: Any, params: Any) -> Any:
        step.world.crash_worker()
        yield from step.delay("never", 1)

    scenario = ys.Scenario(
        name="crash-in-code",
        workflows=[crashes_in_code],
        triggers=[ys.Trigger("crashes-in-code", execution_id="c-1")],
        world_in_workflow_code=True,
        expected=[ys.expect("crashes-in-code", error="WorkflowDefinitionError")],
    )
    run = ys.simulate(scenario, runtime="memory")
    record = run.runtime.execution("c-1")
    assert record is not None
    assert record.error is not None
    assert "call it inside a step body" in record.error.message


@pytest.mark.parametrize("runtime", ["memory", "duckdb"])
def test_an_execution_recovered_past_the_bound_ends_dead_lettered_without_running(
    runtime: str,
) -> None:
    run = ys.simulate(
        _scenario(
            max_recovery_attempts=2,
            expected=[ys.expect(execution_id="report-huge", status="dead-lettered")],
        ),
        runtime=runtime,
    )
    assert run.verdict == "ok", run.explain()
    record = run.runtime.execution("report-huge")
    assert record is not None
    assert record.status == ExecutionStatus.DEAD_LETTERED
    assert record.recoveries == 3
    assert record.error is not None
    assert record.error.code == MAX_RECOVERY_ATTEMPTS_EXCEEDED
    assert "recovered 3 times" in record.error.message
    # Two recoveries ran the step again; the third was acknowledged without running it.
    crashes = [e for e in run.trace if e.kind == TraceKind.CRASH]
    assert len(crashes) == 3
    outcome = next(e for e in run.trace if isinstance(e.data, OutcomeData))
    dead = [
        e for e in run.trace if isinstance(e.data, OutcomeData) and e.data.status == "dead-lettered"
    ]
    assert outcome.execution_id == "report-1"
    assert len(dead) == 1
    assert "dead-lettered, never run again" in dead[0].text
    assert run.totals().executions["render-report"] == {"completed": 1, "dead-lettered": 1}


def test_a_dead_letter_nobody_declared_is_a_violation_that_says_how_to_declare_it() -> None:
    run = ys.simulate(_scenario(max_recovery_attempts=2), runtime="memory")
    messages = [v.message for v in run.violations if v.invariant == "executions end as expected"]
    assert len(messages) == 1
    assert messages[0].startswith("report-huge (render-report) was dead-lettered: ")
    assert 'ys.expect("render-report", status="dead-lettered")' in messages[0]


def test_with_no_bound_a_run_cut_while_an_execution_keeps_being_recovered_is_violated() -> None:
    run = ys.simulate(_scenario(), runtime="memory")
    assert run.verdict == "violated"
    assert run.incomplete is not None  # cut at max_time: it never ends on its own
    (found,) = [v for v in run.violations if v.invariant == LIMIT]
    assert found.message.startswith("report-huge (render-report) was recovered ")
    assert "still being recovered when the run was cut" in found.message
    assert "step.world.crash_worker() in step render" in found.message
    assert "Scenario(max_recovery_attempts=N)" in found.message


def test_a_run_cut_with_few_recoveries_stays_incomplete_not_violated() -> None:
    run = ys.simulate(_scenario(max_time=40), runtime="memory")
    assert run.verdict == "incomplete"


def _skewed(workers: int) -> tuple[ys.Scenario, list[ys.Fault]]:
    """zombie-attempt-fixed, cut early, with w1's clock 70 s behind from order-43's charge on:
    w1 works past its lease on every delivery of order-43 it takes (30 s of work, a 30 s lease
    it never renews), and a healthy w2, if there is one, finishes it."""
    scenario = replace(ys.load_scenario("zombie-attempt-fixed"), max_time=130, workers=workers)
    skew = ys.Fault("skew", worker="w1", op="elapse", execution_id="order-43", seconds=70)
    return scenario, [skew]


def _w1_first(
    scenario: ys.Scenario,
    faults: list[ys.Fault],
    struck: tuple[str, float, FaultKind] | None = None,
) -> SimulationRun:
    """The run of ``scenario`` where w1 goes whenever it can (an unfair scheduler: w2, idle,
    is offered its claim beside w1 at each recovery and never given it), with ``faults``; and
    where ``struck`` (a worker, a time, a fault kind) says so, that worker goes first at its
    claim at that time, struck by that fault."""
    execution = Execution(scenario, faults=faults)
    while not execution.done():
        ready = execution.ready()
        actor = "w1" if "w1" in ready else ready[0]
        choice = 0 if execution.point(actor).options else None
        move = plain_move(actor, choice)
        if struck is not None and struck[0] in ready and execution.clock.now() == struck[1]:
            info = execution.point(struck[0]).info
            if info is not None and info.op == "claim":
                move, struck = (
                    Move(struck[0], struck[2], 40.0 if struck[2] in TIMED_KINDS else None),
                    None,
                )
        execution.take(execution.planned(move))
    return execution.result()


def test_a_loop_only_an_unfair_scheduler_keeps_up_is_not_called_without_end() -> None:
    """w1 took order-43 at its recoveries while w2 asked for work at the same instant and never
    got it (or got it only at the cut): a fair scheduler gives w2 the claim, and w2 finishes
    it. The run is incomplete (cut), not violated: nothing says it would be recovered for
    ever."""
    scenario, faults = _skewed(workers=2)
    run = _w1_first(scenario, faults)
    claims = [
        e.worker
        for e in run.trace
        if e.kind == TraceKind.CALL and e.op == "claim" and e.execution_id == "order-43"
    ]
    assert claims[:4] == ["w1"] * 4  # at t=10, and at its recoveries at t=40, 70 and 100
    assert run.verdict == "incomplete", run.explain()
    assert LIMIT not in [v.invariant for v in run.violations]
    assert NothingRecoveredWithoutEnd().starved(run) == {"order-43": ["w2"]}
    assert run.unfair is not None
    assert "while w2 was ready to claim it at those instants and was not given it" in run.unfair
    assert run.incomplete.endswith("only an unfair scheduler keeps that up; a fair one ends it")


def test_a_worker_that_lost_the_execution_to_a_fault_at_its_claim_is_still_starved() -> None:
    """w2 wins one recovery's claim (t=70) and a fault takes the delivery from it after the
    call commits (``crash_after``, ``lose_response``: the fault's event comes before the
    claim's): the execution was lost to the fault, not to w2, so w2 is still a worker a fair
    scheduler would give it to, and the loop is unfair, not endless."""
    for kind in (FaultKind.CRASH_AFTER, FaultKind.LOSE_RESPONSE):
        scenario, faults = _skewed(workers=2)
        run = _w1_first(scenario, faults, struck=("w2", 70.0, kind))
        claims = [
            (e.t, e.worker)
            for e in run.trace
            if e.kind == TraceKind.CALL and e.op == "claim" and e.execution_id == "order-43"
        ]
        assert (70.0, "w2") in claims, claims
        assert (100.0, "w1") in claims, claims
        assert LIMIT not in [v.invariant for v in run.violations], run.explain()
        assert NothingRecoveredWithoutEnd().starved(run) == {"order-43": ["w2"]}
        assert run.verdict == "incomplete"


def test_a_worker_frozen_before_its_claim_loses_the_delivery_on_its_own() -> None:
    """A freeze strikes before the call: the claim after it makes a delivery like any other,
    and a lease its worker then lets run out was lost by the worker, not by the fault."""
    run = _w1_first(*_skewed(workers=2), struck=("w2", 70.0, FaultKind.FREEZE))
    log = RecoveryLog(None)
    for event in run.trace:
        log.take(event, lambda claim: [])
    assert not [key for key in log.faulted if key[0] == "order-43" and key[1] != 1]


def test_a_skewed_worker_alone_recovers_its_execution_without_end() -> None:
    """With no other worker, nothing ends w1's loop: a violation, as a poison workflow's."""
    scenario, faults = _skewed(workers=1)
    run = ys.simulate(scenario, seed=0, runtime="memory", faults=faults)
    (found,) = [v for v in run.violations if v.invariant == LIMIT]
    assert found.message.startswith("order-43 (checkout) was recovered 3 times")
    assert "worked past it by a clock behind" in found.message
    assert NothingRecoveredWithoutEnd().starved(run) == {}
    assert run.unfair is None


class _ForgetsRecoveries(_Wrapped):
    """A runtime that never counts a recovery: the engine cannot see the bound pass."""

    def claim(self, owner: str, **options: Any) -> Delivery | None:
        delivery: Delivery | None = self.inner.claim(owner, **options)
        if delivery is None:
            return None
        return replace(delivery, execution=replace(delivery.execution, recoveries=0))


def test_a_runtime_that_does_not_count_recoveries_is_caught_by_the_trace() -> None:
    run = ys.simulate(_scenario(max_recovery_attempts=2, runtime=_ForgetsRecoveries), runtime=None)
    (found,) = [v for v in run.violations if v.invariant == LIMIT]
    assert found.message.startswith("report-huge (render-report) was recovered ")
    # Its third recovery (t=90) ran the step again: the crash at t=95 says so.
    assert "more than max_recovery_attempts=2, and was run again at t=95 by" in found.message
    assert "ExecutionRecord.recoveries" in found.message


def test_the_invariant_counts_only_claims_that_took_over_an_expired_lease() -> None:
    run = ys.simulate(
        _scenario(
            max_recovery_attempts=2,
            expected=[ys.expect(execution_id="report-huge", status="dead-lettered")],
        ),
        runtime="memory",
    )
    assert NothingRecoveredWithoutEnd(2).check(run) == []
    assert NothingRecoveredWithoutEnd(None).check(run) == []  # it finished: nothing was cut


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (0, "not 0"),
        (-1, "not -1"),
        (2.5, "not 2.5"),
        ("3", "not '3'"),
        (True, "not True"),
    ],
)
def test_a_recovery_limit_that_is_not_a_whole_number_from_one_is_refused(
    value: object, words: str
) -> None:
    with pytest.raises(ValueError, match="max_recovery_attempts must be a whole number >= 1") as e:
        _scenario(max_recovery_attempts=value)
    assert words in str(e.value)
    assert "scenario 'poison'" in str(e.value)


def test_the_engine_dead_letters_past_the_bound_too() -> None:
    engine = ys.Engine([render_report], runtime="memory", max_recovery_attempts=1)
    engine.runtime.trigger("render-report", {"pages": 250_000}, execution_id="r-1")
    crashed = engine.dispatcher.dispatch("w1")
    assert crashed is not None
    assert crashed.outcome is None
    assert "crashed its worker" in str(crashed.rejection)
    record = engine.runtime.execution("r-1")
    assert record is not None
    assert record.lease is not None  # neither acknowledged nor released: its lease runs out
    for _ in (1, 2):
        engine.clock.advance(31)
        result = engine.dispatcher.dispatch("w2")
        assert result is not None
        assert result.lease is not None
    assert result.acknowledged
    assert result.record is not None
    assert result.record.status == ExecutionStatus.DEAD_LETTERED
    assert result.record.recoveries == 2
    with pytest.raises(ValueError, match="max_recovery_attempts"):
        ys.Engine([render_report], runtime="memory", max_recovery_attempts=0)


def test_in_a_worker_process_the_crash_ends_the_child_and_the_delivery_is_released() -> None:
    engine = ys.Engine([render_report], runtime="memory", invoker="worker")
    try:
        engine.runtime.trigger("render-report", {"pages": 250_000}, execution_id="r-1")
        crashed = engine.dispatcher.dispatch("w1")
        assert crashed is not None
        assert "the worker process exited (code 70)" in str(crashed.rejection)
        record = engine.runtime.execution("r-1")
        assert record is not None
        assert record.lease is None  # its parent lived, and released it: no recovery
        engine.runtime.trigger("render-report", {"pages": 2}, execution_id="r-2")
        engine.clock.advance(10)
        after = engine.dispatcher.dispatch("w1", "r-2")
        assert after is not None
        assert after.acknowledged  # a new child serves the next delivery
    finally:
        engine.invoker.close()
