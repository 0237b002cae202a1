"""Plans and their outcomes: one schedule to run (a seed, faults at choice points, PCT
priorities), what running it gave, and the state fingerprint that makes two choice points
equivalent."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT
from yieldstar_sim.simulation.run import SimulationRun, finish
from yieldstar_sim.simulation.simulator import Simulator

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.faults import Fault, PointInfo
    from yieldstar_sim.simulation.kernel import Point
    from yieldstar_sim.simulation.scenario import Scenario


@dataclass(frozen=True, slots=True)
class Plan:
    """One schedule to run: a seed, faults placed at choice points, and (PCT) priorities."""

    index: int
    seed: int
    faults: tuple[Fault, ...] = ()
    priorities: tuple[str, ...] = ()
    change_points: tuple[int, ...] = ()
    schedule: tuple[str, ...] = ()
    """The actor to choose at each choice point (the exhaustive search's schedules): followed
    while it names a ready actor, so a shrunk plan with fewer faults still runs."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What running a plan gave, small enough to cross a process boundary.

    ``ok`` is true only when the run finished and every invariant held; ``incomplete`` says
    why a run did not finish (a budget, the wall-clock limit).
    """

    index: int
    ok: bool
    violations: tuple[tuple[str, str], ...]
    digest: str
    points: int
    faults: tuple[Fault, ...]
    labels: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    incomplete: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        """``ok``, ``violated`` or ``incomplete``, as for a run."""
        if self.violations:
            return "violated"
        return "incomplete" if self.incomplete is not None else "ok"

    def violates(self, invariant: str) -> bool:
        """Whether this run violated the invariant named ``invariant``."""
        return any(name == invariant for name, _ in self.violations)


class _PctChooser:
    """PCT: the ready actor with the highest priority goes; at each change point the actor that
    goes drops to the lowest priority."""

    def __init__(self, priorities: Sequence[str], change_points: Sequence[int]) -> None:
        self.rank = {name: len(priorities) - i for i, name in enumerate(priorities)}
        self.change_points = set(change_points)
        self.lowest = 0

    def __call__(self, index: int, ready: list[str]) -> str:
        chosen = max(ready, key=lambda name: (self.rank.get(name, 0), name))
        if index in self.change_points:
            self.lowest -= 1
            self.rank[chosen] = self.lowest
        return chosen


class _ScheduleChooser:
    """Follows a recorded schedule while it names a ready actor, else takes the first one."""

    def __init__(self, schedule: Sequence[str]) -> None:
        self.schedule = schedule

    def __call__(self, index: int, ready: list[str]) -> str:
        wanted = self.schedule[index] if index < len(self.schedule) else None
        return wanted if wanted is not None and wanted in ready else ready[0]


def _state_key(simulator: Simulator, name: str, point: Point) -> str:
    """A fingerprint of the state at a choice point, blind to which worker is which."""
    runtime = simulator.runtime
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
    info: PointInfo = point.info
    ledger = [
        (e.name, sorted(e.data.items()), e.execution_id, e.step_key)
        for e in simulator.ledger.effects
    ]
    store = sorted(simulator.store.canonical.items())
    text = repr(
        (records, simulator.clock.now(), ledger, others, info.op, info.execution_id, info.step_key,
         store)
    )  # fmt: skip
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def run_plan(
    scenario: Scenario,
    plan: Plan,
    runtime: RuntimeChoice = "memory",
    *,
    expand: bool = False,
    digest: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> Outcome:
    """Run one plan; with ``expand``, also record each choice point's label and state key;
    with ``digest``, the trace's digest (serialising a trace costs a fifth of a schedule, so
    the search leaves it out and confirmation asks for it)."""
    simulator = _simulator(scenario, plan, runtime, timeout)
    labels: list[str] = []
    keys: list[str] = []
    if expand:

        def observe(index: int, name: str, point: Point, fault: Any) -> None:
            labels.append(point.label)
            keys.append(_state_key(simulator, name, point))

        simulator.kernel.observers.append(observe)
    simulator.run()
    run = finish(simulator)
    outcome = Outcome(
        index=plan.index,
        ok=run.ok,
        violations=tuple((v.invariant, v.message) for v in run.violations),
        digest=run.trace_digest() if digest else "",
        points=run.points,
        faults=tuple(run.faults),
        labels=tuple(labels),
        keys=tuple(keys),
        incomplete=run.incomplete,
        warnings=tuple(run.warnings),
    )
    run.runtime.close()
    return outcome


def _simulator(
    scenario: Scenario, plan: Plan, runtime: RuntimeChoice, timeout: float | None = DEFAULT_TIMEOUT
) -> Simulator:
    chooser: Callable[[int, list[str]], str] | None = None
    if plan.priorities:
        chooser = _PctChooser(plan.priorities, plan.change_points)
    elif plan.schedule:
        chooser = _ScheduleChooser(plan.schedule)
    return Simulator(
        scenario, seed=plan.seed, runtime=runtime, faults=plan.faults, scenario_faults=False,
        chooser=chooser, timeout=timeout,
    )  # fmt: skip


def simulate_plan(
    scenario: Scenario, plan: Plan, runtime: RuntimeChoice = "memory", timeout: float | None = None
) -> SimulationRun:
    """Run one plan and keep the whole run (trace, records) for reading."""
    simulator = _simulator(scenario, plan, runtime, timeout)
    simulator.run()
    return finish(simulator)
