"""Confirmation: the violations and a sample of passing schedules replayed on another runtime
(DuckDB); a trace that differs between the runtimes is a runtime bug, unless the schedule gives
another trace when run again on the runtime searched: then the report says the scenario is not
deterministic. docs/decisions.md says the rest ("Confirmation", "Confirmation on the workers").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.runtime.factory import resolve_runtime
from yieldstar_sim.simulation.determinism import not_deterministic, twice
from yieldstar_sim.simulation.explorer.shards import Replay

if TYPE_CHECKING:
    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.explorer.report import ExplorationReport
    from yieldstar_sim.simulation.explorer.shards import Runner
    from yieldstar_sim.simulation.explorer.strategy import Tally
    from yieldstar_sim.simulation.scenario import Scenario

#: How many passing schedules, evenly spaced, are replayed beside the violations.
SAMPLES = 3


def confirm_on(
    scenario: Scenario,
    report: ExplorationReport,
    tally: Tally,
    runner: Runner,
    *,
    against: RuntimeChoice | None,
) -> None:
    """Replay the report's violations and a sample of the tally's passing schedules on
    ``against`` (None when it is the runtime searched, ``report.runtime``), and file what that
    showed into the report: a mismatch for each trace that differs. Without ``against``, the
    first schedule runs twice on the runtime searched (which says only whether the scenario is
    deterministic)."""
    confirm, runtime, runtime_name = against, runner.runtime, report.runtime
    violations = report.violations
    confirm_name = None if confirm is None else resolve_runtime(confirm)[0]
    if confirm is None or confirm_name == runtime_name:
        # A schedule that did not finish (a spinning body, a budget) says nothing about
        # determinism, and run again without the explorer's limit it would never end.
        finished = [outcome for outcome in tally.outcomes if outcome.incomplete is None]
        if finished:
            replay = Replay(runtime, outcome=finished[0])
            once = twice(lambda: replay.run(scenario, runner.timeout))
            report.nondeterminism += [once] if once is not None else []
        if confirm is None and scenario.runtime is not None:
            report.confirmations.append(
                f"not confirmed on another runtime: the scenario runs on its own "
                f"({resolve_runtime(scenario.runtime)[0]}), which differs from the reference "
                "on purpose (Scenario(confirm_runtime=...) names one to confirm on)"
            )
        return
    passing = [outcome for outcome in tally.outcomes if outcome.verdict == "ok"]
    sampled = passing[:: max(1, len(passing) // SAMPLES)][:SAMPLES]
    replays = [Replay(on, artifact=v.artifact) for v in violations for on in (confirm, runtime)]
    replays += [Replay(on, outcome=o) for o in sampled for on in (runtime, runtime, confirm)]
    digests = runner.digests(replays)
    mismatches: list[str] = []
    flaky: str | None = None
    for number, found in enumerate(violations):
        other, again = digests[2 * number : 2 * number + 2]
        if again != found.artifact.trace_digest:
            replay = Replay(runtime, artifact=found.artifact)
            flaky = flaky or _again(scenario, replay, again, found.artifact.trace_digest, runner)
        elif other != found.artifact.trace_digest:
            mismatches.append(
                f"the violation of {found.invariant} replays differently on {confirm_name}"
            )
    triples = digests[2 * len(violations) :]
    for number, outcome in enumerate(sampled):
        mine, again, other = triples[3 * number : 3 * number + 3]
        if again != mine:
            flaky = flaky or _again(scenario, Replay(runtime, outcome=outcome), mine, again, runner)
        elif other != mine:
            faults = ", ".join(f.describe() for f in outcome.faults) or "no faults"
            mismatches.append(
                f"schedule #{outcome.index} ({faults}) gives another trace on {confirm_name} "
                f"than on {runtime_name}"
            )
    if flaky is not None:
        report.confirmations.append(
            f"not confirmed on {confirm_name}: the scenario is not deterministic"
        )
        report.nondeterminism.append(flaky)
        return
    report.runtime_mismatches += mismatches
    report.confirmations.append(
        f"confirmed on {confirm_name}: {len(violations)} violation(s) and {len(sampled)} "
        f"passing schedule(s) replayed, {len(mismatches)} mismatch(es)"
    )


def _again(
    scenario: Scenario, replay: Replay, first: str | None, second: str | None, runner: Runner
) -> str:
    """The sentence for ``replay``, a schedule that gave two traces on the runtime searched:
    its first difference, from two runs here (under the runner's wall-clock limit) that keep
    their traces."""
    said = twice(lambda: replay.run(scenario, runner.timeout))
    return said or not_deterministic(f"the trace's digest ({first} once, {second} again)")
