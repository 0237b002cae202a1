"""What each fault kind does, seen through ``ys.simulate`` on both runtimes.

The workflows are the bundled ``durable-start`` scenario's (charge-order starts ship-order with
``step.start`` in its step ``ship``; ship-order books a courier), in a scenario of our own with
no fault plan, so that each test places exactly the fault it is about: at the ``start`` call of
step ``ship`` and at the ``put_step`` that records it. Whatever the fault, every invariant must
hold, exactly one ship-order must exist and exactly one courier be booked; the trace shows how
the run got there (crash and restart, lease expiry, rejection and release, redelivery after the
delay, the frozen worker fenced, the replayed start answered with the existing target).

Then: placing faults (by choice-point index, by occurrence), refusing invalid faults, the JSON
form of a fault, and determinism (same inputs, byte-identical trace; memory and DuckDB agree).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation import FaultKind, SimulationRun
from yieldstar_sim.simulation.faults import (
    CHOICE_POINT_OPS,
    DEFAULT_FREEZE,
    FAULT_KINDS,
    KIND_EFFECTS,
    FaultPlan,
    PointInfo,
    by_description,
    trace_points,
)
from yieldstar_sim.simulation.trace import TraceEvent

DURABLE = ys.load_scenario("durable-start")
ORDER = "order-42"
LEASE = 30.0
REDELIVERY = 5.0
RESTART = 1.0
FREEZE = 40.0

SCENARIO = ys.Scenario(
    name="fault-semantics",
    workflows=DURABLE.workflows,
    triggers=DURABLE.triggers,
    invariants=[ys.at_most_once("courier.booked", by="order")],
    lease_seconds=LEASE,
    redelivery_delay=REDELIVERY,
    restart_delay=RESTART,
)
assert not SCENARIO.faults

RUNTIMES = ["memory", pytest.param("duckdb", marks=pytest.mark.duckdb)]
OPS = ["start", "put_step"]
SEEDS = [0, 1]  # the faulted worker is w2 under seed 0 and w1 under seed 1


def fault(kind: str, op: str) -> ys.Fault:
    """``kind`` at ``op`` of step ship in order-42 (a 40 s freeze for ``freeze``)."""
    return ys.Fault(
        kind,
        op=op,
        execution_id=ORDER,
        step_key="ship",
        seconds=FREEZE if kind == "freeze" else None,
    )


class Runs:
    """Simulations made once per module and shared (DuckDB runtimes closed at the end)."""

    def __init__(self) -> None:
        self._runs: dict[tuple[str, str, str, int], SimulationRun] = {}

    def get(self, runtime: str, kind: str, op: str, seed: int) -> SimulationRun:
        key = (runtime, kind, op, seed)
        if key not in self._runs:
            self._runs[key] = ys.simulate(
                SCENARIO, seed, runtime=runtime, faults=[fault(kind, op)], scenario_faults=False
            )
        return self._runs[key]

    def close(self) -> None:
        for run in self._runs.values():
            close(run)


def close(run: SimulationRun) -> None:
    closer = getattr(run.runtime, "close", None)
    if closer is not None:
        closer()


@pytest.fixture(scope="module")
def runs() -> Iterator[Runs]:
    cache = Runs()
    yield cache
    cache.close()


# --------------------------------------------------------------------------- reading a run


def events(run: SimulationRun, kind: str, **fields: Any) -> list[TraceEvent]:
    """The trace events of ``kind`` whose fields equal ``fields``."""
    return [
        event
        for event in run.trace.of_kind(kind)
        if all(getattr(event, name) == value for name, value in fields.items())
    ]


def one(found: list[TraceEvent], what: str) -> TraceEvent:
    assert len(found) == 1, f"expected one {what}, found {len(found)}: {[e.text for e in found]}"
    return found[0]


def the_fault(run: SimulationRun, kind: str, op: str) -> TraceEvent:
    """The run's one fault event, checked to be ``kind`` at ``op`` of step ship."""
    event = one(run.trace.of_kind("fault"), "fault event")
    assert event.data["kind"] == kind
    assert (event.op, event.execution_id, event.step_key, event.token, event.t) == (
        op,
        ORDER,
        "ship",
        1,
        0.0,
    )
    assert event.point is not None
    assert [(f.at, f.label) for f in run.faults] == [
        (event.point, f"{event.worker} {op} {ORDER}/ship")
    ]
    return event


