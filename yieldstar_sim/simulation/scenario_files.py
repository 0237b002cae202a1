"""Finding and loading scenarios: the bundled ones by name, your own by the path of a ``.py``
file that defines ``scenario = ys.Scenario(...)``.

A scenario file is code and runs when it is loaded; a replay artifact names the file by the
SHA-256 of its bytes (``source_digest``), and ``load_scenario`` refuses a file whose bytes have
changed.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import importlib.util
import inspect
import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from yieldstar_sim.core.error_words import error_text, error_words
from yieldstar_sim.core.interrupts import raised_by_code
from yieldstar_sim.core.suggest import did_you_mean, nearest
from yieldstar_sim.simulation.scenario import Scenario, ScenarioError

if TYPE_CHECKING:
    from collections.abc import Mapping


def bundled_scenario_folder() -> Path:
    """Where bundled scenarios live: ``$YIELDSTAR_SCENARIOS`` if set, else the package
    ``yieldstar_sim.scenarios`` (the repository's ``scenarios/`` folder, which the wheel ships
    under that name and an editable install maps to it)."""
    folder = os.environ.get("YIELDSTAR_SCENARIOS")
    if folder:
        return Path(folder)
    try:
        shipped = importlib.resources.files("yieldstar_sim.scenarios")
    except ModuleNotFoundError:
        # A source tree put on sys.path by hand, never installed: the folder is beside the package.
        return Path(__file__).resolve().parents[2] / "scenarios"
    # Installed from a wheel or editable, the package is a folder on disk (not a zip archive).
    return Path(str(shipped))


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


def _resolve(text: str, bundled: Mapping[str, Path]) -> tuple[str, Path, str]:
    """What a scenario reference names: (the reference, its file, the ref an artifact keeps)."""
    path = Path(text)
    # A scenario has one name: a bundled file's stem (trigger_in_step) is a typo of it, answered
    # with the name, so that what the user types is what the output, artifacts and lists say.
    if text in bundled:
        return text, bundled[text], text
    if path.suffix == ".py" or path.exists():
        if not path.is_file():
            meant = nearest(path.stem, bundled) if path.suffix == ".py" else None
            raise ScenarioError(
                f"no scenario file {text!r}"
                + (f" (did you mean the bundled scenario {meant!r}?)" if meant else "")
            )
        return text, path, str(path)
    raise ScenarioError(
        f"unknown scenario {text!r}{did_you_mean(text, bundled)}; "
        + (
            f"`yieldstar-sim list` names the {len(bundled)} bundled ones (a scenario file's "
            "path ends in .py)"
            if bundled
            else "no bundled scenario found"
        )
    )


def load_scenario(
    reference: str | Path, *, sha256: str | None = None, timeout: float | None = None
) -> Scenario:
    """Load a bundled scenario by name, or the ``scenario`` defined in a ``.py`` file.

    A scenario file is code and runs when it is loaded: one that raises, calls ``sys.exit()``
    or (with ``timeout`` seconds) spins is refused with a ``ScenarioError`` that says so. With
    ``sha256`` (``"sha256:<hex>"``) a file is imported only if its bytes hash to that value; the
    bytes hashed are the bytes run.
    """
    from yieldstar_sim.simulation.deadline import Deadline, RunTimedOut

    text = str(reference)
    bundled = bundled_scenarios()
    text, path, ref = _resolve(text, bundled)
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
        code = compile(source, str(path), "exec")
        with Deadline(timeout) as deadline, deadline.user_code(f"the import of {text!r}"):
            exec(code, module.__dict__)
    except ScenarioError as error:  # the scenario's own words: it names what is wrong
        del sys.modules[module_name]
        raise ScenarioError(f"{_where(text, path, error)}: {error}") from error
    except Exception as error:
        del sys.modules[module_name]
        raise ScenarioError(_import_failure(text, path, error)) from error
    except SystemExit as exit:
        del sys.modules[module_name]
        raise ScenarioError(f"{text!r} called sys.exit({exit.code!r}) on import") from None
    except RunTimedOut:
        del sys.modules[module_name]
        raise ScenarioError(
            f"{text!r} did not finish importing within {timeout:g}s (a loop at import, or a "
            "call that waits?)"
        ) from None
    except BaseException as error:
        del sys.modules[module_name]
        if not raised_by_code(error):
            raise  # Ctrl-C
        line = _line(path, error)
        at = "" if line is None else f", at line {line}"
        raise ScenarioError(f"{text!r} raised {error_words(error)} on import{at}") from None
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


_PACKAGE = Path(__file__).resolve().parents[1]


def _line(path: Path, error: BaseException) -> int | None:
    """The line of the file that was running when ``error`` was raised (the deepest frame in
    the file: the line that called the code that refused), if any."""
    lines = [
        frame.lineno
        for frame in traceback.extract_tb(error.__traceback__)
        if frame.filename == str(path)
    ]
    return lines[-1] if lines else None


def _where(text: str, path: Path, error: BaseException) -> str:
    """The file, and its line that raised ``error`` when known: ``'trip.py', line 12``."""
    line = _line(path, error)
    return repr(text) if line is None else f"{text!r}, line {line}"


def _import_failure(text: str, path: Path, error: Exception) -> str:
    """One line for an exception raised while a scenario file ran.

    A ``ValueError`` or ``TypeError`` raised by the package itself is its refusal of an
    argument (``ys.Fault("crsh")``): its message names the mistake, so it is shown as the
    scenario's error at the line that made it, not as a crash of the file. Anything else was
    raised by the file's own code and is named as such.
    """
    frames = traceback.extract_tb(error.__traceback__)
    raised_in = Path(frames[-1].filename) if frames else None
    refused = (
        isinstance(error, ValueError | TypeError)
        and raised_in is not None
        and raised_in.is_absolute()
        and raised_in.resolve().is_relative_to(_PACKAGE)
    )
    if refused:
        return f"{_where(text, path, error)}: {error}"
    line = _line(path, error)
    at = "" if line is None else f", at line {line}"
    return f"{text!r} raised {type(error).__name__} on import{at}: {error_text(error)}"


def source_digest(source: bytes) -> str:
    """The digest a replay artifact records for a scenario file's bytes."""
    return "sha256:" + hashlib.sha256(source).hexdigest()
