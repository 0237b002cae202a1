"""Hostile input at the command line: every refusal is exit 2 and one line without a
traceback, nothing is written outside --out, and an artifact never runs code it names."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "yieldstar_sim.cli"]

PAYLOAD = """
from pathlib import Path

import pytest
Path(__file__).with_name("PWNED").write_text("the payload ran")
"""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def refused(result: subprocess.CompletedProcess[str], words: str) -> None:
    """Exit 2, one line on stderr naming the problem, no traceback."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("yieldstar-sim: error: "), lines
    assert words in lines[0], lines[0]
    assert "Traceback" not in result.stderr


def test_replaying_a_mailed_artifact_does_not_run_its_payload(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "payload.py").write_text(PAYLOAD)
    artifact = {
        "format": "yieldstar-sim/replay",
        "version": 1,
        "scenario": {"name": "shop", "ref": "payload.py"},
        "seed": 0,
        "runtime": "memory",
        "schedule": [],
        "faults": [],
        "fingerprint": "sha256:0",
    }
    (inbox / "mailed.replay.json").write_text(json.dumps(artifact))
    result = cli("replay", "inbox/mailed.replay.json", "--out", "out", cwd=tmp_path)
    refused(result, "--scenario FILE")
    assert not (inbox / "PWNED").exists()
    assert not (tmp_path / "PWNED").exists()


