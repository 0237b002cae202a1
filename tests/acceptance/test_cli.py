"""The ``yieldstar-sim`` command, run as a user runs it: in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import yieldstar_sim as ys

CLI = [sys.executable, "-m", "yieldstar_sim.cli"]


def bundled_names() -> list[str]:
    from yieldstar_sim.simulation.scenario_files import bundled_scenarios

    return list(bundled_scenarios())


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize("runtime", ["duckdb", "memory"])
def test_demo_replays_the_lost_start_and_draws_one_ship_order(tmp_path: Path, runtime: str) -> None:
    result = run("demo", "--runtime", runtime, "--out", "graphs", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert report["ship_orders"] == ["@ship-order:order-42/ship"]
    assert report["couriers"] == 1
    events = report["events"]
    assert any(
        "rejected (InjectedFailure: injected failure at start.after_commit)" in e for e in events
    )
    shipped = 'completed with result {"shipment": "@ship-order:order-42/ship"}'
    assert any(shipped in e for e in events)
    assert sum("effect courier.booked" in e for e in events) == 1
    image = tmp_path / "graphs" / "order-42-graph.png"
    assert image.read_bytes().startswith(b"\x89PNG")


def test_demo_keeps_its_records_in_a_duckdb_file(tmp_path: Path) -> None:
    result = run("demo", "--db", "run.duckdb", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "one ship-order, one courier" in result.stdout
    import duckdb

    with duckdb.connect(str(tmp_path / "run.duckdb"), read_only=True) as db:
        rows = db.execute(
            "select caller_execution_id, step_key, target_execution_id from start_requests"
        ).fetchall()
    assert rows == [("order-42", "ship", "@ship-order:order-42/ship")]
    again = run("demo", "--db", "run.duckdb", cwd=tmp_path)
    assert again.returncode == 2
    assert "already holds order-42" in again.stderr
    assert "Traceback" not in again.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["demo", "--db", "missing/run.duckdb"], "does not exist"),
        (["demo", "--db", "."], "is a folder"),
        (["demo", "--db", "not-a-db.txt"], "is a text file, not a DuckDB database"),
        (["demo", "--out", "file.txt"], "output"),
    ],
)
def test_bad_input_gets_one_line_and_exit_code_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "not-a-db.txt").write_text("hello")
    (tmp_path / "file.txt").write_text("hello")
    result = run(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_command_is_a_usage_error(tmp_path: Path) -> None:
    result = run("frobnicate", cwd=tmp_path)
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_list_names_every_bundled_scenario_with_its_story(tmp_path: Path) -> None:
    result = run("list", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    stories = json.loads(result.stdout)["scenarios"]
    assert stories["trigger-in-step"].startswith("RFC 003's Problem")
    assert stories["durable-start"].startswith("RFC 003's fix")
    assert len(stories) == len(bundled_names())


def test_list_faults_names_every_fault_kind_and_op_from_the_simulators_tables(
    tmp_path: Path,
) -> None:
    from yieldstar_sim.simulation.faults import CHOICE_POINT_OPS, FAULT_KINDS, KIND_EFFECTS

    listed = run("list", "--faults", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    faults = json.loads(listed.stdout)
    assert list(faults["fault_kinds"]) == [str(kind) for kind in FAULT_KINDS]
    assert faults["fault_kinds"]["crash_after"] == KIND_EFFECTS["crash_after"]
    assert faults["ops"] == CHOICE_POINT_OPS
    text = run("list", "--faults", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    for name in [*faults["fault_kinds"], *faults["ops"]]:
        assert f"\n  {name} " in text.stdout
    assert "lease expires" in text.stdout


def test_list_faults_says_where_explore_places_each_kind_as_the_simulator_does(
    tmp_path: Path,
) -> None:
    # It said "a call's faults at calls", and explore puts a crash and a freeze at elapses too.
    from yieldstar_sim.simulation.faults import FAULT_KINDS, applies_at

    text = run("list", "--faults", cwd=tmp_path).stdout
    assert "a stall and a skew at elapses, a crash and a freeze at calls and elapses" in text
    at_elapses = {str(k) for k in FAULT_KINDS if applies_at(k, "elapse", exploring=True)}
    at_calls = {str(k) for k in FAULT_KINDS if applies_at(k, "put_step", exploring=True)}
    assert at_elapses == {"crash", "freeze", "stall", "skew"}
    events = {"lose_event", "duplicate_event", "delay_event"}
    assert at_calls == {str(k) for k in FAULT_KINDS} - {"stall", "skew", "world_error", *events}
    assert "a world_error at a body's calls to the outside world" in text
    at_world = {str(k) for k in FAULT_KINDS if applies_at(k, "store_write", exploring=True)}
    assert at_world == {"world_error"}
    assert "lose_event, duplicate_event and delay_event at a sender's send_event" in text
    at_sends = {str(k) for k in FAULT_KINDS if applies_at(k, "send_event", exploring=True)}
    assert at_sends == at_calls | events


def test_run_the_fix_exits_0_and_writes_graph_trace_and_artifact(tmp_path: Path) -> None:
    # What `make demo` runs; its output is read whole on a first visit, so it stays short: the
    # story, the trace a line an event (long values cut), the verdict and the files.
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text(encoding="utf-8")
    assert "$(BIN)/yieldstar-sim run durable-start --out out\n" in makefile
    result = run("run", "durable-start", "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) <= 40, result.stdout
    assert max(map(len, lines)) <= 150, result.stdout
    assert lines[0] == (
        "runtime: duckdb (run's default: DuckDB, a durable runtime; explore searches on memory, "
        "--runtime chooses)"
    )
    assert lines[1].startswith("durable-start: RFC 003's fix")
    assert "durable-start (seed 0, duckdb): ok: every invariant held" in result.stdout
    assert "fault    crash before" in result.stdout
    out = tmp_path / "out"
    assert (out / "durable-start-seed0-graph.png").read_bytes().startswith(b"\x89PNG")
    assert (out / "durable-start-seed0-trace.jsonl").read_text().count("\n") > 10
    assert json.loads((out / "durable-start-seed0.replay.json").read_text())["seed"] == 0


def test_run_the_problem_exits_1_and_its_artifact_replays(tmp_path: Path) -> None:
    result = run("run", "trigger-in-step", "--runtime", "memory", "--json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert {v["invariant"] for v in report["violations"]} == {
        "at most one admitted execution per step",
        "at_most_once(courier.booked, by=order)",
    }
    replayed = run("replay", report["artifact"], "--runtime", "duckdb", "--json", cwd=tmp_path)
    assert replayed.returncode == 1, replayed.stderr
    assert [v["message"] for v in json.loads(replayed.stdout)["violations"]] == [
        v["message"] for v in report["violations"]
    ]
    # One name for a violation's sentence: the JSON's "message" is the Python API's .message.
    api = ys.simulate(ys.load_scenario("trigger-in-step"), seed=0, runtime="memory")
    assert [sorted(v) for v in report["violations"]] == [["artifact", "invariant", "message"]] * 2
    assert {v["invariant"]: v["message"] for v in report["violations"]} == {
        v.invariant: v.message for v in api.violations
    }


def test_run_a_scenario_file(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text(
        "import yieldstar_sim as ys\n"
        "@ys.workflow('hello')\n"
        "def hello(step, params):\n"
        "    yield from step.run('greet', lambda: step.world.effect('greeted'))\n"
        "scenario = ys.Scenario(name='mine', workflows=[hello], triggers=[ys.Trigger('hello')],\n"
        "    invariants=[ys.at_most_once('greeted')])\n"
    )
    result = run("run", "mine.py", "--runtime", "memory", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "mine (seed 0, memory): ok" in result.stdout


@pytest.mark.parametrize(
    ("args", "files", "message"),
    [
        (
            ["run", "no-such-scenario"],
            {},
            "unknown scenario 'no-such-scenario'; `yieldstar-sim list` names the",
        ),
        (
            ["run", "empty.py"],
            {"empty.py": "x = 1\n"},
            "does not define `scenario = ys.Scenario(...)`",
        ),
        (
            ["run", "boom.py"],
            {"boom.py": "raise ValueError('boom')\n"},
            "'boom.py' raised ValueError on import, at line 1: boom",
        ),
        (["replay", "missing.json"], {}, "no artifact file 'missing.json'"),
        (["replay", "bad.json"], {"bad.json": "{"}, "corrupt JSON"),
        (
            ["replay", "other.json"],
            {"other.json": '{"format": "x"}'},
            "is not a yieldstar-sim replay artifact",
        ),
        (["run", "durable-start", "--seed", "x"], {}, "invalid int value"),
    ],
)
def test_bad_scenarios_and_artifacts_get_one_line(
    tmp_path: Path, args: list[str], files: dict[str, str], message: str
) -> None:
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    result = run(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_explore_finds_the_double_courier_and_its_artifact_replays_on_duckdb(
    tmp_path: Path,
) -> None:
    result = run("explore", "trigger-in-step", "--max-faults", "1", "--json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    courier = next(
        v
        for v in report["violations"]
        if v["invariant"] == "at_most_once(courier.booked, by=order)"
    )
    assert courier["faults"] == ["crash before w2's put_step of step ship in order-42"]
    assert courier["message"].startswith("courier.booked happened 2 times for order=42")
    assert "explanation" not in courier
    assert report["runtime_mismatches"] == []
    assert report["grid"] == {"png": "out/trigger-in-step-explore.png"}
    for number, found in enumerate(report["violations"], start=1):
        stem = f"out/trigger-in-step-violation-{number}"
        assert found["divergence"] == {"png": f"{stem}-divergence.png"}
        assert found["graph"] == {"png": f"{stem}-graph.png"}
    for path in [report["grid"]["png"], courier["divergence"]["png"], courier["graph"]["png"]]:
        assert (tmp_path / path).read_bytes().startswith(b"\x89PNG")
    replayed = run("replay", courier["artifact"], "--runtime", "duckdb", "--quiet", cwd=tmp_path)
    assert replayed.returncode == 1
    assert "courier.booked happened 2 times" in replayed.stdout


def test_explore_lists_its_pictures_in_the_formats_asked_for(tmp_path: Path) -> None:
    result = run(
        "explore", "trigger-in-step", "--no-confirm", "--format", "svg,dot", "--out", "pics",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    listed = {
        line.split(": ", 1)[1]
        for line in result.stdout.splitlines()
        if line.startswith(("grid (", "violation "))
    }
    assert listed == {
        "pics/trigger-in-step-explore.svg",
        "pics/trigger-in-step-violation-1-divergence.svg",
        "pics/trigger-in-step-violation-1-graph.svg",
        "pics/trigger-in-step-violation-1-graph.dot",
        "pics/trigger-in-step-violation-2-divergence.svg",
        "pics/trigger-in-step-violation-2-graph.svg",
        "pics/trigger-in-step-violation-2-graph.dot",
    }
    for path in listed:
        assert (tmp_path / path).stat().st_size > 0
    nothing = run("explore", "durable-start", "--no-confirm", "--json", cwd=tmp_path)
    assert nothing.returncode == 0, nothing.stderr
    assert json.loads(nothing.stdout)["grid"] == {"png": "out/durable-start-explore.png"}


def test_explore_the_fix_with_two_faults_finds_nothing_and_says_what_it_covered(
    tmp_path: Path,
) -> None:
    result = run("explore", "durable-start", "--max-faults", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "no invariant was violated" in result.stdout
    assert "schedules run" in result.stdout
    assert "skipped as equivalent" in result.stdout
    assert "exhausted the bound: all " in result.stdout


def test_explore_gives_the_same_answer_for_one_or_two_jobs_and_the_same_seed(
    tmp_path: Path,
) -> None:
    answers = []
    for jobs in ("1", "2", "2"):
        result = run(
            "explore", "trigger-in-step", "--max-faults", "2", "--all", "--seed", "3",
            "--jobs", jobs, "--no-confirm", "--json", "--out", f"out{len(answers)}", cwd=tmp_path,
        )  # fmt: skip
        assert result.returncode == 1, result.stderr
        report = json.loads(result.stdout)
        for violation in report["violations"]:
            for path in ("artifact", "divergence", "graph"):
                violation.pop(path)
        report.pop("elapsed_seconds")
        report.pop("grid")
        answers.append(report)
    assert answers[0] == answers[1] == answers[2]


def test_explore_with_two_jobs_confirms_and_draws_what_one_job_does_byte_for_byte(
    tmp_path: Path,
) -> None:
    # --jobs 2 confirms on the worker processes and draws in a picture process of its own
    answers = []
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}"
        result = run(
            "explore", "trigger-in-step", "--all", "--jobs", jobs, "--json", "--out", out.name,
            cwd=tmp_path,
        )  # fmt: skip
        assert result.returncode == 1, result.stderr
        report = json.loads(result.stdout.replace(out.name, "OUT"))
        report.pop("elapsed_seconds")
        files = {path.name: path.read_bytes() for path in sorted(out.iterdir())}
        answers.append((report, files))
    assert answers[0] == answers[1]
    report, files = answers[0]
    assert report["confirmations"] == [
        "confirmed on duckdb: 2 violation(s) and 3 passing schedule(s) replayed, 0 mismatch(es)"
    ]
    assert "trigger-in-step-explore.png" in files
    assert "trigger-in-step-violation-1-divergence.png" in files


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["explore", "durable-start", "--max-faults", "-1"], "--max-faults must be 0 or more"),
        (["explore", "durable-start", "--budget", "0"], "--budget must be at least 1"),
        (["explore", "durable-start", "--jobs", "0"], "--jobs must be at least 1"),
        (["explore", "nope"], "unknown scenario 'nope'"),
        (["explore", "durable-start", "--strategy", "magic"], "invalid choice: 'magic'"),
    ],
)
def test_explore_bad_input(tmp_path: Path, args: list[str], message: str) -> None:
    result = run(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_explore_exhaustive_states_its_completeness_and_writes_the_state_graph(
    tmp_path: Path,
) -> None:
    result = run(
        "explore", "booking-race-fixed", "--strategy", "exhaustive", "--max-faults", "0",
        "--no-confirm", "--json", "--format", "svg,graphml", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["completeness"]["exhausted"] is True
    assert report["completeness"]["statement"].startswith("verified: ")
    assert (tmp_path / report["state_graph"]["graphml"]).is_file()
    cut = run(
        "explore", "booking-race-fixed", "--strategy", "exhaustive", "--budget", "1",
        "--no-confirm", cwd=tmp_path,
    )  # fmt: skip
    assert cut.returncode == 3
    assert "not exhausted: the budget of 1 schedule cut the search" in cut.stdout
    assert "verified" not in cut.stdout


def test_exhaustive_options_need_the_exhaustive_strategy(tmp_path: Path) -> None:
    result = run("explore", "booking-race", "--order", "shortest", cwd=tmp_path)
    assert result.returncode == 2
    assert "--order is an option of --strategy exhaustive only" in result.stderr


def test_exhaustive_searches_in_the_processes_jobs_asks_for(tmp_path: Path) -> None:
    result = run(
        "explore", "durable-start", "--strategy", "exhaustive", "--jobs", "2", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    statement = report["completeness"]["statement"]
    assert statement.startswith("verified: ")
    assert "searched by 2 processes sharing their states" in statement
    assert report["completeness"]["progress"]["processes"] == 2


@pytest.mark.parametrize("strategy", ["systematic", "exhaustive"])
def test_many_faults_without_a_budget_are_refused_not_searched_forever(
    tmp_path: Path, strategy: str
) -> None:
    result = run("explore", "durable-start", "--strategy", strategy, "--max-faults", "99",
                 cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith("usage: yieldstar-sim explore ")  # flags: the usage, then
    assert "--max-faults 99 tries every combination of 99 faults" in result.stderr.splitlines()[-1]
    budgeted = run("explore", "booking-race", "--strategy", strategy, "--max-faults", "99",
                   "--budget", "3", "--no-confirm", "--quiet", cwd=tmp_path)  # fmt: skip
    assert budgeted.returncode in (1, 3), budgeted.stderr


def test_a_sampling_strategy_takes_many_faults_it_samples_within_its_default_budget(
    tmp_path: Path,
) -> None:
    result = run("explore", "durable-start", "--strategy", "random", "--max-faults", "5",
                 "--no-confirm", "--quiet", cwd=tmp_path)  # fmt: skip
    assert result.returncode in (0, 1, 3), result.stderr
    assert "--max-faults" not in result.stderr


def test_a_state_space_too_big_to_draw_is_said_not_silently_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from yieldstar_sim import cli
    from yieldstar_sim.views import statespace_bounds

    # booking-race-fixed: 13 states searched (23 without partial-order reduction)
    monkeypatch.setattr(statespace_bounds, "GRAPHED_AT_MOST", 10)
    code = cli.main(["explore", "booking-race-fixed", "--strategy", "exhaustive",
                     "--max-faults", "0", "--no-confirm", "--out", str(tmp_path)])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "state graph: not drawn: 13 states, more than the 10 a picture can show" in out
    assert not list(tmp_path.glob("*-states.*"))


def test_a_state_space_kept_in_part_is_not_drawn_as_if_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A picture of the first states kept could say "no state violates" of a search whose
    # violation came later.
    from yieldstar_sim import cli
    from yieldstar_sim.simulation.explorer.exhaustive import ExhaustiveSearch

    monkeypatch.setattr(ExhaustiveSearch, "graph_states", 10)
    code = cli.main(["explore", "booking-race-fixed", "--strategy", "exhaustive",
                     "--max-faults", "0", "--no-confirm", "--out", str(tmp_path)])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "state graph: not drawn: the search kept the first 10 of 13 states" in out
    assert not list(tmp_path.glob("*-states.*"))


def test_the_state_graph_of_a_cut_search_says_its_states_are_not_all_there_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "75,028 distinct states ... drawn: no state violates" was the picture of a search its
    # time budget cut: shown alone in a review, it read as a verified space.
    from yieldstar_sim import cli
    from yieldstar_sim.views import statespace

    titles: list[str] = []
    draw = statespace.draw_state_graph

    def drawn(*args: Any, **kwargs: Any) -> Any:
        figure = draw(*args, **kwargs)
        titles.append(" ".join(figure.axes[0].get_title().split()))
        return figure

    monkeypatch.setattr(statespace, "draw_state_graph", drawn)
    code = cli.main(["explore", "booking-race-fixed", "--strategy", "exhaustive",
                     "--max-faults", "1", "--budget", "3", "--no-confirm",
                     "--out", str(tmp_path)])  # fmt: skip
    assert code == 3  # incomplete
    assert titles
    assert "distinct states reached, not all there are: the budget of 3 schedules cut the " \
        "search" in titles[0]  # fmt: skip


def test_a_state_space_past_a_few_hundred_states_is_drawn_bounded(tmp_path: Path) -> None:
    from yieldstar_sim import cli

    code = cli.main(["explore", "durable-start", "--strategy", "exhaustive", "--max-faults", "1",
                     "--no-confirm", "--out", str(tmp_path)])  # fmt: skip
    assert code == 0
    assert (tmp_path / "durable-start-states.png").stat().st_size > 0


def test_a_confirm_runtime_that_cannot_open_is_refused_before_the_search(tmp_path: Path) -> None:
    # It was found after the whole search, as "ArtifactError: the artifact does not replay".
    import os

    env = {key: value for key, value in os.environ.items() if key != "YIELDSTAR_PG_DSN"}
    result = subprocess.run(
        [*CLI, "explore", "booking-race", "--confirm", "postgres", "--out", "found"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith("yieldstar-sim: error: --confirm postgres: runtime 'postgres'")
    assert "ArtifactError" not in result.stderr
    assert not (tmp_path / "found").exists() or not list((tmp_path / "found").iterdir())
