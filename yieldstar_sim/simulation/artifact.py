"""Replay artifacts: a JSON file that reproduces a run exactly.

It holds the scenario reference, the seed, the schedule of choices, every fault that fired
(placed at its choice point and labelled), a fingerprint of the workflow code, a digest of the
trace it produced and, for a run of at most ``MAX_TRACE_EVENTS`` events, the trace itself: a
replay against edited code (``regression.py``) says where its run leaves the recorded one.

An artifact is data; a scenario file is code. An artifact that names a scenario file also records
the SHA-256 of the file's bytes, and replaying it imports the file only when its bytes still hash
to that value: an artifact someone sends you never runs code you did not choose. A relative
reference is resolved against the artifact's own folder, so an artifact replays from anywhere.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from yieldstar_sim.simulation.faults import Fault, FaultKind
from yieldstar_sim.simulation.moves import Move
from yieldstar_sim.simulation.scenario import ScenarioError
from yieldstar_sim.simulation.scenario_files import bundled_scenarios, load_scenario, source_digest
from yieldstar_sim.simulation.trace import Trace, TraceEvent

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.simulation.invariants.protocol import Violation
    from yieldstar_sim.simulation.scenario import Scenario

FORMAT = "yieldstar-sim/replay"
VERSION = 2
"""Version 2 keeps the schedule as moves, each with its fault (version 1: the actors alone,
beside faults placed by choice-point index; still read, folded into moves)."""
MAX_ARTIFACT_BYTES = 16 * 1024 * 1024
"""The largest artifact file read: a real one holds a schedule, a few faults and its trace."""
MAX_TRACE_EVENTS = 5_000
"""The longest trace an artifact keeps (about 2 MB of JSON): a failure the explorer shrank has
tens of events; a run cut after thousands of choice points keeps its digest only."""


class Replayable(Protocol):
    """What an artifact is made from: a finished run (``SimulationRun`` is one)."""

    @property
    def scenario(self) -> Scenario:
        """The scenario that ran."""
        ...

    @property
    def seed(self) -> int:
        """The scheduler's seed."""
        ...

    @property
    def runtime_kind(self) -> str:
        """The runtime's name."""
        ...

    @property
    def schedule(self) -> Sequence[Move]:
        """The move taken at each choice point."""
        ...

    @property
    def faults(self) -> Sequence[Fault]:
        """Every fault that fired, placed at its choice point."""
        ...

    @property
    def violations(self) -> Sequence[Violation]:
        """The invariants the run broke."""
        ...

    @property
    def runtime_choice(self) -> Any:
        """What the run was asked to run on (a name or a factory)."""
        ...

    @property
    def trace(self) -> Trace:
        """Every event of the run."""
        ...

    def trace_digest(self) -> str:
        """A hash of the run's trace."""
        ...


class ArtifactError(Exception):
    """An artifact that cannot be read or replayed; the message names the problem."""


