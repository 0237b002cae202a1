"""Prefix sharing (plans run on from their parent's run at their fault's choice point, by
restoring the state saved there or by forking) gives the replaying explorer's report, to the
digest: every bundled scenario, shared at every point."""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation import Fault, FaultKind
from yieldstar_sim.simulation.explorer import Plan, prefix, restoring
from yieldstar_sim.simulation.explorer.prefix import supported, sweeps
from yieldstar_sim.simulation.scenario_files import bundled_scenarios

if TYPE_CHECKING:
    from yieldstar_sim.simulation import ExplorationReport

pytestmark = pytest.mark.skipif(not supported("memory"), reason="forking needs POSIX")


def essentials(report: ExplorationReport) -> dict[str, Any]:
    """Everything in a report that must not depend on how its schedules were run."""
    return {
        "ok": report.ok,
        "verdicts": report.verdicts,
        "violations": [
            (
                found.invariant,
                found.message,
                found.faults,
                found.found_at,
                found.artifact.trace_digest,
                found.nearest_passing,
                found.divergence,
                found.divergence_at,
            )
            for found in report.violations
        ],
        "run": report.schedules_run,
        "skipped": report.skipped_equivalent,
        "bound": report.total_under_bound,
        "incomplete": (report.incomplete_schedules, report.incomplete_reasons),
        "warnings": report.warnings,
    }


