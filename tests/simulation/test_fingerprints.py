"""Incremental state fingerprints: the explorer's keys are exactly those that reading every
record at every choice point gives, they tell states apart exactly as the fingerprint before
the cache did, and so the explorer's results do not change."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation import kernel
from yieldstar_sim.simulation.explorer import plans
from yieldstar_sim.simulation.faults import Fault, FaultKind
from yieldstar_sim.simulation.scenario_files import bundled_scenarios

if TYPE_CHECKING:
    from yieldstar_sim.simulation import ExplorationReport
    from yieldstar_sim.simulation.kernel import Point
    from yieldstar_sim.simulation.simulator import Simulator

SCENARIOS = sorted(bundled_scenarios())


def _full_key(simulator: Simulator, name: str, point: Point) -> str:
    """The fingerprint as the explorer computed it before the cache: every record re-read."""
    runtime: Any = simulator.runtime
    records = []
    for record in runtime.executions():
        lease = record.lease
        records.append(
            (
                record.execution_id,
                str(record.status),
                record.due_at,
                record.lease_token,
                None if lease is None else lease.expires_at,
                record.cancel_requested,
                record.waiting_on,
                tuple(
                    (s.step_key, s.status, s.attempt) for s in runtime.steps(record.execution_id)
                ),
            )
        )
    others = sorted(
        state.replace(other, "~") for other, state in simulator.kernel.waiting() if other != name
    )
    info = point.info
    ledger = [
        (e.name, sorted(e.data.items()), e.execution_id, e.step_key)
        for e in simulator.ledger.effects
    ]
    text = repr(
        (records, simulator.clock.now(), ledger, others, info.op, info.execution_id, info.step_key)
    )
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def _keys_three_ways(
    scenario: ys.Scenario, plan: plans.Plan
) -> tuple[list[str], list[str], list[str]]:
    """At every choice point: the old fingerprint, the cached one, and the new one read
    whole."""
    simulator = plans._simulator(scenario, plan, "memory")
    cache = plans.Fingerprints()
    old: list[str] = []
    cached: list[str] = []
    whole: list[str] = []

    def observe(index: int, name: str, point: Point, fault: object) -> None:
        old.append(_full_key(simulator, name, point))
        cached.append(cache.key(simulator, name, point))
        whole.append(_FullReads().key(simulator, name, point))

    simulator.kernel.observers.append(observe)
    simulator.run()
    simulator.runtime.close()
    return old, cached, whole


@pytest.mark.parametrize("name", SCENARIOS)
def test_cached_keys_equal_full_reads_and_part_states_as_before(name: str) -> None:
    scenario = ys.load_scenario(name)
    clean = plans.run_plan(scenario, plans.Plan(0, 0), expand=True)
    # The fault-free run, then one run per fault kind placed a third of the way in: crashes,
    # lost responses and freezes write records in orders the clean run does not.
    plan_list = [plans.Plan(0, 0)]
    at = clean.points // 3
    for kind in (FaultKind.CRASH_AFTER, FaultKind.LOSE_RESPONSE, FaultKind.FREEZE):
        seconds = 90.0 if kind is FaultKind.FREEZE else None
        plan_list.append(plans.Plan(0, 0, (Fault(kind, at=at, seconds=seconds),)))
    pairs: set[tuple[str, str]] = set()
    for plan in plan_list:
        old, cached, whole = _keys_three_ways(scenario, plan)
        assert cached == whole, plan
        pairs.update(zip(old, cached, strict=True))
    # Across every point of every run: two points share a new key exactly when they shared
    # an old one (the new keys are another name for the same classes of states).
    assert len({o for o, _ in pairs}) == len({c for _, c in pairs}) == len(pairs)


class _FullReads(plans.Fingerprints):
    """The cache switched off: every execution read again at every point, as on a runtime
    that reports no changes."""

    follows_changes = False


def _summary(report: ExplorationReport) -> tuple[object, ...]:
    return (
        report.schedules_run,
        report.skipped_equivalent,
        report.incomplete_schedules,
        sorted(report.verdicts.items()),
        [
            (v.invariant, v.message, v.faults, v.artifact.trace_digest, v.nearest_passing)
            for v in report.violations
        ],
    )


@pytest.mark.parametrize("name", SCENARIOS)
def test_exploration_results_do_not_depend_on_the_cache(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = ys.load_scenario(name)
    options: dict[str, Any] = {"confirm": None, "budget": 150, "max_faults": 2}
    cached = ys.explore(scenario, **options)
    monkeypatch.setattr(plans, "Fingerprints", _FullReads)
    full = ys.explore(scenario, **options)
    assert _summary(cached) == _summary(full)


def test_a_worker_s_skewed_clock_is_part_of_the_state_it_acts_in() -> None:
    """A skewed worker acts on its own belief: the same records with its clock behind are
    another state, so the systematic search does not skip a fault there as equivalent."""
    simulator = plans._simulator(ys.load_scenario("skewed-lease"), plans.Plan(0, 0), "memory")
    keys: list[str] = []

    def observe(index: int, name: str, point: Point, fault: Any) -> None:
        if index == 0:
            keys.append(plans.Fingerprints().key(simulator, name, point))
            simulator.clocks.behind[name] = 60.0
            keys.append(plans.Fingerprints().key(simulator, name, point))
            del simulator.clocks.behind[name]
            keys.append(plans.Fingerprints().key(simulator, name, point))

    simulator.kernel.observers.append(observe)
    simulator.run()
    plain, skewed, again = keys
    assert skewed != plain
    assert again == plain


def test_the_memory_runtime_is_followed_not_read_whole() -> None:
    """On the memory runtime the cache follows the rows that changed: no fingerprint asks it
    for every record (so the comparison with whole reads above compares two ways)."""
    simulator = plans._simulator(ys.load_scenario("durable-start"), plans.Plan(0, 0), "memory")
    runtime: Any = simulator.runtime
    whole_reads: list[int] = []
    executions = runtime.executions

    def counted() -> Any:
        whole_reads.append(1)
        return executions()

    runtime.executions = counted
    cache = plans.Fingerprints()
    keys: list[str] = []

    def observe(index: int, name: str, point: Point, fault: Any) -> None:
        before = len(whole_reads)
        keys.append(cache.key(simulator, name, point))
        assert len(whole_reads) == before

    simulator.kernel.observers.append(observe)
    simulator.run()
    simulator.runtime.close()
    assert len(keys) > 10


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_child_schedule_fingerprints_only_after_its_fault_and_the_same_keys(name: str) -> None:
    """The systematic search reads a child schedule's keys only after its last fault (before
    it, the run is its parent's): those keys are computed, by one catch-up with everything
    before, and equal the keys of a run fingerprinted at every point; the others are empty."""
    scenario = ys.load_scenario(name)
    clean = plans.run_plan(scenario, plans.Plan(0, 0), expand=True)
    assert all(clean.keys), "a plan with no fault fingerprints every point"
    at = clean.points // 2
    child = plans.Plan(1, 0, (Fault(FaultKind.CRASH_AFTER, at=at),))
    assert plans.keys_from(child) == at + 1
    skipped = plans.run_plan(scenario, child, expand=True)
    simulator = plans._simulator(scenario, child, "memory", None)
    seen = plans.observe_points(simulator, expand=True, first_key=0)
    simulator.run()
    every = plans.outcome_of(simulator, child.index, seen)
    assert list(skipped.keys[: at + 1]) == [""] * (at + 1)
    assert skipped.keys[at + 1 :] == every.keys[at + 1 :]
    assert all(skipped.keys[at + 1 :])


def _described(state: object) -> str:
    """What ``Kernel.waiting`` says of one of ``Kernel.waits``'s values."""
    if isinstance(state, kernel.Point):
        return f"point {state.label}"
    if state is kernel.PARKED:
        return "parked"
    assert isinstance(state, float | int), state
    return f"sleep until {state:g}"


