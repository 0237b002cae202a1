"""Heartbeats as choice points (issue 35, item 2): ``step.heartbeat()`` renews the lease at a
choice point where a fault fails the renewal or loses its answer; the workers' lease-loss policy
stops an attempt whose lease is lost, and the body sees it at its heartbeat; two attempts of one
step never run at once, unless the scenario declares the step overlap-safe."""

from __future__ import annotations

from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation import SimulationRun
from yieldstar_sim.simulation.faults import CHOICE_POINT_OPS, applies_at
from yieldstar_sim.simulation.invariants.attempts import attempt_spans
from yieldstar_sim.simulation.trace_payloads import BodyData, RenewData, StopData, TraceKind

OVERLAP = "attempts of one step never overlap"


def hauling(
    works: tuple[float, ...] = (20.0, 20.0, 20.0),
    *,
    policy: int | None = 1,
    faults: tuple[ys.Fault, ...] = (),
    timeout: float = 0,
    retries: int = 1,
    overlap_safe: tuple[str, ...] = (),
    heartbeats: bool = True,
) -> ys.Scenario:
    """One execution whose step ``haul`` works ``works`` seconds, heartbeating after each."""

    def body(step: ys.StepRunner) -> str:
        for seconds in works:
            step.world.elapse(seconds)
            if heartbeats:
                step.heartbeat()
        step.world.effect("hauled", order=1, idempotency_key="haul-1")
        return "hauled"

    haul = ys.define_step("haul", body, lambda s: s.timeout(timeout).retry(retries))

    @ys.workflow("haul")
    def workflow(step: ys.StepRunner, params: Any) -> Any:
        return (yield from step.run("haul", haul, step))

    return ys.Scenario(
        name="hauling", workflows=[workflow], steps=[haul],
        triggers=[ys.Trigger("haul", {}, execution_id="h-1")], faults=faults,
        stop_after_failed_renewals=policy, overlap_safe=overlap_safe,
    )  # fmt: skip


def run(scenario: ys.Scenario, *faults: ys.Fault, **options: Any) -> SimulationRun:
    return ys.simulate(scenario, seed=0, runtime="memory", faults=faults, **options)


def events(result: SimulationRun, kind: TraceKind) -> list[Any]:
    return [event for event in result.trace if event.kind == kind]


# --------------------------------------------------------------------------- the choice point


def test_each_heartbeat_is_a_renew_choice_point_and_renews_the_lease() -> None:
    result = run(hauling())
    assert result.ok, result.explain()
    renewals = [e for e in events(result, TraceKind.CALL) if e.op == Op.RENEW]
    assert [(e.t, e.point is not None) for e in renewals] == [
        (20.0, True), (40.0, True), (60.0, True),
    ]  # fmt: skip
    assert [e.data for e in renewals] == [RenewData(50.0), RenewData(70.0), RenewData(90.0)]
    labels = [choice.actor for choice in result.choices]
    assert len(labels) == result.points
    assert Op.RENEW in CHOICE_POINT_OPS


def test_a_body_that_heartbeats_gets_no_renewal_of_its_worker_at_its_elapses() -> None:
    """Its lease is renewed by its heartbeats alone: a renewal of the worker's own would hide a
    heartbeat's failure. A body that never heartbeats keeps the worker's renewals."""
    with_heartbeats = run(hauling())
    assert events(with_heartbeats, TraceKind.HEARTBEAT) == []
    without = run(hauling(heartbeats=False))
    assert without.ok
    assert [e.data.renewed for e in events(without, TraceKind.HEARTBEAT)] == [True, True, True]


def test_the_call_kinds_apply_at_a_renewal_and_the_explorer_tries_them_there() -> None:
    for kind in ("infra_error", "lose_response", "crash", "crash_after", "freeze", "child_exit"):
        assert applies_at(kind, Op.RENEW, exploring=True), kind
    assert not applies_at("stall", Op.RENEW)
    assert not applies_at("skew", Op.RENEW, exploring=True)


# --------------------------------------------------------------------------- the policy


