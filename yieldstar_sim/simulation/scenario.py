"""Scenarios: the workflows, triggers, workers, fault plan and invariants of a story.

A scenario file is a Python file that defines ``scenario = ys.Scenario(...)``; its module
docstring tells the story.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import linecache
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yieldstar_sim.authoring import StepDefinition, Workflow

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from yieldstar_sim.simulation.faults import Fault
    from yieldstar_sim.simulation.invariants import Invariant


@dataclass(frozen=True, slots=True)
class Trigger:
    """A direct trigger the scenario makes at virtual time ``at`` (default: the start)."""

    workflow_id: str
    params: object = None
    execution_id: str | None = None
    at: float = 0.0


@dataclass(frozen=True, slots=True)
class Cancel:
    """The scenario requests cancellation of ``execution_id`` at virtual time ``at`` (RFC 009)."""

    execution_id: str
    at: float = 0.0


@dataclass(frozen=True, slots=True)
class Prune:
    """The scenario prunes the terminal execution ``execution_id`` at virtual time ``at``
    (RFC 013); an execution that is not terminal then is left alone, and the trace says so."""

    execution_id: str
    at: float = 0.0


@dataclass(frozen=True, slots=True)
class Deploy:
    """From virtual time ``at`` on, deliveries run these workflow versions (same names)."""

    at: float
    workflows: tuple[Workflow, ...]

    def __init__(self, at: float, workflows: Sequence[Workflow]) -> None:
        object.__setattr__(self, "at", float(at))
        object.__setattr__(self, "workflows", tuple(workflows))


@dataclass
class Scenario:
    """Everything a simulation run needs besides its seed, schedule and extra faults.

    ``workers`` is a count (``w1``, ``w2``, ...) or a list of names. ``faults`` is the
    scenario's own fault plan (the story's crash); ``invariants`` are checked after every run
    beside the built-in ones.
    """

    name: str
    workflows: Sequence[Workflow]
    triggers: Sequence[Trigger]
    invariants: Sequence[Invariant | Callable[..., Any]] = ()
    workers: int | Sequence[str] = 2
    lease_seconds: float = 30.0
    redelivery_delay: float = 5.0
    restart_delay: float = 1.0
    faults: Sequence[Fault] = ()
    steps: Sequence[StepDefinition] = ()
    deploys: Sequence[Deploy] = ()
    cancels: Sequence[Cancel] = ()
    prunes: Sequence[Prune] = ()
    profile: str = "memory"
    """The driver profile (``memory``, ``temporal``, ``restate``): an engine's native rules."""
    description: str = ""
    max_time: float = 3600.0
    max_points: int = 10_000
    ref: str | None = field(default=None, compare=False)
    """Where the scenario was loaded from (a bundled name or a file path), for artifacts."""
    source_sha256: str | None = field(default=None, compare=False)
    """The SHA-256 of the scenario file's bytes as loaded (file references only): a replay
    artifact records it, and replaying imports the file only if its bytes still match."""

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ValueError(f"a scenario needs a name, not {self.name!r}")
        self.workflows = tuple(self.workflows)
        self.triggers = tuple(self.triggers)
        self.invariants = tuple(self.invariants)
        self.faults = tuple(self.faults)
        self.steps = tuple(self.steps)
        self.deploys = tuple(sorted(self.deploys, key=lambda deploy: deploy.at))
        self.cancels = tuple(self.cancels)
        self.prunes = tuple(self.prunes)
        from yieldstar_sim.profiles import driver_profile

        driver_profile(self.profile)  # refuses an unknown profile now, with the known ones
        for workflow in self.workflows:
            if not isinstance(workflow, Workflow):
                raise TypeError(f"scenario {self.name!r}: {workflow!r} is not a @ys.workflow")
        for trigger in self.triggers:
            if not isinstance(trigger, Trigger):
                raise TypeError(f"scenario {self.name!r}: {trigger!r} is not a ys.Trigger")
        if not self.triggers:
            raise ValueError(f"scenario {self.name!r} has no triggers: nothing would run")
        if not self.worker_names:
            raise ValueError(f"scenario {self.name!r} needs at least one worker")
        for what in ("lease_seconds", "redelivery_delay", "restart_delay", "max_time"):
            value = getattr(self, what)
            if (
                not isinstance(value, int | float)
                or value < 0
                or (what == "lease_seconds" and value <= 0)
            ):
                raise ValueError(
                    f"scenario {self.name!r}: {what} must be a positive number, not {value!r}"
                )

    @property
    def worker_names(self) -> list[str]:
        """The workers' names."""
        if isinstance(self.workers, int):
            return [f"w{i}" for i in range(1, self.workers + 1)]
        return [str(name) for name in self.workers]

    @property
    def story(self) -> str:
        """The description's first line."""
        return (self.description.strip().splitlines() or [""])[0]

    def fingerprint(self) -> str:
        """A hash of the code that decides a run: workflows, deployed versions, step
        declarations and invariants. A replay artifact refuses to replay if it changed."""
        linecache.checkcache()  # a file edited since it was last read must be read again
        digest = hashlib.sha256()
        functions: list[tuple[str, Any]] = [(f"workflow {w.name}", w.fn) for w in self.workflows]
        for deploy in self.deploys:
            functions += [(f"deploy@{deploy.at:g} {w.name}", w.fn) for w in deploy.workflows]
        functions += [(f"step {s.name}", s.body) for s in self.steps]
        functions += [
            (f"invariant {i}", getattr(inv, "check", inv)) for i, inv in enumerate(self.invariants)
        ]
        for name, function in functions:
            digest.update(name.encode())
            digest.update(_source(function).encode())
        return "sha256:" + digest.hexdigest()[:32]


