"""A cancellation requested while its execution is live ends it cancelled (issue 35, item 5):
workflow code that swallows the WorkflowCancelledError, and a runtime whose cancel passes
over a run waiting out its backoff, are both violations of the built-in invariant; the fixed
scenario holds under one fault, and a scenario that expects the run to complete says so."""

from __future__ import annotations

import dataclasses

import pytest

import yieldstar_sim as ys
from yieldstar_sim.examples.flawed_runtimes import CancelSkipsBackoffRuntime

LIVE = "a cancelled live execution ends cancelled"


@pytest.fixture(params=["memory", "duckdb"])
def runtime(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_workflow_code_that_catches_the_cancellation_is_a_violation(runtime: str) -> None:
    run = ys.simulate(ys.load_scenario("cancel-in-backoff"), seed=0, runtime=runtime)
    assert [(v.invariant, v.message) for v in run.violations] == [
        (
            LIVE,
            "order-7 (order) was live when its cancellation was requested at t=2, but it ended "
            "completed: the cancellation was thrown into its workflow code at step 'charge', "
            "which caught it and went on (catch ys.StepError, not Exception, or re-raise "
            "ys.WorkflowCancelledError)",
        )
    ]
    (shipped,) = run.effects_named("order.shipped")
    assert shipped.data["paid_by"] == "invoice"


def test_the_fixed_workflow_ends_cancelled_under_one_fault() -> None:
    scenario = ys.load_scenario("cancel-in-backoff-fixed")
    run = ys.simulate(scenario, seed=0)
    assert run.ok, run.explain()
    assert [(r.execution_id, str(r.status)) for r in run.executions] == [("order-7", "cancelled")]
    report = ys.explore(scenario, max_faults=1, confirm=None)
    assert report.verdict == "ok"
    assert report.exhausted


def test_a_runtime_whose_cancel_passes_over_a_sleeping_run_is_a_violation() -> None:
    fixed = ys.load_scenario("cancel-in-backoff-fixed")
    run = ys.simulate(fixed, seed=0, runtime=CancelSkipsBackoffRuntime)
    (violation,) = run.violations
    assert violation.invariant == LIVE
    assert violation.message == (
        "order-7 (order) was live when its cancellation was requested at t=2, but it ended "
        "completed: the runtime answered that the request reached nothing live, so the "
        "delivery claimed at t=3 never saw it"
    )
    (cancel,) = run.trace.of_kind("cancel")
    assert cancel.text == "cancel order-7: requested for nothing live"


def test_a_cancel_after_the_end_and_an_expected_completion_are_not_violations() -> None:
    hazard = ys.load_scenario("cancel-in-backoff")
    late = dataclasses.replace(hazard, cancels=[ys.Cancel("order-7", at=50)])
    assert ys.simulate(late, seed=0).ok
    expected = dataclasses.replace(hazard, expected=[ys.expect("order", status="completed")])
    assert ys.simulate(expected, seed=0).ok