def test_a_failed_renewal_stops_the_attempt_and_the_body_sees_it_at_its_heartbeat() -> None:
    result = run(hauling(), ys.Fault("infra_error", op="renew"))
    assert result.ok, result.explain()
    (stop,) = events(result, TraceKind.STOP)
    assert (stop.t, stop.worker, stop.data) == (20.0, "w2", StopData(1, "failed", 1))
    body = next(e for e in events(result, TraceKind.BODY) if e.token == 1)
    assert isinstance(body.data, BodyData)
    assert (body.t, body.data.stopped, body.data.elapsed) == (20.0, True, 20.0)
    assert "stopped by its worker" in body.text
    (reject,) = events(result, TraceKind.REJECT)
    assert "1 failed renewal in a row" in reject.text
    # Given back while the lease held: redelivered after the delay, run again from its start.
    (hauled,) = result.effects_named("hauled")
    assert (hauled.token, hauled.at) == (2, 85.0)


def test_a_lost_answer_counts_as_a_failed_renewal_though_the_lease_was_renewed() -> None:
    result = run(hauling(), ys.Fault("lose_response", op="renew"))
    renewed = next(e for e in events(result, TraceKind.CALL) if e.op == Op.RENEW)
    assert renewed.data == RenewData(50.0)  # it committed
    (stop,) = events(result, TraceKind.STOP)
    assert stop.data == StopData(1, "failed", 1)
    assert result.ok, result.explain()


def test_a_tolerant_policy_rides_out_one_failed_renewal_and_stops_at_the_second() -> None:
    once = run(hauling((10.0, 10.0, 10.0), policy=2), ys.Fault("infra_error", op="renew"))
    assert events(once, TraceKind.STOP) == []
    assert once.ok, once.explain()
    twice = run(
        hauling((10.0, 10.0, 10.0), policy=2),
        # Two faults of one description: the first fires at the first renewal, the second at
        # the next.
        ys.Fault("infra_error", op="renew"), ys.Fault("infra_error", op="renew"),
    )  # fmt: skip
    (stop,) = events(twice, TraceKind.STOP)
    assert (stop.t, stop.data) == (20.0, StopData(1, "failed", 2))


def test_a_tolerance_that_outlasts_the_lease_lets_two_attempts_overlap() -> None:
    """Renewals 20 s apart on a 30 s lease: one failed renewal tolerated, the lease lapses
    before the next, another worker starts the step, and the tolerant worker learns it only
    when its next renewal is refused."""
    result = run(hauling(policy=2), ys.Fault("infra_error", op="renew"))
    (stop,) = events(result, TraceKind.STOP)
    assert (stop.t, stop.data.why) == (40.0, "refused")
    (overlap,) = result.violations
    assert "w2's attempt 1 (token 1, t=0 to t=40) and w1's attempt 1 (token 2, t=30" in (
        overlap.message
    )


def test_a_refused_renewal_stops_the_attempt_whatever_the_count() -> None:
    """Frozen before its renewal past its lease: the runtime refuses it, the lease is gone."""
    result = run(hauling(policy=3), ys.Fault("freeze", op="renew", seconds=40))
    (stop,) = events(result, TraceKind.STOP)
    assert (stop.t, stop.data.why) == (60.0, "refused")
    assert not [v for v in result.violations if v.invariant == OVERLAP]


def test_a_worker_that_froze_past_its_lease_stops_the_attempt_before_more_work() -> None:
    """At an elapse, after a freeze: by its own clock the lease it knows of has ended."""
    result = run(hauling(), ys.Fault("freeze", op="elapse", occurrence=2, seconds=40))
    (stop,) = events(result, TraceKind.STOP)
    assert (stop.t, stop.op, stop.data.why) == (60.0, Op.ELAPSE, "expired")
    assert "by its clock its lease ended at t=50" in stop.text
    assert result.ok, result.explain()
    (first, _) = attempt_spans(result.trace.events)
    assert (first.start, first.end) == (0.0, 20.0)  # its last work ended before the freeze


def test_without_a_policy_the_worker_ignores_its_renewals_and_two_attempts_overlap() -> None:
    result = run(hauling(policy=None), ys.Fault("infra_error", op="renew"))
    assert events(result, TraceKind.STOP) == []
    refused = [e for e in events(result, TraceKind.REFUSED) if e.op == Op.RENEW]
    assert [(e.worker, e.t) for e in refused] == [("w2", 40.0), ("w2", 60.0)]
    (overlap,) = result.violations
    assert overlap.invariant == OVERLAP
    assert overlap.message.startswith(
        "step haul of h-1 ran two attempts at once: w2's attempt 1 (token 1, t=0 to t=60) and "
        "w1's attempt 1 (token 2, t=30 to t=90); its renewal at t=20 failed and its worker let "
        "it work on (Scenario(stop_after_failed_renewals=None)"
    )