def other(worker: str | None) -> str:
    return {"w1": "w2", "w2": "w1"}[str(worker)]


def ship_orders(run: SimulationRun) -> list[str]:
    return [r.execution_id for r in run.executions if r.workflow_id == "ship-order"]


def assert_one_shipment(run: SimulationRun) -> str:
    """Every invariant held; one ship-order, one courier, both executions completed, and the
    ship step recorded that ship-order. Returns its execution ID."""
    assert run.ok, run.explain()
    (target,) = ship_orders(run)
    assert len(run.effects_named("courier.booked")) == 1
    assert len(run.effects_named("card.charged")) == 1
    assert {r.execution_id: str(r.status) for r in run.executions} == {
        ORDER: "completed",
        target: "completed",
    }
    assert [r.target_execution_id for r in run.start_requests] == [target]
    steps = {s.step_key: s for s in run.steps[ORDER]}
    assert steps["ship"].status == "completed"
    assert steps["ship"].value["executionId"] == target
    return target


def accepted_starts(run: SimulationRun) -> list[tuple[int | None, str | None, Any]]:
    """(token, worker, target) of every start call that returned an answer."""
    return [
        (e.token, e.worker, e.data.get("accepted"))
        for e in events(run, "call", op="start", execution_id=ORDER)
    ]


def start_answers(run: SimulationRun) -> list[tuple[int | None, Any]]:
    """(token, target) of every start call that returned an answer."""
    return [(token, target) for token, _, target in accepted_starts(run)]


def assert_the_redelivery_made_the_faulted_call(run: SimulationRun, op: str, target: str) -> None:
    """The faulted call was never made, so the redelivery (token 2) made it.

    When the fault hit the start, only the redelivery starts the shipment; when it hit the
    ship step, the first delivery's start stands and the replayed start is answered with the
    same target. Either way the ship step is recorded under token 2.
    """
    expected = [(2, target)] if op == "start" else [(1, target), (2, target)]
    assert start_answers(run) == expected
    assert [e.token for e in ship_puts(run)] == [2]


def claims_of_order(run: SimulationRun) -> list[TraceEvent]:
    return events(run, "call", op="claim", execution_id=ORDER)


def ship_puts(run: SimulationRun, kind: str = "call") -> list[TraceEvent]:
    return events(run, kind, op="put_step", execution_id=ORDER, step_key="ship")


def redelivery(run: SimulationRun, at: float) -> TraceEvent:
    """The second claim of order-42: token 2, at ``at``."""
    first, second = claims_of_order(run)
    assert (first.token, first.t, first.data["expires_at"]) == (1, 0.0, LEASE)
    assert (second.token, second.t) == (2, at)
    return second


def after(run: SimulationRun, event: TraceEvent) -> list[TraceEvent]:
    return [e for e in run.trace if e.seq > event.seq]


