"""Orphans (issue 11, item 9): a worker frozen before start_child wakes after its owner was
cancelled. Without the runtimes' orphan guard the child is created, owned by a terminal owner
and never cancelled, and the built-in invariant "owned targets follow their owner" says so;
with it, the start_child is refused and the fixed scenario survives every pair of faults."""

from __future__ import annotations

import dataclasses

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation import SimulationRun

OWNED = "owned targets follow their owner"


@pytest.fixture(params=["memory", "duckdb"])
def runtime(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def statuses(run: SimulationRun) -> dict[str, tuple[str, bool]]:
    return {r.execution_id: (str(r.status), r.cancel_requested) for r in run.executions}


def frozen_for(name: str, seconds: float) -> ys.Scenario:
    """The scenario with the worker frozen for ``seconds`` before start_child."""
    fault = ys.Fault("freeze", op="start_child", step_key="pack", seconds=seconds)
    return dataclasses.replace(ys.load_scenario(name), faults=[fault])


def test_without_the_guard_the_frozen_worker_creates_an_orphan(runtime: str) -> None:
    run = ys.simulate(ys.load_scenario("orphan-after-cancel"), seed=0, runtime=runtime)
    messages = {v.invariant: v.message for v in run.violations}
    assert messages == {
        OWNED: "pack-42 (pack) was admitted at t=40 by w2 for owner order-42, which had been "
        "cancelled at t=30 (w2 froze before start_child and woke after its lease (token 1) had "
        "expired): nobody will cancel it, and it completed at t=60; a runtime refuses a new start "
        "from an owner that ended (its orphan guard: Scenario(runtime_options={'orphan_guard': "
        "True}), the default)",
        "no_parcel_for_a_cancelled_order": "order 42 was cancelled, but pack-42 packed its "
        "parcel at t=60",
    }
    assert statuses(run) == {"order-42": ("cancelled", True), "pack-42": ("completed", False)}
    (parcel,) = run.effects_named("parcel.packed")
    assert parcel.execution_id == "pack-42"


def test_the_guard_refuses_the_frozen_workers_start_child(runtime: str) -> None:
    run = ys.simulate(ys.load_scenario("orphan-after-cancel-fixed"), seed=0, runtime=runtime)
    assert run.ok, run.explain()
    assert statuses(run) == {"order-42": ("cancelled", True)}
    assert run.effects == []
    refused = [(e.t, e.worker, e.op) for e in run.trace.of_kind("refused")]
    assert refused == [(40.0, "w2", "start_child"), (40.0, "w2", "release")]
    assert run.trace.of_kind("refused")[0].text == (
        "start_child refused: child request (order-42, pack): the caller order-42 is cancelled: "
        "a terminal execution admits no new targets (the delivery that asks is stale)"
    )
    (rejected,) = run.trace.of_kind("reject")
    assert rejected.execution_id == "order-42"


def test_a_child_admitted_under_a_cancel_requested_owner_follows_it(runtime: str) -> None:
    """Woken at t=20, before order-42 ended but after its cancellation was requested at t=10:
    without the guard pack-42 never hears of it; with the guard it is cancelled with order-42."""
    hazard = ys.simulate(frozen_for("orphan-after-cancel", 20), runtime=runtime)
    assert [(v.invariant, v.message) for v in hazard.violations if v.invariant == OWNED] == [
        (
            OWNED,
            "pack-42 (pack) was admitted at t=20 by w2 for owner order-42, whose cancellation "
            "had been requested at t=10, but its own was never requested: it completed at t=40; a "
            "runtime requests it with the new start from such an owner (its orphan guard: "
            "Scenario(runtime_options={'orphan_guard': True}), the default)",
        )
    ]
    fixed = ys.simulate(frozen_for("orphan-after-cancel-fixed", 20), runtime=runtime)
    assert fixed.ok, fixed.explain()
    assert statuses(fixed) == {"order-42": ("cancelled", True), "pack-42": ("cancelled", True)}
    assert fixed.effects == []


def test_a_child_asked_to_cancel_followed_its_owner_even_if_it_completes(runtime: str) -> None:
    """Cancellation is cooperative: a child that handles its cancellation and completes was
    asked, so it followed its owner, and nothing is reported."""

    @ys.workflow("tidy")
    def tidy(step: ys.StepRunner, params: object) -> object:
        try:
            yield from step.delay("wait", 100)
        except ys.WorkflowCancelledError:
            yield from step.run("clean-up", lambda: step.world.effect("cleaned"))
        return "tidied"

    @ys.workflow("owner")
    def owner(step: ys.StepRunner, params: object) -> object:
        result = yield from step.child("tidy", tidy, "tidy-1")
        return result

    scenario = ys.Scenario(
        name="tidy-child",
        workflows=[owner, tidy],
        triggers=[ys.Trigger("owner", execution_id="owner-1")],
        cancels=[ys.Cancel("owner-1", at=10)],
    )
    run = ys.simulate(scenario, runtime=runtime)
    assert run.ok, run.explain()
    assert statuses(run) == {"owner-1": ("cancelled", True), "tidy-1": ("completed", True)}


def test_the_explorer_finds_the_orphan_with_one_freeze() -> None:
    report = ys.explore(ys.load_scenario("orphan-after-cancel"), max_faults=1, confirm="duckdb")
    assert report.runtime_mismatches == []
    found = next(v for v in report.violations if v.invariant == OWNED)
    assert len(found.faults) == 1
    assert found.faults[0].startswith("freeze ")
    assert "start_child of step pack in order-42" in found.faults[0]
    replayed = ys.replay(found.artifact, runtime="duckdb")
    assert any(v.invariant == OWNED for v in replayed.violations)


@pytest.mark.slow
def test_the_fixed_variant_survives_every_pair_of_faults() -> None:
    report = ys.explore(
        ys.load_scenario("orphan-after-cancel-fixed"), max_faults=2, confirm="duckdb"
    )
    assert report.ok, report.summary()
    assert report.runtime_mismatches == []
    assert report.schedules_run > 1000


def test_runtime_options_are_checked_when_the_scenario_is_made() -> None:
    base = ys.load_scenario("orphan-after-cancel")
    with pytest.raises(
        ValueError,
        match=r"^scenario 'x': unknown runtime option 'orphan_gaurd'; the runtimes take: "
        r"on_existing_id, orphan_guard$",
    ):
        dataclasses.replace(base, name="x", runtime_options={"orphan_gaurd": False})
    with pytest.raises(
        TypeError, match=r"^scenario 'x': runtime option 'orphan_guard' must be a bool, not 0$"
    ):
        dataclasses.replace(base, name="x", runtime_options={"orphan_guard": 0})
    with pytest.raises(TypeError, match=r"^scenario 'x': runtime_options must be a mapping"):
        dataclasses.replace(base, name="x", runtime_options=["orphan_guard"])