def test_an_attempt_its_worker_gave_up_on_stops_at_its_next_heartbeat() -> None:
    """A stall past the step's timeout: the worker retries; the attempt hangs on and, at its
    next heartbeat, sees its worker gave up on it."""
    scenario = hauling((5.0, 5.0, 5.0), timeout=20, retries=2)
    result = run(scenario, ys.Fault("stall", op="elapse", seconds=40))
    (stop,) = events(result, TraceKind.STOP)
    assert (stop.t, stop.data.why) == (45.0, "abandoned")
    gave_up = events(result, TraceKind.BODY)[0]
    assert isinstance(gave_up.data, BodyData)
    assert (gave_up.t, gave_up.data.ended) == (20.0, 45.0)
    assert [e.token for e in result.effects_named("hauled")] == [2]


# --------------------------------------------------------------------------- the invariant


def test_a_step_declared_overlap_safe_is_left_alone() -> None:
    scenario = hauling(policy=None, overlap_safe=("haul",))
    assert run(scenario, ys.Fault("infra_error", op="renew")).ok


def test_a_misspelled_overlap_safe_step_is_a_scenario_error() -> None:
    # A warning beside ok let the typo pass green: the step it meant was never declared.
    with pytest.raises(ys.ScenarioError, match="overlap_safe names step 'hual', which no attempt"):
        run(hauling(overlap_safe=("hual",)))


def test_an_overlap_safe_step_no_attempt_ran_and_nothing_like_it_is_a_warning() -> None:
    result = run(hauling(overlap_safe=("unload",)))
    assert result.ok
    assert any(
        "overlap_safe names step 'unload', which no attempt ran" in w for w in result.warnings
    )


