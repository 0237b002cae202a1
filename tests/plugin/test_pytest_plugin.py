"""The pytest plugin, as a team uses it in its own suite: run by pytester in a scratch project."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import yieldstar_sim as ys
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


def test_an_incomplete_exploration_is_its_own_outcome_and_fails(pytester: pytest.Pytester) -> None:
    project(pytester, endless=(CASES / "loop_steps.py").read_text(encoding="utf-8"))
    result = pytester.runpytest("-v", "--yieldstar-max-faults", "0")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"incomplete": 1}
    result.stdout.fnmatch_lines(["*scenarios/endless.py::loop-steps INCOMPLETE*"])


def test_a_budget_that_cuts_the_search_before_the_bug_fails_the_session(
    pytester: pytest.Pytester,
) -> None:
    # It was reported xfailed, and pytest exited 0 on a known bug the budget did not reach.
    project(pytester, problem=bundled("trigger-in-step"))
    result = pytester.runpytest("--yieldstar-budget", "3")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"incomplete": 1}
    result.stdout.fnmatch_lines(
        [
            "*= INCOMPLETE (a cut search proves nothing) =*",
            "scenarios/problem.py::trigger-in-step: yieldstar_sim: trigger-in-step: incomplete "
            "(the budget of 3 schedules cut the search*",
            "an incomplete exploration fails the session: raise --yieldstar-budget (or "
            "--yieldstar-timeout), or tolerate it with --yieldstar-allow-incomplete",
        ]
    )
    assert "xfail" not in result.stdout.str().lower()


@pytest.mark.parametrize(
    "tolerate", [["--yieldstar-allow-incomplete"], ["-o", "yieldstar_allow_incomplete=true"]]
)
def test_an_incomplete_exploration_can_be_tolerated(
    pytester: pytest.Pytester, tolerate: list[str]
) -> None:
    project(pytester, shop=bundled("durable-start"))
    result = pytester.runpytest("--yieldstar-budget", "3", "-v", *tolerate)
    assert result.ret == pytest.ExitCode.OK
    assert result.parseoutcomes() == {"incomplete": 1}
    result.stdout.fnmatch_lines(
        [
            "*scenarios/shop.py::durable-start INCOMPLETE (tolerated)*",
            "scenarios/shop.py::durable-start (tolerated): yieldstar_sim: durable-start: "
            "incomplete (the budget of 3 schedules cut the search*",
        ]
    )


def test_the_fixture_reports_a_cut_search_as_incomplete_too(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_shop="""
        import yieldstar_sim as ys

        def test_the_fix_holds(yieldstar):
            yieldstar.assert_holds(ys.load_scenario("durable-start"), budget=3, confirm=None)
        """
    )
    result = pytester.runpytest("-v")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"incomplete": 1}
    result.stdout.fnmatch_lines(["*test_the_fix_holds INCOMPLETE*"])


@pytest.mark.parametrize(
    ("option", "says"),
    [
        (["--yieldstar-max-faults", "-1"], "--yieldstar-max-faults must be 0 or more, not -1"),
        (["--yieldstar-budget", "0"], "--yieldstar-budget must be at least 1, not 0"),
        (
            ["--yieldstar-max-faults", "5"],
            "--yieldstar-max-faults 5 tries every combination of 5 faults, more schedules than "
            "a search finishes; give --yieldstar-budget N, or at most 3 faults",
        ),
        (["--yieldstar-timeout", "-2"], "--yieldstar-timeout is 0 (none) or more seconds, not -2"),
    ],
)
def test_a_bad_option_is_a_one_line_usage_error(
    pytester: pytest.Pytester, option: list[str], says: str
) -> None:
    # --yieldstar-max-faults -1 was a 1,099-line traceback, from each item.
    project(pytester, shop=bundled("durable-start"))
    result = pytester.runpytest(*option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines == [f"ERROR: {says}", ""]
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_a_scenario_file_that_does_not_load_fails_alone(pytester: pytest.Pytester) -> None:
    # A syntax error in one file was "Interrupted: 1 error during collection": nothing ran.
    project(
        pytester,
        shop=bundled("durable-start"),
        broken="import yieldstar_sim as ys\n\ndef broken(:\n",
        typo=(CASES / "fault_typo_op.py").read_text(encoding="utf-8"),
    )
    result = pytester.runpytest("--yieldstar-max-faults", "0", "-v")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines_random(
        [
            "*scenarios/shop.py::durable-start PASSED*",
            "*yieldstar_sim: *broken.py' raised SyntaxError on import: invalid syntax*",
            "*yieldstar_sim: *unknown fault op 'putstep'*",
        ]
    )
    assert "Interrupted" not in result.stdout.str()
    assert "Traceback" not in result.stdout.str()


def test_a_trigger_whose_params_are_not_plain_data_fails_never_passes(
    pytester: pytest.Pytester,
) -> None:
    # The runtime refused the trigger on every schedule, nothing ran, and the item PASSED.
    project(pytester, bad=(CASES / "trigger_params_not_plain.py").read_text(encoding="utf-8"))
    result = pytester.runpytest("--yieldstar-max-faults", "0")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*ys.Trigger('charge', execution_id='charge-1') has params the runtime refuses*"]
    )


SAGA = """
import yieldstar_sim as ys


