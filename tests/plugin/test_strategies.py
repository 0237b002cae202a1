"""Hypothesis strategies over a scenario's own choice points: they find, shrink and replay."""

from __future__ import annotations

from hypothesis import find, settings

import yieldstar_sim as ys
from yieldstar_sim.simulation import SimulationRun
from yieldstar_sim.strategies import choice_points, fault_plans, simulate_choices

PROBLEM = ys.load_scenario("trigger-in-step")


def couriers(run: SimulationRun) -> int:
    return len(run.effects_named("courier.booked"))


def test_fault_plans_find_and_shrink_the_problem_to_one_fault() -> None:
    def two_couriers(plan: list[ys.Fault]) -> bool:
        run = ys.simulate(
            PROBLEM, runtime="memory", faults=plan, scenario_faults=False, check_faults=False
        )
        return couriers(run) > 1

    plan = find(
        fault_plans(PROBLEM, max_faults=2), two_couriers,
        settings=settings(database=None, max_examples=300, derandomize=True),
    )  # fmt: skip
    (fault,) = plan  # shrunk by Hypothesis's own shrinker
    assert fault.worker is not None
    assert fault.op is not None
    run = ys.simulate(PROBLEM, runtime="memory", faults=plan, scenario_faults=False)
    again = ys.replay(run.artifact(), scenario=PROBLEM)  # reproduces with the artifact
    assert again.trace_digest() == run.trace_digest()


def test_fault_plans_name_real_choice_points() -> None:
    points = choice_points(PROBLEM)
    assert points[0].op == "claim"
    assert {point.op for point in points} >= {"claim", "put_step", "acknowledge"}


def test_choices_drive_the_interleaving_and_replay_exactly() -> None:
    concurrent = ys.load_scenario("concurrent-starts")
    first = simulate_choices(concurrent, [0, 1, 1, 0, 1])
    second = simulate_choices(concurrent, [1, 0, 0, 1, 0])
    assert first.schedule != second.schedule
    assert first.ok
    assert second.ok
    again = ys.replay(first.artifact(), scenario=concurrent)
    assert again.trace_digest() == first.trace_digest()