# --------------------------------------------------------------------------- each fault kind


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_crash_restarts_the_worker_and_the_order_is_redelivered_when_its_lease_expires(
    runs: Runs, runtime: str, op: str, seed: int
) -> None:
    run = runs.get(runtime, "crash", op, seed)
    target = assert_one_shipment(run)
    faulted = the_fault(run, "crash", op)
    worker = faulted.worker

    # The call was not made: the next thing the worker does is die, then restart, empty.
    assert not events(run, "call", point=faulted.point)
    crash = one(events(run, "crash", worker=worker), "crash")
    assert crash.seq == faulted.seq + 1
    assert crash.t == 0.0
    restart = one(events(run, "restart", worker=worker), "restart")
    assert restart.t == RESTART
    # Nobody releases the lease: the order waits for it to expire at t=30.
    assert not run.trace.of_kind("reject")
    assert not events(run, "call", op="release")
    assert redelivery(run, at=LEASE).worker in ("w1", "w2")

    assert_the_redelivery_made_the_faulted_call(run, op, target)
    assert accepted_starts(run)[-1][1] == redelivery(run, LEASE).worker


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_crash_after_commits_the_call_then_the_replay_uses_it(
    runs: Runs, runtime: str, op: str, seed: int
) -> None:
    run = runs.get(runtime, "crash_after", op, seed)
    target = assert_one_shipment(run)
    faulted = the_fault(run, "crash_after", op)
    worker = faulted.worker

    call = one(events(run, "call", point=faulted.point), "committed call")
    assert (call.worker, call.op, call.token) == (worker, op, 1)
    crash = one(events(run, "crash", worker=worker), "crash")
    assert crash.seq == call.seq + 1
    assert one(events(run, "restart", worker=worker), "restart").t == RESTART
    assert not run.trace.of_kind("reject")
    again = redelivery(run, at=LEASE)

    if op == "start":
        # The committed start admitted the one target; the replayed start gets that same one.
        assert call.data["accepted"] == target
        assert accepted_starts(run) == [(1, worker, target), (2, again.worker, target)]
        assert [e.token for e in ship_puts(run)] == [2]
    else:
        # The ship step was recorded: the redelivery replays it and makes no call for it.
        assert [e.token for e in ship_puts(run)] == [1]
        assert [token for token, _, _ in accepted_starts(run)] == [1]
        outcome = one(events(run, "outcome", execution_id=ORDER), "outcome of order-42")
        assert (outcome.token, outcome.data["status"]) == (2, "completed")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_lose_response_keeps_the_worker_alive_rejects_releases_and_redelivers_after_the_delay(
    runs: Runs, runtime: str, op: str, seed: int
) -> None:
    run = runs.get(runtime, "lose_response", op, seed)
    target = assert_one_shipment(run)
    faulted = the_fault(run, "lose_response", op)
    worker = faulted.worker

    # The call committed, then its response was lost: the client raised, the worker lived.
    call = one(events(run, "call", point=faulted.point), "committed call")
    lost = one(events(run, "error", point=faulted.point), "lost response")
    assert faulted.seq < call.seq < lost.seq
    assert lost.text == f"the response of {op} is lost"
    assert not run.trace.of_kind("crash", "restart")
    reject = one(run.trace.of_kind("reject"), "rejection")
    assert (reject.worker, reject.execution_id, reject.token, reject.t) == (worker, ORDER, 1, 0.0)
    assert "was lost" in reject.text
    release = one(events(run, "call", op="release"), "release")
    assert (release.worker, release.execution_id, release.t) == (worker, ORDER, 0.0)
    between = [e for e in run.trace if reject.seq < e.seq < release.seq and e.worker == worker]
    assert not between, "the worker did something else between the rejection and the release"
    redelivery(run, at=REDELIVERY)  # after the redelivery delay, not the lease

    if op == "start":
        assert call.data["accepted"] == target
        assert start_answers(run) == [(1, target), (2, target)]
    else:
        assert [token for token, _ in start_answers(run)] == [1]
        assert [e.token for e in ship_puts(run)] == [1]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_freeze_lets_the_other_worker_take_over_and_fences_the_frozen_one(
    runs: Runs, runtime: str, op: str, seed: int
) -> None:
    run = runs.get(runtime, "freeze", op, seed)
    target = assert_one_shipment(run)
    faulted = the_fault(run, "freeze", op)
    frozen = faulted.worker
    taker = other(frozen)

    freeze = one(events(run, "freeze", worker=frozen), "freeze")
    resume = one(events(run, "resume", worker=frozen), "resume")
    assert (freeze.t, freeze.point, resume.t, resume.point) == (
        0.0,
        faulted.point,
        FREEZE,
        faulted.point,
    )
    assert not run.trace.of_kind("crash", "restart")
    # The frozen worker's lease expires at t=30 and the other worker takes the order over.
    takeover = redelivery(run, at=LEASE)
    assert takeover.worker == taker
    outcome = one(events(run, "outcome", execution_id=ORDER), "outcome of order-42")
    assert (outcome.worker, outcome.token, outcome.t) == (taker, 2, LEASE)
    ack = one(events(run, "call", op="acknowledge", execution_id=ORDER), "acknowledgement")
    assert ack.worker == taker

    # When the frozen worker wakes up at t=40, its fenced write is refused.
    woken = after(run, resume)
    refused = [e for e in woken if e.kind == "refused" and e.worker == frozen]
    assert refused, "the frozen worker's fenced write should be refused"
    put = refused[0]
    assert (put.op, put.step_key, put.token, put.t) == ("put_step", "ship", 1, FREEZE)
    assert "stale" in put.text
    if op == "put_step":
        assert put.point == faulted.point  # the very call it froze before
    assert not [e for e in woken if e.kind == "call" and e.op == "put_step"]
    assert [e.token for e in ship_puts(run)] == [2]

    if op == "start":
        # start is not fenced: the frozen worker's late start is answered with the target the
        # other worker's start admitted.
        late = one(events(run, "call", op="start", point=faulted.point), "late start")
        assert (late.worker, late.t, late.token) == (frozen, FREEZE, 1)
        assert accepted_starts(run) == [(2, taker, target), (1, frozen, target)]
    else:
        assert accepted_starts(run) == [(1, frozen, target), (2, taker, target)]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_infra_error_makes_no_call_rejects_the_delivery_and_it_is_retried(
    runs: Runs, runtime: str, op: str, seed: int
) -> None:
    run = runs.get(runtime, "infra_error", op, seed)
    target = assert_one_shipment(run)
    faulted = the_fault(run, "infra_error", op)
    worker = faulted.worker

    assert not events(run, "call", point=faulted.point)  # the call was never made
    error = one(events(run, "error", point=faulted.point), "error")
    assert error.text == f"{op} failed: infrastructure error at {worker} {op} {ORDER}/ship"
    assert not run.trace.of_kind("crash", "restart")
    reject = one(run.trace.of_kind("reject"), "rejection")
    assert (reject.worker, reject.token) == (worker, 1)
    release = one(events(run, "call", op="release"), "release")
    assert (release.worker, release.execution_id) == (worker, ORDER)
    redelivery(run, at=REDELIVERY)

    assert_the_redelivery_made_the_faulted_call(run, op, target)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_child_exit_rejects_and_releases_the_delivery(
    runs: Runs, runtime: str, op: str, seed: int
) -> None:
    run = runs.get(runtime, "child_exit", op, seed)
    target = assert_one_shipment(run)
    faulted = the_fault(run, "child_exit", op)
    worker = faulted.worker

    assert not events(run, "call", point=faulted.point)
    error = one(events(run, "error", point=faulted.point), "error")
    assert error.text == f"{op} not made: the worker process of {worker} exited"
    assert not run.trace.of_kind("crash", "restart")  # the parent lives on
    reject = one(run.trace.of_kind("reject"), "rejection")
    assert (reject.worker, reject.execution_id, reject.token) == (worker, ORDER, 1)
    release = one(events(run, "call", op="release"), "release")
    assert (release.worker, release.execution_id) == (worker, ORDER)
    between = [e for e in run.trace if reject.seq < e.seq < release.seq and e.worker == worker]
    assert not between, "the worker did something else between the rejection and the release"
    redelivery(run, at=REDELIVERY)
    assert_the_redelivery_made_the_faulted_call(run, op, target)