def counted_forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The plans forked from now on (their indexes), each forked as before."""
    forks: list[int] = []
    fork = prefix._Forks._fork

    def counted(self: Any, plan: Plan) -> Any:
        forks.append(plan.index)
        return fork(self, plan)

    monkeypatch.setattr(prefix._Forks, "_fork", counted)
    return forks


def explored(name: str, sharing: bool | None, **options: Any) -> dict[str, Any]:
    report = ys.explore(ys.load_scenario(name), confirm=None, prefix_sharing=sharing, **options)
    return essentials(report)


@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_one_fault_restored_at_every_point_gives_the_replayed_report(name: str) -> None:
    assert explored(name, True, stop_at_first=False) == explored(name, False, stop_at_first=False)


@pytest.mark.parametrize("name", ["lost-response", "zombie-attempt"])
def test_stopping_at_the_first_violation_stops_at_the_same_schedule(name: str) -> None:
    assert explored(name, True) == explored(name, False)


@pytest.mark.parametrize(
    "name",
    # Restored on the second level: clients, draws, heartbeats, stalled attempts, completions.
    ["durable-start", "frozen-worker", "concurrent-clients", "random-replica", "heartbeat-zombie",
     "zombie-attempt", "fan-out-order"],
)  # fmt: skip
def test_two_faults_shared_at_every_point_give_the_replayed_report(name: str) -> None:
    options = {"max_faults": 2, "stop_at_first": False, "budget": 150}
    assert explored(name, True, **options) == explored(name, False, **options)


def test_the_shared_runs_are_forked_and_the_default_forks_only_long_prefixes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    forks = counted_forks(monkeypatch)
    # Forked: the first level of two, whose points are read to place the second's faults.
    explored("durable-start", True, stop_at_first=False, max_faults=2, budget=150)
    assert len(forks) > 10
    forks.clear()
    # A short schedule replays faster than a fork: the measured default replays it all. The
    # measurement is one timed replay: on a machine other work loads it can take ten times
    # its time, so the test gives it a quiet machine's clock (10 us between two readings).
    ticks = itertools.count()
    monkeypatch.setattr(prefix, "time", SimpleNamespace(perf_counter=lambda: next(ticks) * 1e-5))
    explored("durable-start", None, stop_at_first=False, max_faults=2, budget=150)
    assert forks == []


def test_the_last_level_is_run_on_from_restored_states_not_forked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    forks: list[int] = []
    served: list[tuple[int, bool] | None] = []
    serve = restoring.serve

    def counted(*args: Any, **options: Any) -> Any:
        served.append(serve(*args, **options))
        return served[-1]

    monkeypatch.setattr(prefix._Forks, "_fork", lambda self, plan: forks.append(plan.index))
    monkeypatch.setattr(prefix, "serve_restoring", counted)
    report = ys.explore(
        ys.load_scenario("durable-start"), confirm=None, stop_at_first=False, prefix_sharing=None
    )
    assert forks == []
    assert served
    assert all(result is not None for result in served)
    delivered = sum(result[0] for result in served if result is not None)
    assert delivered == report.schedules_run - 1  # all but the fault-free run, the parent


def test_a_restored_schedule_that_fails_is_replayed(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = itertools.count()
    outcome_of = restoring.outcome_of

    def failing_once(*args: Any, **options: Any) -> Any:
        if next(calls) == 5:
            raise RuntimeError("a restored run went wrong")
        return outcome_of(*args, **options)

    monkeypatch.setattr(restoring, "outcome_of", failing_once)
    options = {"stop_at_first": False}
    assert explored("lost-response", None, **options) == explored("lost-response", False, **options)
    assert next(calls) > 5  # the failing call came


def test_plans_extending_one_parent_at_later_points_make_one_sweep() -> None:
    crash = FaultKind.CRASH
    parent = (Fault(crash, at=1),)
    plans = [
        Plan(0, 0, (Fault(crash, at=3),)),
        Plan(1, 0, (Fault(crash, at=5),)),
        Plan(2, 0, (*parent, Fault(crash, at=2))),
        Plan(3, 0, (*parent, Fault(crash, at=4))),
        Plan(4, 0, (*parent, Fault(crash, at=0))),  # before its parent's fault: alone
        Plan(5, 0, (Fault(crash, at=1),), priorities=("w1",)),  # PCT: alone
    ]
    assert [[plan.index for plan in group] for _, group in sweeps(plans)] == [
        [0, 1],
        [2, 3],
        [4],
        [5],
    ]
    assert [parent is None for parent, _ in sweeps(plans)] == [False, False, True, True]


def test_a_forked_schedule_that_spins_is_cut_by_the_wall_clock_as_when_replayed() -> None:
    def count(step: ys.StepRunner) -> int:
        runs = step.world.read("runs", 0) + 1
        step.world.write("runs", runs)
        return runs

    def spin_if_run_twice(step: ys.StepRunner) -> int:
        while step.world.read("runs") > 1:  # only the wall-clock limit ends this
            pass
        return 1

    @ys.workflow("retry-spins")
    def retry_spins(step: ys.StepRunner, params: Any) -> Any:
        yield from step.run("first", lambda: count(step))
        yield from step.run("second", lambda: spin_if_run_twice(step))

    scenario = ys.Scenario(
        name="retry-spins",
        workflows=[retry_spins],
        triggers=[ys.Trigger("retry-spins", execution_id="spin-1")],
    )
    reports = [
        essentials(
            ys.explore(
                scenario,
                confirm=None,
                stop_at_first=False,
                kinds=["crash"],
                timeout=0.3,
                prefix_sharing=sharing,
            )
        )
        for sharing in (True, False)
    ]
    assert reports[0] == reports[1]
    incomplete, reasons = reports[0]["incomplete"]
    assert incomplete > 0
    assert "timed out after 0.3s of wall-clock time in step second" in reasons[0]


def test_a_fork_that_fails_falls_back_to_replaying(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused() -> int:
        raise OSError("out of processes")

    monkeypatch.setattr(prefix.os, "fork", refused)
    options = {"stop_at_first": False}
    assert explored("lost-response", True, **options) == explored("lost-response", False, **options)


def test_points_whose_actors_logged_too_long_to_rebuild_are_forked_instead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    forks = counted_forks(monkeypatch)
    monkeypatch.setattr(restoring, "MAX_LOG", 2)  # durable-start's logs reach 3 entries
    options = {"stop_at_first": False}
    assert explored("durable-start", True, **options) == explored("durable-start", False, **options)
    assert len(forks) > 10


def test_a_user_invariant_sees_as_many_runs_restored_as_replayed() -> None:
    # Restored plans run in the explorer's own process: user code that counts its calls in a
    # variable of its own sees the calls it sees when every schedule is replayed.
    calls: list[int] = []

    def counted(run: Any) -> None:
        calls.append(run.points)

    scenario = ys.load_scenario("lost-response")
    scenario = ys.Scenario(
        name=scenario.name, workflows=scenario.workflows, triggers=scenario.triggers,
        workers=scenario.workers, invariants=[counted],
    )  # fmt: skip
    seen = []
    for sharing in (None, False):
        calls.clear()
        report = ys.explore(scenario, confirm=None, stop_at_first=False, prefix_sharing=sharing)
        assert len(calls) >= report.schedules_run > 60
        seen.append(sorted(calls))
    assert seen[0] == seen[1]