@dataclass(frozen=True)
class ReplayArtifact:
    """Everything needed to replay one run."""

    scenario: str
    ref: str | None
    seed: int
    runtime: str
    schedule: tuple[Move, ...]
    faults: tuple[Fault, ...]
    """The faults that struck, placed by choice-point index (each is in its move too): what
    the artifact shows, not what its replay reads."""
    fingerprint: str
    trace_digest: str
    violations: tuple[dict[str, str], ...] = field(default=())
    sha256: str | None = None
    """The SHA-256 of the scenario file's bytes (``None`` for a bundled scenario)."""
    runtime_choice: Any = field(default=None, compare=False, repr=False)
    """The runtime (or factory) of the run this process made it from; never saved, so an
    artifact read from a file names its runtime but cannot bring its code along."""
    trace: Trace | None = field(default=None, compare=False, repr=False)
    """The recorded run's trace (None: longer than ``MAX_TRACE_EVENTS``, or an artifact saved
    before artifacts kept it), which a replay against edited code is compared with."""

    @classmethod
    def from_run(cls, run: Replayable) -> ReplayArtifact:
        """The artifact of a finished run."""
        ref = run.scenario.ref
        if ref is not None and not _bundled(ref):
            ref = str(Path(ref).resolve())
        return cls(
            scenario=run.scenario.name,
            ref=ref,
            seed=run.seed,
            runtime=run.runtime_kind,
            schedule=tuple(run.schedule),
            faults=tuple(run.faults),
            fingerprint=run.scenario.fingerprint(),
            trace_digest=run.trace_digest(),
            violations=tuple(
                {"invariant": v.invariant, "message": v.message} for v in run.violations
            ),
            sha256=run.scenario.source_sha256,
            runtime_choice=run.runtime_choice,
            trace=run.trace if len(run.trace) <= MAX_TRACE_EVENTS else None,
        )

    def to_json(self, *, folder: str | Path | None = None) -> dict[str, Any]:
        """The artifact as plain data; with ``folder``, a scenario file is named relative to it
        (where the artifact is saved), so the two can move together."""
        ref = self.ref
        if ref is not None and folder is not None and not _bundled(ref):
            try:
                ref = os.path.relpath(Path(ref).resolve(), Path(folder).resolve())
            except ValueError:  # another drive (Windows): keep the absolute path
                ref = str(Path(ref).resolve())
        scenario: dict[str, Any] = {"name": self.scenario, "ref": ref}
        if self.sha256 is not None:
            scenario["sha256"] = self.sha256
        data = {
            "format": FORMAT,
            "version": VERSION,
            "scenario": scenario,
            "seed": self.seed,
            "runtime": self.runtime,
            "schedule": [move.to_json() for move in self.schedule],
            "faults": [fault.to_json() for fault in self.faults],
            "fingerprint": self.fingerprint,
            "trace_digest": self.trace_digest,
            "violations": list(self.violations),
        }
        if self.trace is not None:
            data["trace"] = [event.to_json() for event in self.trace]
        return data

    def save(self, path: str | Path) -> Path:
        """Write the artifact as JSON; returns the path."""
        target = Path(path)
        data = self.to_json(folder=target.parent)
        target.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        return target

    @classmethod
    def load(cls, path: str | Path) -> ReplayArtifact:
        """Read an artifact, refusing a missing, corrupt or foreign file with a clear message."""
        source = Path(path)
        try:
            with source.open("rb") as file:
                raw = file.read(MAX_ARTIFACT_BYTES + 1)
        except FileNotFoundError:
            raise ArtifactError(f"no artifact file {str(path)!r}") from None
        except OSError as error:
            raise ArtifactError(
                f"cannot read the artifact {str(path)!r}: {error.strerror or error}"
            ) from None
        if len(raw) > MAX_ARTIFACT_BYTES:
            raise ArtifactError(
                f"{str(path)!r} is larger than {MAX_ARTIFACT_BYTES // (1024 * 1024)} MB, the "
                "limit for a replay artifact (a real one is a few kilobytes); not read"
            )
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise ArtifactError(
                f"{str(path)!r} is not a replay artifact: not UTF-8 text ({error.reason})"
            ) from None
        except json.JSONDecodeError as error:
            raise ArtifactError(
                f"{str(path)!r} is not a replay artifact: corrupt JSON ({error})"
            ) from None
        except RecursionError:
            raise ArtifactError(
                f"{str(path)!r} is not a replay artifact: its JSON is nested too deeply to read"
            ) from None
        return cls.from_json(data, where=str(path), folder=source.parent)

    @classmethod
    def from_json(
        cls, data: Any, *, where: str = "the artifact", folder: str | Path | None = None
    ) -> ReplayArtifact:
        """Inverse of ``to_json``; a relative scenario file is resolved against ``folder`` (the
        artifact's own), or else the current directory."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ArtifactError(f"{where!r} is not a yieldstar-sim replay artifact")
        if data.get("version") not in (1, VERSION):
            raise ArtifactError(
                f"{where!r} is a version {data.get('version')!r} artifact; this yieldstar-sim "
                f"reads version {VERSION}"
            )
        try:
            scenario = data["scenario"]
            schedule = data["schedule"]
            if not isinstance(schedule, list):
                raise TypeError("the schedule must be a list of moves")
            moves = [Move.from_json(move) for move in schedule]
            faults = tuple(Fault.from_json(fault) for fault in data["faults"])
            if data.get("version") == 1:
                moves = _folded(moves, faults)
            seed = data["seed"]
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise TypeError("the seed must be a whole number")
            ref = scenario.get("ref")
            if ref is not None and not isinstance(ref, str):
                raise TypeError("the scenario ref must be a string")
            sha256 = scenario.get("sha256")
            if sha256 is not None and not isinstance(sha256, str):
                raise TypeError("the scenario sha256 must be a string")
            if ref and folder is not None and not _bundled(ref):
                ref = str(Path(folder) / ref)  # an absolute ref stays as it is
            events = data.get("trace")
            if events is not None and not isinstance(events, list):
                raise TypeError("the trace must be a list of events")
            trace = None if events is None else Trace(list(map(TraceEvent.from_json, events)))
            return cls(
                scenario=str(scenario["name"]),
                ref=ref,
                seed=seed,
                runtime=str(data.get("runtime", "memory")),
                schedule=tuple(moves),
                faults=faults,
                fingerprint=str(data["fingerprint"]),
                trace_digest=str(data.get("trace_digest", "")),
                violations=tuple(data.get("violations", ())),
                sha256=sha256,
                trace=trace,
            )
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as error:
            detail = f"missing {error}" if isinstance(error, KeyError) else str(error)
            raise ArtifactError(f"{where!r} is a damaged replay artifact: {detail}") from None

    def scenario_object(self) -> Scenario:
        """Load the scenario the artifact names: a bundled one by name, a file only when its
        bytes hash to the SHA-256 the artifact recorded (otherwise nothing is imported)."""
        if not self.ref:
            raise ArtifactError(
                f"the artifact names scenario {self.scenario!r} but not where it came from; "
                f"{_HOW_TO_PROCEED}"
            )
        if not _bundled(self.ref):
            self._check_file()
        try:
            return load_scenario(self.ref, sha256=self.sha256)
        except ScenarioError as error:
            raise ArtifactError(f"cannot load the artifact's scenario: {error}") from None

    def _check_file(self) -> None:
        """Refuse a scenario file the artifact cannot vouch for, before anything imports it."""
        if self.sha256 is None:
            raise ArtifactError(
                f"the artifact names the scenario file {self.ref!r} but records no SHA-256 of "
                f"it, so it is not run; {_HOW_TO_PROCEED}"
            )
        path = Path(str(self.ref))
        try:
            if not path.is_file():  # not a device or a pipe: those could be read forever
                raise FileNotFoundError(2, "no such file")
            found = source_digest(path.read_bytes())
        except OSError as error:
            raise ArtifactError(
                f"cannot read the artifact's scenario file {self.ref!r}: "
                f"{error.strerror or error}; {_HOW_TO_PROCEED}"
            ) from None
        if found != self.sha256:
            raise ArtifactError(
                f"the scenario file {self.ref!r} changed since the artifact was made "
                f"({self.sha256} recorded, {found} now), so it is not run; "
                f"{_HOW_TO_PROCEED}"
            )


_HOW_TO_PROCEED = (
    "if you trust a scenario file, replay with it: `yieldstar-sim replay ARTIFACT --scenario "
    "FILE`, or ys.replay(artifact, scenario=ys.load_scenario(FILE)) in Python (code edited "
    "since, a fix say, runs the recorded schedule and says whether the violation is gone)"
)


def _bundled(ref: str) -> bool:
    """Whether ``ref`` names a bundled scenario (package code), not a file."""
    return ref in bundled_scenarios()


def _folded(moves: list[Move], faults: tuple[Fault, ...]) -> list[Move]:
    """A version-1 schedule (the actors alone) with its faults, each placed by choice-point
    index, folded into the moves at those points."""
    for fault in faults:
        if fault.at is None or not 0 <= fault.at < len(moves):
            raise ValueError(
                f"the fault {fault.describe()!r} is not placed at a move of the schedule"
            )
        move = moves[fault.at]
        moves[fault.at] = Move(move.actor, FaultKind(fault.kind), fault.seconds, move.choice)
    return moves
