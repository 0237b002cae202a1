"""What bench_explorer's sections share: timed explorations and runs, faults placed as the
explorer places them, and the N-step chain scenario of the scaling sections."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import yieldstar_sim as ys
from yieldstar_sim.simulation import FaultKind

if TYPE_CHECKING:
    from yieldstar_sim.simulation import ExplorationReport, SimulationRun

FAULT_KINDS: tuple[FaultKind, ...] = tuple(FaultKind)


def explore(scenario: ys.Scenario, **options: Any) -> tuple[float, ExplorationReport]:
    """Seconds (wall) and report of one exploration, without DuckDB confirmation."""
    options.setdefault("confirm", None)
    start = time.perf_counter()
    report = ys.explore(scenario, **options)
    return time.perf_counter() - start, report


def timed_simulate(scenario: ys.Scenario, **options: Any) -> tuple[float, SimulationRun]:
    """Seconds and result of one ``ys.simulate``; its runtime is closed after the clock stops."""
    start = time.perf_counter()
    run = ys.simulate(scenario, **options)
    seconds = time.perf_counter() - start
    run.runtime.close()
    return seconds, run


def freeze_seconds(scenario: ys.Scenario) -> float:
    """The freeze the explorer places by default: the lease plus the redelivery delay."""
    return scenario.lease_seconds + scenario.redelivery_delay


def fault(kind: FaultKind, at: int, scenario: ys.Scenario) -> ys.Fault:
    """A fault at a choice point, as the explorer places it."""
    seconds = freeze_seconds(scenario) if kind == FaultKind.FREEZE else None
    return ys.Fault(kind, at=at, seconds=seconds)


def essentials(report: ExplorationReport) -> tuple[Any, ...]:
    """What must not depend on how an exploration was run."""
    return (
        report.schedules_run,
        report.skipped_equivalent,
        report.total_under_bound,
        [(v.invariant, v.message, v.faults) for v in report.violations],
    )


def chain_scenario(n: int) -> ys.Scenario:
    """One workflow of ``n`` ``step.run`` steps, one trigger, 2 workers."""
    trigger = ys.Trigger("chain", {"steps": n}, execution_id="chain-1")
    return _runs_of_steps(f"chain-{n}", "chain", n, [trigger])


def wide_scenario(executions: int, steps: int) -> ys.Scenario:
    """``executions`` workflows of ``steps`` ``step.run`` steps each, one trigger each, 2
    workers: a state of many rows, of which a choice point changes one or two."""
    triggers = [ys.Trigger("small", {}, execution_id=f"small-{n}") for n in range(executions)]
    return _runs_of_steps(f"wide-{executions}x{steps}", "small", steps, triggers)


def _runs_of_steps(
    name: str, workflow_id: str, steps: int, triggers: list[ys.Trigger]
) -> ys.Scenario:
    """A scenario of ``triggers``, each starting workflow ``workflow_id`` of ``steps``
    ``step.run`` steps, 2 workers."""

    @ys.workflow(workflow_id)
    def run_steps(step: ys.StepRunner, params: Any) -> Any:
        total = 0
        for i in range(steps):
            total += yield from step.run(f"s{i}", lambda i=i: i)
        return total

    return ys.Scenario(
        name=name,
        workflows=[run_steps],
        triggers=triggers,
        workers=2,
        max_points=100 * steps * len(triggers) + 1_000,
    )
