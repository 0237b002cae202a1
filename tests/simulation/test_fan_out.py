"""``step.all``: fan-out and fan-in of steps. Results in call order, the first failure raised,
members replayed by step key, the order of concurrent bodies' completion a choice point every
strategy explores, and cancellation of the owner ending the wait and its owned members."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.model import ExecutionRecord, ExecutionStatus
from yieldstar_sim.simulation import SimulationRun


@pytest.fixture(params=["memory", "duckdb"])
def runtime(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@ys.workflow("ship")
def ship(step: ys.StepRunner, params: Any) -> Any:
    yield from step.delay("pack", params.get("pack", 10))
    return f"shipped-{params['order']}"


@ys.workflow("survey")
def survey(step: ys.StepRunner, params: Any) -> Any:
    yield from step.delay("wait", 5)
    return "asked"


def one(name: str, *workflows: ys.Workflow, **options: Any) -> ys.Scenario:  # type: ignore[name-defined]
    return ys.Scenario(
        name=name,
        workflows=list(workflows),
        triggers=[ys.Trigger(workflows[0].name, {"order": 42}, execution_id="order-42")],
        **options,
    )


def execution(run: SimulationRun, execution_id: str) -> ExecutionRecord:
    return next(r for r in run.executions if r.execution_id == execution_id)


# --------------------------------------------------------------------------- results


@ys.workflow("everything")
def everything(step: ys.StepRunner, params: Any) -> Any:
    order = params["order"]
    shipped, started, joined, spawned, mailed = yield from step.all(
        [
            step.call("ship", ship, {"order": order}),
            step.start("ship-again", ship, {"order": order, "pack": 1}),
            step.child("fulfil", ship, f"fulfil-{order}", {"order": order, "pack": 20}),
            step.spawn("survey", survey, f"survey-{order}"),
            step.run("email", lambda: f"mail-{order}"),
        ]
    )
    return [shipped, started.execution_id, joined, spawned, mailed]


def test_the_results_come_back_in_call_order_whatever_the_members_are(runtime: str) -> None:
    run = ys.simulate(one("everything", everything, ship, survey), runtime=runtime)
    assert run.ok, run.explain()
    record = execution(run, "order-42")
    assert record.status == ExecutionStatus.COMPLETED
    assert isinstance(record.result, list)
    assert record.result[0] == "shipped-42"
    assert record.result[2:] == ["shipped-42", "survey-42", "mail-42"]
    started = execution(run, str(record.result[1]))
    assert started.parent is not None
    assert started.parent.step_key == "ship-again"
    # The wait ended when the slowest member (the 20 s child) did, not before.
    assert run.trace.of_kind("outcome")[-1].t >= 20


def test_a_real_engine_runs_a_group_with_its_bodies_in_call_order(runtime: str) -> None:
    seen: list[str] = []

    @ys.workflow("pair")
    def pair(step: ys.StepRunner, params: Any) -> Any:
        results = yield from step.all(
            [step.run(key, lambda key=key: seen.append(key) or key) for key in ("b", "a", "c")]
        )
        return results

    engine = ys.Engine([pair], runtime=runtime)  # type: ignore[arg-type]
    engine.trigger("pair", execution_id="p")
    engine.run_until_idle()
    record = engine.runtime.execution("p")
    assert record is not None
    assert record.result == ["b", "a", "c"]
    assert seen == ["b", "a", "c"]


# --------------------------------------------------------------------------- failures


@ys.workflow("declines")
def declines(step: ys.StepRunner, params: Any) -> Any:
    def decline() -> None:
        raise ys.Permanent(ValueError("card declined"))

    try:
        yield from step.all(
            [step.call("ship", ship, {"order": 42, "pack": 30}), step.run("charge", decline)]
        )
    except ys.StepError as error:
        return {"failed": error.step_key}
    return "charged"


def test_the_first_failure_is_raised_and_the_other_members_go_on(runtime: str) -> None:
    run = ys.simulate(one("declines", declines, ship), runtime=runtime)
    assert run.ok, run.explain()
    assert execution(run, "order-42").result == {"failed": "charge"}
    (shipped,) = [r for r in run.executions if r.workflow_id == "ship"]
    # The owner's wait ended at the failure, at t=0; its owned child ran on to its end.
    assert execution(run, "order-42").status == ExecutionStatus.COMPLETED
    assert shipped.status == ExecutionStatus.COMPLETED
    assert shipped.result == "shipped-42"


# --------------------------------------------------------------------------- cancellation


@ys.workflow("waits")
def waits(step: ys.StepRunner, params: Any) -> Any:
    yield from step.all(
        [
            step.call("ship", ship, {"order": 42, "pack": 60}),
            step.child("fulfil", ship, "fulfil-42", {"order": 42, "pack": 60}),
        ]
    )
    return "shipped"


def test_cancelling_the_owner_ends_the_wait_and_cancels_its_owned_members(runtime: str) -> None:
    scenario = one(
        "waits",
        waits,
        ship,
        cancels=[ys.Cancel("order-42", at=10)],
        expected=[ys.expect("waits", status="cancelled"), ys.expect("ship", status="cancelled")],
    )
    run = ys.simulate(scenario, runtime=runtime)
    assert run.ok, run.explain()
    assert {r.execution_id: r.status for r in run.executions} == {
        "order-42": ExecutionStatus.CANCELLED,
        "@ship:order-42/ship": ExecutionStatus.CANCELLED,
        "fulfil-42": ExecutionStatus.CANCELLED,
    }
    assert all(r.status == "failed" for r in run.steps["order-42"])


@ys.workflow("declines-then-waits")
def declines_then_waits(step: ys.StepRunner, params: Any) -> Any:
    def decline() -> None:
        raise ys.Permanent(ValueError("card declined"))

    with contextlib.suppress(ys.StepError):  # the charge fails; the ship goes on
        yield from step.all(
            [step.call("ship", ship, {"order": 42, "pack": 60}), step.run("charge", decline)]
        )
    yield from step.delay("after", 100)
    return "done"


def test_a_cancellation_after_a_group_raised_is_thrown_at_the_next_step(runtime: str) -> None:
    """The group is over once it raised: its replay raises the same failure, and the
    cancellation lands on the step after it, not on the member still running."""
    scenario = one(
        "declines-then-waits",
        declines_then_waits,
        ship,
        cancels=[ys.Cancel("order-42", at=10)],
        expected=[
            ys.expect("declines-then-waits", status="cancelled"),
            ys.expect("ship", status="cancelled"),
        ],
    )
    run = ys.simulate(scenario, runtime=runtime)
    assert run.ok, run.explain()
    steps = {s.step_key: s for s in run.steps["order-42"]}
    assert steps["charge"].status == "failed"
    assert not isinstance(steps["charge"].value, dict) or not steps["charge"].value.get("cancelled")
    assert steps["ship"].status == "pending"
    assert steps["after"].status == "failed"
    assert isinstance(steps["after"].value, dict)
    assert steps["after"].value.get("cancelled") is True


# --------------------------------------------------------------------------- replay


def test_a_recovery_that_meets_another_order_gives_each_member_its_own_checkpoint() -> None:
    """The buggy engine's failing schedule, on this driver: the courier is checkpointed
    first, the worker crashes before the charge's checkpoint, and the replay still gives each
    member its own result."""
    buggy = ys.explore(ys.load_scenario("fan-out-order"), max_faults=1, confirm=None)
    (found, *_) = buggy.violations
    artifact = found.artifact
    fixed = ys.load_scenario("fan-out-order-fixed")
    run = ys.simulate(
        fixed, seed=artifact.seed, schedule=artifact.schedule, faults=artifact.faults,
        runtime="memory",
    )  # fmt: skip
    assert run.ok, run.explain()
    assert [e.step_key for e in run.trace.of_kind("completion")] == ["book-courier", "charge-card"]
    assert run.faults
    assert execution(run, "checkout-42").result == {"label": "label-42", "receipt": "receipt-42"}
    ran = [(e.step_key, e.t) for e in run.trace.of_kind("body")]
    assert ran.count(("book-courier", 0.0)) == 1
    assert ("book-courier", 30.0) not in ran, "the recorded member ran again"


@ys.workflow("renamed")
def renamed(step: ys.StepRunner, params: Any) -> Any:
    yield from step.all([step.run("a", lambda: 1), step.run("b", lambda: 2)])
    yield from step.delay("wait", 10)
    return "done"


@ys.workflow("renamed")
def renamed_after_deploy(step: ys.StepRunner, params: Any) -> Any:
    yield from step.all([step.run("a", lambda: 1), step.run("c", lambda: 2)])
    yield from step.delay("wait", 10)
    return "done"


def test_a_group_whose_members_changed_is_a_nondeterminism_error(runtime: str) -> None:
    scenario = one(
        "renamed",
        renamed,
        deploys=[ys.Deploy(5, [renamed_after_deploy])],
        expected=[ys.expect("renamed", error="NondeterminismError")],
    )
    run = ys.simulate(scenario, runtime=runtime)
    assert run.ok, run.explain()
    error = execution(run, "order-42").error
    assert error is not None
    assert error.name == "NondeterminismError"
    # The record holds b first (the seed's completion order); the changed group asks for a.
    assert "the record has step 'b', the code asked for step 'a'" in error.message


# --------------------------------------------------------------------------- the choice point


def test_every_strategy_meets_the_order_of_completion_as_a_choice() -> None:
    orders: set[tuple[str, ...]] = set()

    @ys.workflow("three")
    def three(step: ys.StepRunner, params: Any) -> Any:
        yield from step.all(
            [step.run(key, lambda key=key: step.world.write(key, True)) for key in ("a", "b", "c")]
        )
        return "done"

    def note_the_order(run: Any) -> None:
        orders.add(tuple(e.step_key for e in run.trace.of_kind("completion")))

    scenario = ys.Scenario(
        name="three",
        workflows=[three],
        triggers=[ys.Trigger("three", execution_id="t")],
        invariants=[note_the_order],
        workers=1,
    )
    # Without state caching, so that every order runs to its end (with it, two orders that
    # reach one state share the rest of their run, and its invariants run once).
    report = ys.explore(scenario, strategy=ys.Exhaustive(cache=False), max_faults=0, confirm=None)
    assert report.exhausted
    assert report.ok
    assert len(orders) == 6, orders
    reduced = ys.explore(scenario, strategy="exhaustive", max_faults=0, confirm=None)
    assert reduced.distinct_states == report.distinct_states
    # The systematic search branches every completion order too, with no fault at all.
    orders.clear()
    systematic = ys.explore(scenario, max_faults=0, confirm=None)
    assert systematic.exhausted
    assert len(orders) == 6, orders
    assert systematic.systematic is not None
    assert systematic.systematic.branched == 4  # the first place, then the second after each
    for strategy in ("random", "pct"):
        orders.clear()
        ys.explore(scenario, strategy=strategy, max_faults=0, budget=60, confirm=None)
        assert len(orders) > 1, f"{strategy} always met one order: {orders}"


# --------------------------------------------------------------------------- mistakes


@pytest.mark.parametrize(
    ("members", "message"),
    [
        (lambda step: "ab", "step.all takes step verbs made by this workflow's step"),
        (lambda step: step.run("a", int), "step.all takes a list of step verbs"),
        (lambda step: [step.delay("d", 1)], "step.all cannot hold step.delay('d')"),
        (lambda step: [], "step.all needs at least one step to wait on"),
        (
            lambda step: [step.run("a", int), step.run("a", int)],
            "step key 'a' is used twice in one step.all",
        ),
    ],
)
def test_a_mistaken_group_fails_the_workflow_with_a_clear_message(
    members: Any, message: str
) -> None:
    @ys.workflow("mistaken")
    def mistaken(step: ys.StepRunner, params: Any) -> Any:
        yield from step.all(members(step))

    scenario = one("mistaken", mistaken, expected=[ys.expect("mistaken")])
    run = ys.simulate(scenario, runtime="memory")
    error = execution(run, "order-42").error
    assert error is not None
    assert message in error.message


def test_a_member_already_run_is_refused() -> None:
    @ys.workflow("twice")
    def twice(step: ys.StepRunner, params: Any) -> Any:
        first = step.run("a", int)
        yield from first
        yield from step.all([first])

    run = ys.simulate(one("twice", twice, expected=[ys.expect("twice")]), runtime="memory")
    error = execution(run, "order-42").error
    assert error is not None
    assert "step 'a' was already run (or given to another step.all)" in error.message
