"""Confirmation: a found violation and a sample of passing schedules replayed on another
runtime (DuckDB); a trace that differs between the runtimes is a runtime bug.

The replays are independent runs, so with ``jobs`` > 1 they go to the search's worker
processes (each keeps its own pool of DuckDB databases), the longest first; the report is
written from their answers in the same order as in one process, so it is the same."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from yieldstar_sim.runtime.factory import BUNDLED, resolve_runtime
from yieldstar_sim.simulation.explorer.plans import run_plan

if TYPE_CHECKING:
    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.artifact import ReplayArtifact
    from yieldstar_sim.simulation.explorer.exhaustive import ExhaustiveSearch
    from yieldstar_sim.simulation.explorer.plans import Plan
    from yieldstar_sim.simulation.explorer.report import ExplorationReport
    from yieldstar_sim.simulation.explorer.search import Search
    from yieldstar_sim.simulation.scenario import Scenario


@dataclass(frozen=True)
class Replay:
    """One confirmation run: an artifact replayed, or a plan run, on ``runtime``; its answer
    is the trace's digest."""

    runtime: RuntimeChoice
    artifact: ReplayArtifact | None = None
    plan: Plan | None = None

    def digest(self, scenario: Scenario) -> str | None:
        """Run it on ``scenario`` and return the trace's digest."""
        if self.artifact is not None:
            from yieldstar_sim.simulation.run import replay

            again = replay(
                self.artifact, runtime=self.runtime, scenario=scenario, check_trace=False
            )
            try:
                return again.trace_digest()
            finally:
                again.runtime.close()
        assert self.plan is not None
        return run_plan(scenario, self.plan, self.runtime, digest=True).digest

    def crossing(self) -> Replay | None:
        """This replay as it crosses to another process: its runtime by name and its artifact
        without the factory object of the run it came from (unused: the runtime is given), or
        None when the runtime cannot be named there."""
        runtime = shipped(self.runtime)
        if runtime is None:
            return None
        artifact = self.artifact
        return replace(
            self,
            runtime=runtime,
            artifact=None if artifact is None else replace(artifact, runtime_choice=None),
        )


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
    passing = [
        (plan, outcome)
        for plan, outcome in zip(search.plans, search.outcomes, strict=True)
        if outcome.ok
    ]
    step = max(1, len(passing) // max(samples, 1))
    sampled = [plan for plan, _ in passing[::step][:samples]]
    replays = [Replay(confirm, artifact=found.artifact) for found in report.violations]
    for plan in sampled:
        replays += [Replay(runtime, plan=plan), Replay(confirm, plan=plan)]
    digests = search.runner.digests(replays)
    for found, digest in zip(report.violations, digests, strict=False):
        if digest != found.artifact.trace_digest:
            report.runtime_mismatches.append(
                f"the violation of {found.invariant} replays differently on {confirm_name}"
            )
    pairs = digests[len(report.violations) :]
    for number, plan in enumerate(sampled):
        mine, other = pairs[2 * number], pairs[2 * number + 1]
        if other != mine:
            faults = ", ".join(f.describe() for f in plan.faults) or "no faults"
            report.runtime_mismatches.append(
                f"schedule #{plan.index} ({faults}) gives another trace on {confirm_name} than "
                f"on {report.runtime}"
            )
    report.confirmations.append(
        f"confirmed on {confirm_name}: {len(report.violations)} violation(s) and {len(sampled)} "
        f"passing schedule(s) replayed, {len(report.runtime_mismatches)} mismatch(es)"
    )


def shipped(choice: RuntimeChoice) -> RuntimeChoice | None:
    """``choice`` as another process opens it (by name), or None when it cannot: a factory
    object whose name does not import back."""
    label = resolve_runtime(choice)[0]
    return label if label in BUNDLED or ":" in label else None
