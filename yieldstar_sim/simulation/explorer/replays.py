"""A confirmation run, as it runs here or crosses to another process: an artifact replayed, or a
schedule run, on a runtime, answered with its trace's digest (``confirm`` asks for them; the
``Runner`` runs them)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from yieldstar_sim.runtime.factory import BUNDLED, resolve_runtime

if TYPE_CHECKING:
    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.artifact import ReplayArtifact
    from yieldstar_sim.simulation.explorer.runs import Outcome
    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.scenario import Scenario


@dataclass(frozen=True)
class Replay:
    """One confirmation run: an artifact replayed, or a search's run again, on ``runtime``;
    its answer is the trace's digest."""

    runtime: RuntimeChoice
    artifact: ReplayArtifact | None = None
    outcome: Outcome | None = None

    def digest(self, scenario: Scenario) -> str | None:
        """Run it on ``scenario`` and return the trace's digest: None, which is no trace's,
        when its schedule does not fit the run (a move for an actor that waits at no point
        there). A schedule is made on one runtime; another may take another path, on which a
        move the first path had (a worker's call to the outside world, where only it goes)
        never comes: that schedule replays differently there, which is what a confirmation
        reports, not an error of the search."""
        from yieldstar_sim.simulation.artifact import ArtifactError
        from yieldstar_sim.simulation.execution import ScheduleMismatch

        try:
            again = self.run(scenario)
        except (ScheduleMismatch, ArtifactError) as error:
            # ys.replay says a mismatch as an ArtifactError caused by it.
            if isinstance(error, ScheduleMismatch) or isinstance(error.__cause__, ScheduleMismatch):
                return None
            raise
        try:
            return again.trace_digest()
        finally:
            again.runtime.close()

    def run(self, scenario: Scenario, timeout: float | None = None) -> SimulationRun:
        """Run it on ``scenario`` (its runtime left open)."""
        from yieldstar_sim.simulation.run import replay, simulate

        if self.artifact is not None:
            return replay(
                self.artifact, runtime=self.runtime, scenario=scenario, check_trace=False,
                timeout=timeout,
            )  # fmt: skip
        outcome = self.outcome
        assert outcome is not None
        return simulate(
            scenario, outcome.seed, runtime=self.runtime, schedule=outcome.schedule,
            scenario_faults=False, check_faults=False, timeout=timeout,
        )  # fmt: skip

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


def shipped(choice: RuntimeChoice) -> RuntimeChoice | None:
    """``choice`` as another process opens it (by name), or None when it cannot: a factory
    object whose name does not import back."""
    label = resolve_runtime(choice)[0]
    return label if label in BUNDLED or ":" in label else None
