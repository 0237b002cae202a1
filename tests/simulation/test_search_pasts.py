"""A state reached with one past stands for the same state reached with another only where the
verdicts to come are the same: what "nothing is recovered without end" reads of a run's past
(each execution's recoveries, the workers that could have claimed it then, those that lost it
without a fault) is in the key the searches cut by (``Execution.verdict_key``), not in the
state's key, which counts the states."""

from __future__ import annotations

from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation.execution import Execution

_OPTIONS: dict[str, Any] = {"strategy": "exhaustive", "confirm": None, "stop_at_first": False}


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_poison_workflow_is_found_recovered_without_end_under_no_fault(jobs: int) -> None:
    # Its own code crashes its worker on every attempt. A search that cut a state first
    # reached by a path where another worker was ready at each recovery (a loop only an unfair
    # scheduler keeps up) said "verified" in one process, and "violated" in two.
    report = ys.explore(ys.load_scenario("poison-workflow"), max_faults=0, jobs=jobs, **_OPTIONS)
    assert report.verdict == "violated"
    assert {v.invariant for v in report.violations} == {"nothing is recovered without end"}


def test_the_fix_of_the_poison_workflow_is_verified_under_no_fault() -> None:
    report = ys.explore(ys.load_scenario("poison-workflow-fixed"), max_faults=0, **_OPTIONS)
    assert report.verdict == "ok"
    assert report.coverage().startswith("verified")


def test_a_run_has_no_past_until_an_execution_is_recovered() -> None:
    run = Execution(ys.load_scenario("poison-workflow"), seed=0, scenario_faults=False)
    keys = []
    while not run.done():
        keys.append((run.key(), run.verdict_key()))
        run.take(run.moves()[0])
    differ = [index for index, (key, verdict_key) in enumerate(keys) if key != verdict_key]
    assert differ, "the poison workflow's executions are recovered: their past is keyed"
    assert all(key == verdict_key for key, verdict_key in keys[: differ[0]])
    run.close()
