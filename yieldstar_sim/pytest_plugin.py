"""The pytest plugin: scenarios in your own test suite, on every commit.

Installed with yieldstar_sim (a ``pytest11`` entry point), it is on without an import. It gives

- the ``yieldstar`` fixture: ``yieldstar.assert_holds(scenario, max_faults=2)`` explores the
  scenario and fails with the violation's sentence, the shrunk fault plan and the command that
  replays the saved artifact; ``yieldstar.explore(scenario, ...)`` returns the report;
- a collector: with ``yieldstar_scenarios = scenarios/*.py`` in the ``[tool.pytest.ini_options]``
  (a list of glob patterns, relative to the rootdir), each file that defines
  ``scenario = ys.Scenario(...)`` becomes a test item that passes when the exploration is
  ``ok`` and fails when it is ``violated``; a file that does not load fails alone, in one line;
- regression tests: with ``yieldstar_regressions = regressions/*.replay.json``, each saved
  artifact becomes a test item that replays its failing schedule against the scenario's code
  as it is (``ys.replay``) and passes when the violation is gone;
- an outcome of its own, **incomplete**: an exploration (or a replay) that a budget or the
  wall-clock limit cut proves nothing, so it fails the session unless
  ``--yieldstar-allow-incomplete`` (or ``yieldstar_allow_incomplete = true``) tolerates it;
- options: ``--yieldstar-max-faults``, ``--yieldstar-strategy``, ``--yieldstar-runtime``,
  ``--yieldstar-budget``, ``--yieldstar-timeout`` and ``--yieldstar-artifacts DIR`` (default:
  the test's temporary folder), checked at start: a bad value is a one-line usage error.

Example, in a test module::

    def test_the_shop_survives_two_faults(yieldstar):
        yieldstar.assert_holds(ys.load_scenario("scenarios/shop.py"), max_faults=2)
"""

from __future__ import annotations

import fnmatch
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from yieldstar_sim.core.filenames import file_stem

if TYPE_CHECKING:
    from collections.abc import Generator, Iterator

    from yieldstar_sim.simulation.artifact import ReplayArtifact
    from yieldstar_sim.simulation.explorer import ExplorationReport
    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.scenario import Scenario

STRATEGIES = ("systematic", "random", "pct", "exhaustive")
RUNTIMES = ("memory", "duckdb")


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's command-line options and ini settings."""
    group = parser.getgroup("yieldstar", "yieldstar_sim scenarios")
    group.addoption(
        "--yieldstar-max-faults", type=int, default=None, metavar="K",
        help="faults per schedule when exploring scenarios (default 1)",
    )  # fmt: skip
    group.addoption("--yieldstar-strategy", choices=STRATEGIES, default=None)
    group.addoption(
        "--yieldstar-runtime", choices=RUNTIMES, default=None,
        help="runtime to explore on (default memory; findings are confirmed on DuckDB)",
    )  # fmt: skip
    group.addoption(
        "--yieldstar-budget", type=int, default=None, metavar="N",
        help="at most N schedules per scenario (a cut search is incomplete)",
    )  # fmt: skip
    group.addoption(
        "--yieldstar-timeout", type=float, default=None, metavar="SECONDS",
        help="wall-clock limit of each schedule (default 60)",
    )  # fmt: skip
    group.addoption(
        "--yieldstar-artifacts", default=None, metavar="DIR",
        help="folder for replay artifacts of violations (default: each test's tmp_path)",
    )  # fmt: skip
    group.addoption(
        "--yieldstar-allow-incomplete", action="store_true", default=None,
        help="let an exploration a budget or the wall-clock limit cut pass as INCOMPLETE "
        "instead of failing the session",
    )  # fmt: skip
    parser.addini(
        "yieldstar_scenarios", type="args", default=[],
        help="glob patterns (relative to the rootdir) of scenario files to collect as tests",
    )  # fmt: skip
    parser.addini(
        "yieldstar_regressions", type="args", default=[],
        help="glob patterns (relative to the rootdir) of replay artifacts to collect as "
        "regression tests: each passes when its violation is gone",
    )  # fmt: skip
    parser.addini(
        "yieldstar_allow_incomplete", type="bool", default=False,
        help="as --yieldstar-allow-incomplete",
    )  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    """Refuse a bad option value in one line, as the CLI does, before anything is collected
    (a negative --yieldstar-max-faults was a traceback of a thousand lines, once an item)."""
    from yieldstar_sim.cli_files import explore_options_mistake

    max_faults = config.getoption("yieldstar_max_faults")
    mistake = explore_options_mistake(
        max_faults=1 if max_faults is None else max_faults,
        budget=config.getoption("yieldstar_budget"),
        strategy=config.getoption("yieldstar_strategy") or "systematic",
        prefix="--yieldstar-",
    )
    timeout = config.getoption("yieldstar_timeout")
    if mistake is None and timeout is not None and not 0 <= timeout < math.inf:
        mistake = f"--yieldstar-timeout is 0 (none) or more seconds, not {timeout:g}"
    if mistake is not None:
        raise pytest.UsageError(mistake)


