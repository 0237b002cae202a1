"""First contact with the command line: it has what the API has (``run --fault`` places a
fault without editing the scenario file, ``explore --kinds`` chooses the fault kinds), a
mistake in either is the subcommand's usage error with the nearest name, under ``--json`` every
error is also one JSON object on stdout, and a scenario without a description prints no empty
story line."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from yieldstar_sim.cli import main

CLI = [sys.executable, "-m", "yieldstar_sim.cli"]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


Here = Callable[..., tuple[int, str, str]]


@pytest.fixture
def here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Here:
    """The command in this process, in tmp_path: (exit code, stdout, stderr). The many mistakes
    below are each one parse or one scenario load, and a fresh interpreter apiece cost the suite
    more than the checks; the subprocess tests here and in test_cli.py keep the real command."""
    monkeypatch.chdir(tmp_path)

    def call(*args: str) -> tuple[int, str, str]:
        try:
            code = main(list(args))
        except SystemExit as exit:  # argparse's errors end the process
            code = exit.code if isinstance(exit.code, int) else 2
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return call


def test_run_fault_adds_a_fault_to_the_scenarios_plan(tmp_path: Path) -> None:
    result = cli(
        "run", "durable-start", "--runtime", "memory", "--json", "--format", "json",
        "--fault", "freeze:op=put_step,step_key=ship,seconds=45", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["faults"] == [
        # Indexes count the body's effects, each a point (the outside world's ops).
        "crash before choice point #4 (w2 put_step order-42/ship)",  # the scenario's own
        "freeze 45s before choice point #11 (w1 put_step order-42/ship)",
    ]


def test_a_run_fault_that_matches_nothing_is_bad_input_not_a_green_verdict(
    tmp_path: Path,
) -> None:
    result = cli(
        "run", "durable-start", "--runtime", "memory", "--fault", "crash:step_key=shp",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    assert (
        "the fault 'crash before any call of step shp' matches no choice point of the run; no "
        "step 'shp' (did you mean 'ship'?) runs"
    ) in result.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["run", "durable-start", "--fault", "crash:op=put_stp"], "(did you mean 'put_step'?)"),
        (["run", "durable-start", "--fault", "crash:stepkey=x"], "(did you mean 'step_key'?)"),
        (["run", "durable-start", "--fault", "crsh"], "(did you mean 'crash'?)"),
        (["run", "durable-start", "--fault", "crash:at=two"], "at is a whole number"),
        (["explore", "durable-start", "--kinds", "crash,frez"], "(did you mean 'freeze'?)"),
        (["explore", "durable-start", "--kinds", ","], "name one or more fault kinds"),
    ],
)
def test_a_mistake_in_a_fault_flag_is_the_subcommands_usage_error(
    args: list[str], says: str, tmp_path: Path
) -> None:
    result = cli(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(f"usage: yieldstar-sim {args[0]} ")  # not the top level's
    assert says in result.stderr.splitlines()[-1]


def test_explore_kinds_tries_only_those_kinds(tmp_path: Path) -> None:
    # No pictures (--format json): the schedules are what this reads.
    every = cli(
        "explore", "trigger-in-step", "--no-confirm", "--all", "--json", "--format", "json",
        cwd=tmp_path,
    )  # fmt: skip
    crash = cli(
        "explore", "trigger-in-step", "--no-confirm", "--all", "--json", "--format", "json",
        "--kinds", "crash",
        cwd=tmp_path,
    )  # fmt: skip
    assert (every.returncode, crash.returncode) == (1, 1), crash.stderr
    schedules = [json.loads(r.stdout)["schedules_run"] for r in (every, crash)]
    assert 0 < schedules[1] < schedules[0]


@pytest.mark.parametrize(
    "args",
    [
        ["run", "durable-strat", "--json"],
        ["explore", "durable-start", "--kinds", "nope", "--json"],
        ["run", "durable-start", "--runtime", "memory", "--json", "--fault", "crash:step_key=x"],
    ],
)
def test_under_json_an_error_is_one_json_object_on_stdout(args: list[str], tmp_path: Path) -> None:
    result = cli(*args, cwd=tmp_path)
    assert result.returncode == 2
    error = json.loads(result.stdout)
    assert error["exit"] == 2
    assert error["error"]
    assert "Traceback" not in result.stderr


def test_a_scenario_without_a_description_prints_no_empty_story_line(tmp_path: Path) -> None:
    (tmp_path / "trip.py").write_text(
        "import yieldstar_sim as ys\n\n"
        '@ys.workflow("trip")\n'
        "def trip(step, params):\n"
        '    yield from step.run("book", lambda: "ok")\n\n'
        'scenario = ys.Scenario(name="trip", workflows=[trip], triggers=[ys.Trigger("trip")])\n',
        encoding="utf-8",
    )
    result = cli("run", "trip.py", "--runtime", "memory", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == ["runtime: memory (chosen with --runtime)", "trip"]


def test_each_command_says_first_which_runtime_it_used_and_why(tmp_path: Path) -> None:
    # run used DuckDB, explore memory and a replay of explore's artifact memory, unsaid.
    (tmp_path / "trip.py").write_text(TRIP, encoding="utf-8")
    ran = cli("run", "trip.py", "--format", "json", cwd=tmp_path)
    assert ran.stdout.splitlines()[0] == (
        "runtime: duckdb (run's default: DuckDB, a durable runtime; explore searches on memory, "
        "--runtime chooses)"
    )
    explored = cli(
        "explore", "trip.py", "--no-confirm", "--format", "json", "--out", "exp", cwd=tmp_path
    )
    assert explored.stdout.splitlines()[0] == (
        "runtime: memory (explore's default: the memory reference runtime, fast enough to "
        "search every schedule; run's is DuckDB, --runtime chooses)"
    )
    replayed = cli(
        "replay", "out/trip-seed0.replay.json", "--scenario", "trip.py", "--format", "json",
        cwd=tmp_path,
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.splitlines()[0] == (
        "runtime: duckdb (the runtime the artifact was made on: explore makes its artifacts on "
        "memory, run on DuckDB; --runtime chooses)"
    )


def test_explore_says_it_stopped_at_the_first_violation_and_how_to_search_on(
    tmp_path: Path,
) -> None:
    # Its grid showed one fault kind, where the tutorial's Python call lists four.
    stopped = cli(
        "explore", "trigger-in-step", "--no-confirm", "--format", "json", "--out", "exp",
        cwd=tmp_path,
    )  # fmt: skip
    assert stopped.returncode == 1
    assert (
        "stopped at the first violation: --all searches every point and lists every fault "
        "kind that breaks it (ys.explore(..., stop_at_first=False))"
    ) in stopped.stdout.splitlines()
    quiet = cli(
        "explore", "trigger-in-step", "--no-confirm", "--format", "json", "--out", "exp",
        "--quiet", cwd=tmp_path,
    )  # fmt: skip
    assert "stopped at the first violation (--all searches every point)" in quiet.stdout
    every = cli(
        "explore", "trigger-in-step", "--no-confirm", "--format", "json", "--out", "exp", "--all",
        cwd=tmp_path,
    )  # fmt: skip
    assert "stopped at the first violation" not in every.stdout


TRIP = """\
import yieldstar_sim as ys