def _source(function: Any) -> str:
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        code = getattr(function, "__code__", None)
        return repr((code.co_code, code.co_consts)) if code is not None else repr(function)


# --------------------------------------------------------------------------- loading


class ScenarioError(Exception):
    """A scenario that cannot be found or loaded; the message names the problem."""


def bundled_scenario_folder() -> Path:
    """Where bundled scenarios live: ``$YIELDSTAR_SCENARIOS`` or the repository's scenarios/."""
    folder = os.environ.get("YIELDSTAR_SCENARIOS")
    return Path(folder) if folder else Path(__file__).resolve().parents[2] / "scenarios"


def bundled_scenarios() -> dict[str, Path]:
    """Bundled scenario names and their files."""
    folder = bundled_scenario_folder()
    if not folder.is_dir():
        return {}
    return {
        path.stem.replace("_", "-"): path
        for path in sorted(folder.glob("*.py"))
        if not path.name.startswith("_")
    }


def load_scenario(reference: str | Path, *, sha256: str | None = None) -> Scenario:
    """Load a bundled scenario by name, or the ``scenario`` defined in a ``.py`` file.

    A scenario file is code and runs when it is loaded. With ``sha256`` (``"sha256:<hex>"``) a
    file is imported only if its bytes hash to that value; the bytes hashed are the bytes run.
    """
    text = str(reference)
    path = Path(text)
    bundled = bundled_scenarios()
    if text in bundled:
        path, ref = bundled[text], text
    elif path.suffix == ".py" or path.exists():
        if not path.is_file():
            raise ScenarioError(f"no scenario file {text!r}")
        ref = str(path)
    else:
        names = ", ".join(bundled) or "none found"
        raise ScenarioError(f"unknown scenario {text!r}; bundled scenarios: {names}")
    try:
        source = path.read_bytes()
    except OSError as error:
        raise ScenarioError(f"cannot read the scenario file {text!r}: {error.strerror}") from None
    digest = source_digest(source)
    if sha256 is not None and digest != sha256:
        raise ScenarioError(
            f"the scenario file {text!r} is not the one expected ({sha256} expected, "
            f"{digest} found), so it is not run"
        )
    module_name = (
        f"_yieldstar_scenario_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]}"
    )
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None:
        raise ScenarioError(f"cannot load {text!r} as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up by name
    try:
        # Run the bytes that were hashed, not the file read again: it may change in between.
        exec(compile(source, str(path), "exec"), module.__dict__)
    except Exception as error:
        del sys.modules[module_name]
        raise ScenarioError(f"{text!r} raised {type(error).__name__} on import: {error}") from error
    scenario = getattr(module, "scenario", None)
    if not isinstance(scenario, Scenario):
        raise ScenarioError(
            f"{text!r} does not define `scenario = ys.Scenario(...)`"
            + ("" if scenario is None else f" (it defines scenario as {type(scenario).__name__})")
        )
    scenario.ref = ref
    scenario.source_sha256 = None if ref in bundled else digest
    if not scenario.description and module.__doc__:
        scenario.description = inspect.cleandoc(module.__doc__)
    return scenario


def source_digest(source: bytes) -> str:
    """The digest a replay artifact records for a scenario file's bytes."""
    return "sha256:" + hashlib.sha256(source).hexdigest()