@dataclass
class Yieldstar:
    """What the ``yieldstar`` fixture gives a test: explore with the session's options."""

    config: pytest.Config
    artifacts: Path
    defaults: dict[str, Any] = field(default_factory=dict)

    def explore(self, scenario: Scenario, **options: Any) -> ExplorationReport:
        """``ys.explore`` with the command line's options as defaults and artifacts saved."""
        from yieldstar_sim.simulation.explorer import explore

        chosen = {**_session_options(self.config), **self.defaults, **options}
        chosen.setdefault("out", self.artifacts)
        return explore(scenario, **chosen)

    def assert_holds(self, scenario: Scenario, **options: Any) -> ExplorationReport:
        """Explore ``scenario`` and fail unless the verdict is ``ok``; the failure message is
        the violation's sentence, the shrunk fault plan and the command that replays it. A
        search a budget cut is the INCOMPLETE outcome (``--yieldstar-allow-incomplete``)."""
        report = self.explore(scenario, **options)
        if report.verdict == "incomplete":
            raise ScenarioIncomplete(failure_message(report, scenario))
        if not report.ok:
            pytest.fail(failure_message(report, scenario), pytrace=False)
        return report

    def assert_fixed(
        self, artifact: str | Path, scenario: Scenario | None = None, **options: Any
    ) -> SimulationRun:
        """Replay a saved failing ``artifact`` against ``scenario`` as it is now (by default
        the scenario it names) and fail unless the violation is gone (``ys.replay``); a
        replay the wall-clock limit cut, or whose recorded faults no longer fire, is
        INCOMPLETE."""
        from yieldstar_sim.simulation.regression import replay

        chosen = {**_replay_options(self.config), **options}
        run = replay(artifact, scenario=scenario, **chosen)
        run.runtime.close()
        _judge_replay(run)
        return run


def _session_options(config: pytest.Config) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for name, key in (
        ("yieldstar_max_faults", "max_faults"),
        ("yieldstar_strategy", "strategy"),
        ("yieldstar_runtime", "runtime"),
        ("yieldstar_budget", "budget"),
        ("yieldstar_timeout", "timeout"),
    ):
        value = config.getoption(name)
        if value is not None:
            options[key] = value
    return options


def _replay_options(config: pytest.Config) -> dict[str, Any]:
    """The session's options a replay takes: its runtime and wall-clock limit."""
    return {
        key: value
        for key, value in _session_options(config).items()
        if key in ("runtime", "timeout")
    }


def _judge_replay(run: SimulationRun) -> None:
    """Pass a replayed artifact whose violation is gone; fail one where it is not; a cut run,
    or one whose recorded faults no longer fire, proves nothing (INCOMPLETE)."""
    said = run.explain()
    if run.regression is None:  # the code the artifact was made from: nothing was fixed yet
        said = f"replayed exactly (the scenario's code is the artifact's):\n{said}"
    text = "yieldstar_sim: " + said.replace("\n", "\n  ")
    if run.verdict == "violated":
        raise ScenarioViolated(text)
    if run.verdict == "incomplete":
        raise ScenarioIncomplete(text)


def failure_message(report: ExplorationReport, scenario: Scenario) -> str:
    """The verdict, every violation's sentence, its shrunk plan and how to replay it."""
    lines = [
        f"yieldstar_sim: {report.scenario}: {report.verdict} ({report.coverage()})",
    ]
    for found in report.violations:
        lines.append(f"  VIOLATED {found.invariant}: {found.message}")
        plan = "; ".join(found.faults) or "no fault (the interleaving alone)"
        lines.append(f"  shrunk fault plan: {plan}")
        if found.artifact_path is not None:
            path = str(found.artifact_path)
            if scenario.ref:
                lines.append(f"  replay: {found.artifact.replay_command(path)}")
            else:
                lines.append(f"  replay: ys.replay({path!r}, scenario=<this scenario>)")
    lines += [f"  runtime mismatch: {mismatch}" for mismatch in report.runtime_mismatches]
    if not report.violations and report.incomplete_reasons:
        lines += [f"  cut: {reason}" for reason in report.incomplete_reasons]
    lines += [f"  warning: {warning}" for warning in report.warnings]
    return "\n".join(lines)


