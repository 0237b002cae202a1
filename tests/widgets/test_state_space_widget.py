"""The state space widget: each violating state one click from a stepper at the schedule that
reached it, and any state on request."""

from __future__ import annotations

import pytest

import yieldstar_sim as ys

pytest.importorskip("ipywidgets")

from yieldstar_sim.widgets import state_space_widget


def test_each_violating_state_opens_a_stepper_on_a_run_that_violates() -> None:
    report = ys.explore(
        ys.load_scenario("booking-race"), strategy="exhaustive", max_faults=0,
        stop_at_first=False, confirm=None,
    )  # fmt: skip
    view = state_space_widget(report)
    assert view.open_buttons
    for button in view.open_buttons:
        button.click()
        assert view.stepper is not None
        assert [v.invariant for v in view.stepper.run.violations] == ["no_oversell"]


def test_any_state_opens_a_stepper_at_its_choice_point() -> None:
    report = ys.explore(
        ys.load_scenario("booking-race-fixed"), strategy="exhaustive", max_faults=0, confirm=None
    )
    view = state_space_widget(report)
    assert not view.open_buttons  # verified: nothing violates
    deepest = max(report.state_space.nodes.values(), key=lambda node: node.depth)  # type: ignore[union-attr]
    view.chooser.value = deepest.key
    view.open_any.click()
    assert view.stepper is not None
    assert view.stepper.run.points >= deepest.depth


def test_a_report_without_a_state_space_is_refused() -> None:
    report = ys.explore(ys.load_scenario("booking-race-fixed"), max_faults=0, confirm=None)
    with pytest.raises(ValueError, match="only strategy='exhaustive' explores a state space"):
        state_space_widget(report)