KINDS = ["crash", "crash_after", "lose_response", "freeze", "infra_error", "child_exit"]


@pytest.mark.duckdb
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("kind", KINDS)
def test_every_fault_gives_the_same_trace_on_memory_and_duckdb(
    runs: Runs, kind: str, op: str
) -> None:
    for seed in SEEDS:
        memory = runs.get("memory", kind, op, seed)
        duckdb = runs.get("duckdb", kind, op, seed)
        assert memory.trace.to_jsonl() == duckdb.trace.to_jsonl(), f"seed {seed}"
        assert memory.schedule == duckdb.schedule


def test_fault_kinds_are_the_documented_ones() -> None:
    assert [str(kind) for kind in FAULT_KINDS] == [
        *KINDS, "stall", "skew", "world_error", "lose_event", "duplicate_event", "delay_event",
    ]  # fmt: skip


# --------------------------------------------------------------------------- placing faults


def test_every_choice_point_of_every_bundled_scenario_is_a_listed_op() -> None:
    """`list --faults` prints CHOICE_POINT_OPS: it must name every call the simulator offers."""
    seen = set()
    from yieldstar_sim.simulation.scenario_files import bundled_scenarios

    for name in bundled_scenarios():
        run = ys.simulate(ys.load_scenario(name), seed=0, runtime="memory")
        seen |= {e.op for e in run.trace if e.point is not None and e.worker is not None}
    assert seen <= set(CHOICE_POINT_OPS), seen - set(CHOICE_POINT_OPS)
    assert {"claim", "put_step", "start", "acknowledge", "start_child"} <= seen
    assert set(KIND_EFFECTS) == set(FAULT_KINDS)