@pytest.fixture
def yieldstar(request: pytest.FixtureRequest, tmp_path: Path) -> Yieldstar:
    """Explore scenarios from a test: ``yieldstar.assert_holds(scenario, max_faults=2)``."""
    return Yieldstar(request.config, _artifacts(request.config, tmp_path))


def _artifacts(config: pytest.Config, tmp_path: Path) -> Path:
    chosen = config.getoption("yieldstar_artifacts")
    if chosen is None:
        return tmp_path
    folder = Path(chosen)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# --------------------------------------------------------------------------- the collector


def pytest_collect_file(
    file_path: Path, parent: pytest.Collector
) -> ScenarioFile | ArtifactFile | None:
    """Collect the files that ``yieldstar_scenarios`` names as scenario tests, and those that
    ``yieldstar_regressions`` names as regression tests."""
    relative = _relative(file_path, parent.config.rootpath)
    if file_path.suffix == ".py" and _matches(relative, parent.config, "yieldstar_scenarios"):
        return ScenarioFile.from_parent(parent, path=file_path)
    if file_path.suffix == ".json" and _matches(relative, parent.config, "yieldstar_regressions"):
        return ArtifactFile.from_parent(parent, path=file_path)
    return None


def _matches(relative: str, config: pytest.Config, setting: str) -> bool:
    return any(fnmatch.fnmatch(relative, pattern) for pattern in config.getini(setting))


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


class ScenarioFile(pytest.File):
    """A scenario file: one test item, the scenario explored."""

    def collect(self) -> Iterator[pytest.Item]:
        """Load the scenario (a file is code: it runs now) and make its item; a file that does
        not load (a syntax error, an unknown fault op) is an item that fails alone, in one
        line: a collection error stopped the whole session."""
        from yieldstar_sim.simulation.scenario import ScenarioError as LoadError
        from yieldstar_sim.simulation.scenario_files import load_scenario

        try:
            scenario = load_scenario(self.path, timeout=60.0)
        except LoadError as error:
            yield UnloadableItem.from_parent(self, name=self.path.stem, error=str(error))
            return
        yield ScenarioItem.from_parent(self, name=scenario.name, scenario=scenario)


class ScenarioViolated(Exception):
    """An exploration found a violation; the message says which, why and how to replay it."""


class ScenarioIncomplete(Exception):
    """A budget or the wall-clock limit cut an exploration (or a replay): it proves nothing
    either way, so it is the INCOMPLETE outcome, failing unless tolerated."""


