"""Confirmation: a found violation and a sample of passing schedules replayed on another
runtime (DuckDB); a trace that differs between the runtimes is a runtime bug."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.runtime.factory import resolve_runtime
from yieldstar_sim.simulation.explorer.plans import run_plan

if TYPE_CHECKING:
    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.explorer.exhaustive import ExhaustiveSearch
    from yieldstar_sim.simulation.explorer.report import ExplorationReport
    from yieldstar_sim.simulation.explorer.search import Search
    from yieldstar_sim.simulation.scenario import Scenario


def confirm_on(
    scenario: Scenario,
    report: ExplorationReport,
    search: Search | ExhaustiveSearch,
    *,
    against: RuntimeChoice,
    samples: int,
) -> None:
    """Replay the report's violations and a sample of its passing schedules on ``against``;
    record a mismatch for each trace that differs, and one sentence of what was confirmed."""
    confirm, runtime = against, search.runner.runtime
    confirm_name = resolve_runtime(confirm)[0]
    if confirm_name == report.runtime:
        return
    from yieldstar_sim.simulation.artifact import replay

    for found in report.violations:
        artifact = found.artifact
        again = replay(artifact, runtime=confirm, scenario=scenario, check_trace=False)
        if again.trace_digest() != artifact.trace_digest:
            report.runtime_mismatches.append(
                f"the violation of {found.invariant} replays differently on {confirm_name}"
            )
        again.runtime.close()
    passing = [
        (plan, outcome)
        for plan, outcome in zip(search.plans, search.outcomes, strict=True)
        if outcome.ok
    ]
    step = max(1, len(passing) // max(samples, 1))
    checked = 0
    for plan, _ in passing[::step][:samples]:
        mine = run_plan(scenario, plan, runtime, digest=True)
        other = run_plan(scenario, plan, confirm, digest=True)
        checked += 1
        if other.digest != mine.digest:
            faults = ", ".join(f.describe() for f in plan.faults) or "no faults"
            report.runtime_mismatches.append(
                f"schedule #{plan.index} ({faults}) gives another trace on {confirm_name} than "
                f"on {report.runtime}"
            )
    report.confirmations.append(
        f"confirmed on {confirm_name}: {len(report.violations)} violation(s) and {checked} passing "
        f"schedule(s) replayed, {len(report.runtime_mismatches)} mismatch(es)"
    )