def test_a_fault_placed_by_index_fires_at_that_choice_point() -> None:
    plain = ys.simulate(SCENARIO, 0, runtime="memory", scenario_faults=False)
    for index in (0, 3, 5):
        call = one(events(plain, "call", point=index), f"call at point {index}")
        target = call.execution_id if call.op != "claim" else None
        label = PointInfo(str(call.worker), str(call.op), target, call.step_key).label

        run = ys.simulate(
            SCENARIO, 0, runtime="memory", faults=[ys.Fault("crash", at=index)],
            scenario_faults=False,
        )  # fmt: skip
        assert run.ok, run.explain()
        assert run.faults == [ys.Fault("crash", at=index)]
        assert run.faults[0].label == label
        assert run.faults[0].describe() == f"crash before choice point #{index} ({label})"
        fault_event = one(run.trace.of_kind("fault"), "fault event")
        assert (fault_event.point, fault_event.worker, fault_event.op) == (
            index,
            call.worker,
            call.op,
        )
        # Up to the fault, the run is the fault-free run.
        before = [e for e in plain.trace if e.seq < fault_event.seq]
        assert [e.to_json() for e in run.trace if e.seq < fault_event.seq] == [
            e.to_json() for e in before
        ]
        # The same moves: only the fault's carries it.
        assert [replace(m, fault=None) for m in run.schedule[: index + 1]] == list(
            plain.schedule[: index + 1]
        )
        assert run.schedule[index].fault == "crash"


def test_a_fault_placed_after_the_last_point_is_a_scenario_error() -> None:
    """It never fires, so the run would not test what its plan says: never a green verdict."""
    with pytest.raises(ys.FaultPlanError, match=r"'crash before choice point #10000' matches no"):
        ys.simulate(
            SCENARIO, 0, runtime="memory", faults=[ys.Fault("crash", at=10_000)],
            scenario_faults=False,
        )  # fmt: skip


def test_occurrence_picks_the_nth_matching_point() -> None:
    def put_fault(occurrence: int) -> SimulationRun:
        return ys.simulate(
            SCENARIO, 0, runtime="memory", scenario_faults=False,
            faults=[ys.Fault("crash", op="put_step", execution_id=ORDER, occurrence=occurrence)],
        )  # fmt: skip

    first, second = put_fault(1), put_fault(2)
    assert one(first.trace.of_kind("fault"), "fault").step_key == "charge"
    fired = one(second.trace.of_kind("fault"), "fault")
    assert (fired.op, fired.step_key) == ("put_step", "ship")
    assert second.faults[0].label == f"{fired.worker} put_step {ORDER}/ship"
    assert second.faults[0].at == fired.point
    # Only two put_steps of order-42 happen once the ship step is recorded at the second.
    puts = events(second, "call", op="put_step", execution_id=ORDER)
    assert [(e.step_key, e.token) for e in puts] == [("charge", 1), ("ship", 2)]
    assert assert_one_shipment(second)
    with pytest.raises(ys.FaultPlanError, match=r"matches 2 choice point\(s\) of the run, fewer"):
        put_fault(3)


def test_each_fault_fires_once_and_the_first_matching_fault_wins() -> None:
    plan = FaultPlan(
        [
            ys.Fault("infra_error", op="claim", label="first"),
            ys.Fault("crash", op="claim"),
        ]
    )
    info = PointInfo("w1", "claim")
    point = type("P", (), {"info": info})()
    assert plan.fault_at(0, point) == ys.Fault("infra_error", op="claim")
    assert plan.fault_at(1, point) == ys.Fault("crash", op="claim")
    assert plan.fault_at(2, point) is None
    assert plan.unfired == []


