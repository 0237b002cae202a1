"""Confirmation: a found violation and a sample of passing schedules replayed on another
runtime (DuckDB); a trace that differs between the runtimes is a runtime bug.

The replays are independent runs, so with ``jobs`` > 1 they go to the search's worker
processes (each keeps its own pool of DuckDB databases), the longest first; the report is
written from their answers in the same order as in one process, so it is the same."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from yieldstar_sim.runtime.factory import resolve_runtime
from yieldstar_sim.simulation.explorer.replays import Replay

if TYPE_CHECKING:
    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.explorer.report import FoundViolation
    from yieldstar_sim.simulation.explorer.shards import Runner
    from yieldstar_sim.simulation.explorer.strategy import Tally
    from yieldstar_sim.simulation.scenario import Scenario


@dataclass(frozen=True, slots=True)
class Confirmation:
    """What replaying on another runtime showed: a sentence per trace that differed, and one
    sentence of what was confirmed."""

    mismatches: list[str]
    sentence: str


def confirm_on(
    scenario: Scenario,
    runtime_name: str,
    violations: list[FoundViolation],
    tally: Tally,
    runner: Runner,
    *,
    against: RuntimeChoice,
    samples: int,
) -> Confirmation | None:
    """Replay the violations and a sample of the tally's passing schedules on ``against``
    (None when it is the runtime searched, ``runtime_name``): a mismatch for each trace that
    differs."""
    confirm, runtime = against, runner.runtime
    confirm_name = resolve_runtime(confirm)[0]
    if confirm_name == runtime_name:
        return None
    passing = [
        (plan, outcome)
        for plan, outcome in zip(tally.plans, tally.outcomes, strict=True)
        if outcome.ok
    ]
    step = max(1, len(passing) // max(samples, 1))
    sampled = [plan for plan, _ in passing[::step][:samples]]
    replays = [Replay(confirm, artifact=found.artifact) for found in violations]
    for plan in sampled:
        replays += [Replay(runtime, plan=plan), Replay(confirm, plan=plan)]
    digests = runner.digests(replays)
    mismatches = []
    for found, digest in zip(violations, digests, strict=False):
        if digest != found.artifact.trace_digest:
            mismatches.append(
                f"the violation of {found.invariant} replays differently on {confirm_name}"
            )
    pairs = digests[len(violations) :]
    for number, plan in enumerate(sampled):
        mine, other = pairs[2 * number], pairs[2 * number + 1]
        if other != mine:
            faults = ", ".join(f.describe() for f in plan.faults) or "no faults"
            mismatches.append(
                f"schedule #{plan.index} ({faults}) gives another trace on {confirm_name} than "
                f"on {runtime_name}"
            )
    return Confirmation(
        mismatches,
        f"confirmed on {confirm_name}: {len(violations)} violation(s) and {len(sampled)} "
        f"passing schedule(s) replayed, {len(mismatches)} mismatch(es)",
    )
