"""Replay artifacts: a JSON file that reproduces a run exactly.

It holds the scenario reference, the seed, the schedule of choices, every fault that fired
(placed at its choice point and labelled), a fingerprint of the workflow code, a digest of the
trace it produced and, for a run of at most ``MAX_TRACE_EVENTS`` events, the trace itself: a
replay against edited code (``regression.py``) says where its run leaves the recorded one.

An artifact is data; a scenario file is code. An artifact read from a file runs only what the
user chose: a bundled scenario, a file inside the artifact's own folder (not by an absolute path,
not by ``..``, not through a symlink that leads out of it) whose bytes still hash to the SHA-256
the artifact recorded, or the scenario the user passes instead. Anything else is refused before
anything is imported, so an artifact someone sends you never runs code elsewhere on the machine,
however its hash was chosen. A reference is resolved against the artifact's own folder, so an
artifact and its scenario file replay from anywhere as long as they move together.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from yieldstar_sim.core.filenames import file_stem
from yieldstar_sim.core.files import write_whole
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
    folder: str | None = field(default=None, compare=False, repr=False)
    """The folder an artifact read from a file (or from JSON) came from: the one place a
    scenario file it names may be. None for an artifact made in this process from a run, whose
    scenario file was loaded here already."""
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
        if ref is not None and not _bundled(ref):
            file = self._file()
            ref = str(file)
            if folder is not None:
                try:
                    ref = os.path.relpath(file.resolve(), Path(folder).resolve())
                except ValueError:  # another drive (Windows): keep the absolute path
                    ref = str(file.resolve())
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
        write_whole(target, json.dumps(data, indent=2) + "\n")
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
        """Inverse of ``to_json``. A scenario file it names is looked for only inside ``folder``
        (the artifact's own; by default the current directory), when it is replayed."""
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
                folder=str(folder if folder is not None else "."),
            )
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as error:
            detail = f"missing {error}" if isinstance(error, KeyError) else str(error)
            raise ArtifactError(f"{where!r} is a damaged replay artifact: {detail}") from None

    def replay_command(self, path: str | Path) -> str:
        """The command that replays this artifact saved at ``path``: with ``--scenario`` when
        its scenario file is not in the artifact's folder (where replaying alone looks)."""
        command = f"yieldstar-sim replay {shlex.quote(str(path))}"
        if not self.ref or _bundled(self.ref):
            return command
        file = self._file().resolve()
        if file.is_relative_to(Path(path).parent.resolve()):
            return command
        return f"{command} --scenario {shlex.quote(str(file))}"

    def scenario_object(self) -> Scenario:
        """Load the scenario the artifact names: a bundled one by name; a file only when it lies
        inside the artifact's folder and its bytes hash to the SHA-256 the artifact recorded
        (otherwise nothing is imported)."""
        if not self.ref:
            raise ArtifactError(
                f"the artifact names scenario {self.scenario!r} but not where it came from; "
                f"{_HOW_TO_PROCEED}"
            )
        if _bundled(self.ref):
            where: str | Path = self.ref
        else:
            where = self._inside_folder()
            self._check_file(where)
        try:
            return load_scenario(where, sha256=self.sha256)
        except ScenarioError as error:
            raise ArtifactError(f"cannot load the artifact's scenario: {error}") from None

    def _file(self) -> Path:
        """The scenario file as the artifact names it, from where this process runs."""
        ref = Path(str(self.ref))
        return ref if self.folder is None else Path(self.folder) / ref

    def _inside_folder(self) -> Path:
        """The scenario file, resolved: refused unless it lies inside the artifact's folder
        (an artifact made here from a run names the file that run loaded, wherever it is)."""
        file = self._file()
        if self.folder is None:
            return file
        recorded = Path(str(self.ref))
        try:
            resolved, root = file.resolve(), Path(self.folder).resolve()
        except (OSError, RuntimeError, ValueError) as error:  # a symlink loop, a NUL byte
            raise ArtifactError(
                f"cannot read the artifact's scenario file {str(file)!r}: {error}; "
                f"{_HOW_TO_PROCEED}"
            ) from None
        if recorded.is_absolute():
            how = "by an absolute path"
        elif resolved.is_relative_to(root):
            return resolved  # the bytes read and hashed are those of the file it leads to
        elif ".." in recorded.parts:
            how = f"outside the artifact's folder {self.folder!r}"
        else:
            how = f"through a symlink that leads out of the artifact's folder {self.folder!r}"
        raise ArtifactError(
            f"the artifact names the scenario file {os.path.normpath(file)!r} {how}, so it is "
            "not run (an "
            f"artifact runs a bundled scenario or a file in its own folder only); "
            f"{_HOW_TO_PROCEED}"
        )

    def _check_file(self, path: Path) -> None:
        """Refuse a scenario file the artifact cannot vouch for, before anything imports it."""
        shown = str(self._file())
        if self.sha256 is None:
            raise ArtifactError(
                f"the artifact names the scenario file {shown!r} but records no SHA-256 of "
                f"it, so it is not run; {_HOW_TO_PROCEED}"
            )
        try:
            if not path.is_file():  # not a device or a pipe: those could be read forever
                raise FileNotFoundError(2, "no such file")
            found = source_digest(path.read_bytes())
        except OSError as error:
            raise ArtifactError(
                f"cannot read the artifact's scenario file {shown!r}: "
                f"{error.strerror or error}; {_HOW_TO_PROCEED}"
            ) from None
        if found != self.sha256:
            raise ArtifactError(
                f"the scenario file {shown!r} changed since the artifact was made "
                f"({self.sha256} recorded, {found} now), so it is not run; "
                f"{_HOW_TO_PROCEED}"
            )


def violation_file(folder: str | Path, scenario: str, number: int) -> Path:
    """Where an exploration saves the artifact of its ``number``-th violation of ``scenario``:
    ``NAME-violation-N.replay.json`` in ``folder``, NAME a safe stem of the scenario's name."""
    return Path(folder) / f"{file_stem(scenario)}-violation-{number}.replay.json"


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
