"""The stepper, driven as a person would, without a kernel: slider, buttons, what-if."""

from __future__ import annotations

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation import SimulationRun
from yieldstar_sim.widgets import Stepper, choice_point_at, compare_runs, what_if

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def durable() -> SimulationRun:
    return ys.simulate(ys.load_scenario("durable-start"), seed=0, runtime="memory")


@pytest.fixture
def problem() -> SimulationRun:
    return ys.simulate(ys.load_scenario("trigger-in-step"), seed=0, runtime="memory")


def seq_of(run: SimulationRun, kind: str, op: str | None = None, nth: int = 0) -> int:
    return [e.seq for e in run.trace if e.kind == kind and (op is None or e.op == op)][nth]


def test_the_stepper_is_exported_and_starts_at_the_first_event(durable: SimulationRun) -> None:
    stepper = ys.Stepper(durable)
    assert stepper.index == 0
    assert stepper.slider.max == len(durable.trace) - 1 == stepper.play.max
    assert "triggers charge-order" in stepper.event_html.value
    assert stepper.previous_button.disabled
    assert not stepper.next_button.disabled
    assert "ok: every invariant held" in stepper.header_html.value
    assert bytes(stepper.graph_image.value).startswith(PNG)
    assert bytes(stepper.timeline_image.value).startswith(PNG)


def test_buttons_and_slider_move_and_everything_follows(durable: SimulationRun) -> None:
    stepper = Stepper(durable)
    stepper.next_button.click()
    stepper.next_button.click()
    assert stepper.index == 2
    stepper.previous_button.click()
    assert stepper.index == 1
    assert "w2 claims order-42" in stepper.event_html.value
    graph_at_claim = bytes(stepper.graph_image.value)
    timeline_at_claim = bytes(stepper.timeline_image.value)
    start = seq_of(durable, "call", "start")
    stepper.slider.value = start
    assert stepper.index == start
    assert "in one transaction the runtime records the request" in stepper.event_html.value
    assert bytes(stepper.graph_image.value) != graph_at_claim  # @ship-order:order-42/ship appeared
    assert bytes(stepper.timeline_image.value) != timeline_at_claim  # the cursor moved
    assert "<tr class='new'" in stepper.records_html.value
    assert "@ship-order:order-42/ship" in stepper.records_html.value
    stepper.slider.value = stepper.slider.max
    assert stepper.next_button.disabled
    stepper.next_button.click()  # a disabled button's click is a no-op in the page; here too
    assert stepper.index == stepper.slider.max


def test_play_drives_the_slider(durable: SimulationRun) -> None:
    stepper = Stepper(durable)
    stepper.play.value = 5  # what the play button does, one tick at a time
    assert stepper.index == 5
    assert stepper.event.seq == 5


def test_the_graph_picture_is_shared_by_events_with_the_same_graph(
    durable: SimulationRun,
) -> None:
    stepper = Stepper(durable)
    pictures = stepper.view.pictures
    # the body and the effect of the charge step change no execution
    assert pictures.graph_png(2) is pictures.graph_png(3)
    assert pictures.timeline_png(2) != pictures.timeline_png(3)


def test_what_if_adds_a_fault_and_opens_the_new_run_with_a_diff(durable: SimulationRun) -> None:
    """The fix under a second crash: still one courier, and the stepper says what changed."""
    stepper = Stepper(durable)
    start = seq_of(durable, "call", "start", nth=1)  # the replayed start at t=30
    stepper.slider.value = start
    assert "w1 start order-42/ship" in stepper.point_html.value
    stepper.fault_kind.value = "crash_after"
    assert stepper.freeze_seconds.disabled
    stepper.rerun_button.click()
    assert len(stepper.runs) == 2
    rerun = stepper.run
    assert rerun is not durable
    assert [f.describe() for f in rerun.faults][-1].startswith("crash after choice point #")
    assert len(rerun.faults) == 2
    assert rerun.ok
    assert len(rerun.effects_named("courier.booked")) == 1
    assert stepper.index == start  # the new run opens at the fault's choice point
    assert "run 2:" in stepper.header_html.value
    diff = stepper.diff
    assert diff is not None
    assert diff.divergence_seq is not None
    assert diff.divergence_seq >= start
    assert "compared with the run before" in stepper.whatif_html.value
    assert "first divergence at event #" in stepper.whatif_html.value
    assert not stepper.back_button.disabled
    stepper.back_button.click()
    assert stepper.run is durable
    assert stepper.back_button.disabled


def test_a_fault_before_the_runs_own_keeps_that_one_by_description(
    problem: SimulationRun,
) -> None:
    """A freeze at the first call: the Problem's own crash, later, keeps its description."""
    stepper = Stepper(problem)
    stepper.fault_kind.value = "freeze"
    assert not stepper.freeze_seconds.disabled
    stepper.freeze_seconds.value = 5
    stepper.slider.value = 0  # the trigger has no point: the fault goes on the next call
    assert "the next choice point" in stepper.point_html.value
    stepper.rerun_button.click()
    rerun = stepper.run
    assert rerun.faults[0].describe().startswith("freeze 5s before choice point #")
    kept = stepper.diff
    assert kept is not None
    assert any("kept crash before" in note for note in kept.notes)


def test_a_crash_that_breaks_a_passing_run_shows_both_verdicts() -> None:
    """The Problem without its crash passes; a crash before the ship step's record breaks it."""
    run = ys.simulate(ys.load_scenario("trigger-in-step"), runtime="memory", scenario_faults=False)
    assert run.ok
    record = next(e for e in run.trace if e.op == "put_step" and e.step_key == "ship")
    point = choice_point_at(run.trace, record.seq)
    assert point is not None
    assert point.label == "w2 put_step order-42/ship"
    stepper = Stepper(run, index=record.seq)
    stepper.what_if("crash")
    assert not stepper.run.ok
    assert "2 invariant violations" in stepper.header_html.value
    assert "ok: every invariant held" in stepper.whatif_html.value
    assert "effects courier.booked: 1 &rarr; <b>2</b>" in stepper.whatif_html.value


