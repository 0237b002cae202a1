"""explore --jobs N draws its pictures in a process of its own, from the report as the search
left it, while the confirmation runs: the files are those one process draws from the final
report, and a confirmation that changes the verdict has them drawn again."""

from __future__ import annotations

import multiprocessing
import signal
from typing import TYPE_CHECKING

import pytest

import yieldstar_sim as ys
from yieldstar_sim.cli_pictures import PictureProcess
from yieldstar_sim.core import interrupts
from yieldstar_sim.views.export import write_exploration_pictures

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="the picture process forks"
)


def _bytes(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


@pytest.mark.parametrize(
    ("name", "mismatch"),
    [("trigger-in-step", False), ("durable-start", False), ("durable-start", True)],
)
def test_pictures_started_before_the_confirmation_are_those_of_the_final_report(
    tmp_path: Path, name: str, mismatch: bool
) -> None:
    scenario = ys.load_scenario(name)
    report = ys.explore(scenario, max_faults=1, confirm=None)
    drawer = PictureProcess(scenario, fork=True)
    try:
        drawer.start(report, tmp_path / "drawn", ["png"])
        if mismatch:  # what a confirmation that finds DuckDB disagreeing writes
            report.runtime_mismatches.append("schedule #3 gives another trace on duckdb")
        pictures = drawer.write(report, tmp_path / "drawn", ["png"])
    finally:
        drawer.close()
    assert report.verdict == ("violated" if mismatch or name == "trigger-in-step" else "ok")
    here = write_exploration_pictures(report, tmp_path / "here", ["png"], scenario=scenario)
    assert pictures.lines() == [line.replace("/here/", "/drawn/") for line in here.lines()]
    assert _bytes(tmp_path / "drawn") == _bytes(tmp_path / "here")


def test_without_fork_the_pictures_are_drawn_here(tmp_path: Path) -> None:
    scenario = ys.load_scenario("durable-start")
    report = ys.explore(scenario, max_faults=1, confirm=None)
    drawer = PictureProcess(scenario, fork=False)
    drawer.start(report, tmp_path, ["png"])  # nothing to start: no process
    assert drawer.write(report, tmp_path, ["png"]).grid == {
        "png": tmp_path / "durable-start-explore.png"
    }
    drawer.close()


def test_after_sigterm_the_pictures_are_drawn_here_and_nothing_is_handed_to_the_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM ends the picture process with the command's other children: a task handed to
    its pool as the pool's thread finds it dead could break that thread, so none is."""
    scenario = ys.load_scenario("durable-start")
    report = ys.explore(scenario, max_faults=1, confirm=None)
    drawer = PictureProcess(scenario, fork=True)
    pool = drawer._pool
    assert pool is not None
    handed: list[object] = []
    monkeypatch.setattr(pool, "submit", lambda *args, **kwargs: handed.append(args))
    monkeypatch.setattr(interrupts, "_requested", signal.SIGTERM)
    try:
        drawer.start(report, tmp_path, ["png"])
        pictures = drawer.write(report, tmp_path, ["png"])
    finally:
        drawer.close()
    assert handed == []
    assert pictures.grid == {"png": tmp_path / "durable-start-explore.png"}
    assert (tmp_path / "durable-start-explore.png").stat().st_size > 0
