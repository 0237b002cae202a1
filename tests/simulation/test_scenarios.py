"""The bundled scenarios are golden tests: each ends with the verdict its story promises, and
its trace is the recorded one, on both runtimes.

Regenerate the golden traces after an intended change with
``YIELDSTAR_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/simulation/test_scenarios.py``
and read the diff before committing it.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.model import ExecutionRecord, ExecutionStatus, ParentLink
from yieldstar_sim.simulation import SimulationRun
from yieldstar_sim.simulation.scenario_files import bundled_scenarios

GOLDEN = Path(__file__).parent / "golden"
SCENARIOS = sorted(bundled_scenarios())


@pytest.fixture(params=["memory", "duckdb"])
def runtime(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def run_bundled(name: str, runtime: str) -> SimulationRun:
    return ys.simulate(ys.load_scenario(name), seed=0, runtime=runtime)


def test_every_bundled_scenario_tells_its_story() -> None:
    assert SCENARIOS == [
        "booking-race",
        "booking-race-fixed",
        "call-child-fails",
        "cancel-in-backoff",
        "cancel-in-backoff-fixed",
        "cancel-misses-sleeping-run",
        "cancel-owner",
        "chord-result-late",
        "chord-result-late-fixed",
        "client-retry-new-request-id",
        "client-retry-same-request-id",
        "concurrent-clients",
        "concurrent-starts",
        "continue-as-new-event",
        "continue-as-new-event-fixed",
        "deploy-changes-params",
        "deploy-mismatch",
        "durable-start",
        "effect-in-workflow-code",
        "effect-in-workflow-code-fixed",
        "expired-lease-archived",
        "expired-lease-requeued",
        "fan-out-order",
        "fan-out-order-fixed",
        "frozen-worker",
        "heartbeat-zombie",
        "heartbeat-zombie-fixed",
        "invalid-params",
        "join-child",
        "leader-rollback",
        "leader-rollback-fixed",
        "lost-response",
        "orphan-after-cancel",
        "orphan-after-cancel-fixed",
        "poison-workflow",
        "poison-workflow-fixed",
        "random-in-workflow-code",
        "random-in-workflow-code-fixed",
        "random-replica",
        "random-replica-fixed",
        "retry-backoff",
        "skewed-lease",
        "skewed-lease-unfenced",
        "spawn-after-prune",
        "stale-completion",
        "stale-completion-fixed",
        "stale-step-write",
        "stale-step-write-fixed",
        "timed-out-attempt",
        "trigger-in-step",
        "zombie-attempt",
        "zombie-attempt-fixed",
    ]
    for name in SCENARIOS:
        scenario = ys.load_scenario(name)
        assert scenario.name == name
        assert scenario.story, f"{name} has no story in its docstring"


@pytest.mark.parametrize("name", SCENARIOS)
def test_golden_trace(name: str, runtime: str) -> None:
    run = run_bundled(name, runtime)
    text = "\n".join(run.trace.lines()) + "\n" + run.explain() + "\n"
    golden = GOLDEN / f"{name}.txt"
    if os.environ.get("YIELDSTAR_UPDATE_GOLDEN") and runtime == "memory":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text.replace("(seed 0, memory)", "(seed 0, RUNTIME)"), encoding="utf-8")
    expected = golden.read_text(encoding="utf-8").replace("RUNTIME", runtime)
    assert text == expected


def ship_orders(run: SimulationRun) -> list[ExecutionRecord]:
    return [r for r in run.executions if r.workflow_id == "ship-order"]


def test_trigger_in_step_sends_two_couriers(runtime: str) -> None:
    """The RFC's Problem: the crash between the two writes admits a second ship-order."""
    run = run_bundled("trigger-in-step", runtime)
    assert not run.ok
    assert sorted(v.invariant for v in run.violations) == [
        "at most one admitted execution per step",
        "at_most_once(courier.booked, by=order)",
    ]
    per_step = next(v for v in run.violations if v.invariant.startswith("at most one"))
    assert per_step.message.startswith(
        "step (order-42, ship) admitted two executions, @ship-order-2 at t=0 by "
    )
    assert "crashed before put_step of step ship" in per_step.message
    assert len(ship_orders(run)) == 2
    assert len(run.effects_named("courier.booked")) == 2


@pytest.mark.parametrize(
    "name", ["durable-start", "frozen-worker", "lost-response", "concurrent-starts"]
)
def test_durable_start_sends_one_courier(name: str, runtime: str) -> None:
    """The fix, under a crash, a frozen worker, a lost response and two concurrent starts."""
    run = run_bundled(name, runtime)
    assert run.ok, run.explain()
    (ship,) = ship_orders(run)
    assert ship.parent == ParentLink("order-42", "ship")
    assert len(run.effects_named("courier.booked")) == 1
    order = next(r for r in run.executions if r.execution_id == "order-42")
    assert order.status == ExecutionStatus.COMPLETED
    assert order.result == {"shipment": ship.execution_id}
    assert run.faults, f"{name}'s fault never fired"


def test_a_frozen_worker_is_fenced_and_its_start_gets_the_same_target(runtime: str) -> None:
    """In the trace: the stale worker's start is answered with the existing target, and its
    next fenced write is refused."""
    run = run_bundled("concurrent-starts", runtime)
    (freeze,) = run.trace.of_kind("freeze")
    frozen = freeze.worker
    starts = [e for e in run.trace.of_kind("call") if e.op == "start"]
    assert [(e.worker == frozen, e.token, e.data["accepted"]) for e in starts] == [
        (False, 2, "@ship-order:order-42/ship"),
        (True, 1, "@ship-order:order-42/ship"),
    ]
    refused = run.trace.of_kind("refused")
    assert [(e.worker, e.op, e.token, e.t) for e in refused] == [
        (frozen, "put_step", 1, 40.0),
        (frozen, "release", 1, 40.0),
    ]
    assert "(token 1) is stale: order-42 is already completed" in refused[0].text