def test_the_stories_that_run_a_step_twice_at_once_now_say_so() -> None:
    for name in ("zombie-attempt", "timed-out-attempt", "skewed-lease-unfenced"):
        result = ys.simulate(ys.load_scenario(name), seed=0, runtime="memory")
        assert next(v.invariant for v in result.violations) == OVERLAP, name
    for name in ("zombie-attempt-fixed", "skewed-lease"):
        result = ys.simulate(ys.load_scenario(name), seed=0, runtime="memory")
        assert result.ok, name
        assert ys.load_scenario(name).overlap_safe == ("charge",)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"stop_after_failed_renewals": 0}, ValueError, "a whole number >= 1"),
        ({"stop_after_failed_renewals": True}, ValueError, "a whole number >= 1"),
        ({"overlap_safe": "charge"}, TypeError, 'overlap_safe=["charge"]'),
        ({"overlap_safe": [""]}, ValueError, "holds step keys"),
    ],
)
def test_a_policy_or_declaration_of_the_wrong_shape_is_refused(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    base = hauling()
    with pytest.raises(error, match=message.replace("[", r"\[").replace("]", r"\]")):
        ys.Scenario(name="x", workflows=base.workflows, triggers=base.triggers, **options)


def test_a_heartbeat_outside_a_body_is_refused() -> None:
    @ys.workflow("outside")
    def outside(step: ys.StepRunner, params: Any) -> Any:
        step.heartbeat()
        yield from step.run("s", lambda: 1)

    scenario = ys.Scenario(
        name="outside", workflows=[outside], triggers=[ys.Trigger("outside", {})],
        expected=[ys.expect("outside", error="WorkflowDefinitionError")],
    )  # fmt: skip
    result = run(scenario)
    assert result.ok, result.explain()
    for scenario_allowing in (True,):
        allowed = ys.Scenario(
            name="outside", workflows=[outside], triggers=[ys.Trigger("outside", {})],
            world_in_workflow_code=scenario_allowing,
            expected=[ys.expect("outside", message="step.heartbeat() renews a step body")],
        )  # fmt: skip
        assert run(allowed).ok


# --------------------------------------------------------------------------- the stories


def test_the_bundled_heartbeat_zombie_overlaps_and_its_fix_stops_the_attempt() -> None:
    buggy = ys.simulate(ys.load_scenario("heartbeat-zombie"), seed=0, runtime="memory")
    (overlap,) = buggy.violations
    assert overlap.invariant == OVERLAP
    assert "w2's attempt 1 (token 1, t=0 to t=60) and w1's attempt 1 (token 2, t=30" in (
        overlap.message
    )
    fixed = ys.simulate(ys.load_scenario("heartbeat-zombie-fixed"), seed=0, runtime="memory")
    assert fixed.ok, fixed.explain()
    (stop,) = events(fixed, TraceKind.STOP)
    assert stop.t == 20.0
    (dispatched,) = fixed.effects_named("truck.dispatched")
    assert dispatched.at == 85.0


def exhaustive(name: str, **options: Any) -> Any:
    options.setdefault("confirm", None)
    options.setdefault("stop_at_first", False)
    return ys.explore(ys.load_scenario(name), strategy="exhaustive", **options)


def test_the_explorer_finds_the_heartbeat_zombie_with_one_fault_at_a_renewal() -> None:
    assert exhaustive("heartbeat-zombie", max_faults=0).ok
    report = exhaustive("heartbeat-zombie", max_faults=1, kinds=["infra_error"])
    assert report.exhausted
    (found,) = report.violations
    assert found.invariant == OVERLAP
    (fault,) = found.faults
    assert fault.startswith("infrastructure error at ")
    assert "renew of step load" in fault


def test_the_fix_is_verified_under_any_one_fault_a_stall_included() -> None:
    """A stall hangs an attempt in the middle of its work: it resumes and works on before it
    reaches a heartbeat, which no policy can prevent; the dock's fence (the delivery's fencing
    token) makes that harmless, and the fix's invariant checks it (issue 54, item 9)."""
    report = exhaustive("heartbeat-zombie-fixed", max_faults=1)
    assert report.exhausted
    assert report.ok, [v.message for v in report.violations]
    systematic = ys.explore(ys.load_scenario("heartbeat-zombie-fixed"), max_faults=1, confirm=None)
    assert systematic.ok, [v.message for v in systematic.violations]


def test_without_the_docks_fence_a_stalled_crew_loads_after_its_successor() -> None:
    # What the fence holds: the same fix with a dock that never turns a crew away.
    from yieldstar_sim.scenarios import heartbeat_zombie_fixed as story

    def unfenced(step: ys.StepRunner, order: int) -> None:
        for crate in range(3):
            step.world.elapse(20)
            step.world.effect(
                "crate.loaded", order=order, crate=crate, idempotency_key=f"crate-{order}-{crate}"
            )
            step.heartbeat()
        step.world.effect("truck.dispatched", order=order, idempotency_key=f"truck-{order}")

    load = ys.define_step("load", unfenced, lambda s: s.timeout(0))

    @ys.workflow("ship")
    def ship(step: ys.StepRunner, params: Any) -> Any:
        yield from step.run("load", load, step, params["order"])

    scenario = ys.Scenario(
        name="unfenced", workflows=[ship], steps=[load], triggers=story.scenario.triggers,
        invariants=story.scenario.invariants, overlap_safe=["load"],
    )  # fmt: skip
    report = ys.explore(scenario, strategy="exhaustive", max_faults=1, kinds=["stall"],
                        confirm=None)  # fmt: skip
    assert [v.invariant for v in report.violations] == ["one_crew_at_a_time"]


# --------------------------------------------------------------------------- the engine


@pytest.mark.parametrize("invoker", ["in-process", "worker"])
def test_the_engine_renews_the_lease_at_a_heartbeat(invoker: str) -> None:
    @ys.workflow("beat")
    def beat(step: ys.StepRunner, params: Any) -> Any:
        def body() -> str:
            step.world.elapse(10)
            step.heartbeat()
            return "alive"

        return (yield from step.run("s", body))

    with ys.Engine([beat], runtime=ys.MemoryRuntime(), invoker=invoker) as engine:
        engine.trigger("beat", {}, execution_id="b-1")
        engine.run_until_idle(workers=("w1",))
        record = engine.runtime.execution("b-1")
        assert record is not None
        assert (str(record.status), record.result) == ("completed", "alive")
