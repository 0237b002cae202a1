"""The CLI's verdicts, as a user meets them: exit 0 ok, 1 violated, 2 bad input, 3 incomplete,
130 interrupted; never a green verdict for a scenario that did not test what it says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "yieldstar_sim.cli"]
CASES = Path(__file__).parents[1] / "scenarios" / "verdicts"


#: The verdicts are what these tests read, so they ask for no picture (the JSON graph only):
#: drawing a PNG was two thirds of each command's time. Pictures of such runs are drawn in
#: test_a_body_that_takes_time_draws here, test_cli.py and test_views_never_crash.py.
NO_PICTURES = ("--format", "json")


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def run_case(name: str, cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run a case file; a --format among ``extra`` comes later and wins over NO_PICTURES."""
    command = ("run", str(CASES / f"{name}.py"), "--runtime", "memory", *NO_PICTURES, *extra)
    return cli(*command, cwd=cwd)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("yieldstar-sim: error: ")
    return line


@pytest.mark.parametrize(
    "name",
    [
        "start_unknown",
        "delay_without_yield_from",
        "run_without_yield_from",
        "all_unpacked_without_yield_from",
        "run_listed_without_yield_from",
        "world_outside_step",
        "mismatch_unexpected",
        "expected_other_failure",
        "exit0_body",
        "exit3_body",
        "exit_workflow",
    ],
)
def test_a_workflow_that_fails_is_violated_not_ok(name: str, tmp_path: Path) -> None:
    result = run_case(name, tmp_path, "--json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert (report["ok"], report["verdict"]) == (False, "violated")
    (violation,) = report["violations"]
    assert violation["invariant"] == "executions end as expected"
    assert violation["message"]


def test_sys_exit_in_a_body_is_reported_not_obeyed(tmp_path: Path) -> None:
    result = run_case("exit0_body", tmp_path, "--quiet")
    assert result.returncode == 1
    assert "ExitCalled: step body 'bye' called sys.exit(0)" in result.stdout


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("loop_steps", "cut after max_points=300 choice points"),
        ("loop_delays", "cut at max_time=3600s of virtual time"),
    ],
)
def test_a_run_cut_by_its_budget_exits_3(name: str, reason: str, tmp_path: Path) -> None:
    result = run_case(name, tmp_path, "--json")
    assert result.returncode == 3, result.stderr
    report = json.loads(result.stdout)
    assert (report["ok"], report["verdict"]) == (False, "incomplete")
    assert report["incomplete"].startswith(reason)
    text = run_case(name, tmp_path, "--quiet")
    assert text.returncode == 3
    assert f"incomplete: {reason}" in text.stdout


@pytest.mark.parametrize("name", ["spin_workflow", "spin_body"])
def test_code_that_spins_times_out_as_incomplete(name: str, tmp_path: Path) -> None:
    result = run_case(name, tmp_path, "--timeout", "0.5", "--quiet")
    assert result.returncode == 3, result.stderr
    assert "incomplete: timed out after 0.5s of wall-clock time in " in result.stdout


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("spin_import", "did not finish importing within 0.5s"),
        ("exit_import", "called sys.exit(0) on import"),
        ("fault_typo_op", "unknown fault op 'putstep' (did you mean 'put_step'?); the ops are"),
        ("fault_typo_worker", "names worker 'w9', but the workers are w1, w2"),
        ("unknown_workflow", "ys.Trigger('shipp-order') names no workflow of the scenario (did"),
        ("fault_typo_step", "the fault 'crash before put_step of step shipp' matches no choice"),
        ("invariant_typo", "at_most_once(courier.bookd, by=order) watches the effect 'courier"),
        ("recovery_limit_zero", "max_recovery_attempts must be a whole number >= 1 (how many"),
        ("recovery_limit_negative", "max_recovery_attempts must be a whole number >= 1 (how"),
        ("recovery_limit_text", "or None (no limit), not '3'"),
        ("invariant_typo_by", "counts courier.booked by its field 'ordr' (did you mean 'order'"),
        (
            "trigger_params_not_plain",
            "ys.Trigger('charge', execution_id='charge-1') has params the runtime refuses "
            "(params.when: datetime.datetime is not a durable value)",
        ),
    ],
)
def test_a_mistake_in_a_scenario_file_is_bad_input(name: str, says: str, tmp_path: Path) -> None:
    line = one_line_error(run_case(name, tmp_path, "--timeout", "0.5"))
    assert says in line
    explored = cli("explore", str(CASES / f"{name}.py"), "--timeout", "0.5", cwd=tmp_path)
    assert says in one_line_error(explored)


