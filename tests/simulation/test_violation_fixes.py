"""Every built-in invariant's violation sentence says what fixes it: the at_most_once sentence
suggested ``idempotency_key=``, the duplicate admission (RFC 003's Problem) said nothing of
``step.start``, and a promise only the runtime keeps said nothing of the conformance cases.

The invariants a scenario can break are broken by bundled scenarios; those only a runtime
adapter breaks are shown a run whose records such an adapter would leave behind.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.model import ExecutionStatus
from yieldstar_sim.simulation import SimulationRun
from yieldstar_sim.simulation.invariants import BUILT_IN, Invariant
from yieldstar_sim.simulation.invariants.events import EVENT_FIX
from yieldstar_sim.simulation.invariants.evidence import RUNTIME_FIX
from yieldstar_sim.simulation.trace import Trace


def bundled(name: str) -> SimulationRun:
    return ys.simulate(ys.load_scenario(name), runtime="memory")


@pytest.mark.parametrize(
    ("scenario", "invariant", "fix"),
    [
        (
            "trigger-in-step",
            "at most one admitted execution per step",
            "start it from the workflow code with step.start('ship', workflow, params), whose "
            "repeat gets the first target back (RFC 003's durable start)",
        ),
        (
            "client-retry-new-request-id",
            "one execution per client request",
            "retry with the first attempt's request ID (ys.ClientRetry(reuse_request_id=True), "
            "the default)",
        ),
        (
            "orphan-after-cancel",
            "owned targets follow their owner",
            "a runtime refuses a new start from an owner that ended (its orphan guard: "
            "Scenario(runtime_options={'orphan_guard': True}), the default)",
        ),
        ("trigger-in-step", "at_most_once(courier.booked, by=order)", "idempotency_key="),
        ("heartbeat-zombie", "attempts of one step never overlap", "overlap_safe=['load']"),
        ("cancel-in-backoff", "a cancelled live execution ends cancelled", "re-raise"),
    ],
)
def test_a_violation_a_scenario_makes_says_what_fixes_it(
    scenario: str, invariant: str, fix: str
) -> None:
    (violation,) = [v for v in bundled(scenario).violations if v.invariant == invariant]
    assert fix in violation.message


def _replace(run: SimulationRun, execution_id: str, **changes: object) -> SimulationRun:
    records = [
        dataclasses.replace(r, **changes) if r.execution_id == execution_id else r
        for r in run.executions
    ]
    return dataclasses.replace(run, executions=records)


def two_targets(run: SimulationRun) -> SimulationRun:
    (ship,) = run.executions_of("ship-order")
    again = dataclasses.replace(ship, execution_id="@ship-order-9", seq=9)
    return dataclasses.replace(run, executions=[*run.executions, again])


def no_parent(run: SimulationRun) -> SimulationRun:
    (ship,) = run.executions_of("ship-order")
    return _replace(run, ship.execution_id, parent=None)


def another_target_recorded(run: SimulationRun) -> SimulationRun:
    steps = dict(run.steps)
    steps["order-42"] = [
        dataclasses.replace(s, value={**s.value, "executionId": "@ship-order-9"})
        if s.step_key == "ship" and isinstance(s.value, dict)
        else s
        for s in steps["order-42"]
    ]
    return dataclasses.replace(run, steps=steps)


def step_rewritten(run: SimulationRun) -> SimulationRun:
    steps = dict(run.steps)
    steps["order-42"] = [
        dataclasses.replace(s, value={"refunded": True}) if s.step_key == "charge" else s
        for s in steps["order-42"]
    ]  # a completed step's record, rewritten by no call of the trace
    return dataclasses.replace(run, steps=steps)


def stale_acknowledgement(run: SimulationRun) -> SimulationRun:
    lines = []
    for line in run.trace.to_jsonl().splitlines():
        event = json.loads(line)
        if event["op"] == "acknowledge" and event["execution_id"] == "order-42":
            event["token"] = 7  # the runtime took it under a lease it no longer held
        lines.append(json.dumps(event))
    return dataclasses.replace(run, trace=Trace.from_jsonl("\n".join(lines)))


def stranded(run: SimulationRun) -> SimulationRun:
    (ship,) = run.executions_of("ship-order")
    return _replace(
        run, ship.execution_id, status=ExecutionStatus.SUSPENDED, due_at=None, lease=None
    )


def child_outlives_owner(run: SimulationRun) -> SimulationRun:
    return _replace(run, "pack-42", status=ExecutionStatus.SUSPENDED, finished_at=None)


def joiner_owns(run: SimulationRun) -> SimulationRun:
    steps = dict(run.steps)
    steps["recheck-42"] = [
        *steps["recheck-42"],
        dataclasses.replace(
            steps["order-42"][0], value={"executionId": "fulfillment-42", "joined": True}
        ),
    ]
    run = dataclasses.replace(run, steps=steps)
    (fulfil,) = run.executions_of("fulfil")
    assert fulfil.parent is not None
    return _replace(
        run, "fulfillment-42", parent=dataclasses.replace(fulfil.parent, execution_id="recheck-42")
    )


@pytest.mark.parametrize(
    ("scenario", "breaks", "invariant"),
    [
        ("durable-start", two_targets, "one target per start request"),
        ("durable-start", no_parent, "every target has its request record and parent link"),
        ("durable-start", another_target_recorded, "every accepted start recorded once"),
        ("durable-start", step_rewritten, "recorded history never changes"),
        (
            "durable-start",
            stale_acknowledgement,
            "outcomes acknowledged only under the current lease",
        ),
        ("durable-start", stranded, "no execution lost"),
        ("cancel-owner", child_outlives_owner, "owned children never outlive a cancelled owner"),
        ("join-child", joiner_owns, "joined runs keep their original owner"),
    ],
)
def test_a_promise_only_the_runtime_keeps_points_to_its_conformance_cases(
    scenario: str, breaks: object, invariant: str
) -> None:
    (checked,) = [i for i in BUILT_IN if i.name == invariant]
    run = breaks(bundled(scenario))  # type: ignore[operator]
    violations = checked.check(run)
    assert violations, f"{invariant} held"
    for violation in violations:
        assert violation.message.endswith(RUNTIME_FIX), violation.message
    assert "explore --check-adapter" in RUNTIME_FIX


def test_every_built_in_invariant_is_covered_above() -> None:
    covered = {
        "at most one admitted execution per step",
        "one execution per client request",
        "owned targets follow their owner",
        "one target per start request",
        "every target has its request record and parent link",
        "every accepted start recorded once",
        "outcomes acknowledged only under the current lease",
        "no execution lost",
        "owned children never outlive a cancelled owner",
        "joined runs keep their original owner",
        "recorded history never changes",
        "every accepted event is consumed or reported",  # test_an_event_lost_points_to_the_runtime
    }
    built_in: list[Invariant] = list(BUILT_IN)
    assert {invariant.name for invariant in built_in} == covered


def test_an_event_lost_points_to_the_runtime() -> None:
    report = ys.explore(ys.load_scenario("continue-as-new-event"), max_faults=1, confirm=None)
    (violation,) = [
        v
        for v in report.violations
        if v.invariant == "every accepted event is consumed or reported"
    ]
    assert violation.message.endswith(EVENT_FIX), violation.message
    assert "check_event_adapter" in EVENT_FIX