def _check_waits(scenario: ys.Scenario, plan: plans.Plan) -> int:
    """Run ``plan``, checking ``waits`` against ``waiting`` at every point and at the end;
    how many points were checked."""
    simulator = plans._simulator(scenario, plan, "memory")
    seen: list[int] = []

    def observe(index: int, name: str, point: Point, fault: Any) -> None:
        waits = simulator.kernel.waits
        assert name not in waits
        described = sorted((other, _described(state)) for other, state in waits.items())
        assert described == simulator.kernel.waiting(), index
        seen.append(index)

    simulator.kernel.observers.append(observe)
    simulator.run()
    waits = simulator.kernel.waits
    assert sorted((n, _described(s)) for n, s in waits.items()) == simulator.kernel.waiting()
    simulator.runtime.close()
    return len(seen)


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_kernel_s_waits_say_what_waiting_says_at_every_point(name: str) -> None:
    """The fingerprints tell that no other actor moved by comparing the kernel's ``waits``
    with a copy: at every choice point (a fault-free run and one with a crash a third of the
    way in), and at the end, they describe exactly what ``waiting`` reads whole."""
    scenario = ys.load_scenario(name)
    clean = plans.run_plan(scenario, plans.Plan(0, 0))
    crash = plans.Plan(0, 0, (Fault(FaultKind.CRASH_AFTER, at=clean.points // 3),))
    assert _check_waits(scenario, plans.Plan(0, 0)) == clean.points
    assert _check_waits(scenario, crash) > 0
