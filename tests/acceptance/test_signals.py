"""Ctrl-C and SIGTERM stop the command at any moment keeping what it found (exit 130 and 143),
and nothing it started is left running. Each signal here is sent by the scenario itself at a
chosen moment, as a person or a supervisor would, so that the tests do not race the clock."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "yieldstar_sim.cli"]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

#: trigger-in-step, with a stand-in for the person (or the supervisor) who sends SIGNAL to the
#: command at the moment MOMENT names.
STORY = """
import os
import signal
import traceback

import yieldstar_sim as ys

base = ys.load_scenario("trigger-in-step")
COMMAND = os.getpid()  # loaded by the command before it forks its workers


def now() -> bool:
    return MOMENT


def send(run):
    if now() and not os.path.exists("sent"):
        open("sent", "w").close()
        os.kill(COMMAND, signal.SIGNAL)


scenario = ys.Scenario(
    name="stopped", workflows=base.workflows, triggers=base.triggers,
    invariants=[*base.invariants, send],
)
"""

#: While the command draws the violations it found (they are replayed to be drawn).
DRAWING = "any(f.name == 'write_exploration_pictures' for f in traceback.extract_stack())"
#: In a worker process of --jobs, mid-search.
SEARCHING = "os.getpid() != COMMAND"


def story(folder: Path, moment: str, sent: str) -> str:
    text = STORY.replace("MOMENT", moment).replace("SIGNAL", sent)
    (folder / "stopped.py").write_text(text)
    return "stopped.py"


def session_processes(leader: int) -> list[str]:
    """The processes still in the command's session (it was started as the leader of one)."""
    found = subprocess.run(
        ["ps", "-o", "pid=,stat=", "-s", str(leader)], capture_output=True, text=True, check=False
    )
    return [line for line in found.stdout.splitlines() if line.split()[1:2] != ["Z"]]


def command(folder: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """The command, in a session of its own: its result, and what of it still ran after."""
    process = subprocess.Popen(
        [*CLI, *args], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        # What 4fcd271 did: the command gone, its children holding the pipes open.
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"the command's processes were still running: {session_processes(process.pid)}")
    left = session_processes(process.pid)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr), left


def test_sigterm_mid_search_ends_every_process_and_keeps_what_was_found(tmp_path: Path) -> None:
    """SIGTERM reaches the command alone: on 4fcd271 it died at once and its two workers and
    its picture process ran on."""
    file = story(tmp_path, SEARCHING, "SIGTERM")
    result, left = command(tmp_path, "explore", file, "--all", "--jobs", "2", "--no-confirm")
    # Each message is the whole stderr: a traceback of another thread's is cut short otherwise.
    assert result.returncode == 128 + signal.SIGTERM, result.stdout + result.stderr
    assert result.stderr.splitlines()[-1].startswith("yieldstar-sim: interrupted"), result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert "interrupted (SIGTERM)" in result.stdout  # the report, of what the search had run
    assert left == []


def test_ctrl_c_while_drawing_keeps_the_report_and_the_artifacts(tmp_path: Path) -> None:
    """A Ctrl-C as the pictures were drawn lost the report on 4fcd271."""
    file = story(tmp_path, DRAWING, "SIGINT")
    result, left = command(tmp_path, "explore", file, "--no-confirm", "--json")
    assert result.returncode == 130, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line == (
        "yieldstar-sim: interrupted (while drawing: not every picture was drawn); what was "
        "found is above"
    )
    report = json.loads(result.stdout)
    assert report["verdict"] == "violated"
    saved = Path(tmp_path / report["violations"][0]["artifact"])
    assert json.loads(saved.read_text())["format"] == "yieldstar-sim/replay"
    assert left == []


BLOCKED = """
import os
import time

import yieldstar_sim as ys


def body():
    open("started", "w").close()
    while True:
        try:
            time.sleep(3600)
        except BaseException:
            if CATCHES:
                continue
            raise


@ys.workflow("w")
def w(step, params):
    yield from step.run("s", body)


scenario = ys.Scenario(name="blocked", workflows=[w], triggers=[ys.Trigger("w")], workers=1)
"""


@pytest.mark.parametrize(("catches", "signals"), [(False, 1), (True, 2)])
def test_sigterm_stops_a_run_blocked_in_user_code(
    tmp_path: Path, catches: bool, signals: int
) -> None:
    """No wall-clock limit (--timeout 0): SIGTERM interrupts the sleep; code that catches that
    too is ended by a second SIGTERM, at once."""
    (tmp_path / "blocked.py").write_text(BLOCKED.replace("CATCHES", str(catches)))
    process = subprocess.Popen(
        [*CLI, "run", "blocked.py", "--runtime", "memory", "--timeout", "0", "--quiet"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    for _ in range(signals):
        os.kill(process.pid, signal.SIGTERM)
        time.sleep(0.2)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert stderr.splitlines() == ["yieldstar-sim: interrupted"]
    assert session_processes(process.pid) == []


KILLED = """
import os
import signal

import yieldstar_sim as ys

COMMAND = os.getpid()


def body():
    if os.getpid() != COMMAND:  # in a worker of --jobs: the system kills it (out of memory)
        os.kill(os.getpid(), signal.SIGKILL)
    return 1


@ys.workflow("w")
def w(step, params):
    yield from step.run("s", body)
    yield from step.run("t", body)


scenario = ys.Scenario(name="killed", workflows=[w], triggers=[ys.Trigger("w")], workers=2)
"""


def test_a_worker_killed_under_the_search_makes_it_incomplete_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "killed.py").write_text(KILLED)
    result, left = command(tmp_path, "explore", "killed.py", "--jobs", "2", "--no-confirm")
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stderr.splitlines() == [
        "yieldstar-sim: incomplete: a worker process ended in the middle of the search (killed, "
        "or stopped past its time limit); nothing it ran is reported"
    ]
    assert left == []