def test_a_rerun_makes_the_same_choices_up_to_the_fault(problem: SimulationRun) -> None:
    point = choice_point_at(problem.trace, 9)
    assert point is not None
    rerun = what_if(problem, "infra_error", point.index)
    before = [(e.t, e.kind, e.text) for e in problem.trace.events[: point.seq]]
    assert [(e.t, e.kind, e.text) for e in rerun.trace.events[: point.seq]] == before
    assert compare_runs(problem, rerun).divergence_seq == point.seq


def test_after_the_last_call_there_is_nowhere_to_put_a_fault() -> None:
    run = ys.simulate(ys.load_scenario("invalid-params"), runtime="memory")
    stepper = Stepper(run)
    stepper.slider.value = stepper.slider.max
    last = run.trace.events[-1]
    if last.point is None:
        assert stepper.rerun_button.disabled
        with pytest.raises(ValueError, match="nowhere to put a fault"):
            stepper.what_if("crash")
    else:
        assert not stepper.rerun_button.disabled


def test_a_failed_rerun_says_why_in_the_widget(
    durable: SimulationRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    stepper = Stepper(durable)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the <database> is gone")

    monkeypatch.setattr("yieldstar_sim.widgets.stepper.what_if", broken)
    stepper.rerun_button.click()
    assert "the re-run failed: RuntimeError: the &lt;database&gt; is gone" in (
        stepper.whatif_html.value
    )
    assert len(stepper.runs) == 1


def test_the_stepper_displays_as_a_widget(durable: SimulationRun) -> None:
    bundle = Stepper(durable)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_a_duckdb_run_steps_the_same(durable: SimulationRun) -> None:
    on_duckdb = ys.simulate(ys.load_scenario("durable-start"), seed=0)
    stepper = Stepper(on_duckdb, index=7)
    assert stepper.records_html.value == Stepper(durable, index=7).records_html.value


def test_a_run_is_stepped_through_the_widget_not_a_method() -> None:
    # The simulation layer does not know the widgets: ys.Stepper(run) is the one way in.
    run = ys.simulate(ys.load_scenario("durable-start"), seed=0, runtime="memory")
    assert not hasattr(run, "stepper")
    assert isinstance(ys.Stepper(run), ys.Stepper)


def test_a_what_if_of_a_fault_that_cannot_go_at_the_point_is_refused_not_a_silent_no_op() -> None:
    run = ys.simulate(ys.load_scenario("zombie-attempt-fixed"), runtime="memory")
    elapse = next(e for e in run.trace.events if e.op == "elapse" and e.point is not None)
    assert elapse.point is not None
    with pytest.raises(ValueError, match=r"a lose_response cannot go at choice point #1 .*elapse"):
        what_if(run, "lose_response", elapse.point)
    claim = next(e for e in run.trace.events if e.op == "claim" and e.point is not None)
    assert claim.point is not None
    with pytest.raises(ValueError, match="a stall cannot go at choice point"):
        what_if(run, "stall", claim.point)
    stepper = Stepper(run)
    stepper.slider.value = elapse.seq
    stepper.fault_kind.value = "lose_response"
    stepper._rerun_clicked()
    assert "the re-run failed: ValueError: a lose_response cannot go" in stepper.whatif_html.value
    assert len(stepper.runs) == 1


def test_the_what_if_menu_offers_a_stall_at_an_elapse_and_the_attempt_outlives_its_lease() -> None:
    """zombie-attempt-fixed passes; a stall put at its body's elapse from the stepper makes an
    attempt that outlives its lease, whose fenced writes the runtime refuses."""
    run = ys.simulate(
        ys.load_scenario("zombie-attempt-fixed"), runtime="memory", scenario_faults=False
    )
    elapse = next(e for e in run.trace.events if e.op == "elapse" and e.point is not None)
    stepper = Stepper(run, index=elapse.seq)
    stepper.fault_kind.value = "stall"
    assert not stepper.freeze_seconds.disabled
    # What the explorer gives a stall: twice the lease and the redelivery delay.
    scenario = run.scenario
    assert stepper.freeze_seconds.value == 2 * (scenario.lease_seconds + scenario.redelivery_delay)
    stepper.rerun_button.click()
    rerun = stepper.run
    assert rerun is not run
    assert [fault.kind for fault in rerun.faults] == ["stall"]
    assert any(event.kind == "stall" for event in rerun.trace), "no attempt stalled"
    assert any(event.kind == "refused" for event in rerun.trace), "no fenced write refused"
    assert stepper.diff is not None


def test_the_what_if_menu_offers_a_skewed_clock_with_its_own_length(
    durable: SimulationRun,
) -> None:
    stepper = Stepper(durable)
    stepper.fault_kind.value = "skew"
    assert not stepper.freeze_seconds.disabled
    stepper.freeze_seconds.value = 25
    claim = next(e for e in durable.trace.events if e.op == "claim" and e.point is not None)
    stepper.slider.value = claim.seq
    stepper.rerun_button.click()
    skewed = next(fault for fault in stepper.run.faults if fault.kind == "skew")
    assert skewed.seconds == 25
    assert any(event.kind == "skew" for event in stepper.run.trace)
    stepper.fault_kind.value = "crash"
    assert stepper.freeze_seconds.disabled
