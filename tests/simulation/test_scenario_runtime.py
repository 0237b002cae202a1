"""A scenario names its own runtime (issue 35, item 6): run, explore, replay and the plugin use
it unless told otherwise; the explorer confirms on nothing, or on the runtime the scenario
names for that, and says so."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import yieldstar_sim as ys
from yieldstar_sim.examples.flawed_runtimes import CancelSkipsBackoffRuntime

if TYPE_CHECKING:
    from pathlib import Path

FLAWED = "yieldstar_sim.examples.flawed_runtimes:CancelSkipsBackoffRuntime"
LIVE = "a cancelled live execution ends cancelled"


def test_simulate_runs_on_the_scenarios_runtime_unless_told_otherwise() -> None:
    scenario = ys.load_scenario("cancel-misses-sleeping-run")
    run = ys.simulate(scenario, seed=0)
    assert run.runtime_kind == FLAWED
    assert [v.invariant for v in run.violations] == [LIVE]
    reference = ys.simulate(scenario, seed=0, runtime="memory")
    assert reference.ok, reference.explain()


def test_explore_confirms_on_nothing_and_says_why(tmp_path: Path) -> None:
    scenario = ys.load_scenario("cancel-misses-sleeping-run")
    report = ys.explore(scenario, max_faults=1, out=tmp_path)
    assert report.runtime == FLAWED
    assert report.verdict == "violated"
    assert report.violations[0].invariant == LIVE
    assert report.runtime_mismatches == []
    assert report.confirmations == [
        f"not confirmed on another runtime: the scenario runs on its own ({FLAWED}), which "
        "differs from the reference on purpose (Scenario(confirm_runtime=...) names one to "
        "confirm on)"
    ]
    artifact = report.violations[0].artifact_path
    assert artifact is not None
    replayed = ys.replay(artifact)  # the scenario's code names the runtime: no runtime= needed
    assert replayed.runtime_kind == FLAWED
    assert [v.invariant for v in replayed.violations] == [LIVE]


def test_a_scenario_may_name_the_runtime_to_confirm_on() -> None:
    start = ys.load_scenario("durable-start")  # no cancel: the flawed cancel never shows
    own = dataclasses.replace(start, runtime=CancelSkipsBackoffRuntime, confirm_runtime="duckdb")
    report = ys.explore(own, max_faults=1)
    assert report.ok
    assert report.confirmations == [
        "confirmed on duckdb: 0 violation(s) and 3 passing schedule(s) replayed, 0 mismatch(es)"
    ]
    off = ys.explore(own, max_faults=1, confirm=None)
    assert off.confirmations[0].startswith("not confirmed on another runtime")
