"""Replay artifacts: a JSON file that reproduces a run exactly.

It holds the scenario reference, the seed, the schedule of choices, every fault that fired
(placed at its choice point and labelled), a fingerprint of the workflow code, and a digest of
the trace it produced. Replaying it refuses clearly when the code has changed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.faults import Fault
from yieldstar_sim.simulation.scenario import ScenarioError, load_scenario

if TYPE_CHECKING:
    from yieldstar_sim.simulation.run import SimulationRun
    from yieldstar_sim.simulation.scenario import Scenario

FORMAT = "yieldstar-sim/replay"
VERSION = 1


class ArtifactError(Exception):
    """An artifact that cannot be read or replayed; the message names the problem."""


@dataclass(frozen=True)
class ReplayArtifact:
    """Everything needed to replay one run."""

    scenario: str
    ref: str | None
    seed: int
    runtime: str
    schedule: tuple[str, ...]
    faults: tuple[Fault, ...]
    fingerprint: str
    trace_digest: str
    violations: tuple[dict[str, str], ...] = field(default=())

    @classmethod
    def from_run(cls, run: SimulationRun) -> ReplayArtifact:
        """The artifact of a finished run."""
        return cls(
            scenario=run.scenario.name,
            ref=run.scenario.ref,
            seed=run.seed,
            runtime=run.runtime_kind,
            schedule=tuple(run.schedule),
            faults=tuple(run.faults),
            fingerprint=run.scenario.fingerprint(),
            trace_digest=run.trace_digest(),
            violations=tuple(
                {"invariant": v.invariant, "message": v.message} for v in run.violations
            ),
        )

    def to_json(self) -> dict[str, Any]:
        """The artifact as plain data."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "scenario": {"name": self.scenario, "ref": self.ref},
            "seed": self.seed,
            "runtime": self.runtime,
            "schedule": list(self.schedule),
            "faults": [fault.to_json() for fault in self.faults],
            "fingerprint": self.fingerprint,
            "trace_digest": self.trace_digest,
            "violations": list(self.violations),
        }

    def save(self, path: str | Path) -> Path:
        """Write the artifact as JSON; returns the path."""
        target = Path(path)
        target.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")
        return target

    @classmethod
    def load(cls, path: str | Path) -> ReplayArtifact:
        """Read an artifact, refusing a missing, corrupt or foreign file with a clear message."""
        source = Path(path)
        try:
            text = source.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ArtifactError(f"no artifact file {str(path)!r}") from None
        except (OSError, UnicodeDecodeError) as error:
            raise ArtifactError(f"cannot read the artifact {str(path)!r}: {error}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ArtifactError(
                f"{str(path)!r} is not a replay artifact: corrupt JSON ({error})"
            ) from None
        return cls.from_json(data, where=str(path))

    @classmethod
    def from_json(cls, data: Any, *, where: str = "the artifact") -> ReplayArtifact:
        """Inverse of ``to_json``."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ArtifactError(f"{where!r} is not a yieldstar-sim replay artifact")
        if data.get("version") != VERSION:
            raise ArtifactError(
                f"{where!r} is a version {data.get('version')!r} artifact; this yieldstar-sim "
                f"reads version {VERSION}"
            )
        try:
            scenario = data["scenario"]
            schedule = data["schedule"]
            if not isinstance(schedule, list) or not all(isinstance(s, str) for s in schedule):
                raise TypeError("the schedule must be a list of worker names")
            seed = data["seed"]
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise TypeError("the seed must be a whole number")
            return cls(
                scenario=str(scenario["name"]),
                ref=scenario.get("ref"),
                seed=seed,
                runtime=str(data.get("runtime", "memory")),
                schedule=tuple(schedule),
                faults=tuple(Fault.from_json(fault) for fault in data["faults"]),
                fingerprint=str(data["fingerprint"]),
                trace_digest=str(data.get("trace_digest", "")),
                violations=tuple(data.get("violations", ())),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            detail = f"missing {error}" if isinstance(error, KeyError) else str(error)
            raise ArtifactError(f"{where!r} is a damaged replay artifact: {detail}") from None

    def scenario_object(self) -> Scenario:
        """Load the scenario the artifact names."""
        if not self.ref:
            raise ArtifactError(
                f"the artifact names scenario {self.scenario!r} but not where it came from; "
                "pass the scenario to replay() yourself"
            )
        try:
            return load_scenario(self.ref)
        except ScenarioError as error:
            raise ArtifactError(f"cannot load the artifact's scenario: {error}") from None


def replay(
    artifact: ReplayArtifact | str | Path,
    *,
    runtime: str | None = None,
    scenario: Scenario | None = None,
    check_trace: bool = True,
    timeout: float | None = 60.0,
) -> SimulationRun:
    """Replay an artifact (or the file at a path) and return the run (``timeout``: its
    wall-clock limit, as for ``simulate``).

    Refuses when the scenario's code fingerprint differs from the artifact's; with
    ``check_trace`` it also refuses when the replay does not reproduce the recorded trace.
    """
    from yieldstar_sim.simulation.run import simulate

    loaded = artifact if isinstance(artifact, ReplayArtifact) else ReplayArtifact.load(artifact)
    target = scenario if scenario is not None else loaded.scenario_object()
    fingerprint = target.fingerprint()
    if fingerprint != loaded.fingerprint:
        raise ArtifactError(
            f"the code of scenario {target.name!r} changed since the artifact was made "
            f"(fingerprint {loaded.fingerprint} then, {fingerprint} now); the schedule no longer "
            "describes it: explore again for a new artifact"
        )
    try:
        run = simulate(
            target,
            loaded.seed,
            runtime=runtime or loaded.runtime,
            schedule=loaded.schedule,
            check_faults=False,  # a fault that no longer fires shows as a different trace
            timeout=timeout,
            faults=loaded.faults,
            scenario_faults=False,
        )
    except Exception as error:
        raise ArtifactError(
            f"the artifact does not replay: {type(error).__name__}: {error}"
        ) from error
    if check_trace and loaded.trace_digest and run.trace_digest() != loaded.trace_digest:
        raise ArtifactError(
            "the replay took another path than the recorded run (trace digest "
            f"{run.trace_digest()} instead of {loaded.trace_digest})"
        )
    return run
