"""The README states the at-least-once window of a step body, and the window is real."""

from __future__ import annotations

from pathlib import Path

import yieldstar_sim as ys

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def test_the_readme_states_the_window_instead_of_never_re_run() -> None:
    assert "never re-run" not in README
    assert "at least once" in README
    assert "after the body's effect and before `put_step` commits" in README


def test_a_body_whose_worker_dies_before_its_record_runs_again() -> None:
    run = ys.simulate(ys.load_scenario("trigger-in-step"), seed=0, runtime="memory")
    ship = [e for e in run.trace.of_kind("body") if e.step_key == "ship"]
    assert len(ship) == 2  # ran, the worker crashed before put_step, ran again
    assert [e.kind for e in run.trace.of_kind("crash")] == ["crash"]
