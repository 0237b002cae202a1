"""Typos are caught before anything runs, with the nearest name the user could have meant."""

from __future__ import annotations

import subprocess
import sys

import pytest

import yieldstar_sim as ys


def test_a_misspelt_scenario_name_suggests_the_nearest_and_lists_none() -> None:
    with pytest.raises(ys.ScenarioError) as raised:
        ys.load_scenario("durable-strat")
    message = str(raised.value)
    assert message.startswith("unknown scenario 'durable-strat' (did you mean 'durable-start'?)")
    assert "frozen-worker" not in message  # the bundled names are not all printed


@pytest.mark.parametrize(
    ("reference", "says"),
    [
        ("trigger_in_step", "unknown scenario 'trigger_in_step' (did you mean 'trigger-in-step'?)"),
        ("durable_strat", "unknown scenario 'durable_strat' (did you mean 'durable-start'?)"),
        (
            "trigger_in_step.py",
            "no scenario file 'trigger_in_step.py' (did you mean the bundled scenario "
            "'trigger-in-step'?)",
        ),
    ],
)
def test_a_bundled_scenarios_file_stem_is_a_typo_of_its_name(reference: str, says: str) -> None:
    # One name per scenario: what the user types is what the output and artifacts say.
    with pytest.raises(ys.ScenarioError) as raised:
        ys.load_scenario(reference)
    assert str(raised.value).startswith(says)


def test_a_trigger_of_a_workflow_deployed_later_is_allowed() -> None:
    @ys.workflow("v2-only")
    def later(step: object, params: object) -> object:
        return None
        yield

    @ys.workflow("first")
    def first(step: object, params: object) -> object:
        return None
        yield

    scenario = ys.Scenario(
        name="deployed-later",
        workflows=[first],
        triggers=[ys.Trigger("v2-only", at=10)],
        deploys=[ys.Deploy(5, [later])],
    )
    assert scenario.triggers[0].workflow_id == "v2-only"


def test_the_cli_names_the_nearest_scenario_in_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "yieldstar_sim.cli", "run", "durable-strat"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "did you mean 'durable-start'?" in line
