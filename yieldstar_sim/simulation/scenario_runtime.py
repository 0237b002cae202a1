"""The runtime a scenario names for itself (``ys.Scenario(..., runtime=factory)``; issue 35,
item 6), and what a call that leaves the runtime to the scenario runs on.

A scenario that models an engine's own flawed logic as a runtime adapter names that adapter
once, in its file, instead of on every command line: ``simulate``, ``explore``, ``replay``, the
CLI and the pytest plugin run on it unless told otherwise. The explorer's confirmation on
DuckDB would compare the scenario's runtime with the reference, which differs on purpose, so
it is off for such a scenario unless the scenario names a runtime to confirm on
(``confirm_runtime``) or the caller passes ``confirm=``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.scenario import Scenario


class ByScenario:
    """The default of ``explore(confirm=...)``: the scenario decides (DuckDB, or for a scenario
    that names its runtime, its ``confirm_runtime``, None by default)."""

    def __repr__(self) -> str:
        return "BY_SCENARIO"


BY_SCENARIO: Final = ByScenario()


def runtime_for(scenario: Scenario, asked: RuntimeChoice | None, default: str) -> RuntimeChoice:
    """The runtime a run uses: the one asked for, else the scenario's, else ``default``."""
    if asked is not None:
        return asked
    return scenario.runtime if scenario.runtime is not None else default


def confirm_for(
    scenario: Scenario, asked: RuntimeChoice | ByScenario | None
) -> RuntimeChoice | None:
    """The runtime the explorer confirms on: the one asked for (None: off), else DuckDB for a
    scenario on the bundled runtimes, else the runtime the scenario names to confirm on."""
    if not isinstance(asked, ByScenario):
        return asked
    return "duckdb" if scenario.runtime is None else scenario.confirm_runtime


#: Why each command runs on its own default runtime, for the first line it prints: ``run``
#: and ``explore`` differ on purpose, and a reader who met one wondered at the other.
DEFAULT_RUNTIME_WHY: Final = {
    "run": "run's default: DuckDB, a durable runtime; explore searches on memory, "
    "--runtime chooses",
    "explore": "explore's default: the memory reference runtime, fast enough to search every "
    "schedule; run's is DuckDB, --runtime chooses",
    "replay": "the runtime the artifact was made on: explore makes its artifacts on memory, "
    "run on DuckDB; --runtime chooses",
}


def why_runtime(command: str, asked: object, scenario: Scenario) -> str:
    """Why ``command`` (``run``, ``explore``, ``replay``) runs on the runtime it does: asked
    for, the scenario's own, or the command's default."""
    if asked is not None:
        return "chosen with --runtime"
    if scenario.runtime is not None:
        return "the scenario's own, Scenario(runtime=...)"
    return DEFAULT_RUNTIME_WHY[command]