@ys.workflow("payment")
def payment(step, params):
    order = params["order"]
    yield from step.run(
        "charge", lambda: step.world.effect("card.charged", order=order{key})
    )
    return "done"


scenario = ys.Scenario(
    name="payment-saga",
    workflows=[payment],
    triggers=[ys.Trigger("payment", {{"order": 7}}, execution_id="pay-7")],
    invariants=[ys.at_most_once("card.charged", by="order")],
)
"""
FIXED = SAGA.format(key=', idempotency_key=f"charge-{order}"')


def test_a_folder_of_saved_artifacts_is_regression_tests(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nyieldstar_regressions = regressions/*.replay.json\n")
    scenario = pytester.mkdir("scenarios") / "saga.py"
    scenario.write_text(SAGA.format(key=""), encoding="utf-8")
    found = ys.explore(
        ys.load_scenario(scenario), max_faults=1, confirm=None, out=pytester.path / "regressions"
    )
    assert found.verdict == "violated"
    # The bug is still in the code: the saved schedule fails it again.
    failing = pytester.runpytest("-v")
    failing.assert_outcomes(failed=1)
    failing.stdout.fnmatch_lines(
        [
            "*regressions/payment-saga-violation-1.replay.json::payment-saga FAILED*",
            "*replayed exactly (the scenario's code is the artifact's):",
            "*at_most_once(card.charged, by=order): card.charged happened 2 times*",
        ]
    )
    scenario.write_text(FIXED, encoding="utf-8")  # the fix
    fixed = pytester.runpytest("-v")
    fixed.assert_outcomes(passed=1)
    # A fix that removes the fault's call tests nothing: never a pass.
    scenario.write_text(FIXED.replace('"charge", lambda', '"pay", lambda'), encoding="utf-8")
    dodged = pytester.runpytest("-v")
    assert dodged.parseoutcomes() == {"incomplete": 1}
    dodged.stdout.fnmatch_lines(["*the recorded fault 'crash before w2's put_step of step charge*"])


def test_the_fixture_checks_a_fix_against_a_saved_failure(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    scenario = tmp_path / "saga.py"
    scenario.write_text(SAGA.format(key=""), encoding="utf-8")
    report = ys.explore(ys.load_scenario(scenario), max_faults=1, confirm=None, out=tmp_path)
    (found,) = report.violations
    (tmp_path / "saga_fixed.py").write_text(FIXED, encoding="utf-8")
    pytester.makepyfile(
        test_fix=f"""
        import yieldstar_sim as ys

        def test_the_double_charge_stays_fixed(yieldstar):
            fixed = ys.load_scenario({str(tmp_path / "saga_fixed.py")!r})
            run = yieldstar.assert_fixed({str(found.artifact_path)!r}, fixed)
            assert run.regression.fixed

        def test_the_bug_is_not(yieldstar):
            buggy = ys.load_scenario({str(scenario)!r})
            yieldstar.assert_fixed({str(found.artifact_path)!r}, buggy)
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*card.charged happened 2 times for order=7*"])


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