class UnloadableItem(pytest.Item):
    """A scenario file (or an artifact) that does not load: it fails alone, in one line."""

    def __init__(self, *, error: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        """Fail with the reason the file did not load."""
        raise ScenarioViolated(f"yieldstar_sim: {self.error}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        """The reason, without a traceback."""
        return str(excinfo.value)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the item comes from, for pytest's report."""
        return self.path, None, f"{self.path.name} (does not load)"


class ScenarioItem(pytest.Item):
    """One scenario, explored: passes when ok, fails when violated, INCOMPLETE when cut."""

    def __init__(self, *, scenario: Scenario, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario

    def runtest(self) -> None:
        """Explore the scenario with the session's options."""
        helper = Yieldstar(self.config, _artifacts(self.config, self._tmp_path()))
        report = helper.explore(self.scenario)
        if report.verdict == "violated":
            raise ScenarioViolated(failure_message(report, self.scenario))
        if report.verdict == "incomplete":
            raise ScenarioIncomplete(failure_message(report, self.scenario))

    def _tmp_path(self) -> Path:
        # pytest's own temporary folders (kept for the last runs) when it has them.
        factory = getattr(self.config, "_tmp_path_factory", None)
        if factory is not None:
            return Path(factory.mktemp(file_stem(self.scenario.name)))
        return Path(tempfile.mkdtemp(prefix=f"yieldstar-{file_stem(self.scenario.name)}-"))

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str:
        """The violation in words, without a traceback; so is a mistake in the scenario that
        only a run shows (a fault that never fires, an invariant watching a misspelt name)."""
        return _in_words(excinfo) or str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the item comes from, for pytest's report."""
        return self.path, None, f"scenario {self.scenario.name}"


def _in_words(excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    """A verdict, or a mistake in the scenario only a run shows, in words (no traceback)."""
    from yieldstar_sim.simulation.artifact import ArtifactError
    from yieldstar_sim.simulation.scenario import ScenarioError as Mistake

    if isinstance(excinfo.value, ScenarioViolated | ScenarioIncomplete):
        return str(excinfo.value)
    if isinstance(excinfo.value, Mistake | ArtifactError):
        return f"yieldstar_sim: {excinfo.value}"
    return None


# --------------------------------------------------------------------------- regressions


class ArtifactFile(pytest.File):
    """A saved replay artifact: one regression test, its schedule replayed against the code."""

    def collect(self) -> Iterator[pytest.Item]:
        """Read the artifact (data, never code) and make its item."""
        from yieldstar_sim.simulation.artifact import ArtifactError, ReplayArtifact

        try:
            artifact = ReplayArtifact.load(self.path)
        except ArtifactError as error:
            yield UnloadableItem.from_parent(self, name=self.path.name, error=str(error))
            return
        yield RegressionItem.from_parent(self, name=artifact.scenario, artifact=artifact)


class RegressionItem(pytest.Item):
    """A failing schedule saved as an artifact, replayed against the scenario's code as it is:
    passes when the violation is gone, fails when it is not, INCOMPLETE when the replay did
    not test it (cut, or its recorded faults no longer fire)."""

    def __init__(self, *, artifact: ReplayArtifact, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.artifact = artifact

    def runtest(self) -> None:
        """Load the scenario the artifact names from the project and replay against it."""
        from yieldstar_sim.simulation.regression import replay

        run = replay(self.artifact, scenario=self._scenario(), **_replay_options(self.config))
        run.runtime.close()
        _judge_replay(run)

    def _scenario(self) -> Scenario:
        """The scenario the artifact names: bundled by name, or a file of this project (its
        rootdir), loaded as it is now: the project's code, chosen by its configuration. An
        artifact naming a file elsewhere is not run: an artifact never chooses the code."""
        from yieldstar_sim.simulation.scenario_files import bundled_scenarios, load_scenario

        ref = self.artifact.ref
        if ref is None:
            raise ScenarioViolated(
                f"yieldstar_sim: the artifact names scenario {self.artifact.scenario!r} but not "
                "where it came from; give it to yieldstar.assert_fixed(artifact, scenario)"
            )
        if ref in bundled_scenarios():
            return load_scenario(ref)
        # Named relative to the artifact's own folder (the current directory for one made here).
        path = (Path(self.artifact.folder or ".") / ref).resolve()
        if not path.is_relative_to(self.config.rootpath.resolve()):
            raise ScenarioViolated(
                f"yieldstar_sim: the artifact's scenario file {ref!r} is outside this project "
                f"({self.config.rootpath}), so it is not run; give it to "
                "yieldstar.assert_fixed(artifact, scenario) in a test of yours"
            )
        return load_scenario(path, timeout=60.0)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        """The comparison and the verdict in words, without a traceback."""
        return _in_words(excinfo) or str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the item comes from, for pytest's report."""
        return self.path, None, f"regression of {self.artifact.scenario}"


# --------------------------------------------------------------------------- INCOMPLETE


def _tolerated(config: pytest.Config) -> bool:
    return bool(
        config.getoption("yieldstar_allow_incomplete")
        or config.getini("yieldstar_allow_incomplete")
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A cut exploration is its own outcome: failed (the session fails) unless tolerated,
    and never xfailed, which let pytest exit 0 on a known bug a small budget did not reach."""
    report = yield
    if call.excinfo is not None and call.excinfo.errisinstance(ScenarioIncomplete):
        # The words, kept on the report (it crosses from an xdist worker as plain data).
        report.yieldstar_incomplete = str(call.excinfo.value)  # type: ignore[attr-defined]
        if _tolerated(item.config):
            report.outcome = "passed"
    return report


def pytest_report_teststatus(
    report: pytest.TestReport, config: pytest.Config
) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
    """INCOMPLETE, in the progress line, the verbose line and the final count."""
    if getattr(report, "yieldstar_incomplete", False) and report.when == "call":
        if report.passed:
            return "incomplete", "i", ("INCOMPLETE (tolerated)", {"yellow": True})
        return "incomplete", "I", ("INCOMPLETE", {"red": True})
    return None


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Each INCOMPLETE item with what cut it (pytest lists only failures it knows)."""
    reports = terminalreporter.stats.get("incomplete", [])
    if not reports:
        return
    terminalreporter.write_sep("=", "INCOMPLETE (a cut search proves nothing)")
    tolerated = _tolerated(config)
    for report in reports:
        words = getattr(report, "yieldstar_incomplete", "") or report.longreprtext
        terminalreporter.write_line(
            f"{report.nodeid}{' (tolerated)' if tolerated else ''}: {words}"
        )
    if not tolerated:
        terminalreporter.write_line(
            "an incomplete exploration fails the session: raise --yieldstar-budget (or "
            "--yieldstar-timeout), or tolerate it with --yieldstar-allow-incomplete"
        )