def test_replay_with_a_chosen_scenario_file(tmp_path: Path) -> None:
    from yieldstar_sim.simulation.scenario_files import bundled_scenarios

    (tmp_path / "shop.py").write_bytes(bundled_scenarios()["trigger-in-step"].read_bytes())
    made = cli("run", "shop.py", "--runtime", "memory", "--format", "json", "--json", cwd=tmp_path)
    assert made.returncode == 1, made.stderr  # the Problem: two couriers
    artifact = json.loads(made.stdout)["artifact"]
    # In out/, the artifact is apart from its scenario file: it runs it only when named.
    refused(
        cli("replay", artifact, "--format", "json", cwd=tmp_path),
        "names the scenario file 'shop.py' outside the artifact's folder 'out', so it is not run",
    )
    beside = cli(
        "run", "shop.py", "--runtime", "memory", "--out", ".", "--format", "json", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert beside.returncode == 1, beside.stderr
    assert cli("replay", json.loads(beside.stdout)["artifact"], cwd=tmp_path).returncode == 1
    (tmp_path / "shop.py").write_text((tmp_path / "shop.py").read_text() + "\n# edited\n")
    refused(
        cli("replay", json.loads(beside.stdout)["artifact"], "--format", "json", cwd=tmp_path),
        "changed since",
    )
    (tmp_path / "trusted.py").write_bytes(bundled_scenarios()["trigger-in-step"].read_bytes())
    again = cli(
        "replay", artifact, "--scenario", "trusted.py", "--format", "json", "--quiet",
        cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 1, again.stderr
    assert "invariant violation" in again.stdout


HOSTILE_SCENARIO = """
import yieldstar_sim as ys

@ys.workflow("noop")
def noop(step, params):
    return None
    yield

scenario = ys.Scenario(name=NAME, workflows=[noop], triggers=[ys.Trigger("noop")], workers=1)
"""


def files_under(folder: Path) -> set[Path]:
    return {path for path in folder.rglob("*") if path.is_file()}


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/yieldstar-escaped", "a/../../b", ".."])
def test_a_hostile_scenario_name_writes_nothing_outside_out(tmp_path: Path, name: str) -> None:
    work = tmp_path / "deep" / "work"
    work.mkdir(parents=True)
    (work / "hostile.py").write_text(HOSTILE_SCENARIO.replace("NAME", repr(name)))
    before = files_under(tmp_path)
    escaped_tmp = Path("/tmp/yieldstar-escaped-seed0-trace.jsonl")
    result = cli(
        "run", "hostile.py", "--runtime", "memory", "--format", "json,dot,html", "--json",
        cwd=work,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    written = files_under(tmp_path) - before
    out = work / "out"
    assert written, "the run wrote its files"
    assert all(out in path.parents for path in written), written
    assert not escaped_tmp.exists()
    report = json.loads(result.stdout)
    for key in ("trace", "artifact", "graph"):
        assert (work / report[key]).resolve().parent == out.resolve()
    replayed = cli(
        "replay", report["artifact"], "--scenario", "hostile.py", "--format", "json", cwd=work
    )
    assert replayed.returncode == 0, replayed.stderr
    assert all(out in path.parents for path in files_under(tmp_path) - before)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs a folder nobody can write")
@pytest.mark.parametrize("command", [["run", "durable-start"], ["explore", "durable-start"]])
def test_an_unwritable_out_is_refused_before_the_run(tmp_path: Path, command: list[str]) -> None:
    result = cli(*command, "--out", "/proc", cwd=tmp_path)
    refused(result, "cannot write in the output folder '/proc'")
    assert result.stdout == ""  # refused before anything ran


def test_explore_saves_a_hostile_names_artifacts_inside_out(tmp_path: Path) -> None:
    from yieldstar_sim.simulation.scenario_files import bundled_scenarios

    work = tmp_path / "deep" / "work"
    work.mkdir(parents=True)
    source = bundled_scenarios()["trigger-in-step"].read_text()
    (work / "hostile.py").write_text(
        source.replace('name="trigger-in-step"', 'name="../../escaped"')
    )
    before = files_under(tmp_path)
    result = cli("explore", "hostile.py", "--no-confirm", "--json", cwd=work)
    assert result.returncode == 1, result.stderr
    written = files_under(tmp_path) - before
    assert written
    assert all(path.name.startswith("escaped-") for path in written), written
    assert all(work / "out" in path.parents for path in written), written


def test_jobs_above_the_cpus_warn_and_still_run(tmp_path: Path) -> None:
    result = cli("explore", "durable-start", "--jobs", "4096", "--no-confirm", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (warning,) = result.stderr.splitlines()
    assert warning.startswith("yieldstar-sim: warning: --jobs 4096 is more than the ")
    assert "no invariant was violated" in result.stdout


# --------------------------------------------------------------------------- --db reuse


def test_a_db_holding_an_earlier_run_is_refused_unless_continued(tmp_path: Path) -> None:
    first = cli("run", "durable-start", "--db", "run.duckdb", "--format", "json", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    kept = (tmp_path / "run.duckdb").read_bytes()
    again = cli("run", "frozen-worker", "--db", "run.duckdb", "--format", "json", cwd=tmp_path)
    refused(again, "already holds 2 execution(s) from an earlier run")
    assert "--continue-db" in again.stderr
    assert (tmp_path / "run.duckdb").read_bytes() == kept  # not even opened for writing
    replayed = cli(
        "replay", "out/durable-start-seed0.replay.json", "--db", "run.duckdb", cwd=tmp_path
    )
    refused(replayed, "already holds")
    continued = cli(
        "run", "durable-start", "--db", "run.duckdb", "--continue-db", "--format", "json",
        cwd=tmp_path,
    )  # fmt: skip
    # Asked for, and said plainly: order-42's trigger is refused (the ID exists), so nothing
    # runs again and the scenario's crash has no choice point to fire at.
    refused(continued, "the fault 'crash before put_step of step ship in order-42' matches no")


def test_a_db_that_is_not_a_duckdb_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("my notes\n")
    result = cli("run", "durable-start", "--db", "notes.txt", cwd=tmp_path)
    refused(result, "--db 'notes.txt' is a text file, not a DuckDB database")
    assert (tmp_path / "notes.txt").read_text() == "my notes\n"


@pytest.mark.parametrize("continued", [[], ["--continue-db"]])
def test_an_sqlite_db_is_named_and_nothing_is_fetched(tmp_path: Path, continued: list[str]) -> None:
    """DuckDB went looking for its sqlite extension on the internet for such a file (and
    under --continue-db said so in three lines)."""
    import sqlite3

    with sqlite3.connect(tmp_path / "app.db") as lite:
        lite.execute("create table executions (id text)")
    kept = (tmp_path / "app.db").read_bytes()
    result = cli("run", "durable-start", "--db", "app.db", *continued, cwd=tmp_path)
    refused(result, "--db 'app.db' is an SQLite database, not a DuckDB database")
    assert "extension" not in result.stderr
    assert (tmp_path / "app.db").read_bytes() == kept


@pytest.mark.parametrize("continued", [[], ["--continue-db"]])
def test_a_db_of_another_schema_is_refused_in_one_line(
    tmp_path: Path, continued: list[str]
) -> None:
    import duckdb

    with duckdb.connect(str(tmp_path / "old.duckdb")) as db:
        db.execute("create table executions (execution_id varchar, status varchar, note int)")
        db.execute("insert into executions values ('order-1', 'completed', 1)")
    result = cli("run", "durable-start", "--db", "old.duckdb", *continued, cwd=tmp_path)
    refused(
        result,
        "--db 'old.duckdb' holds an 'executions' table of another schema (an older "
        "yieldstar-sim's, or not yieldstar-sim's): 3 columns found where yieldstar-sim's has ",
    )
    assert "lacks seq, workflow_id" in result.stderr
    assert "has note besides" in result.stderr


@pytest.mark.parametrize("path", ["md:shop", "s3://bucket/run.duckdb"])
def test_a_db_an_extension_would_open_is_refused(tmp_path: Path, path: str) -> None:
    refused(
        cli("run", "durable-start", "--db", path, cwd=tmp_path),
        "names a database an extension opens",
    )


def test_replay_keeps_its_records_in_a_fresh_db(tmp_path: Path) -> None:
    import duckdb

    made = cli("run", "durable-start", "--format", "json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    replayed = cli(
        "replay", "out/durable-start-seed0.replay.json", "--db", "again.duckdb", "--format",
        "json", cwd=tmp_path,
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    with duckdb.connect(str(tmp_path / "again.duckdb"), read_only=True) as db:
        assert db.execute("select count(*) from executions").fetchall() == [(2,)]


# --------------------------------------------------------------------------- small contracts


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [*CLI, "run", "durable-start", "--format", "json"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.close()  # like `| head -0`: every write now meets a closed pipe
    stderr = process.stderr.read()
    process.stderr.close()
    assert process.wait(timeout=120) == -signal.SIGPIPE, stderr
    assert stderr == ""
    assert (tmp_path / "out" / "durable-start-seed0.replay.json").is_file()  # nothing lost


def test_explore_accepts_quiet_and_prints_one_verdict_line(tmp_path: Path) -> None:
    result = cli("explore", "trigger-in-step", "--quiet", "--no-confirm", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith("trigger-in-step: VIOLATED ")


def test_format_names_are_case_insensitive_like_export(tmp_path: Path) -> None:
    result = cli("run", "durable-start", "--format", "SVG,Json", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert set(json.loads(result.stdout)["exports"]) == {"svg", "json"}


def test_replay_writes_beside_the_run_without_overwriting_it(tmp_path: Path) -> None:
    made = cli("run", "durable-start", "--format", "json", "--json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    ran = json.loads(made.stdout)
    before = {path: path.read_bytes() for path in files_under(tmp_path / "out")}
    again = cli("replay", ran["artifact"], "--format", "json", "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    replayed = json.loads(again.stdout)
    assert {path: path.read_bytes() for path in before} == before
    assert replayed["trace"] != ran["trace"]
    assert replayed["artifact"] != ran["artifact"]
    assert "replayed" in Path(replayed["trace"]).name


def test_demo_speaks_in_words_not_python_reprs(tmp_path: Path) -> None:
    result = cli("demo", "--runtime", "memory", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Completed(" not in result.stdout
    assert "status=" not in result.stdout
    assert 'completed with result {"shipment": "@ship-order:order-42/ship"}' in result.stdout


# --------------------------------------------------------------------------- user code


BODY_SCENARIO = """
import yieldstar_sim as ys

class Mine(BaseException):
    pass

def body():
    BODY

@ys.workflow("w")
def w(step, params):
    CODE
    yield from step.run("s", body)

scenario = ys.Scenario(name="hostile", workflows=[w], triggers=[ys.Trigger("w")], workers=1)
"""


def user_code(folder: Path, *, body: str = "return None", code: str = "pass", top: str = "") -> str:
    """A scenario file whose step body, workflow code or import does what it is told."""
    text = BODY_SCENARIO.replace("BODY", body).replace("CODE", code)
    (folder / "hostile.py").write_text(top + "\n" + text)
    return "hostile.py"


@pytest.mark.parametrize(
    "raised", ["GeneratorExit('at import')", "Mine('at import')", "KeyboardInterrupt()"]
)
def test_a_scenario_file_that_raises_a_base_exception_on_import_is_refused(
    tmp_path: Path, raised: str
) -> None:
    name = raised.split("(", maxsplit=1)[0]
    top = f"class Mine(BaseException):\n    pass\nraise {raised}\n"
    result = cli("run", user_code(tmp_path, top=top), cwd=tmp_path)
    refused(result, f"'hostile.py' raised {name}")
    assert "on import, at line 3" in result.stderr


@pytest.mark.parametrize(
    ("where", "raised", "words"),
    [
        ("body", "GeneratorExit('boom')", "step body 's' raised GeneratorExit: boom"),
        ("body", "KeyboardInterrupt()", "step body 's' raised KeyboardInterrupt"),
        ("body", "Mine('mine')", "step body 's' raised Mine: mine"),
        ("code", "GeneratorExit('wf')", "the code of @w-1 raised GeneratorExit: wf"),
        ("code", "KeyboardInterrupt()", "the code of @w-1 raised KeyboardInterrupt"),
    ],
)
def test_user_code_that_raises_a_base_exception_is_a_violation_naming_it(
    tmp_path: Path, where: str, raised: str, words: str
) -> None:
    """A KeyboardInterrupt the code raises itself is its failure: the command, which handles
    SIGINT, knows no Ctrl-C came."""
    file = user_code(tmp_path, **{where: f"raise {raised}"})
    result = cli("run", file, "--runtime", "memory", "--quiet", "--format", "json", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert words in result.stdout


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("v = []\n    v.append(v)\n    return v", "result[0]: reference cycle back to"),
        ("v = []\n    for _ in range(200_000):\n        v = [v]\n    return v", "result[0][0]"),
    ],
)
def test_a_cyclic_or_deep_step_result_is_a_violation_not_a_recursion_error(
    tmp_path: Path, body: str, words: str
) -> None:
    file = user_code(tmp_path, body=body)
    result = cli("run", file, "--runtime", "memory", "--quiet", "--format", "json", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "RecursionError" not in result.stdout + result.stderr
    assert words in result.stdout


@pytest.mark.parametrize(
    "where",
    [{"body": "__import__('time').sleep(3600)"}, {"code": "__import__('time').sleep(3600)"}],
)
def test_user_code_that_blocks_is_cut_by_the_timeout(tmp_path: Path, where: dict[str, str]) -> None:
    file = user_code(tmp_path, **where)
    result = cli(
        "run", file, "--runtime", "memory", "--timeout", "0.5", "--quiet", "--format", "json",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 3, result.stdout + result.stderr
    assert "incomplete: timed out after 0.5s of wall-clock time in " in result.stdout


def test_a_limit_that_lands_in_the_drawing_is_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Wherever the wall-clock limit lands, the command says incomplete (exit 3): it once
    landed in the drawing of the graph, a traceback and exit 1."""
    import importlib

    from yieldstar_sim.cli import main
    from yieldstar_sim.simulation.deadline import RunTimedOut

    def cut(*args: object, **kwargs: object) -> object:
        raise RunTimedOut

    monkeypatch.setattr(importlib.import_module("yieldstar_sim.views.export"), "export", cut)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "durable-start", "--runtime", "memory", "--quiet"]) == 3
    (line,) = capsys.readouterr().err.splitlines()
    assert line == "yieldstar-sim: incomplete: cut by the wall-clock limit (--timeout)"


def test_code_that_outlives_its_limit_ends_the_command_in_one_line(tmp_path: Path) -> None:
    """The deadline's last resort, as the command sets it: code that catches every interrupt
    for GIVE_UP_SECONDS past its limit ends the command, incomplete."""
    script = "from yieldstar_sim import cli_signals\ncli_signals.give_up('step s of order-1')\n"
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert result.returncode == 3
    assert result.stderr == (
        "yieldstar-sim: incomplete: step s of order-1 still ran 5s past the wall-clock limit "
        "(--timeout), no interrupt stopped it; the command stops here, its files unwritten\n"
    )


# --------------------------------------------------------------------------- whole files


def _filled(limit: int) -> None:
    """In the child: a disk with ``limit`` bytes left per file (a write past it fails with
    EFBIG, as a full disk's does with ENOSPC)."""
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
@pytest.mark.parametrize(
    ("command", "limit"),
    [
        (["explore", "trigger-in-step", "--no-confirm"], 1000),  # not even an artifact fits
        (["explore", "trigger-in-step", "--no-confirm"], 20_000),  # the artifacts fit
        (["run", "trigger-in-step", "--format", "png,json"], 3000),
    ],
)
def test_a_full_disk_leaves_no_empty_or_partial_file(
    tmp_path: Path, command: list[str], limit: int
) -> None:
    """A disk that fills as an artifact is written left it empty on 4fcd271: every file is
    now written whole or not at all, what was found is still printed, and the error is one
    line."""
    result = subprocess.run(
        [*CLI, *command, "--out", "out"], cwd=tmp_path, capture_output=True, text=True,
        timeout=120, check=False, preexec_fn=lambda: _filled(limit),
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("yieldstar-sim: error: cannot write 'out/"), line
    assert ": File too large" in line
    assert "VIOLATED" in result.stdout or "violated" in result.stdout  # what was found
    for path in (tmp_path / "out").iterdir():
        assert not path.name.startswith("."), path  # no temporary file left behind
        assert path.stat().st_size > 0, path
        if path.suffix == ".json":
            json.loads(path.read_text())
        if path.suffix == ".png":
            assert path.read_bytes().endswith(b"IEND\xaeB`\x82")


def test_a_thread_user_code_leaves_running_does_not_keep_the_command_alive(
    tmp_path: Path,
) -> None:
    """Python waits for every non-daemon thread at exit: one a body started, sleeping, kept the
    command from ever ending after it had printed its verdict."""
    body = "__import__('threading').Thread(target=__import__('time').sleep, args=(3600,)).start()"
    file = user_code(tmp_path, body=body)
    result = cli("run", file, "--runtime", "memory", "--quiet", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok: every invariant held" in result.stdout


def test_what_the_command_prints_never_drives_the_terminal(tmp_path: Path) -> None:
    """A parameter, an effect or an error message is the user's to choose, and the trace and
    the verdict print them: an escape sequence in one set the terminal's title (or wrote its
    clipboard), a bidirectional override reordered the line."""
    hostile = "\x1b]0;pwned\x07\x1b[2J\x00\u202e"
    body = f"raise ValueError({hostile!r})"
    file = user_code(tmp_path, body=body)
    result = cli("run", file, "--runtime", "memory", "--format", "json", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    printed = result.stdout + result.stderr
    assert not {"\x1b", "\x07", "\x00", "\u202e"} & set(printed)
    assert "ValueError: \\x1b]0;pwned\\x07" in result.stdout  # shown, escaped
    scenario_error = user_code(tmp_path, top=f"raise ValueError({hostile!r})\n")
    refused(cli("run", scenario_error, cwd=tmp_path), "raised ValueError on import")
