"""The pytest plugin: scenarios in your own test suite, on every commit.

Installed with yieldstar_sim (a ``pytest11`` entry point), it is on without an import. It gives

- the ``yieldstar`` fixture: ``yieldstar.assert_holds(scenario, max_faults=2)`` explores the
  scenario and fails with the violation's sentence, the shrunk fault plan and the command that
  replays the saved artifact; ``yieldstar.explore(scenario, ...)`` returns the report;
- a collector: with ``yieldstar_scenarios = scenarios/*.py`` in the ``[tool.pytest.ini_options]``
  (a list of glob patterns, relative to the rootdir), each file that defines
  ``scenario = ys.Scenario(...)`` becomes a test item that passes when the exploration is
  ``ok``, fails when it is ``violated`` and is reported as xfailed ("incomplete: ...") when a
  budget or the wall-clock limit cut it;
- options: ``--yieldstar-max-faults``, ``--yieldstar-strategy``, ``--yieldstar-runtime``,
  ``--yieldstar-budget``, ``--yieldstar-timeout`` and ``--yieldstar-artifacts DIR`` (default:
  the test's temporary folder).

Example, in a test module::

    def test_the_shop_survives_two_faults(yieldstar):
        yieldstar.assert_holds(ys.load_scenario("scenarios/shop.py"), max_faults=2)
"""

from __future__ import annotations

import fnmatch
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from yieldstar_sim.core.filenames import file_stem

if TYPE_CHECKING:
    from collections.abc import Iterator

    from yieldstar_sim.simulation.explorer import ExplorationReport
    from yieldstar_sim.simulation.scenario import Scenario

STRATEGIES = ("systematic", "random", "pct")
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
    parser.addini(
        "yieldstar_scenarios", type="args", default=[],
        help="glob patterns (relative to the rootdir) of scenario files to collect as tests",
    )  # fmt: skip


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
        the violation's sentence, the shrunk fault plan and the command that replays it."""
        report = self.explore(scenario, **options)
        if not report.ok:
            pytest.fail(failure_message(report, scenario), pytrace=False)
        return report


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


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ScenarioFile | None:
    """Collect the files that ``yieldstar_scenarios`` names as scenario tests."""
    patterns = parent.config.getini("yieldstar_scenarios")
    if not patterns or file_path.suffix != ".py":
        return None
    relative = _relative(file_path, parent.config.rootpath)
    if any(fnmatch.fnmatch(relative, pattern) for pattern in patterns):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


class ScenarioError(Exception):
    """A scenario file that cannot be loaded: reported in one line at collection."""


class ScenarioFile(pytest.File):
    """A scenario file: one test item, the scenario explored."""

    def collect(self) -> Iterator[ScenarioItem]:
        """Load the scenario (a file is code: it runs now) and make its item."""
        from yieldstar_sim.simulation.scenario import ScenarioError as LoadError
        from yieldstar_sim.simulation.scenario_files import load_scenario

        try:
            scenario = load_scenario(self.path, timeout=60.0)
        except LoadError as error:
            raise self.CollectError(f"yieldstar_sim: {error}") from None
        yield ScenarioItem.from_parent(self, name=scenario.name, scenario=scenario)


class ScenarioViolated(Exception):
    """An exploration found a violation; the message says which, why and how to replay it."""


class ScenarioItem(pytest.Item):
    """One scenario, explored: passes when ok, fails when violated, xfails when incomplete."""

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
            pytest.xfail(f"incomplete: {report.coverage()}")

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
        from yieldstar_sim.simulation.scenario import ScenarioError as Mistake

        if isinstance(excinfo.value, ScenarioViolated):
            return str(excinfo.value)
        if isinstance(excinfo.value, Mistake):
            return f"yieldstar_sim: {excinfo.value}"
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the item comes from, for pytest's report."""
        return self.path, None, f"scenario {self.scenario.name}"
