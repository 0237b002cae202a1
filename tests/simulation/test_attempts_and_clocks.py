"""Attempts that outlive their lease (a stall at a body's elapse) and workers whose clocks run
behind (a skew): the worker goes on, the runtime judges by true time, fencing refuses stale
writes, and the effects that escaped fencing are in the ledger."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation import SimulationRun
from yieldstar_sim.simulation.faults import FAULT_KINDS, FaultKind
from yieldstar_sim.simulation.trace_payloads import HeartbeatData, SkewData, StallData, TraceKind
from yieldstar_sim.views.timeline import abandoned_lane, build_timeline, clock_lane, stalled_lane
from yieldstar_sim.views.words import describe_event

OLD_KINDS = [kind for kind in FAULT_KINDS if kind not in (FaultKind.STALL, FaultKind.SKEW)]


def at_most_once(violations: Sequence[Any]) -> list[Any]:
    """The at_most_once violations among ``violations`` (each of these stories also runs two
    attempts of its step at once, which the built-in overlap invariant reports beside)."""
    return [v for v in violations if v.invariant.startswith("at_most_once")]


def bundled(name: str, runtime: str = "memory", **options: object) -> SimulationRun:
    return ys.simulate(ys.load_scenario(name), seed=0, runtime=runtime, **options)  # type: ignore[arg-type]


def kinds(run: SimulationRun) -> list[str]:
    return [str(event.kind) for event in run.trace]


def two_steps(step, params):  # type: ignore[no-untyped-def]
    def body() -> None:
        step.world.effect("before", order=1)
        step.world.elapse(5)
        step.world.effect("between", order=1)
        step.world.elapse(5)
        step.world.effect("after", order=1)

    yield from step.run("work", body)
    return "done"


def work_scenario(*faults: ys.Fault) -> ys.Scenario:
    return ys.Scenario(
        name="two-elapses",
        workflows=[ys.workflow("work")(two_steps)],
        triggers=[ys.Trigger("work", {}, execution_id="job-1")],
        workers=1,
        faults=faults,
    )


# --------------------------------------------------------------------------- elapse


def test_each_elapse_in_a_body_is_a_choice_point_and_effects_land_when_the_work_is_done() -> None:
    run = ys.simulate(work_scenario(), seed=0, runtime="memory")
    elapses = [e for e in run.trace if e.op == "elapse" and e.kind == TraceKind.HEARTBEAT]
    assert [e.point is not None for e in elapses] == [True, True]
    assert [(e.data.name, e.t) for e in run.trace.of_kind("effect")] == [
        ("before", 0.0), ("between", 5.0), ("after", 10.0),
    ]  # fmt: skip


def test_a_crash_at_an_elapse_loses_the_effects_after_it_in_that_attempt() -> None:
    run = ys.simulate(
        work_scenario(ys.Fault("crash", op="elapse", occurrence=2)), seed=0, runtime="memory"
    )
    first = [(e.name, e.token) for e in run.effects if e.token == 1]
    assert first == [("before", 1), ("between", 1)]  # the crash came before "after"
    assert run.ok  # the replay ran the step again and finished it


def test_a_call_fault_passes_an_elapse_by_and_fires_at_the_next_call() -> None:
    run = ys.simulate(work_scenario(ys.Fault("lose_response")), seed=0, runtime="memory")
    (fault,) = [e for e in run.trace if e.kind == TraceKind.FAULT]
    assert fault.op == "claim"


# --------------------------------------------------------------------------- stall


@pytest.mark.parametrize("runtime", ["memory", "duckdb"])
def test_a_stalled_attempt_resumes_after_its_retry_and_charges_again(runtime: str) -> None:
    run = bundled("zombie-attempt", runtime)
    charges = [e for e in run.effects_named("card.charged") if e.execution_id == "order-42"]
    assert [(c.worker, c.token, c.at) for c in charges] == [("w1", 2, 35.0), ("w2", 1, 55.0)]
    overlap, violation = run.violations
    assert overlap.invariant == "attempts of one step never overlap"
    assert "w2's attempt 1 (token 1, t=0 to t=55) and w1's attempt 1" in overlap.message
    assert "a zombie attempt" in violation.message
    assert "fencing refuses its writes, not its effects" in violation.message


def test_the_stalled_attempts_worker_goes_on_with_other_work() -> None:
    run = bundled("zombie-attempt")
    stall = next(e for e in run.trace if e.kind == TraceKind.STALL)
    resume = next(e for e in run.trace if e.kind == TraceKind.UNSTALL)
    claims = [
        (e.worker, e.execution_id, e.token)
        for e in run.trace
        if stall.seq < e.seq < resume.seq and e.op == "claim" and e.execution_id
    ]
    assert ("w2", "order-43", 1) in claims  # the stalled attempt's worker took other work
    assert ("w1", "order-42", 2) in claims  # and the retry ran on another worker
    assert isinstance(stall.data, StallData)
    assert (stall.data.seconds, stall.data.until) == (50.0, 55.0)


def test_a_stalled_attempts_fenced_writes_are_refused_with_its_token() -> None:
    run = bundled("zombie-attempt")
    refused = [(e.op, e.token) for e in run.trace if e.kind == TraceKind.REFUSED]
    assert refused == [("put_step", 1), ("release", 1)]
    (order,) = [r for r in run.executions if r.execution_id == "order-42"]
    assert order.status == "completed"


def test_an_idempotency_key_makes_the_zombie_harmless() -> None:
    run = bundled("zombie-attempt-fixed")
    assert run.ok
    charges = [e for e in run.effects_named("card.charged") if e.execution_id == "order-42"]
    assert [(c.token, c.idempotency_key) for c in charges] == [(2, "charge-42"), (1, "charge-42")]
    assert any(e.kind == TraceKind.UNSTALL for e in run.trace)


def test_a_stall_cannot_be_placed_at_a_runtime_call() -> None:
    with pytest.raises(ValueError, match="a stall cannot be placed at claim: it applies at"):
        ys.Fault("stall", op="claim")


def test_the_explorer_finds_the_zombie_with_one_stall() -> None:
    report = ys.explore(ys.load_scenario("zombie-attempt"), kinds=["stall"], confirm=None)
    (violation,) = at_most_once(report.violations)
    (fault,) = violation.faults
    assert "stall the attempt" in fault
    assert "elapse" in fault


def test_the_explorer_places_stall_and_skew_only_at_elapses() -> None:
    report = ys.explore(ys.load_scenario("zombie-attempt-fixed"), confirm=None, stop_at_first=False)
    assert report.ok
    placed = {(label.split()[1], kind) for label, kind in report.verdicts}
    assert {op for op, kind in placed if kind in ("stall", "skew")} == {"elapse"}
    assert ("elapse", "crash") in placed
    assert ("elapse", "lose_response") not in placed


@pytest.mark.parametrize("strategy", ["systematic", "random"])
def test_scenarios_without_elapse_are_explored_as_before(strategy: str) -> None:
    scenario = ys.load_scenario("frozen-worker")
    every = ys.explore(scenario, strategy=strategy, budget=40, confirm=None, stop_at_first=False)
    old = ys.explore(
        scenario, strategy=strategy, budget=40, kinds=OLD_KINDS, confirm=None,
        stop_at_first=False,
    )  # fmt: skip
    assert every.total_under_bound == old.total_under_bound
    assert every.verdicts == old.verdicts
    assert every.schedules_run == old.schedules_run


# --------------------------------------------------------------------------- skew


@pytest.mark.parametrize("runtime", ["memory", "duckdb"])
def test_a_worker_behind_its_clock_skips_its_heartbeat_and_is_fenced(runtime: str) -> None:
    run = bundled("skewed-lease", runtime)
    assert run.ok
    (belief,) = [e for e in run.trace if e.kind == TraceKind.HEARTBEAT and e.worker == "w2"]
    assert isinstance(belief.data, HeartbeatData)
    assert (belief.t, belief.data.believed, belief.data.renewed) == (0.0, -60.0, False)
    retry = next(e for e in run.trace if e.op == "claim" and e.token == 2)
    assert (retry.worker, retry.t) == ("w1", 30.0)  # the runtime judged by true time
    refused = [(e.worker, e.op, e.token, e.t) for e in run.trace if e.kind == TraceKind.REFUSED]
    assert refused[0] == ("w2", "put_step", 1, 40.0)


def test_the_trace_records_what_a_skewed_worker_believed_beside_the_true_time() -> None:
    run = bundled("skewed-lease-unfenced")
    (skew,) = [e for e in run.trace if e.kind == TraceKind.SKEW]
    assert isinstance(skew.data, SkewData)
    assert (skew.t, skew.data.behind, skew.data.believed) == (0.0, 60.0, -60.0)
    late = next(e for e in run.trace if e.kind == TraceKind.EFFECT and e.worker == "w2")
    assert late.t == 40.0
    assert "w2's clock reads t=-20" in late.text
    assert [v.invariant for v in run.violations] == [
        "attempts of one step never overlap",
        "at_most_once(card.charged, by=order)",
    ]


def test_a_skewed_worker_reads_its_own_clock_in_a_body() -> None:
    @ys.workflow("stamp")
    def stamp(step, params):  # type: ignore[no-untyped-def]
        yield from step.run("read", step.world.now)

    scenario = ys.Scenario(
        name="stamp",
        workflows=[stamp],
        triggers=[ys.Trigger("stamp", {}, execution_id="s-1", at=100)],
        workers=1,
        faults=[ys.Fault("skew", op="claim", seconds=30)],
    )
    run = ys.simulate(scenario, seed=0, runtime="memory")
    (read,) = run.trace.of_kind("world")
    assert (read.t, read.data.value) == (100.0, 70.0)


def test_a_skew_sets_a_clock_back_by_a_positive_number_of_seconds() -> None:
    with pytest.raises(ValueError, match="a skew sets a worker's clock back by a positive"):
        ys.Fault("skew", seconds=-5)


# --------------------------------------------------------------------------- views


def test_the_timeline_draws_the_stalled_attempt_beside_its_retry() -> None:
    timeline = build_timeline(bundled("zombie-attempt").trace)
    lane = stalled_lane("w2", 1)
    assert timeline.lanes == ["w1", "w2", lane, "scenario"]
    zombie = next(s for s in timeline.spans if s.worker == lane)
    retry = next(s for s in timeline.spans if s.execution_id == "order-42" and s.token == 2)
    other = next(s for s in timeline.spans if s.execution_id == "order-43")
    assert (zombie.execution_id, zombie.token, retry.worker, other.worker) == (
        "order-42", 1, "w1", "w2",
    )  # fmt: skip
    assert zombie.start < retry.start < retry.end < zombie.end  # side by side in time
    assert zombie.expires is not None  # drawn as a lease that expired under the attempt
    ((stalled, start, end),) = timeline.stalled
    assert stalled == lane
    assert start < retry.start < end


def test_the_timeline_shows_a_skewed_workers_clock_against_true_time() -> None:
    timeline = build_timeline(bundled("skewed-lease").trace)
    assert clock_lane("w2") in timeline.lanes
    readings = [m.label for m in timeline.marks if m.lane == clock_lane("w2")]
    assert readings[:2] == ["reads t=-60", "reads t=-20"]


@pytest.mark.parametrize("kind", [TraceKind.STALL, TraceKind.UNSTALL, TraceKind.HEARTBEAT])
def test_the_new_events_read_as_sentences(kind: TraceKind) -> None:
    run = bundled("zombie-attempt")
    event = next(e for e in run.trace if e.kind == kind)
    sentence = describe_event(event)
    assert sentence.endswith(".")
    assert sentence != event.text


def test_a_stall_found_by_the_explorer_replays_from_its_artifact_on_duckdb(tmp_path: Path) -> None:
    report = ys.explore(
        ys.load_scenario("zombie-attempt"), kinds=["stall"], confirm=None, out=tmp_path
    )
    (violation,) = at_most_once(report.violations)
    assert violation.artifact_path is not None
    again = ys.replay(violation.artifact_path, runtime="duckdb")
    assert violation.invariant in [v.invariant for v in again.violations]
    assert any(event.kind == TraceKind.UNSTALL for event in again.trace)


def test_two_workers_behind_their_clocks_never_finish_work_longer_than_a_lease() -> None:
    """Neither heartbeats in time: each delivery is fenced and the next one starts over, until
    max_time cuts the run: never a pass, and since each new delivery recovers the execution
    from a lease that ran out, a recovery without end."""
    scenario = ys.load_scenario("skewed-lease")
    skews = [ys.Fault("skew", worker=w, op="elapse", seconds=140) for w in ("w1", "w2")]
    run = ys.simulate(scenario, seed=0, runtime="memory", faults=skews)
    assert run.verdict == "violated"
    assert run.incomplete is not None
    assert [v.invariant for v in run.violations] == ["nothing is recovered without end"]


# --------------------------------------------------------------------------- past its timeout


@pytest.mark.parametrize("runtime", ["memory", "duckdb"])
def test_an_attempt_given_up_at_its_timeout_acts_after_its_retry(runtime: str) -> None:
    run = bundled("timed-out-attempt", runtime)
    stall = next(e for e in run.trace if e.kind == TraceKind.STALL)
    assert isinstance(stall.data, StallData)
    assert stall.data.timed_out
    gave_up = next(e for e in run.trace if e.kind == TraceKind.BODY)
    assert (gave_up.t, "StepTimeoutError" in gave_up.text) == (20.0, True)
    charges = [(e.attempt, e.token, e.at) for e in run.effects_named("card.charged")]
    assert charges == [(2, 2, 26.0), (1, 1, 45.0)]
    # The attempt it gave up on makes no call: nothing of it is fenced, its result is dropped.
    assert [e for e in run.trace if e.kind == TraceKind.REFUSED] == []
    overlap, violation = run.violations
    assert "w2's attempt 1 (token 1, t=0 to t=45) and w2's attempt 2" in overlap.message
    assert "outlived its timeout (its worker gave up on it and retried)" in violation.message


def test_the_timeline_draws_a_timed_out_attempt_apart_from_its_delivery() -> None:
    timeline = build_timeline(bundled("timed-out-attempt").trace)
    lane = abandoned_lane("w2", 1, 1)
    assert lane in timeline.lanes
    assert [s.worker for s in timeline.spans] == ["w2", "w2"]  # both deliveries on w2
    assert [m.kind for m in timeline.marks if m.lane == lane] == ["effect"]
    ((stalled, _, _),) = timeline.stalled
    assert stalled == lane


def test_the_explorer_finds_the_timed_out_attempt_with_one_stall() -> None:
    report = ys.explore(ys.load_scenario("timed-out-attempt"), kinds=["stall"], confirm=None)
    (violation,) = at_most_once(report.violations)
    assert "outlived its timeout" in violation.message


def test_a_second_effect_after_a_skewed_clock_says_the_worker_believed_its_lease_held() -> None:
    run = ys.simulate(ys.load_scenario("skewed-lease-unfenced"), seed=0, runtime="memory")
    (violation,) = at_most_once(run.violations)
    assert "w2's clock ran 60s behind: at true t=40 it read t=-20" in violation.message
    assert "believed its lease still held" in violation.message
