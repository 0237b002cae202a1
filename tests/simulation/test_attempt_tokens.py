"""Steps whose attempts complete by their own token (``completes_by_token()``): the worker's
completion goes through ``complete_attempt``, an attempt its worker gave up on completes by
its token when it ends, and a runtime refuses that stale completion (issue 54, item 7)."""

from __future__ import annotations

import dataclasses

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.trace_payloads import PutStepData, TraceKind

FIXED = "stale-completion-fixed"
BUGGY = "stale-completion"

RESERVE = ys.define_step(
    "reserve", lambda order: f"hold-{order}", lambda s: s.retry(2).completes_by_token()
)


@ys.workflow("book")
def book(step, params):  # type: ignore[no-untyped-def]
    return (yield from step.run("reserve", RESERVE, params["order"]))


@pytest.mark.parametrize("runtime", ["memory", "duckdb"])
@pytest.mark.parametrize("invoker", ["in-process", "worker"])
def test_an_engine_records_the_attempt_through_its_own_call(runtime: str, invoker: str) -> None:
    with ys.Engine([book], steps=[RESERVE], runtime=runtime, invoker=invoker) as engine:  # type: ignore[arg-type]
        engine.trigger("book", {"order": 42}, execution_id="order-42")
        engine.run_until_idle()
        record = engine.runtime.execution("order-42")
        assert record is not None
        assert record.result == "hold-42"
        (step,) = engine.runtime.steps("order-42")
        assert (step.step_key, step.status, step.value, step.attempt) == (
            "reserve", "completed", "hold-42", 1,
        )  # fmt: skip
        hits = engine.runtime.failpoints.hits
        assert hits["complete_attempt.after_commit"] == 1
        assert hits["put_step.after_commit"] == 0


def _calls(run: ys.SimulationRun, op: Op) -> list[ys.TraceEvent]:
    return [event for event in run.trace if event.op == op and event.kind != TraceKind.FAULT]


@pytest.mark.parametrize("runtime", ["memory", "duckdb"])
def test_the_attempt_its_worker_gave_up_on_is_refused_when_it_completes(runtime: str) -> None:
    run = ys.simulate(ys.load_scenario(FIXED), seed=0, runtime=runtime)
    assert run.ok, run.explain()
    stale, current = _calls(run, Op.COMPLETE_ATTEMPT)
    assert (stale.kind, stale.t, stale.token) == (TraceKind.REFUSED, 110.0, 1)
    assert (current.kind, current.t, current.token) == (TraceKind.CALL, 120.0, 2)
    assert isinstance(current.data, PutStepData)
    assert current.data.attempt == 2
    steps = {step.step_key: step for step in run.steps["order-42"]}
    assert (steps["reserve"].value, steps["reserve"].attempt) == ("hold-2", 2)


def test_a_runtime_that_takes_any_attempt_lets_the_stale_one_complete_the_step() -> None:
    run = ys.simulate(ys.load_scenario(BUGGY), seed=0)
    (violation,) = run.violations
    assert violation.invariant == "recorded history never changes"
    assert "was recorded completed with 'hold-1' at t=110" in violation.message
    assert "check_attempt_adapter" in violation.message
    stale, _ = _calls(run, Op.COMPLETE_ATTEMPT)
    assert (stale.kind, stale.token) == (TraceKind.CALL, 1)


@pytest.mark.parametrize("kind", ["crash", "freeze", "infra_error", "lose_response"])
def test_the_late_completion_is_a_choice_point_where_call_faults_strike(kind: str) -> None:
    scenario = ys.load_scenario(BUGGY)
    late = ys.Fault(kind, op="complete_attempt", step_key="reserve", occurrence=1)
    run = ys.simulate(dataclasses.replace(scenario, faults=[*scenario.faults, late]), seed=0)
    assert [fault.kind for fault in run.faults] == ["stall", kind]
    if kind == "lose_response":
        # The completion committed and its answer was lost: the record was rewritten.
        assert [v.invariant for v in run.violations] == ["recorded history never changes"]
        return
    # Nothing of the late completion lands (a freeze holds it past the run's end, when no
    # lease holds and the flawed runtime refuses as the reference does): the record is
    # attempt 2's alone.
    assert run.ok, run.explain()
    crashed = [event for event in run.trace if event.kind == TraceKind.CRASH]
    assert len(crashed) == (kind == "crash")


def test_the_pair_keeps_its_promise_under_one_fault() -> None:
    found = ys.explore(ys.load_scenario(BUGGY), max_faults=1, confirm=None)
    assert found.verdict == "violated"
    (violation,) = found.violations
    assert violation.invariant == "recorded history never changes"
    (fault,) = violation.faults
    assert fault.startswith("stall the attempt 70s at "), fault
    for strategy in ("systematic", "exhaustive"):
        held = ys.explore(ys.load_scenario(FIXED), max_faults=1, strategy=strategy, confirm=None)
        assert held.verdict == "ok", held.summary()


@pytest.mark.postgres
def test_the_fix_gives_the_same_trace_on_memory_duckdb_and_postgres() -> None:
    scenario = ys.load_scenario(FIXED)
    traces = {
        runtime: ys.simulate(scenario, seed=0, runtime=runtime).trace.to_jsonl()
        for runtime in ("memory", "duckdb", "postgres")
    }
    assert traces["memory"] == traces["duckdb"] == traces["postgres"]