@ys.workflow("ship-order")
def ship_order(step, params):
    yield from step.run("book", lambda: step.world.effect("courier.booked", order=params["order"]))


@ys.workflow("charge-order")
def charge_order(step, params):
    yield from step.run("charge", lambda: step.world.effect("card.charged", order=params["order"]))
    yield from step.start("ship", "ship-order", {"order": params["order"]})


scenario = ys.Scenario(
    name="trip",
    workflows=[charge_order, ship_order],
    triggers=[ys.Trigger("charge-order", {"order": 1}, execution_id="o1")],
    faults=[ys.Fault("crash", op="put_step", step_key="ship")],
)
"""


@pytest.mark.parametrize(
    ("typo", "fixed", "says"),
    [
        (
            'ys.Trigger("charge-ordr"',
            'ys.Trigger("charge-order"',
            "'trip.py', line 15: scenario 'trip': ys.Trigger('charge-ordr') names no workflow of "
            "the scenario (did you mean 'charge-order'?)",
        ),
        (
            'op="put-step"',
            'op="put_step"',
            "'trip.py', line 19: unknown fault op 'put-step' (did you mean 'put_step'?)",
        ),
        ('Fault("crsh"', 'Fault("crash"', "unknown fault kind 'crsh' (did you mean 'crash'?)"),
        ('step_key="shp"', 'step_key="ship"', "no step 'shp' (did you mean 'ship'?) runs"),
        (
            'step_key="ship", worker="w-1")',
            'step_key="ship")',
            "names worker 'w-1' (did you mean 'w1'?), but the workers are w1, w2",
        ),
    ],
)
def test_a_typo_in_a_scenario_file_is_one_line_with_the_name_meant(
    typo: str,
    fixed: str,
    says: str,
    tmp_path: Path,
    here: Here,
) -> None:
    """What can be checked before running (or, for a step key, by the run itself) is a scenario
    error: exit 2, one line, never a verdict."""
    assert fixed in TRIP
    (tmp_path / "trip.py").write_text(TRIP.replace(fixed, typo), encoding="utf-8")
    code, out, err = here("run", "trip.py", "--runtime", "memory")
    assert code == 2, out
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith("yieldstar-sim: error: ")
    assert says in line


def test_a_typo_is_one_line_from_the_real_command_too(tmp_path: Path) -> None:
    typo = TRIP.replace('op="put_step"', 'op="put-step"')
    (tmp_path / "trip.py").write_text(typo, encoding="utf-8")
    result = cli("run", "trip.py", "--runtime", "memory", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "yieldstar-sim: error: 'trip.py', line 19: unknown fault op 'put-step' (did you mean "
        "'put_step'?); the ops are claim, put_step, record_wake, wait_for, start, start_child, "
        "cancel, acknowledge, release, trigger, send_event, wait_for_event, complete_attempt, "
        "elapse, complete, renew, draw, store_read, store_write, effect, commit (yieldstar-sim "
        "list --faults says what each is)\n"
    )


def test_the_scenario_file_without_typos_runs(tmp_path: Path) -> None:
    (tmp_path / "trip.py").write_text(TRIP, encoding="utf-8")
    result = cli(
        "run", "trip.py", "--runtime", "memory", "--quiet", "--format", "json", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr  # the durable start: one ship-order
    assert result.stdout.startswith("trip (seed 0, memory): ok")


def test_a_start_of_an_unknown_workflow_from_workflow_code_stays_a_verdict(tmp_path: Path) -> None:
    # The workflow's own bug, found by running it: a violated run, not bad input.
    typo = TRIP.replace('"ship", "ship-order"', '"ship", "ship-ordr"')
    (tmp_path / "trip.py").write_text(typo, encoding="utf-8")
    result = cli(
        "run", "trip.py", "--runtime", "memory", "--quiet", "--format", "json", cwd=tmp_path
    )
    assert result.returncode == 1, result.stderr
    assert "UnknownWorkflowError: no workflow named 'ship-ordr'" in result.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["run", "durable-strat"],
            "unknown scenario 'durable-strat' (did you mean 'durable-start'?)",
        ),
        (
            ["run", "trigger_in_step"],
            "unknown scenario 'trigger_in_step' (did you mean 'trigger-in-step'?)",
        ),
        (
            ["explore", "trigger_in_step.py"],
            "no scenario file 'trigger_in_step.py' (did you mean the bundled scenario "
            "'trigger-in-step'?)",
        ),
        (["replay", "nothing.replay.json"], "no artifact file 'nothing.replay.json'"),
    ],
)
def test_a_misspelt_scenario_is_one_line_with_the_name_meant(
    args: list[str], says: str, here: Here
) -> None:
    code, _, err = here(*args)
    assert code == 2
    (line,) = err.splitlines()
    assert line == f"yieldstar-sim: error: {says}" or line.startswith(
        f"yieldstar-sim: error: {says};"
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["rn", "durable-start"], "invalid choice: 'rn'"),
        (["explore", "durable-start", "--strategy", "exhaustiv"], "(did you mean 'exhaustive'?)"),
        (["run", "durable-start", "--runtime", "duckd"], "(did you mean 'duckdb'?)"),
        (["explore", "durable-start", "--max-faults", "-1"], "--max-faults must be 0 or more"),
        (["explore", "durable-start", "--max-depth", "3"], "an option of --strategy exhaustive"),
        (["run", "durable-start", "--runtime", "memory", "--db", "x.db"], "--db needs --runtime"),
        (["demo", "--runtime", "memory", "--db", "x.db"], "--db needs --runtime duckdb"),
    ],
)
def test_a_flag_mistake_is_the_subcommands_usage_then_one_line(
    args: list[str], says: str, here: Here
) -> None:
    """Whether argparse finds it or the command does (flags that do not go together), a flag
    mistake reads alike: the subcommand's usage, then one line from the subcommand."""
    code, _, err = here(*args)
    assert code == 2
    command = "" if args[0] == "rn" else f" {args[0]}"
    assert err.startswith(f"usage: yieldstar-sim{command} ")
    last = err.splitlines()[-1]
    assert last.startswith(f"yieldstar-sim{command}: error: ")
    assert says in last
    if args[0] == "rn":
        assert last.endswith("(did you mean 'run'?)")
    code, out, _ = here(*args, "--json")
    assert code == 2
    assert json.loads(out) == {"error": last.replace(": error: ", ": ", 1), "exit": 2}


def test_a_flag_mistake_from_the_real_command(tmp_path: Path) -> None:
    result = cli("explore", "durable-start", "--max-depth", "3", "--json", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("usage: yieldstar-sim explore ")
    assert json.loads(result.stdout) == {
        "error": "yieldstar-sim explore: --max-depth is an option of --strategy exhaustive only",
        "exit": 2,
    }