def test_an_invariant_that_watches_nothing_is_said_beside_the_verdict(tmp_path: Path) -> None:
    text = run_case("invariant_unwatched", tmp_path, "--quiet")
    assert text.returncode == 0
    assert "warning: at_most_once(refund.issued, by=order) watched nothing" in text.stdout
    report = json.loads(run_case("invariant_unwatched", tmp_path, "--json").stdout)
    assert report["warnings"][0].startswith("at_most_once(refund.issued, by=order) watched")
    explored = cli(
        "explore", str(CASES / "invariant_unwatched.py"), "--no-confirm", *NO_PICTURES,
        cwd=tmp_path,
    )  # fmt: skip
    assert explored.returncode == 0
    assert "warning: at_most_once(refund.issued" in explored.stdout


def test_a_refused_trigger_is_an_event_and_the_run_goes_on(tmp_path: Path) -> None:
    result = run_case("duplicate_trigger", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "trigger of ship as order-42 refused: EXECUTION_EXISTS" in result.stdout


@pytest.mark.parametrize("command", ["run", "replay"])
def test_a_body_that_takes_time_draws(command: str, tmp_path: Path) -> None:
    """The views crashed with a math domain error on this trace."""
    result = run_case("elapse_effect", tmp_path, "--format", "png,svg,html")
    assert result.returncode == 0, result.stderr
    if command == "replay":
        artifact = tmp_path / "out" / "elapse-effect-seed0.replay.json"
        result = cli(
            "replay", str(artifact), "--scenario", str(CASES / "elapse_effect.py"), "--format",
            "png", "--out", "again", cwd=tmp_path,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "elapse-effect-seed0-graph.png").read_bytes()[:4] == b"\x89PNG"


def test_explore_says_what_it_covered(tmp_path: Path) -> None:
    result = cli("explore", "durable-start", "--no-confirm", "--json", *NO_PICTURES, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["verdict"], report["exhausted"]) == ("ok", True)
    assert report["coverage"].startswith("exhausted the bound: all ")
    budget = cli(
        "explore", "durable-start", "--no-confirm", "--budget", "3", *NO_PICTURES, cwd=tmp_path
    )
    assert budget.returncode == 3
    assert "incomplete" in budget.stdout
    assert "the budget of 3 schedules cut the search" in budget.stdout


def test_explore_all_lists_the_faults_that_broke_it(tmp_path: Path) -> None:
    result = cli(
        "explore", "trigger-in-step", "--all", "--no-confirm", "--json", *NO_PICTURES, cwd=tmp_path
    )
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert "w2 put_step order-42/ship" in report["broken_by"]["crash"]
    assert report["violations"][0]["message"]


def test_ctrl_c_in_explore_exits_130_and_keeps_what_it_found(tmp_path: Path) -> None:
    result = cli(
        "explore", str(CASES / "interrupted_explore.py"), "--all", "--no-confirm", "--out", "found",
        *NO_PICTURES,
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 130, result.stdout + result.stderr
    # The eighth run: the first checks the scenario's names (simulate), the search ran 6.
    assert "interrupted (Ctrl-C) after 6 schedules run under " in result.stdout
    assert "VIOLATED" in result.stdout
    assert "yieldstar-sim: interrupted" in result.stderr
    assert (tmp_path / "found" / "interrupted-explore-violation-1.replay.json").is_file()


def test_a_bug_that_needs_a_draw_is_found_by_explore_with_no_fault(tmp_path: Path) -> None:
    result = cli(
        "explore", str(CASES / "unlucky_route.py"), "--max-faults", "0", "--no-confirm",
        *NO_PICTURES, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert "VIOLATED charged_on_every_route" in result.stdout


def test_an_adapter_that_saves_less_than_it_keeps_is_a_one_line_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [*CLI, "explore", "durable-start", "--strategy", "exhaustive", "--max-faults", "0",
         "--runtime", "counting_claims:CountingClaims", "--no-confirm", *NO_PICTURES],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(CASES)},
    )  # fmt: skip
    line = one_line_error(result)
    assert "the runtime adapter CountingClaims put back a state that went on differently" in line
    assert "verified" not in result.stdout
