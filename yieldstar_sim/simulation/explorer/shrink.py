"""Shrinking a violation: delta debugging over its faults (kept as descriptions, so removing
one does not move the others), its nearest passing schedule and the first event where they
part. Each candidate is the violating run's moves, bare, with a subset of its faults: followed
while they fit, the seed's moves after (``simulate(..., strict_schedule=False)``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.simulation.explorer.report import FoundViolation
from yieldstar_sim.simulation.faults import by_description, trace_points
from yieldstar_sim.simulation.moves import Move, plain_move
from yieldstar_sim.simulation.run import simulate

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.explorer.runs import Outcome
    from yieldstar_sim.simulation.faults import Fault
    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.scenario import Scenario


def shrink(
    scenario: Scenario,
    outcome: Outcome,
    runtime: RuntimeChoice,
    invariant: str,
    *,
    timeout: float | None,
) -> FoundViolation:
    """Shrink ``outcome``'s violation of ``invariant`` to a 1-minimal set of described
    faults, and find its nearest passing schedule and the first event where the two part."""

    def run(schedule: Sequence[Move], faults: Sequence[Fault]) -> SimulationRun:
        return simulate(
            scenario, outcome.seed, runtime=runtime, schedule=schedule, faults=faults,
            scenario_faults=False, check_faults=False, strict_schedule=False, timeout=timeout,
        )  # fmt: skip

    def violates(candidate: SimulationRun) -> bool:
        return any(v.invariant == invariant for v in candidate.violations)

    found = run(outcome.schedule, ())
    # Described (worker, call, step, occurrence), not by index: dropping one moves no other.
    points = {index: info for index, (info, _) in trace_points(found.trace).items()}
    faults = [by_description(fault, points) or fault for fault in found.faults]
    bare = [plain_move(move.actor, move.choice) for move in outcome.schedule]

    faults = ddmin(faults, lambda subset: violates(run(bare, subset)))
    shrunk = run(bare, faults)
    shrunk = shrunk if violates(shrunk) else found
    # The search's own message when a run again no longer violates it (an invariant that
    # reads something other than the run: the confirmation says the scenario is not
    # deterministic).
    message = next(
        (v.message for v in shrunk.violations if v.invariant == invariant),
        next(message for name, message in outcome.violations if name == invariant),
    )
    violation = FoundViolation(
        invariant=invariant,
        message=message,
        artifact=shrunk.artifact(),
        faults=[fault.describe() for fault in faults],
        found_at=outcome.index,
    )
    for drop in reversed(range(len(faults))):
        others = faults[:drop] + faults[drop + 1 :]
        passing = run(bare, others)
        if not violates(passing):
            violation.nearest_passing = [fault.describe() for fault in others]
            violation.divergence_at, violation.divergence = first_divergence(shrunk, passing)
            violation.nearest_artifact = passing.artifact()
            break
    return violation


def ddmin(items: list[Fault], fails: Callable[[list[Fault]], bool]) -> list[Fault]:
    """Zeller's delta debugging: a 1-minimal subset of ``items`` that still fails."""
    granularity = 2
    while len(items) >= 2:
        size = max(1, len(items) // granularity)
        chunks = [items[i : i + size] for i in range(0, len(items), size)]
        reduced = False
        for index in range(len(chunks)):
            complement = [f for j, chunk in enumerate(chunks) if j != index for f in chunk]
            if fails(chunks[index]):
                items, granularity, reduced = chunks[index], 2, True
                break
            if fails(complement):
                items, granularity, reduced = complement, max(granularity - 1, 2), True
                break
        if not reduced:
            if granularity >= len(items):
                break
            granularity = min(len(items), granularity * 2)
    return items


def first_divergence(failing: SimulationRun, passing: SimulationRun) -> tuple[int, str]:
    """The first trace event where ``failing`` and ``passing`` differ: its number and a sentence."""
    for mine, theirs in zip(failing.trace, passing.trace, strict=False):
        if mine.facts() != theirs.facts():
            theirs_text = f"t={theirs.t:g} {theirs.worker or '-'} {theirs.text}"
            return mine.seq, (
                f"event #{mine.seq}: the violation has 't={mine.t:g} {mine.worker or '-'} "
                f"{mine.text}', the passing run '{theirs_text}'"
            )
    shorter = min(len(failing.trace), len(passing.trace))
    return shorter, f"event #{shorter}: one trace ends where the other goes on"