def test_replaying_the_schedule_and_placed_faults_gives_the_identical_trace() -> None:
    original = ys.simulate(
        SCENARIO, 4, runtime="memory", scenario_faults=False,
        faults=[fault("freeze", "start"), ys.Fault("lose_response", op="acknowledge")],
    )  # fmt: skip
    assert len(original.faults) == 2
    assert all(f.at is not None and f.op is None for f in original.faults)
    replay = ys.simulate(
        SCENARIO, 999, runtime="memory", schedule=original.schedule, faults=original.faults,
        scenario_faults=False,
    )  # fmt: skip
    assert replay.trace.to_jsonl() == original.trace.to_jsonl()


# --------------------------------------------------------------------------- invalid faults


AT = "a fault's choice point must be a whole number >= 0, not "
SECONDS = "a freeze lasts a positive number of seconds, not "
TIMED = "only a freeze, a stall, a skew or a delay_event takes seconds, not a "


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"kind": "explode"},
            "unknown fault kind 'explode'; the kinds are crash, crash_after, lose_response, "
            "freeze, infra_error, child_exit, stall, skew, world_error, lose_event, "
            "duplicate_event, delay_event",
        ),
        ({"kind": "crash", "at": -1}, AT + "-1"),
        ({"kind": "crash", "at": 1.5}, AT + "1.5"),
        ({"kind": "crash", "at": True}, AT + "True"),
        ({"kind": "crash", "seconds": 5}, TIMED + "crash"),
        ({"kind": "infra_error", "seconds": 0}, TIMED + "infra_error"),
        ({"kind": "freeze", "seconds": 0}, SECONDS + "0"),
        ({"kind": "freeze", "seconds": -3.0}, SECONDS + "-3.0"),
        ({"kind": "freeze", "seconds": math.inf}, SECONDS + "inf"),
        ({"kind": "freeze", "seconds": math.nan}, SECONDS + "nan"),
        ({"kind": "freeze", "seconds": "40"}, SECONDS + "'40'"),
        ({"kind": "crash", "occurrence": 0}, "occurrence counts from 1, not 0"),
        (
            {"kind": "crash", "op": "put_stpe"},
            "unknown fault op 'put_stpe' (did you mean 'put_step'?); the ops are claim, put_step, "
            "record_wake, wait_for, start, start_child, cancel, acknowledge, release, trigger, "
            "send_event, wait_for_event, complete_attempt, elapse, complete, renew, "
            "draw, store_read, store_write, effect, commit (yieldstar-sim list --faults says "
            "what each is)",
        ),
        ({"kind": "stall", "seconds": -5}, "a stall lasts a positive number of seconds, not -5"),
        ({"kind": "stall", "seconds": 0}, "a stall lasts a positive number of seconds, not 0"),
        (
            {"kind": "skew", "seconds": -60},
            "a skew sets a worker's clock back by a positive number of seconds, not -60",
        ),
        (
            {"kind": "stall", "op": "put_step"},
            "a stall cannot be placed at put_step: it applies at elapse (a step body's "
            "step.world.elapse)",
        ),
        (
            {"kind": "crash", "op": "complete"},
            "a crash cannot be placed at complete: it applies at acknowledge, cancel, claim, "
            "complete_attempt, elapse, put_step, record_wake, release, renew, send_event, "
            "start, start_child, trigger, wait_for, wait_for_event",
        ),
        (
            {"kind": "crash", "op": "draw"},
            "a crash cannot be placed at draw: it applies at acknowledge, cancel, claim, "
            "complete_attempt, elapse, put_step, record_wake, release, renew, send_event, "
            "start, start_child, trigger, wait_for, wait_for_event",
        ),
        (
            {"kind": "lose_response", "op": "elapse"},
            "a lose_response cannot be placed at elapse: it applies at acknowledge, cancel, "
            "claim, complete_attempt, put_step, record_wake, release, renew, send_event, start, "
            "start_child, trigger, wait_for, wait_for_event",
        ),
    ],
)
def test_invalid_faults_are_refused_with_a_clear_message(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as raised:
        ys.Fault(**kwargs)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("crash", "a fault is an object with a kind, not 'crash'"),
        ({"at": 3}, "a fault is an object with a kind, not {'at': 3}"),
        ({"kind": "crash", "when": 3}, "a fault has no field 'when'"),
        ({"kind": "boom"}, "unknown fault kind 'boom'"),
    ],
)
def test_invalid_fault_json_is_refused_with_a_clear_message(data: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ys.Fault.from_json(data)


def test_a_fault_plan_holds_only_faults() -> None:
    with pytest.raises(TypeError, match=r"a fault plan holds ys\.Fault objects, not 'crash'"):
        ys.simulate(SCENARIO, 0, runtime="memory", faults=["crash"])  # type: ignore[list-item]


def test_a_freeze_defaults_to_40_seconds() -> None:
    assert ys.Fault("freeze").seconds == DEFAULT_FREEZE == 40.0
    assert ys.Fault("freeze", seconds=3).seconds == 3.0
    assert ys.Fault("freeze", seconds=3).describe() == "freeze 3s before any call"
    assert ys.Fault("crash", worker="api").describe() == "crash before any call of api"
    assert ys.Fault("stall", worker="w2").describe() == "stall the attempt 90s at any elapse of w2"


# --------------------------------------------------------------------------- JSON form


ROUND_TRIP = [
    ys.Fault("crash"),
    ys.Fault("crash_after", at=0),
    ys.Fault("lose_response", at=17, label="w1 start order-42/ship"),
    ys.Fault("freeze"),
    ys.Fault("freeze", op="put_step", step_key="ship", seconds=12.5),
    ys.Fault("infra_error", worker="w2", op="claim", occurrence=3),
    ys.Fault(FaultKind.CHILD_EXIT, worker="w1", op="start", execution_id=ORDER, step_key="ship"),
]


@pytest.mark.parametrize("original", ROUND_TRIP, ids=lambda f: f.describe())
def test_fault_json_round_trips(original: ys.Fault) -> None:
    data = original.to_json()
    again = ys.Fault.from_json(json.loads(json.dumps(data)))
    assert again == original
    assert again.label == original.label
    assert again.to_json() == data
    assert isinstance(again.kind, FaultKind)


def test_fault_json_leaves_defaults_out() -> None:
    assert ys.Fault("crash").to_json() == {"kind": "crash"}
    assert ys.Fault("freeze").to_json() == {"kind": "freeze", "seconds": 40.0}
    assert ys.Fault("crash", op="claim", occurrence=2).to_json() == {
        "kind": "crash",
        "op": "claim",
        "occurrence": 2,
    }


def test_placed_faults_of_a_run_round_trip_through_json() -> None:
    run = ys.simulate(
        SCENARIO, 0, runtime="memory", faults=[fault("freeze", "put_step")], scenario_faults=False
    )
    (placed,) = run.faults
    again = ys.Fault.from_json(json.loads(json.dumps(placed.to_json())))
    assert (again, again.label) == (placed, placed.label)
    assert placed.to_json() == {
        "kind": "freeze",
        "at": placed.at,
        "seconds": FREEZE,
        "label": placed.label,
    }


# --------------------------------------------------------------------------- determinism


MIXED = [fault("freeze", "put_step"), ys.Fault("lose_response", op="start", occurrence=1)]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_same_scenario_seed_and_faults_give_a_byte_identical_trace(runtime: str) -> None:
    for seed in (0, 7):
        first = ys.simulate(SCENARIO, seed, runtime=runtime, faults=MIXED, scenario_faults=False)
        second = ys.simulate(SCENARIO, seed, runtime=runtime, faults=MIXED, scenario_faults=False)
        try:
            assert first.ok, first.explain()
            assert first.trace.to_jsonl() == second.trace.to_jsonl()
            assert first.trace_digest() == second.trace_digest()
            assert first.schedule == second.schedule
            assert first.faults == second.faults
        finally:
            close(first)
            close(second)


@pytest.mark.duckdb
def test_memory_and_duckdb_give_the_same_trace_with_faults() -> None:
    for seed in range(4):
        memory = ys.simulate(SCENARIO, seed, runtime="memory", faults=MIXED, scenario_faults=False)
        duckdb = ys.simulate(SCENARIO, seed, runtime="duckdb", faults=MIXED, scenario_faults=False)
        try:
            assert memory.trace.to_jsonl() == duckdb.trace.to_jsonl(), f"seed {seed}"
            assert [(e.name, e.data) for e in memory.effects] == [
                (e.name, e.data) for e in duckdb.effects
            ]
        finally:
            close(duckdb)


# --------------------------------------------------------------------------- the trace in SQL


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_run_sql_queries_the_trace_and_effects(runtime: str) -> None:
    """``run.sql`` loads the trace tables (``effects`` has a ``t`` column: ``at`` is a reserved
    word in DuckDB 2.x)."""
    run = ys.simulate(
        SCENARIO, 0, runtime=runtime, faults=[fault("crash", "start")], scenario_faults=False
    )
    try:
        assert run.sql("select count(*) from trace_events where kind = 'fault'") == [(1,)]
        assert run.sql(
            "select worker, op, step_key, point from trace_events where kind = 'fault'"
        ) == [(run.trace.of_kind("fault")[0].worker, "start", "ship", run.faults[0].at)]
        assert run.sql("select count(*) from effects where name = 'courier.booked'") == [(1,)]
        assert run.sql("select count(*) from choices") == [(run.points,)]
    finally:
        close(run)


def test_acknowledge_and_release_events_carry_the_lease_token() -> None:
    """The invariant "outcomes acknowledged only under the current lease" reads the tokens of
    acknowledge events: they must be there, and be the token of the latest claim."""
    checked = 0
    for kind in ("crash", "lose_response"):
        run = ys.simulate(
            SCENARIO, 0, runtime="memory", faults=[fault(kind, "put_step")], scenario_faults=False
        )
        latest: dict[str, int | None] = {}
        for event in run.trace.of_kind("call"):
            if event.op == "claim" and event.execution_id is not None:
                latest[event.execution_id] = event.token
            elif event.op in ("acknowledge", "release"):
                assert event.token is not None, event.text
                assert event.token == latest[str(event.execution_id)], event.text
                checked += 1
    assert checked == 5  # two acknowledgements per run, and the release after the lost response


# --------------------------------------------------------------------------- defects


@pytest.mark.parametrize("occurrence", [1.5, True, "2", None])
def test_occurrence_must_be_a_whole_number(occurrence: Any) -> None:
    """``occurrence`` is a whole number from 1; anything else is refused with a clear message."""
    with pytest.raises(ValueError, match="occurrence counts from 1"):
        ys.Fault("crash", occurrence=occurrence)


def test_a_fault_by_index_and_by_its_description_strike_the_same_call() -> None:
    # The explorer's shrinking and the stepper's what-if both turn an index into a description;
    # the description must name the same call, repeated calls (a worker's claims) included.
    orders = [ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}") for n in (42, 43)]
    story = replace(DURABLE, triggers=orders)
    base = ys.simulate(story, runtime="memory", scenario_faults=False)
    points = {index: info for index, (info, _) in trace_points(base.trace).items()}
    repeated = [at for at in points if sum(info == points[at] for info in points.values()) > 1]
    assert repeated
    for at in [*repeated[1:4], max(points)]:
        by_index = ys.Fault("infra_error", at=at)
        described = by_description(by_index, points)
        assert described is not None
        assert described.at is None
        assert described.occurrence == sum(
            1 for index, info in points.items() if index <= at and info == points[at]
        )
        one = ys.simulate(story, runtime="memory", faults=[by_index], scenario_faults=False)
        other = ys.simulate(story, runtime="memory", faults=[described], scenario_faults=False)
        assert other.trace_digest() == one.trace_digest()
    assert by_description(ys.Fault("crash", at=max(points) + 1), points) is None


@pytest.mark.parametrize(
    ("info", "label"),
    [
        (PointInfo("w1", Op.PUT_STEP, "order-42", "ship"), "w1 put_step order-42/ship"),
        (PointInfo("w1", Op.CLAIM), "w1 claim"),
        (PointInfo("w2", Op.ACKNOWLEDGE, "order-1"), "w2 acknowledge order-1"),
        (PointInfo("w1", "custom", None, "s"), "w1 custom /s"),
        (PointInfo("", Op.CLAIM, "", ""), "claim"),
    ],
)
def test_a_choice_point_is_labelled_by_its_worker_op_execution_and_step(
    info: PointInfo, label: str
) -> None:
    assert info.label == label
    assert type(info.label) is str  # an op's text, not the enum's
