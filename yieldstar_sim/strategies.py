"""Hypothesis strategies for property tests of your own scenarios.

``fault_plans(scenario)`` draws faults placed by description at the choice points the scenario
really has (so a plan shrinks toward fewer, earlier faults with Hypothesis's own shrinker),
``seeds()`` draws seeds, and ``choices()`` draws interleavings that ``simulate_choices`` turns
into a run. A failing example reproduces exactly: ``run.artifact()`` holds the schedule and
faults that fired.

>>> from hypothesis import given, settings
>>> import yieldstar_sim as ys
>>> scenario = ys.load_scenario("durable-start")
>>> @settings(max_examples=5, deadline=None, derandomize=True)
... @given(plan=fault_plans(scenario, max_faults=1), seed=seeds())
... def test_the_fix_holds(plan, seed):
...     run = ys.simulate(scenario, seed=seed, runtime="memory", faults=plan,
...                       scenario_faults=False, check_faults=False)
...     assert run.ok, run.explain()
>>> test_the_fix_holds()

Hypothesis is an optional dependency (the ``test`` extra): import this module only where it is
installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypothesis import strategies as st

from yieldstar_sim.simulation.execution import Execution
from yieldstar_sim.simulation.faults import (
    DEFAULT_FREEZE,
    FAULT_KINDS,
    Fault,
    FaultKind,
    PointInfo,
    applies_at,
    explored_seconds,
)
from yieldstar_sim.simulation.finish import finish

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.scenario import Scenario

__all__ = ["choice_points", "choices", "fault_plans", "seeds", "simulate_choices"]


def seeds() -> st.SearchStrategy[int]:
    """Seeds for ``ys.simulate``: each decides one interleaving of the workers."""
    return st.integers(min_value=0, max_value=2**32 - 1)


def choice_points(scenario: Scenario, *, seed: int = 0) -> list[PointInfo]:
    """The choice points of the scenario's fault-free run of ``seed``, in order: where a
    described fault can go."""
    execution = Execution(scenario, seed=seed, runtime="memory", scenario_faults=False)
    points: list[PointInfo] = []
    try:
        while not execution.done():
            move = execution.default_move()
            points.append(execution.point(move.actor).info)
            execution.take(move)
    finally:
        execution.close()
    return points


def fault_plans(
    scenario: Scenario,
    *,
    max_faults: int = 2,
    kinds: Sequence[FaultKind | str] = FAULT_KINDS,
    seed: int = 0,
    freeze_seconds: float | None = None,
) -> st.SearchStrategy[list[Fault]]:
    """Lists of up to ``max_faults`` faults of ``kinds``, each placed by description (worker,
    op, execution, step key, occurrence) at a choice point of the scenario's fault-free run of
    ``seed``. A freeze lasts ``freeze_seconds`` (default: past the lease)."""
    points = choice_points(scenario, seed=seed)
    if not points:
        raise ValueError(f"scenario {scenario.name!r} has no choice points to place faults at")
    chosen = [FaultKind(kind) for kind in kinds]
    freeze = freeze_seconds or max(
        DEFAULT_FREEZE, scenario.lease_seconds + scenario.redelivery_delay
    )
    occurrences: list[int] = []
    seen: dict[PointInfo, int] = {}
    for info in points:
        seen[info] = seen.get(info, 0) + 1
        occurrences.append(seen[info])

    def place(index: int, kind: FaultKind) -> Fault | None:
        info = points[index]
        if not applies_at(kind, info.op, exploring=True):
            return None  # no call to lose at an elapse; no attempt to stall elsewhere
        return Fault(
            kind, worker=info.worker, op=info.op, execution_id=info.execution_id,
            step_key=info.step_key, occurrence=occurrences[index],
            seconds=explored_seconds(kind, freeze),
        )  # fmt: skip

    placed = st.builds(place, st.integers(0, len(points) - 1), st.sampled_from(chosen))
    one: st.SearchStrategy[Fault] = placed.filter(lambda fault: fault is not None)  # type: ignore[assignment]
    return st.lists(one, max_size=max_faults)


def choices(max_size: int = 200) -> st.SearchStrategy[list[int]]:
    """Interleavings as a list of small numbers: at each choice point with several ready
    workers, the next number picks one (modulo their count). Shrinks toward the first-ready
    worker everywhere."""
    return st.lists(st.integers(min_value=0, max_value=7), max_size=max_size)


def simulate_choices(
    scenario: Scenario,
    interleaving: Sequence[int],
    *,
    faults: Sequence[Fault] = (),
    runtime: str = "memory",
    scenario_faults: bool = False,
) -> SimulationRun:
    """Run ``scenario`` with the interleaving ``choices()`` drew (the first move once it is
    used up): at each point with several moves (ready workers, a draw's options), the next
    number picks one; the run's ``schedule`` and ``artifact()`` replay it exactly."""
    remaining = list(interleaving)
    execution = Execution(scenario, runtime=runtime, faults=faults, scenario_faults=scenario_faults)
    try:
        while not execution.done():
            moves = execution.moves()
            move = (
                moves[remaining.pop(0) % len(moves)] if remaining and len(moves) > 1 else moves[0]
            )
            execution.take(execution.planned(move))
        execution.close_actors()
    except BaseException:
        execution.close()
        raise
    return finish(execution)
