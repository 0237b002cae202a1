"""First contact with the command line: it has what the API has (``run --fault`` places a
fault without editing the scenario file, ``explore --kinds`` chooses the fault kinds), a
mistake in either is the subcommand's usage error with the nearest name, under ``--json`` every
error is also one JSON object on stdout, and a scenario without a description prints no empty
story line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "yieldstar_sim.cli"]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def test_run_fault_adds_a_fault_to_the_scenarios_plan(tmp_path: Path) -> None:
    result = cli(
        "run", "durable-start", "--runtime", "memory", "--json",
        "--fault", "freeze:op=put_step,step_key=ship,seconds=45", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["faults"] == [
        "crash before choice point #4 (w2 put_step order-42/ship)",  # the scenario's own
        "freeze 45s before choice point #12 (w2 put_step order-42/ship)",
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
    every = cli("explore", "trigger-in-step", "--no-confirm", "--all", "--json", cwd=tmp_path)
    crash = cli(
        "explore", "trigger-in-step", "--no-confirm", "--all", "--json", "--kinds", "crash",
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
    result = cli("run", "trip.py", "--runtime", "memory", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "trip"
