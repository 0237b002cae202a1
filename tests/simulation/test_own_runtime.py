"""Your own runtime (issue 15, item 1): a factory called with clock=, or its
'package.module:factory' name, in simulate, explore, confirm, replay and the CLI; the flawed
adapters shipped as examples are found by the built-in invariants."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.errors import ArtifactError
from yieldstar_sim.examples.flawed_runtimes import DedupWhileOpenRuntime, FreshIdOnRetryRuntime
from yieldstar_sim.runtime.factory import RuntimeChoiceError, resolve_runtime

FIX = ys.load_scenario("durable-start")
DEDUP = "yieldstar_sim.examples.flawed_runtimes:DedupWhileOpenRuntime"


def memory_runtime(*, clock: Any) -> ys.MemoryRuntime:
    return ys.MemoryRuntime(clock=clock)


def test_a_factory_runs_a_scenario_and_names_the_run() -> None:
    run = ys.simulate(FIX, runtime=memory_runtime)
    assert run.ok
    assert run.runtime_kind == "tests.simulation.test_own_runtime:memory_runtime" or (
        run.runtime_kind.endswith(":memory_runtime")
    )
    by_name = ys.simulate(FIX, runtime="yieldstar_sim.runtime.memory:MemoryRuntime")
    assert by_name.trace_digest() == run.trace_digest()
    assert run.sql("select count(*) from executions") == [(2,)]


def test_a_factory_that_takes_no_runtime_options_is_refused_naming_them() -> None:
    # The message ran together: "with clock= and on_existing_id(make() got ...".
    scenario = ys.load_scenario("client-retry-same-request-id")
    with pytest.raises(
        RuntimeChoiceError,
        match=r"could not be called with clock=, on_existing_id= \(the scenario's "
        r"runtime_options\): memory_runtime\(\) got an unexpected keyword argument",
    ):
        ys.simulate(scenario, runtime=memory_runtime)


def test_a_factory_that_makes_no_runtime_is_refused_with_what_it_lacks() -> None:
    class Half:
        def __init__(self, *, clock: Any) -> None:
            self.clock = clock

    with pytest.raises(RuntimeChoiceError, match=r"made a Half, which lacks trigger, start"):
        ys.simulate(FIX, runtime=Half)
    with pytest.raises(RuntimeChoiceError, match=r"cannot import 'no_such_module'"):
        resolve_runtime("no_such_module:factory")
    with pytest.raises(RuntimeChoiceError, match=r"not 'sqlite'"):
        resolve_runtime("sqlite")


@pytest.mark.parametrize(
    ("factory", "invariants"),
    [
        (DedupWhileOpenRuntime, {"at most one admitted execution per step"}),
        (FreshIdOnRetryRuntime, {"at most one admitted execution per step"}),
    ],
)
def test_the_explorer_finds_each_flawed_adapter(factory: Any, invariants: set[str]) -> None:
    report = ys.explore(FIX, runtime=factory, confirm=None)
    assert report.verdict == "violated"
    assert invariants <= {found.invariant for found in report.violations}
    first = report.violations[0]
    assert len(first.faults) == 1
    assert first.message.startswith("step (order-42, ship) admitted two executions")


def test_the_conformance_cases_run_first_when_asked() -> None:
    dedup = ys.explore(FIX, runtime=DedupWhileOpenRuntime, confirm=None, check_adapter=True)
    assert dedup.adapter_failures == [
        "A matching request repeats after the target is terminal: the repeat after the target "
        "finished got @ship-order-3, not @ship-order:order-42/ship"
    ]
    assert "RUNTIME ADAPTER fails the conformance case A matching request" in dedup.summary()
    fresh = ys.explore(FIX, runtime=FreshIdOnRetryRuntime, confirm=None, check_adapter=True)
    assert any(
        f.startswith("Start commit followed by a lost response") for f in fresh.adapter_failures
    )
    sound = ys.explore(FIX, runtime=memory_runtime, confirm=None, check_adapter=True)
    assert (sound.adapter_failures, sound.verdict) == ([], "ok")


def test_confirmation_on_duckdb_shows_where_the_flawed_adapter_differs() -> None:
    report = ys.explore(FIX, runtime=DedupWhileOpenRuntime, confirm="duckdb")
    assert report.runtime_mismatches
    assert report.runtime_mismatches[0].endswith("replays differently on duckdb")


def test_shards_name_the_factory_and_a_lambda_is_refused_clearly() -> None:
    alone = ys.explore(FIX, runtime=DEDUP, confirm=None, stop_at_first=False)
    shards = ys.explore(FIX, runtime=DEDUP, confirm=None, stop_at_first=False, jobs=2)
    assert shards.schedules_run == alone.schedules_run
    assert [f.message for f in shards.violations] == [f.message for f in alone.violations]
    with pytest.raises(ValueError, match="need a runtime factory they can import"):
        ys.explore(
            FIX, runtime=lambda clock: ys.MemoryRuntime(clock=clock), confirm=None, jobs=2,
            max_faults=1,
        )  # fmt: skip


def test_an_artifact_names_its_runtime_but_never_imports_it(tmp_path: Path) -> None:
    run = ys.simulate(FIX, runtime=DEDUP)
    path = run.artifact().save(tmp_path / "run.replay.json")
    with pytest.raises(ArtifactError, match="an artifact never names code to import"):
        ys.replay(path)
    again = ys.replay(path, runtime=DEDUP)
    assert again.trace_digest() == run.trace_digest()


def test_the_cli_explores_your_runtime(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "yieldstar_sim.cli", "explore", "durable-start", "--runtime",
         DEDUP, "--no-confirm", "--check-adapter", "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["runtime"] == DEDUP
    assert report["adapter_failures"]
    bad = subprocess.run(
        [sys.executable, "-m", "yieldstar_sim.cli", "run", "durable-start", "--runtime",
         "no_such_module:factory"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert bad.returncode == 2
    assert "cannot import 'no_such_module'" in bad.stderr
    assert "Traceback" not in bad.stderr
