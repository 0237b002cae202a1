"""Side effects and nondeterminism outside steps (issue 15, items 5 and 6): refused by default,
shown on purpose where a scenario opts in, each explained in a sentence."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.model import ExecutionStatus


@pytest.fixture(params=["memory", "duckdb"])
def runtime(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_world_outside_a_step_still_fails_the_workflow_by_default(runtime: str) -> None:
    guarded = dataclasses.replace(
        ys.load_scenario("random-in-workflow-code"), world_in_workflow_code=False
    )
    run = ys.simulate(guarded, runtime=runtime)
    (violation,) = run.violations
    assert "step.world.random was called outside a step body" in violation.message


def test_an_effect_in_workflow_code_repeats_on_every_replay_without_a_fault(runtime: str) -> None:
    run = ys.simulate(ys.load_scenario("effect-in-workflow-code"), runtime=runtime)
    assert run.faults == []
    emails = run.effects_named("email.sent")
    assert [(e.step_key, e.token, e.at) for e in emails] == [
        ("(workflow code)", 1, 0.0),
        ("(workflow code)", 2, 3600.0),
    ]
    (violation,) = run.violations
    assert violation.message.endswith(
        "it is made in workflow code, outside any step, and workflow code runs again on every "
        "delivery of order-42 (token 1, then token 2): wrap it in a step, `yield from "
        "step.run(key, lambda: step.world.effect(...))`, so that a replay returns the recorded "
        "result"
    )
    assert "in workflow code, outside any step" in run.trace.of_kind("effect")[0].text


def test_a_random_read_in_workflow_code_is_explained_at_the_nondeterminism_error(
    runtime: str,
) -> None:
    run = ys.simulate(ys.load_scenario("random-in-workflow-code"), runtime=runtime)
    (violation,) = run.violations
    assert "NondeterminismError: execution 'visit-1' replayed differently at step #0" in (
        violation.message
    )
    assert (
        "its workflow code read step.world.random() outside any step (0.374803 under token 1, "
        "0.833378 under token 2), so the replay took another path"
    ) in violation.message
    reads = run.trace.of_kind("world")
    assert [e.data["in_workflow_code"] for e in reads] == [True, True]


@pytest.mark.parametrize("name", ["effect-in-workflow-code", "random-in-workflow-code"])
@pytest.mark.parametrize("strategy", ["systematic", "random", "pct"])
def test_the_explorer_finds_both_hazards_at_once(name: str, strategy: str) -> None:
    report = ys.explore(ys.load_scenario(name), strategy=strategy, budget=20, confirm="duckdb")
    assert report.verdict == "violated"
    assert report.schedules_run == 1  # the fault-free schedule already shows it
    assert report.violations[0].faults == []
    assert report.runtime_mismatches == []


@pytest.mark.parametrize("name", ["effect-in-workflow-code-fixed", "random-in-workflow-code-fixed"])
def test_the_fixes_hold_under_every_single_fault(name: str) -> None:
    report = ys.explore(ys.load_scenario(name), max_faults=1, confirm="duckdb")
    assert report.ok, report.summary()


def test_world_readings_are_deterministic_per_seed_and_runtime() -> None:
    scenario = ys.load_scenario("random-in-workflow-code-fixed")
    first = ys.simulate(scenario, seed=7, runtime="memory")
    again = ys.simulate(scenario, seed=7, runtime="duckdb")
    other = ys.simulate(scenario, seed=8, runtime="memory")
    assert first.trace_digest() == again.trace_digest()
    assert first.trace.of_kind("world")[0].data != other.trace.of_kind("world")[0].data


@ys.workflow("reads")
def reads(step: ys.StepRunner, params: Any) -> Any:
    draw = yield from step.run("draw", step.world.random)
    clock = yield from step.run("clock", step.world.now)
    return {"draw": draw, "clock": clock}


@pytest.mark.parametrize("invoker", ["in-process", "worker"])
def test_the_engine_reads_the_world_in_a_body_on_both_invokers(invoker: str) -> None:
    with ys.Engine([reads], runtime="memory", invoker=invoker) as engine:  # type: ignore[arg-type]
        engine.trigger("reads", execution_id="r")
        engine.run_until_idle()
        record = engine.runtime.execution("r")
        assert record is not None
        assert record.status == ExecutionStatus.COMPLETED
        result = record.result
        assert isinstance(result, dict)
        assert 0.0 <= float(result["draw"]) < 1.0  # type: ignore[arg-type]
        assert result["clock"] == 0.0
