"""The wall-clock limit holds over user code that blocks, as over code that spins: a body, workflow
code, an invariant or a scenario file's import that sleeps, waits on a lock or reads a socket
is cut, and the run is incomplete. Each test waits out a 0.3 s limit, no more."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation.deadline import Deadline, RunTimedOut

if TYPE_CHECKING:
    from collections.abc import Callable

LIMIT = 0.3


def _socket_read() -> bytes:
    mine, theirs = socket.socketpair()
    with mine, theirs:
        return mine.recv(1)  # nothing is ever sent


BLOCKING: list[Any] = [
    pytest.param(lambda: time.sleep(3600), id="sleep"),
    pytest.param(lambda: threading.Event().wait(), id="event"),
    pytest.param(_socket_read, id="socket"),
]


def _scenario(body: Callable[[], Any] | None = None, code: Callable[[], Any] | None = None) -> Any:
    @ys.workflow("w")
    def workflow(step: ys.StepRunner, params: Any) -> Any:
        if code is not None:
            code()
        if body is not None:
            yield from step.run("s", body)
        return None

    return ys.Scenario(
        name="blocks",
        workflows=[workflow],
        triggers=[ys.Trigger("w", execution_id="order-1")],
        workers=1,
    )


def _timed(run: Callable[[], Any]) -> tuple[Any, float]:
    started = time.monotonic()
    result = run()
    return result, time.monotonic() - started


@pytest.mark.parametrize("block", BLOCKING)
def test_a_body_that_blocks_is_cut_as_incomplete(block: Callable[[], Any]) -> None:
    run, took = _timed(lambda: ys.simulate(_scenario(body=block), runtime="memory", timeout=LIMIT))
    assert run.verdict == "incomplete", run.explain()
    assert run.incomplete.startswith("timed out after 0.3s of wall-clock time in step s of order-1")
    assert took < 10 * LIMIT


def test_workflow_code_that_blocks_is_cut_as_incomplete() -> None:
    scenario = _scenario(code=lambda: time.sleep(3600))
    run, took = _timed(lambda: ys.simulate(scenario, runtime="duckdb", timeout=LIMIT))
    assert run.verdict == "incomplete", run.explain()
    assert "in the workflow code of order-1" in (run.incomplete or "")
    assert took < 10 * LIMIT


def test_an_invariant_that_blocks_is_cut_as_incomplete() -> None:
    def waits(run: object) -> None:
        threading.Event().wait()

    scenario = _scenario()
    scenario.invariants = [waits]
    run = ys.simulate(scenario, runtime="memory", timeout=LIMIT)
    assert run.incomplete == "timed out after 0.3s of wall-clock time in the invariant waits"


def test_a_scenario_file_that_blocks_at_import_is_refused(tmp_path: Path) -> None:
    (tmp_path / "sleepy.py").write_text("import time\ntime.sleep(3600)\n")
    started = time.monotonic()
    with pytest.raises(ys.ScenarioError, match=r"did not finish importing within 0.3s"):
        ys.load_scenario(tmp_path / "sleepy.py", timeout=LIMIT)
    assert time.monotonic() - started < 10 * LIMIT


def test_a_deadline_let_go_of_interrupts_nothing_after() -> None:
    """Cut, then let go of: whatever it had armed to raise again must not land in the code
    that runs next (the drawing of the graph, once)."""
    deadline = Deadline(0.05)
    with deadline, pytest.raises(RunTimedOut), deadline.user_code("a sleeping body"):
        time.sleep(3600)
    until = time.monotonic() + 0.2  # past several of the watchdog's raise-again periods
    while time.monotonic() < until:
        time.sleep(0.01)  # the simulator's own code, then the drawing: never interrupted
    assert deadline.where == "a sleeping body"


def test_off_the_main_thread_spinning_is_still_cut() -> None:
    """Python runs signal handlers on the main thread only: elsewhere the asynchronous
    exception stays, and code that spins is cut as before."""

    def spins() -> None:
        while True:  # only the wall-clock limit ends this
            pass

    runs: list[Any] = []
    worker = threading.Thread(
        target=lambda: runs.append(
            ys.simulate(_scenario(body=spins), runtime="memory", timeout=LIMIT)
        )
    )
    worker.start()
    worker.join(30)
    assert runs[0].verdict == "incomplete"


def test_code_that_catches_every_interrupt_is_handed_to_the_last_resort(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past GIVE_UP_SECONDS, code that still runs goes to ``last_resort`` (the command line's
    ends the command; this one lets the body go, so that the test ends)."""
    from yieldstar_sim.simulation import deadline as deadline_module

    monkeypatch.setattr(deadline_module, "GIVE_UP_SECONDS", 0.2)
    given_up: list[str] = []
    monkeypatch.setattr(deadline_module, "last_resort", [given_up.append])

    def stubborn() -> None:
        while not given_up:
            with contextlib.suppress(BaseException):  # the point: it swallows every interrupt
                time.sleep(3600)

    run = ys.simulate(_scenario(body=stubborn), runtime="memory", timeout=0.1)
    assert run.verdict == "incomplete"
    assert given_up == ["step s of order-1 (attempt 1, w1)"]


def test_a_run_that_hangs_outside_user_code_is_handed_to_the_last_resort(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An error whose message waits forever: the trace's narration asks for it after the body,
    where no interrupt is raised. The limit still holds, through the last resort."""
    from yieldstar_sim.simulation import deadline as deadline_module

    monkeypatch.setattr(deadline_module, "GIVE_UP_SECONDS", 0.2)
    given_up: list[str] = []
    monkeypatch.setattr(deadline_module, "last_resort", [given_up.append])

    class Slow(Exception):
        def __str__(self) -> str:
            while not given_up:
                time.sleep(0.01)
            return "slow"

    def body() -> None:
        raise Slow

    ys.simulate(_scenario(body=body), runtime="memory", timeout=0.1)
    assert given_up == ["the run (outside the code its limit interrupts)"]
