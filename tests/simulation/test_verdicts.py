"""Verdicts a reviewer can trust: ``ok`` only when every invariant held and the run finished.

Each case is a scenario file under ``tests/scenarios/verdicts`` that the first round reported as
``ok`` (or as a crash, or a false violation); the tests pin the verdict and the sentence now.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.cli_explore import report_json
from yieldstar_sim.simulation import SimulationRun, Violation
from yieldstar_sim.simulation.deadline import Deadline, RunTimedOut

CASES = Path(__file__).parents[1] / "scenarios" / "verdicts"


def case(name: str) -> ys.Scenario:
    return ys.load_scenario(CASES / f"{name}.py")


def simulate(name: str, **options: object) -> SimulationRun:
    options.setdefault("runtime", "memory")
    return ys.simulate(case(name), seed=0, **options)  # type: ignore[arg-type]


def the_violation(run: SimulationRun) -> Violation:
    assert run.verdict == "violated", run.explain()
    (violation,) = run.violations
    return violation


# --------------------------------------------------------------------------- 1. failures


def test_a_trigger_of_an_unregistered_workflow_is_a_scenario_error_with_the_nearest_name() -> None:
    # A typo, caught before anything runs: every run would fail the same way, and a verdict
    # would invite declaring the failure as expected.
    with pytest.raises(ys.ScenarioError) as raised:
        case("unknown_workflow")
    assert str(raised.value).endswith(
        "scenario 'unknown-workflow': ys.Trigger('shipp-order') names no workflow of the "
        "scenario (did you mean 'ship-order'?); its workflows: ship-order"
    )


def test_a_trigger_whose_params_are_not_plain_data_is_a_scenario_error_naming_it() -> None:
    # The runtime refused it (INVALID_PARAMETERS) on every run: nothing ran, nothing was
    # checked, and the verdict was "ok: every invariant held and the run finished".
    with pytest.raises(ys.ScenarioError) as raised:
        case("trigger_params_not_plain")
    assert (
        "scenario 'trigger-params-not-plain': ys.Trigger('charge', execution_id='charge-1') has "
        "params the runtime refuses (params.when: datetime.datetime is not a durable value): a "
        "trigger's params are a dict of plain data"
    ) in str(raised.value)
    # Not a dict: start parameters are an object (RFC 003).
    listed = ys.Trigger("ship", [42], execution_id="order-42")
    with pytest.raises(ys.ScenarioError, match=r"ys.Trigger\('ship', execution_id='order-42'\) "):
        dataclasses.replace(case("duplicate_trigger"), triggers=[listed])


def test_a_trigger_the_runtime_refuses_at_run_time_is_a_scenario_error_never_green() -> None:
    # A declaration changed after the scenario checked it (or a runtime of your own that
    # refuses more): the run says so instead of coming back green with nothing admitted.
    scenario = case("duplicate_trigger")
    scenario.triggers = (ys.Trigger("ship", {"when": {1, 2}}, execution_id="order-7"),)
    with pytest.raises(ys.ScenarioError) as raised:
        ys.simulate(scenario, runtime="memory")
    assert str(raised.value).startswith(
        "scenario 'duplicate-trigger': the runtime refused ys.Trigger('ship', "
        "execution_id='order-7'): INVALID_PARAMETERS: "
    )


def test_a_prune_of_an_execution_the_run_never_had_is_a_scenario_error() -> None:
    # It was a "prune ... refused" line in the trace beside a green verdict.
    scenario = ys.load_scenario("spawn-after-prune")
    scenario.prunes = (ys.Prune("survey-24", at=20),)
    with pytest.raises(ys.ScenarioError) as raised:
        ys.simulate(scenario, runtime="memory")
    assert "ys.Prune('survey-24') at t=20 names no execution of the run" in str(raised.value)
    assert "(did you mean 'survey-42'?)" in str(raised.value)


def test_a_start_of_an_unregistered_workflow_fails_its_target() -> None:
    violation = the_violation(simulate("start_unknown"))
    assert violation.message.startswith(
        "@shipp-order:order-42/ship (shipp-order) failed: UnknownWorkflowError"
    )


def test_a_started_workflow_misspelt_gets_the_name_meant_not_a_hint_to_expect_it() -> None:
    # It said "a scenario that means it to fail declares it: expected=[ys.expect("shipp-order",
    # ...)]", which invited declaring the typo as expected.
    message = the_violation(simulate("start_typo")).message
    assert message.endswith(
        "; step ship of order-42 started it: did you mean 'ship-order'? Fix the name in that "
        "step, or, if 'shipp-order' is a workflow of yours, add it to Scenario(workflows=[...])"
    )
    assert "ys.expect" not in message


def test_a_started_workflow_left_out_of_the_scenario_says_to_add_it() -> None:
    message = the_violation(simulate("child_not_in_workflows")).message
    assert message.startswith("@ship-order:order-42/ship (ship-order) failed: UnknownWorkflowError")
    assert message.endswith(
        "; step ship of order-42 started it: add its @ys.workflow to Scenario(workflows=[...]) "
        "(every workflow a step starts must be there)"
    )
    assert "did you mean" not in message
    assert "ys.expect" not in message


@pytest.mark.parametrize(
    ("name", "says"),
    [
        (
            "delay_without_yield_from",
            "called step.delay('settle') at line 9 of delay_without_yield_from.py without "
            "`yield from`, so the step never ran: write `yield from step.delay('settle', ...)`",
        ),
        (
            "run_without_yield_from",
            "called step.run('book') at line 8 of run_without_yield_from.py without "
            "`yield from`, so the step never ran: write `value = yield from step.run('book', "
            "...)`",
        ),
        (
            # It raised AttributeError: 'generator' object has no attribute 'execution_id'.
            "start_without_yield_from",
            "called step.start('ship') at line 14 of start_without_yield_from.py without "
            "`yield from`, so the step never ran: write `target = yield from "
            "step.start('ship', ...)` (the verbs are generators) (it then raised "
            "AttributeError: 'generator' object has no attribute 'execution_id')",
        ),
        (
            # It was reported "failed after step settle", a step the code did run.
            "run_forgotten_before_a_delay",
            "called step.run('charge') at line 8 of run_forgotten_before_a_delay.py without "
            "`yield from`",
        ),
    ],
)
def test_a_verb_without_yield_from_is_named_by_verb_key_and_line(name: str, says: str) -> None:
    message = the_violation(simulate(name)).message
    assert "failed: WorkflowDefinitionError STEP_NOT_RUN: " in message  # no other step named
    assert says in message
    assert "ys.expect" not in message  # a mistake in the code is never declared expected


@pytest.mark.parametrize(
    ("name", "verb", "then"),
    [
        (
            "all_unpacked_without_yield_from",
            "step.all(...)",
            " (it then raised ValueError: not enough values to unpack (expected 2, got 1))",
        ),
        ("run_listed_without_yield_from", "step.run('book')", ""),
    ],
)
def test_a_verb_the_code_iterates_itself_fails_the_workflow_naming_the_verb(
    name: str, verb: str, then: str
) -> None:
    """Iterating a verb (unpacking step.all as asyncio.gather's result, ``list(step.run(...))``)
    consumes its request before the driver sees it: the step never runs. The error names that
    mistake, not only what the code raised next (or nothing, when it went on)."""
    run = simulate(name)
    violation = the_violation(run)
    assert "WorkflowDefinitionError" in violation.message
    assert re.search(
        rf"iterated {re.escape(verb)} itself at line \d+ of {name}.py instead of running it",
        violation.message,
    )
    assert "yield from step." in violation.message
    if then:
        assert then in violation.message
    else:
        assert "it then raised" not in violation.message
    assert run.effects == []  # no body ran


def test_the_world_outside_a_step_body_fails_the_workflow() -> None:
    violation = the_violation(simulate("world_outside_step"))
    assert "step.world.effect was called outside a step body" in violation.message


def test_a_mismatch_that_fails_the_caller_names_the_step_and_the_code() -> None:
    violation = the_violation(simulate("mismatch_unexpected"))
    assert violation.message.startswith(
        "order-42 (charge-order) failed at step ship: WorkflowStartError START_REQUEST_MISMATCH"
    )
    assert 'expected=[ys.expect("charge-order", error="WorkflowStartError")]' in violation.message


@pytest.mark.parametrize("name", ["deploy-mismatch", "call-child-fails", "invalid-params"])
def test_bundled_scenarios_that_fail_on_purpose_declare_it_and_pass(name: str) -> None:
    run = ys.simulate(ys.load_scenario(name), seed=0, runtime="memory")
    assert run.verdict == "ok", run.explain()


def test_a_failure_other_than_the_declared_one_is_a_violation() -> None:
    violation = the_violation(simulate("expected_other_failure"))
    assert violation.message == (
        "order-42 (ship) ended failed after step book (ValueError: no courier today), but the "
        "scenario expects ship to fail with StepError"
    )


def test_an_expectation_that_does_not_come_true_is_a_warning() -> None:
    """An expectation allows an end; under exploration the faults that make a scenario fail
    on purpose are not in every schedule, so a completed run is not a violation."""
    run = simulate("expected_but_completed")
    assert run.verdict == "ok"
    assert run.warnings == [
        "the expectation ship to fail with StepError did not come true (order-42 ended completed)"
    ]


def test_an_expectation_names_executions_and_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="needs a workflow ID or an execution_id"):
        ys.expect()
    with pytest.raises(ValueError, match="status must be one of completed, failed, cancelled"):
        ys.expect("ship", status="crashed")
    with pytest.raises(ValueError, match="describe a failure only"):
        ys.expect("ship", status="completed", error="StepError")
    with pytest.raises(TypeError, match=r"expected holds ys\.expect"):
        ys.Scenario(
            name="x",
            workflows=[],
            triggers=[ys.Trigger("w")],
            expected=["ship"],  # type: ignore[list-item]
        )


def test_an_expectation_that_names_nothing_like_the_runs_executions_is_a_warning() -> None:
    base = ys.load_scenario("durable-start")
    scenario = ys.Scenario(
        name="nothing-expected", workflows=base.workflows, triggers=base.triggers,
        expected=[ys.expect("refund-order")],
    )  # fmt: skip
    run = ys.simulate(scenario, runtime="memory")
    assert run.verdict == "ok"
    assert run.warnings == [
        "the expectation refund-order to fail named no execution of the run (its workflows: "
        "charge-order, ship-order)"
    ]


def test_an_expectation_that_misspells_a_workflow_of_the_run_is_a_scenario_error() -> None:
    # A warning beside "ok" let the typo pass as a green verdict.
    base = ys.load_scenario("durable-start")
    scenario = ys.Scenario(
        name="misspelt-expected", workflows=base.workflows, triggers=base.triggers,
        expected=[ys.expect("shipp-order"), ys.expect(execution_id="ordr-42")],
    )  # fmt: skip
    message = (
        "scenario 'misspelt-expected': the expectation shipp-order to fail names the workflow "
        "'shipp-order', which the run never had; it had 'ship-order'; the expectation ordr-42 "
        "to fail names the execution 'ordr-42', which the run never had; it had 'order-42'"
    )
    with pytest.raises(ys.ScenarioError) as raised:
        ys.simulate(scenario, runtime="memory")
    assert str(raised.value) == message
    with pytest.raises(ys.ScenarioError, match="names the workflow 'shipp-order'"):
        ys.explore(scenario, confirm=None)


def test_a_name_one_slip_from_the_runs_that_could_be_meant_stays_a_warning() -> None:
    # Not taken for slips: another execution of a numbered series, a workflow the scenario
    # registers that this run did not start, an effect that is a word longer.
    base = ys.load_scenario("durable-start")

    @ys.workflow("ship-orders")
    def ship_orders(step: ys.StepRunner, params: dict[str, int]) -> Generator[Any, Any, None]:
        yield from step.run("noop", lambda: None)

    scenario = ys.Scenario(
        name="could-be-meant", workflows=[*base.workflows, ship_orders], triggers=base.triggers,
        expected=[ys.expect(execution_id="order-43"), ys.expect("ship-orders")],
        invariants=[ys.at_most_once("courier.rebooked", by="order")],
    )  # fmt: skip
    run = ys.simulate(scenario, runtime="memory")
    assert run.verdict == "ok"
    assert len(run.warnings) == 2, run.warnings


# --------------------------------------------------------------------------- 2. incomplete


def test_a_run_cut_by_max_points_is_incomplete() -> None:
    run = simulate("loop_steps")
    assert (run.verdict, run.ok, run.violations) == ("incomplete", False, [])
    assert run.incomplete == (
        "cut after max_points=300 choice points at t=0 (a bound against a run that never "
        "settles; a longer one raises it: ys.Scenario(..., max_points=...)); loop-1 (forever) "
        "had recorded 299 steps (s0, s1, s2 ... s298) and was still running: a loop of steps in "
        "its workflow code that never ends? Give the loop an exit (or raise max_points if the "
        "story is that long); still live: loop-1 (forever, pending)"
    )
    assert run.verdict_text.startswith("incomplete: cut after max_points=300")


def test_the_default_point_bound_grows_with_the_triggers() -> None:
    # A story copied to a thousand orders (about 17 choice points each) was cut at 10,000.
    story = ys.load_scenario("durable-start")
    assert story.max_points is None
    assert story.point_limit == 2_000
    orders = [
        ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}") for n in range(1_000)
    ]
    review = dataclasses.replace(story, triggers=orders, faults=[])
    assert review.point_limit == 100_000
    assert dataclasses.replace(review, max_points=500).point_limit == 500
    run = ys.simulate(review, seed=0, runtime="memory")
    assert run.ok, run.explain()
    assert len(run.executions) == 2_000
    with pytest.raises(ValueError, match="max_points must be a whole number >= 1, not 0"):
        dataclasses.replace(story, max_points=0)


def test_an_endless_loop_of_steps_is_cut_by_the_point_bound_which_says_so() -> None:
    # Each delivery replays every step before it: at 10,000 points the run took a minute under
    # load and was cut by the wall-clock limit, "in the workflow code of poll-1".
    run = simulate("loop_polling", runtime="duckdb", timeout=60.0)
    assert run.verdict == "incomplete"
    assert run.incomplete is not None
    assert run.incomplete.startswith("cut after max_points=2000 choice points at t=")
    assert re.search(
        r"; poll-1 \(poll\) had recorded [\d,]+ steps \(check-0, wait-0, check-1 \.\.\. "
        r"wait-\d+\) and was still running: a loop of steps in its workflow code that never "
        r"ends\? Give the loop an exit \(or raise max_points if the story is that long\); "
        r"still live: poll-1 \(poll, suspended\)$",
        run.incomplete,
    ), run.incomplete
    assert "wall-clock" not in run.incomplete


def test_a_run_cut_by_max_time_is_incomplete() -> None:
    run = simulate("loop_delays", runtime="duckdb")
    assert run.verdict == "incomplete"
    assert run.incomplete is not None
    assert run.incomplete.startswith("cut at max_time=3600s of virtual time with work still due")
    assert "a longer story raises it: ys.Scenario(..., max_time=...))" in run.incomplete
    assert run.incomplete.endswith("still live: loop-1 (forever, suspended)")


def test_a_cut_run_is_still_checked_for_what_it_already_broke() -> None:
    """Safety invariants hold on prefixes: a duplicate before the cut is a violation."""
    scenario = ys.load_scenario("trigger-in-step")
    # The second ship-order is admitted by then, not yet run: the same cut as max_points=10
    # made before a body's effects were points of their own, and 12 before idle workers
    # blocked instead of claiming nothing.
    scenario.max_points = 10
    run = ys.simulate(scenario, runtime="memory")
    assert run.verdict == "violated"
    assert run.incomplete is not None
    assert {v.invariant for v in run.violations} == {"at most one admitted execution per step"}
    assert "(and the run was cut after max_points=10 choice points at t=30" in run.verdict_text


@pytest.mark.parametrize(
    ("name", "where"),
    [
        ("spin_workflow", "the workflow code of spin-1 (spin, w2)"),
        ("spin_body", "step busy of spin-1 (attempt 1, w2)"),
    ],
)
def test_code_that_spins_is_timed_out_as_incomplete(name: str, where: str) -> None:
    run = simulate(name, timeout=0.3)
    assert run.verdict == "incomplete", run.explain()
    assert run.incomplete == (
        f"timed out after 0.3s of wall-clock time in {where}; still live: spin-1 (spin, pending)"
    )


def test_an_invariant_of_the_users_that_spins_is_timed_out_as_incomplete() -> None:
    """The wall-clock limit guards the invariants the user wrote (the toolkit's own are not
    guarded: they end): one that never answers cuts the check, and the run is incomplete."""

    def spins(run: object) -> None:
        while True:  # only the wall-clock limit ends this
            pass

    scenario = dataclasses.replace(
        ys.load_scenario("durable-start"),
        invariants=[ys.at_most_once("card.charged", by="order"), spins],
    )
    run = ys.simulate(scenario, 0, runtime="memory", timeout=0.3)
    assert run.verdict == "incomplete"
    assert run.incomplete == "timed out after 0.3s of wall-clock time in the invariant spins"


def test_a_scenario_file_that_spins_at_import_is_refused() -> None:
    with pytest.raises(ys.ScenarioError, match=r"did not finish importing within 0.3s"):
        ys.load_scenario(CASES / "spin_import.py", timeout=0.3)


def test_a_deadline_never_fires_outside_user_code_or_after_it() -> None:
    deadline = Deadline(0.05)
    with deadline:
        with deadline.user_code("quick"):
            pass
        while not deadline.expired:  # the simulator's own code is never interrupted
            pass
        assert deadline.where is None
        with pytest.raises(RunTimedOut), deadline.user_code("late"):
            pass
    assert deadline.where == "late"


def test_a_deadline_fires_even_after_the_watchdog_thread_died(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A watchdog whose thread is gone starts another when armed: else a body that spins
    would run forever (a CI run once hung so, no watchdog thread left in the process)."""
    import threading

    from yieldstar_sim.simulation import deadline as deadline_module

    gone = threading.Thread(target=lambda: None)
    gone.start()
    gone.join()
    monkeypatch.setattr(deadline_module._WATCHDOG, "_thread", gone)
    deadline = Deadline(0.05)

    def spin() -> None:
        with deadline.user_code("a spinning body"):
            while True:  # only the wall-clock limit ends this
                pass

    with deadline, pytest.raises(RunTimedOut):
        spin()
    assert deadline.where == "a spinning body"


def test_a_deadline_raises_again_in_code_that_lost_its_first_interrupt() -> None:
    """User code that catches the interrupt and goes on (or C code that clears it) is
    interrupted again while it runs: else it would spin past its limit for ever (a forked
    explorer child once did, its watchdog idle)."""
    deadline = Deadline(0.05)
    caught = []

    def spin() -> None:
        with deadline.user_code("a body that swallows one interrupt"):
            while True:
                try:
                    while deadline.elapsed < 30:  # only the wall-clock limit ends this
                        pass
                    pytest.fail("the deadline did not raise again")
                except RunTimedOut:
                    if caught:
                        raise
                    caught.append(deadline.elapsed)  # lost: the body spins on

    with deadline, pytest.raises(RunTimedOut):
        spin()
    assert len(caught) == 1
    assert deadline.where == "a body that swallows one interrupt"


def test_an_interrupt_lost_in_a_finaliser_is_raised_again_and_never_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The interrupt lands in whatever Python code runs at that moment: a ``__del__`` or a
    ``gc`` callback (Hypothesis has one) that the spinning body set off. Python reports it
    there as unraisable (pytest fails the test that sees one) and the body spins on, to be
    interrupted again; the lost one is not reported, anything else unraisable still is."""
    reported: list[sys.UnraisableHookArgs] = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    deadline = Deadline(0.05)

    class SpinsWhenCollected:
        def __del__(self) -> None:
            while True:  # only the interrupt ends this, and Python drops it here
                pass

    class FailsWhenCollected:
        def __del__(self) -> None:
            raise ValueError("a finaliser's own error")

    def spin() -> None:
        with deadline.user_code("a body whose garbage spins"):
            SpinsWhenCollected()  # dropped at once: its __del__ takes the first interrupt
            while True:
                pass

    with deadline, pytest.raises(RunTimedOut):
        spin()
    assert reported == []
    FailsWhenCollected()
    assert [unraisable.exc_type for unraisable in reported] == [ValueError]


def test_a_deadline_that_passed_before_user_code_raises_on_entering_it() -> None:
    deadline = Deadline(0.05)
    with deadline:
        while not deadline.expired:
            pass
        with pytest.raises(RunTimedOut), deadline.user_code("entered late"):
            raise AssertionError("user code ran past its limit")
    assert deadline.where == "entered late"


# --------------------------------------------------------------------------- 3. faults


def test_a_misspelled_fault_op_is_refused_with_the_ops() -> None:
    with pytest.raises(
        ys.ScenarioError,
        match=re.escape("unknown fault op 'putstep' (did you mean 'put_step'?); the ops are claim"),
    ):
        case("fault_typo_op")


def test_a_fault_naming_an_unknown_worker_is_refused() -> None:
    with pytest.raises(
        ys.ScenarioError,
        match=re.escape("names worker 'w9', but the workers are w1, w2"),
    ):
        case("fault_typo_worker")


def test_a_fault_that_matches_no_choice_point_is_a_scenario_error() -> None:
    with pytest.raises(ys.FaultPlanError) as raised:
        simulate("fault_typo_step")
    message = str(raised.value)
    assert message.startswith(
        "the fault 'crash before put_step of step shipp' matches no choice point of the run; "
        "no step 'shipp' (did you mean 'ship'?) runs; put_step happens with workers w1, w2; steps "
        "book-courier, charge, ship"
    )


def test_explore_checks_the_scenario_fault_plan_too() -> None:
    with pytest.raises(ys.FaultPlanError, match="step shipp"):
        ys.explore(case("fault_typo_step"), confirm=None)


# --------------------------------------------------------------------------- 4. unwatched


def test_an_invariant_that_watches_nothing_warns_with_the_effects_that_occur() -> None:
    run = simulate("invariant_unwatched")
    assert run.verdict == "ok"
    assert run.warnings == [
        "at_most_once(refund.issued, by=order) watched nothing: the run made no effect named "
        "'refund.issued' (the effects it made: card.charged, courier.booked)"
    ]
    assert "warning: at_most_once(refund.issued" in run.explain()
    report = ys.explore(case("invariant_unwatched"), confirm=None)
    assert report.warnings == run.warnings
    assert "warning: at_most_once(refund.issued" in report.summary()
    assert report_json(report)["warnings"] == run.warnings
    assert "refund.issued" in report._repr_html_()


def test_an_invariant_that_watches_a_misspelt_effect_is_a_scenario_error() -> None:
    # It held in every run and every schedule: a warning beside "ok" let it pass as green.
    message = (
        "scenario 'invariant-typo': at_most_once(courier.bookd, by=order) watches the effect "
        "'courier.bookd', which the run never made; it made 'courier.booked' (the effects it "
        "made: card.charged, courier.booked)"
    )
    with pytest.raises(ys.ScenarioError) as raised:
        simulate("invariant_typo")
    assert str(raised.value) == message
    with pytest.raises(ys.ScenarioError, match=r"watches the effect 'courier\.bookd'"):
        ys.explore(case("invariant_typo"), confirm=None)


def test_a_misspelt_overlap_safe_step_is_a_scenario_error() -> None:
    base = ys.load_scenario("durable-start")
    scenario = dataclasses.replace(base, name="misspelt-overlap", faults=[],
                                   overlap_safe=["chrage"])  # fmt: skip
    with pytest.raises(ys.ScenarioError) as raised:
        ys.simulate(scenario, runtime="memory")
    assert str(raised.value) == (
        "scenario 'misspelt-overlap': overlap_safe names step 'chrage', which no attempt ran; "
        "'charge' ran"
    )


def test_an_invariant_that_counts_by_a_field_no_effect_carries_is_a_scenario_error() -> None:
    # Every courier.booked counted under None: two orders' bookings read as one order's twice.
    with pytest.raises(ys.ScenarioError) as raised:
        simulate("invariant_typo_by")
    assert str(raised.value) == (
        "scenario 'invariant-typo-by': at_most_once(courier.booked, by=ordr) counts "
        "courier.booked by its field 'ordr' (did you mean 'order'?), which its one effect "
        "does not carry (their fields: order)"
    )


# --------------------------------------------------------------------------- 5. SystemExit


@pytest.mark.parametrize(("name", "code"), [("exit0_body", 0), ("exit3_body", 3)])
def test_sys_exit_in_a_step_body_fails_that_body(name: str, code: int) -> None:
    violation = the_violation(simulate(name))
    assert f"ExitCalled: step body 'bye' called sys.exit({code})" in violation.message


def test_sys_exit_in_workflow_code_fails_that_workflow() -> None:
    violation = the_violation(simulate("exit_workflow"))
    assert "ExitCalled: the code of quit-1 called sys.exit(0)" in violation.message


def test_sys_exit_at_import_is_a_scenario_error() -> None:
    with pytest.raises(ys.ScenarioError, match=r"called sys.exit\(0\) on import"):
        case("exit_import")


def test_ctrl_c_stops_an_exploration_and_keeps_what_it_found() -> None:
    def interrupt_after(count: int) -> None:
        if count >= 7:
            raise KeyboardInterrupt

    report = ys.explore(
        ys.load_scenario("trigger-in-step"), confirm=None, stop_at_first=False,
        progress=interrupt_after,
    )  # fmt: skip
    assert report.interrupted
    assert report.schedules_run == 7
    assert report.verdict == "violated"  # found before the interrupt, and shrunk
    assert report.violations
    assert report.violations[0].faults
    assert report.coverage().startswith("interrupted (Ctrl-C) after 7 schedules run under ")


def test_an_interrupted_search_that_found_nothing_is_incomplete() -> None:
    def interrupt(count: int) -> None:
        raise KeyboardInterrupt

    report = ys.explore(ys.load_scenario("durable-start"), confirm=None, progress=interrupt)
    assert (report.verdict, report.ok, report.exhausted) == ("incomplete", False, False)


# --------------------------------------------------------------------------- 6. admission


@pytest.mark.parametrize("runtime", ["memory", "duckdb"])
def test_a_second_trigger_with_the_same_id_is_refused_and_the_run_goes_on(runtime: str) -> None:
    run = simulate("duplicate_trigger", runtime=runtime)
    assert run.verdict == "ok", run.explain()
    refused = [e for e in run.trace.of_kind("trigger") if "refused" in e.data]
    (event,) = refused
    assert event.text == (
        "trigger of ship as order-42 refused: EXECUTION_EXISTS: execution 'order-42' already exists"
    )
    assert event.t == 5.0
    assert len(run.effects_named("courier.booked")) == 1


# --------------------------------------------------------------------------- 8. time order


@pytest.mark.parametrize("runtime", ["memory", "duckdb"])
def test_a_body_that_takes_time_keeps_the_trace_in_time_order(runtime: str) -> None:
    run = simulate("elapse_effect", runtime=runtime)
    times = [event.t for event in run.trace]
    assert times == sorted(times)
    effects = run.trace.of_kind("effect")
    # Each elapse is a choice point: the effect lands when the body's work is done.
    assert [e.t for e in effects] == [20.0, 70.0]
    assert [e.at for e in run.effects] == [20.0, 70.0]


# --------------------------------------------------------------------------- 10. sentences


def test_a_replayed_body_says_which_delivery_ran_it_again_and_why() -> None:
    violation = the_violation(simulate("replayed_effect"))
    assert violation.message == (
        "courier.booked happened 2 times for order=42: at t=0 by w2 (order-42 / book, attempt 1, "
        "token 1) and at t=30 by w2 (order-42 / book, attempt 1, token 2); the same execution ran "
        "step book of order-42 again in a new delivery (token 2 after token 1) after w2 crashed "
        "before put_step of step book, and w2 ran the step again at t=30 (token 2): the body "
        "acted before its result was recorded, and the service does not deduplicate it (an "
        "idempotency_key= on the effect models one that does)"
    )


def test_a_retry_after_a_timeout_says_the_first_attempt_had_acted() -> None:
    run = simulate("retried_effect")
    (violation,) = [v for v in run.violations if v.invariant.startswith("at_most_once")]
    assert "a retry: attempt 1 of step book of order-42 acted and then ran past its timeout, so " \
        "attempt 2 ran the body again" in violation.message  # fmt: skip


def test_two_executions_say_how_each_was_admitted() -> None:
    run = ys.simulate(ys.load_scenario("trigger-in-step"), runtime="memory")
    (violation,) = [v for v in run.violations if v.invariant.startswith("at_most_once")]
    assert violation.message.endswith(
        "two different executions did it: @ship-order-2, triggered without a request identity "
        "from step (order-42, ship) at t=0, and @ship-order-3, triggered without a request "
        "identity from step (order-42, ship) at t=30; one execution, not two, is the fix (a "
        "durable start, step.start, admits one), or a key the service deduplicates that is the "
        "same in both (idempotency_key= a business key, not the execution ID)"
    )


def test_a_violation_that_needs_no_fault_says_so() -> None:
    @ys.workflow("twice")
    def twice(step, params):  # type: ignore[no-untyped-def]
        yield from step.run("a", lambda: step.world.effect("mail.sent", to="x"))
        yield from step.run("b", lambda: step.world.effect("mail.sent", to="x"))

    scenario = ys.Scenario(
        name="twice", workflows=[twice], triggers=[ys.Trigger("twice")],
        invariants=[ys.at_most_once("mail.sent")],
    )  # fmt: skip
    report = ys.explore(scenario, confirm=None)
    (found,) = report.violations
    assert found.faults == []
    assert "did it in two steps, a and b" in found.message
    assert (
        "with no fault: the schedule alone violates it (its interleaving, draws and completion "
        "orders are in the replay artifact)"
    ) in report.summary()


# --------------------------------------------------------------------------- 11. coverage


def test_a_search_that_stops_at_the_first_violation_says_how_far_it_got() -> None:
    report = ys.explore(ys.load_scenario("trigger-in-step"), confirm=None)
    assert report.total_under_bound is None  # not known: the search stopped short
    assert report.coverage() == (
        f"stopped at the first violation after {report.schedules_run} schedules run under "
        "max 1 fault"
    )
    assert not report.exhausted


def test_an_exhausted_bound_says_so_and_only_then_is_ok() -> None:
    report = ys.explore(ys.load_scenario("durable-start"), confirm=None)
    assert report.exhausted
    assert report.ok
    assert report.coverage().startswith(
        f"exhausted the bound: all {report.total_under_bound} schedules under max 1 fault"
    )
    budgeted = ys.explore(ys.load_scenario("durable-start"), confirm=None, budget=5)
    assert (budgeted.verdict, budgeted.exhausted) == ("incomplete", False)
    assert budgeted.coverage().startswith("the budget of 5 schedules cut the search after 5 ")


def test_a_random_search_claims_a_sample_not_a_proof() -> None:
    report = ys.explore(
        ys.load_scenario("durable-start"), strategy="random", budget=10, confirm=None
    )
    assert report.coverage() == (
        "10 schedules run (random, max 1 fault): a sample of the schedules, not all of them"
    )


def test_running_to_the_end_lists_which_faults_broke_it() -> None:
    report = ys.explore(ys.load_scenario("trigger-in-step"), confirm=None, stop_at_first=False)
    broken = report.broken_by()
    assert "w2 put_step order-42/ship" in broken["crash"]
    data = report_json(report)
    assert data["broken_by"] == broken
    assert {"choice_point": "w2 put_step order-42/ship", "fault": "crash",
            "verdict": "violated"} in data["single_faults"]  # fmt: skip
    assert "single faults that break it:" in report.summary()
    assert "    crash at " in report.summary()


def test_schedules_cut_by_the_wall_clock_count_apart() -> None:
    report = ys.explore(case("spin_body"), confirm=None, timeout=0.2, max_faults=0)
    assert report.incomplete_schedules == 1
    assert report.verdict == "incomplete"
    assert report.incomplete_reasons[0].startswith(
        "schedule #0 (no faults): timed out after 0.2s of wall-clock time in step busy"
    )


def test_an_effect_every_order_repeats_is_one_sentence_that_counts_the_rest() -> None:
    # At review size a bug strikes every order: the sentence names three occurrences and
    # counts the rest, and the violation's data names every execution, for the views.
    @ys.workflow("order")
    def order(step: ys.StepRunner, params: dict[str, int]) -> Generator[Any, Any, None]:
        yield from step.run("charge", lambda: step.world.effect("card.charged", n=params["n"]))

    scenario = ys.Scenario(
        name="every-order-charges",
        workflows=[order],
        triggers=[ys.Trigger("order", {"n": n}, execution_id=f"order-{n}") for n in range(10)],
        invariants=[ys.at_most_once("card.charged")],  # by= forgotten: one charge in all
    )
    violation = the_violation(ys.simulate(scenario, seed=0, runtime="memory"))
    assert violation.message.startswith("card.charged happened 10 times: at t=0 by w")
    assert violation.message.count(" by w") == 3
    assert "and 7 more (run.effects has every one); two different executions did it" in (
        violation.message
    )
    assert sorted(violation.data["executions"]) == sorted(f"order-{n}" for n in range(10))


def test_a_run_of_many_executions_prints_in_one_line_and_shows_a_bounded_table() -> None:
    """A REPL, a debugger and a notebook print a run: at review size the dataclass's repr and
    a row per event were hundreds of kilobytes; the repr is one line, the table bounded."""
    from yieldstar_sim.simulation.result import HTML_ROWS

    triggers = [
        ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}") for n in range(100)
    ]
    scenario = dataclasses.replace(ys.load_scenario("durable-start"), triggers=triggers, faults=[])
    run = ys.simulate(scenario, runtime="memory")
    assert repr(run) == (
        f"<SimulationRun 'durable-start' seed=0 memory: ok, 200 executions, "
        f"{len(run.trace):,} events, {run.points:,} choice points, t=0>"
    )
    table = run._repr_html_()
    assert table.count("<tr>") == HTML_ROWS + 2  # the heading and the line for the rest
    assert f"{len(run.trace) - HTML_ROWS:,} events left out" in table
    story = ys.simulate(ys.load_scenario("zombie-attempt"), runtime="memory")
    assert repr(story).endswith(
        f"violated, 2 violation(s), 2 executions, {len(story.trace)} "
        f"events, {story.points} choice points, t={story.ended_at:g}>"
    )
    assert story._repr_html_().count("<tr>") == len(story.trace) + 1
