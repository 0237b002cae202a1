"""The pytest plugin, as a team uses it in its own suite: run by pytester in a scratch project."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from yieldstar_sim.simulation.scenario_files import bundled_scenarios

CASES = Path(__file__).parents[1] / "scenarios" / "verdicts"
INI = """
[pytest]
yieldstar_scenarios = scenarios/*.py
"""


def project(pytester: pytest.Pytester, **scenarios: str) -> None:
    pytester.makeini(INI)
    folder = pytester.mkdir("scenarios")
    for name, source in scenarios.items():
        (folder / f"{name}.py").write_text(source, encoding="utf-8")


def bundled(name: str) -> str:
    return bundled_scenarios()[name].read_text(encoding="utf-8")


def test_a_scenario_that_holds_passes(pytester: pytest.Pytester) -> None:
    project(pytester, shop=bundled("durable-start"))
    result = pytester.runpytest("--yieldstar-runtime", "memory", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*scenarios/shop.py::durable-start PASSED*"])


def test_a_violation_fails_with_its_sentence_plan_and_replay_command(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    project(pytester, problem=bundled("trigger-in-step"))
    artifacts = tmp_path / "artifacts"
    result = pytester.runpytest("--yieldstar-artifacts", str(artifacts))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*yieldstar_sim: trigger-in-step: violated (stopped at the first violation after *",
            "*VIOLATED at most one admitted execution per step: step (order-42, ship) admitted "
            "two executions*",
            "*shrunk fault plan: crash before w2's put_step of step ship in order-42*",
            f"*replay: yieldstar-sim replay {artifacts}/trigger-in-step-violation-1.replay.json"
            f" --scenario {pytester.path}/scenarios/problem.py",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    replayed = subprocess.run(
        [sys.executable, "-m", "yieldstar_sim.cli", "replay",
         str(artifacts / "trigger-in-step-violation-1.replay.json"), "--quiet",
         "--scenario", str(pytester.path / "scenarios" / "problem.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert replayed.returncode == 1, replayed.stderr
    assert "at most one admitted execution per step" in replayed.stdout


def test_an_incomplete_exploration_is_reported_as_xfailed(pytester: pytest.Pytester) -> None:
    project(pytester, endless=(CASES / "loop_steps.py").read_text(encoding="utf-8"))
    result = pytester.runpytest("-rx", "--yieldstar-max-faults", "0")
    result.assert_outcomes(xfailed=1)
    result.stdout.fnmatch_lines(["*XFAIL*incomplete*"])


def test_a_budget_that_cuts_the_search_is_incomplete_not_green(pytester: pytest.Pytester) -> None:
    project(pytester, shop=bundled("durable-start"))
    result = pytester.runpytest("--yieldstar-budget", "3", "-rx")
    result.assert_outcomes(xfailed=1)
    result.stdout.fnmatch_lines(["*incomplete: the budget of 3 schedules cut the search*"])


def test_a_broken_scenario_file_is_a_collection_error_in_one_line(
    pytester: pytest.Pytester,
) -> None:
    project(pytester, typo=(CASES / "fault_typo_op.py").read_text(encoding="utf-8"))
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*yieldstar_sim: *unknown fault op 'putstep'*"])


def test_an_invariant_watching_a_misspelt_effect_fails_in_one_line_not_green(
    pytester: pytest.Pytester,
) -> None:
    # It held in every schedule, watching nothing: the item passed.
    project(pytester, typo=(CASES / "invariant_typo.py").read_text(encoding="utf-8"))
    result = pytester.runpytest("--yieldstar-max-faults", "0")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*yieldstar_sim: scenario 'invariant-typo': at_most_once(courier.bookd, by=order) "
         "watches the effect 'courier.bookd', which the run never made; it made*"]
    )  # fmt: skip
    assert "Traceback" not in result.stdout.str()


def test_the_options_reach_the_explorer(pytester: pytest.Pytester) -> None:
    """Without faults the Problem's scenario holds: the crash is what breaks it."""
    project(pytester, problem=bundled("trigger-in-step"))
    pytester.runpytest("--yieldstar-max-faults", "0").assert_outcomes(passed=1)
    strategy = pytester.runpytest("--yieldstar-strategy", "random", "--yieldstar-budget", "40")
    strategy.assert_outcomes(failed=1)


def test_the_fixture_asserts_that_a_scenario_holds(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_shop="""
        import yieldstar_sim as ys

        def test_the_fix_holds(yieldstar):
            report = yieldstar.assert_holds(ys.load_scenario("durable-start"), max_faults=1)
            assert report.exhausted

        def test_the_problem_does_not(yieldstar):
            yieldstar.assert_holds(ys.load_scenario("trigger-in-step"), confirm=None)
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*yieldstar_sim: trigger-in-step: violated*",
            "*replay: yieldstar-sim replay *trigger-in-step-violation-1.replay.json*",
        ]
    )