def test_frozen_worker_story(runtime: str) -> None:
    """The frozen worker's lease passes to the other worker at t=30; at t=40 its write of the
    ship step, and then its release, are refused."""
    run = run_bundled("frozen-worker", runtime)
    claims = [
        e for e in run.trace.of_kind("call") if e.op == "claim" and e.execution_id == "order-42"
    ]
    assert [(e.t, e.token) for e in claims] == [(0.0, 1), (30.0, 2)]
    frozen = claims[0].worker
    refused = run.trace.of_kind("refused")
    assert [(e.worker, e.op, e.step_key, e.t) for e in refused] == [
        (frozen, "put_step", "ship", 40.0),
        (frozen, "release", None, 40.0),
    ]


def test_deploy_mismatch_is_refused_after_the_target_finished(runtime: str) -> None:
    run = run_bundled("deploy-mismatch", runtime)
    assert run.ok, run.explain()
    order = next(r for r in run.executions if r.execution_id == "order-42")
    assert order.status == ExecutionStatus.FAILED
    assert order.error is not None
    assert order.error.code == "START_REQUEST_MISMATCH"
    (ship,) = ship_orders(run)
    assert ship.status == ExecutionStatus.COMPLETED
    assert ship.finished_at is not None
    assert order.finished_at is not None
    assert ship.finished_at < order.finished_at, "the mismatch should come after ship-order ended"
    assert not [r for r in run.executions if r.workflow_id == "ship-express"]
    assert [e.text for e in run.trace.of_kind("deploy")] == [
        "deploy new code for charge-order, ship-order, ship-express"
    ]


def test_invalid_params_admit_nothing(runtime: str) -> None:
    run = run_bundled("invalid-params", runtime)
    assert run.ok, run.explain()
    assert [r.execution_id for r in run.executions] == ["order-42"]
    (flag,) = run.effects_named("order.flagged")
    assert flag.data == {"order": 42, "code": "INVALID_START_PARAMETERS"}
    (start,) = [e for e in run.trace.of_kind("call") if e.op == "start"]
    assert start.data["rejected"] == "INVALID_START_PARAMETERS"


def test_a_cancelled_parent_takes_its_owned_child_and_leaves_the_detached_one(
    runtime: str,
) -> None:
    run = run_bundled("cancel-owner", runtime)
    assert run.ok, run.explain()
    statuses = {r.execution_id: str(r.status) for r in run.executions}
    assert statuses == {"order-42": "cancelled", "pack-42": "cancelled", "survey-42": "completed"}
    (cancel,) = run.trace.of_kind("cancel")
    assert cancel.data["cancelled"] == ["order-42", "pack-42"]
    assert [e.name for e in run.effects] == ["survey.sent"]


def test_a_joined_child_keeps_its_owner(runtime: str) -> None:
    run = run_bundled("join-child", runtime)
    assert run.ok, run.explain()
    statuses = {r.execution_id: str(r.status) for r in run.executions}
    assert statuses == {
        "order-42": "completed",
        "recheck-42": "cancelled",
        "fulfillment-42": "completed",
    }
    child = next(r for r in run.executions if r.execution_id == "fulfillment-42")
    assert child.parent == ParentLink("order-42", "fulfil")
    assert child.params == {"order": 42, "by": "order"}


def test_a_spawn_after_pruning_is_a_new_run(runtime: str) -> None:
    run = run_bundled("spawn-after-prune", runtime)
    (violation,) = run.violations
    assert violation.invariant == "one_survey_run_per_order"
    assert "survey-42 was admitted 2 times (t=0, t=30)" in violation.message
    assert [e.text for e in run.trace.of_kind("prune")] == [
        "prune survey-42: its steps, wake and start requests are gone"
    ]
    assert [(a.execution_id, a.how) for a in run.admissions if a.how == "spawn"] == [
        ("survey-42", "spawn"),
        ("survey-42", "spawn"),
    ]


def test_without_the_prune_a_replayed_spawn_is_the_same_run(runtime: str) -> None:
    """The false red of the first round: the replayed start_child answers for survey-42 again,
    and that reply is not a second creation. Counting comes from the runtime's records."""
    scenario = dataclasses.replace(ys.load_scenario("spawn-after-prune"), prunes=())
    run = ys.simulate(scenario, seed=0, runtime=runtime)
    assert run.ok, run.explain()
    replies = [
        e for e in run.trace if e.kind == "call" and e.op == "start_child" and e.data["created"]
    ]
    assert len(replies) == 2  # the reply says "created" twice: it answers for one run
    assert [a.execution_id for a in run.admissions if a.how == "spawn"] == ["survey-42"]
    assert len(run.effects_named("survey.sent")) == 1


def test_a_failed_call_is_compensated(runtime: str) -> None:
    run = run_bundled("call-child-fails", runtime)
    assert run.ok, run.explain()
    order = next(r for r in run.executions if r.execution_id == "order-42")
    assert isinstance(order.result, dict)
    assert order.result["declined"] == "@charge-card:order-42/charge"
    assert [e.name for e in run.effects] == ["stock.reserved", "stock.released"]


def test_retries_back_off_on_the_virtual_clock(runtime: str) -> None:
    run = run_bundled("retry-backoff", runtime)
    assert run.ok, run.explain()
    (sent,) = run.effects_named("welcome.sent")
    assert (sent.attempt, sent.at) == (4, 7.0)
    bodies = [e for e in run.trace.of_kind("body") if e.step_key == "welcome"]
    assert [e.t for e in bodies] == [0.0, 1.0, 3.0, 7.0]
