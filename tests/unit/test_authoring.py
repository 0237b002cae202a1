"""Authoring misuse and replay semantics: each misuse fails the run with an error that says what
is wrong and what to write instead; replay never re-runs a recorded step.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.authoring import Workflow
from yieldstar_sim.core.model import ErrorInfo, ExecutionRecord, ExecutionStatus, Failed, Suspended
from yieldstar_sim.errors import StepKeyError, WorkflowDefinitionError

# --------------------------------------------------------------------------- helpers

EXECUTION = "order-42"


def run(*workflows: Workflow, params: object = None) -> tuple[ys.Engine, list[Any]]:
    """Trigger the first workflow as ``order-42`` and run until idle; return engine, results."""
    engine = ys.Engine(list(workflows), runtime="memory")
    engine.trigger(workflows[0].name, params, execution_id=EXECUTION)
    return engine, engine.run_until_idle()


def execution(engine: ys.Engine) -> ExecutionRecord:
    record = engine.runtime.execution(EXECUTION)
    assert record is not None
    return record


def failure(engine: ys.Engine, name: str) -> str:
    """The message of the error ``order-42`` failed with, after checking its class name."""
    record = execution(engine)
    assert record.status == ExecutionStatus.FAILED, record
    assert record.error is not None
    assert record.error.name == name, record.error
    return record.error.message


def failed_with(results: list[Any]) -> BaseException:
    """The live exception of the last delivery's failed outcome."""
    outcome = results[-1].outcome
    assert isinstance(outcome, Failed), outcome
    assert outcome.exception is not None
    return outcome.exception


class Counter:
    """A step body that counts its calls and returns ``value``."""

    def __init__(self, value: object = "charged") -> None:
        self.value = value
        self.calls = 0

    def __call__(self) -> object:
        self.calls += 1
        return self.value


# --------------------------------------------------------------------------- yield misuse


def test_yield_instead_of_yield_from_fails_with_a_definition_error_saying_yield_from() -> None:
    charge = Counter()

    @ys.workflow("charge-order")
    def charge_order(step: ys.StepRunner, params: object) -> Any:
        value = yield step.run("charge", charge)  # forgot `from`
        return value

    engine, results = run(charge_order)
    assert isinstance(failed_with(results), WorkflowDefinitionError)
    message = failure(engine, "WorkflowDefinitionError")
    assert "yield from step.run(...)" in message
    assert "not `yield step.run(...)`" in message
    assert EXECUTION in message
    assert charge.calls == 0
    assert engine.runtime.steps(EXECUTION) == []


def test_yield_instead_of_yield_from_names_the_step() -> None:
    """``yield step.run("charge", ...)`` (a missing ``from``) names the step to fix."""

    @ys.workflow("charge-order")
    def charge_order(step: ys.StepRunner, params: object) -> Any:
        yield from step.run("reserve", Counter())
        value = yield step.run("charge", Counter())
        return value

    engine, _ = run(charge_order)
    assert "'charge'" in failure(engine, "WorkflowDefinitionError")


@pytest.mark.parametrize("yielded", [5, None, "charge", ["charge"]])
def test_yielding_something_that_is_not_a_step_fails(yielded: object) -> None:
    @ys.workflow("charge-order")
    def charge_order(step: ys.StepRunner, params: object) -> Any:
        yield yielded

    engine, results = run(charge_order)
    assert isinstance(failed_with(results), WorkflowDefinitionError)
    message = failure(engine, "WorkflowDefinitionError")
    assert f"yielded {yielded!r} ({type(yielded).__name__})" in message
    assert "may only `yield from` step verbs such as step.run" in message


@pytest.mark.parametrize(
    "forget",
    [
        pytest.param(lambda step: step.run("charge", Counter()), id="run"),
        pytest.param(lambda step: step.delay("charge", 10), id="delay"),
        pytest.param(lambda step: step.start("charge", "ship-order"), id="start"),
    ],
)
@pytest.mark.parametrize("generator", [True, False], ids=["generator", "plain-function"])
def test_a_step_verb_called_without_yield_from_fails_naming_the_step(
    forget: Any, generator: bool
) -> None:
    charge = Counter()

    if generator:

        @ys.workflow("charge-order")
        def charge_order(step: ys.StepRunner, params: object) -> Any:
            forget(step)  # never run: the verbs are generators
            yield from step.run("reserve", charge)
            return "done"

    else:

        @ys.workflow("charge-order")
        def charge_order(step: ys.StepRunner, params: object) -> Any:
            forget(step)
            return "done"

    engine, _ = run(charge_order)
    message = failure(engine, "WorkflowDefinitionError")
    # The verb, its key and the line that called it (the lambda's, in this file).
    assert re.search(
        r"called step\.(run|delay|start)\('charge'\) at line \d+ of test_authoring\.py without "
        r"`yield from`, so the step never ran: write `.*yield from step\.(run|delay|start)\(",
        message,
    ), message
    assert all(record.step_key != "charge" for record in engine.runtime.steps(EXECUTION))
    assert engine.runtime.start_requests() == []


# --------------------------------------------------------------------------- step keys


@pytest.mark.parametrize(
    "second",
    [
        pytest.param(lambda step, body: step.run("charge", body), id="run"),
        pytest.param(lambda step, body: step.delay("charge", 0), id="delay"),
    ],
)
def test_a_step_key_used_twice_in_one_execution_fails_naming_the_key(second: Any) -> None:
    charge = Counter()

    @ys.workflow("charge-order")
    def charge_order(step: ys.StepRunner, params: object) -> Any:
        yield from step.run("charge", charge)
        yield from second(step, charge)

    engine, results = run(charge_order)
    assert isinstance(failed_with(results), StepKeyError)
    message = failure(engine, "StepKeyError")
    assert "step key 'charge' is used twice in execution 'order-42'" in message
    assert "each step needs its own key" in message
    assert charge.calls == 1
    assert [record.step_key for record in engine.runtime.steps(EXECUTION)] == ["charge"]


@pytest.mark.parametrize("key", ["", 5, None])
def test_a_step_key_must_be_a_non_empty_string(key: Any) -> None:
    charge = Counter()

    @ys.workflow("charge-order")
    def charge_order(step: ys.StepRunner, params: object) -> Any:
        yield from step.run(key, charge)

    engine, results = run(charge_order)
    assert isinstance(failed_with(results), StepKeyError)
    message = failure(engine, "StepKeyError")
    assert f"a step key must be a non-empty string, not {key!r}" in message
    assert charge.calls == 0


# --------------------------------------------------------------------------- durable values


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param({1, 2}, "step 'make' result: set is not a durable value", id="set"),
        pytest.param((1, 2), "step 'make' result: tuple is not a durable value", id="tuple"),
        pytest.param(math.nan, "step 'make' result: float nan is not a durable value", id="nan"),
        pytest.param(
            {"items": [1, {2}]}, "step 'make' result.items[1]: set is not a durable", id="nested"
        ),
    ],
)
def test_a_step_body_returning_a_non_durable_value_fails_naming_the_step_and_path(
    value: object, problem: str
) -> None:
    @ys.workflow("charge-order")
    def charge_order(step: ys.StepRunner, params: object) -> Any:
        yield from step.run("make", lambda: value)

    engine, _ = run(charge_order)
    message = failure(engine, "WorkflowDefinitionError")
    assert problem in message
    assert "a step body must return plain data" in message
    assert engine.runtime.steps(EXECUTION) == []  # nothing was recorded


def test_a_plain_function_workflow_completes_with_its_return_value() -> None:
    @ys.workflow("charge-order")
    def charge_order(step: ys.StepRunner, params: dict[str, Any]) -> Any:
        return {"order": params["order"], "charged": True}

    engine, results = run(charge_order, params={"order": 42})
    assert isinstance(results[-1].outcome, ys.Completed)
    record = execution(engine)
    assert record.status == ExecutionStatus.COMPLETED
    assert record.result == {"order": 42, "charged": True}


@pytest.mark.parametrize("generator", [True, False], ids=["generator", "plain-function"])
def test_a_workflow_whose_result_is_not_durable_fails(generator: bool) -> None:
    if generator:

        @ys.workflow("charge-order")
        def charge_order(step: ys.StepRunner, params: object) -> Any:
            yield from step.run("charge", Counter())
            return {"ids": {1, 2}}

    else:

        @ys.workflow("charge-order")
        def charge_order(step: ys.StepRunner, params: object) -> Any:
            return {"ids": {1, 2}}

    engine, _ = run(charge_order)
    message = failure(engine, "WorkflowDefinitionError")
    assert "workflow 'order-42' returned a value that is not durable" in message
    assert "result.ids: set is not a durable value (use a list)" in message


# --------------------------------------------------------------------------- replay


def test_replay_that_asks_for_another_step_fails_with_a_nondeterminism_error() -> None:
    reserve = Counter()

    @ys.workflow("charge-order")
    def v1(step: ys.StepRunner, params: object) -> Any:
        yield from step.run("reserve", reserve)
        yield from step.delay("wait", 60)
        yield from step.run("charge", Counter())

    @ys.workflow("charge-order")
    def v2(step: ys.StepRunner, params: object) -> Any:
        yield from step.run("reserve", reserve)
        yield from step.delay("pause", 60)  # renamed while v1's execution waited
        yield from step.run("charge", Counter())

    first = ys.Engine([v1], runtime="memory")
    first.trigger("charge-order", execution_id=EXECUTION)
    suspended = first.dispatch()
    assert suspended is not None
    assert isinstance(suspended.outcome, Suspended)

    second = ys.Engine([v2], runtime=first.runtime)
    results = second.run_until_idle()

    error = failed_with(results)
    assert isinstance(error, ys.NondeterminismError)
    assert (error.execution_id, error.position, error.recorded, error.requested) == (
        EXECUTION,
        1,
        "wait",
        "pause",
    )
    message = failure(second, "NondeterminismError")
    assert "execution 'order-42'" in message
    assert "step #1" in message
    assert "the record has step 'wait'" in message
    assert "the code asked for step 'pause'" in message
    assert reserve.calls == 1  # the recorded step before the divergence was replayed, not re-run


@pytest.mark.parametrize("invoker", ["in-process", "worker"])
def test_workflow_code_cannot_handle_a_nondeterminism_error(invoker: str) -> None:
    """As docs/decisions.md says: the delivery ends failed at once; an `except Exception` around
    the diverged step never runs, and nothing after it is recorded."""

    @ys.workflow("charge-order")
    def v1(step: ys.StepRunner, params: object) -> Any:
        yield from step.delay("wait", 60)
        yield from step.run("charge", Counter())

    @ys.workflow("charge-order")
    def v2(step: ys.StepRunner, params: object) -> Any:
        try:
            yield from step.delay("pause", 60)  # renamed while v1's execution waited
        except Exception as error:
            yield from step.run("handled", Counter(type(error).__name__))
            return "handled"
        yield from step.run("charge", Counter())

    first = ys.Engine([v1], runtime="memory")
    first.trigger("charge-order", execution_id=EXECUTION)
    first.dispatch()
    with ys.Engine([v2], runtime=first.runtime, invoker=invoker) as second:  # type: ignore[arg-type]
        second.run_until_idle()
        assert "the code asked for step 'pause'" in failure(second, "NondeterminismError")
        assert [step.step_key for step in second.runtime.steps(EXECUTION)] == ["wait"]


def test_a_recorded_step_is_not_run_again_on_replay() -> None:
    calls: list[str] = []

    @ys.workflow("charge-order")
    def charge_order(step: ys.StepRunner, params: object) -> Any:
        def charge() -> str:
            calls.append("charge")
            step.world.effect("card.charged", order=42)
            return "payment-1"

        payment = yield from step.run("charge", charge)
        yield from step.delay("wait", 30)
        return {"payment": payment}

    engine, results = run(charge_order)
    assert [type(result.outcome) for result in results] == [Suspended, ys.Completed]
    assert calls == ["charge"]
    assert engine.ledger.count("card.charged", order=42) == 1
    assert execution(engine).result == {"payment": "payment-1"}


def test_a_recorded_step_is_not_run_again_on_an_early_redelivery() -> None:
    charge = Counter("payment-1")

    @ys.workflow("charge-order")
    def charge_order(step: ys.StepRunner, params: object) -> Any:
        payment = yield from step.run("charge", charge)
        yield from step.delay("wait", 30)
        return {"payment": payment}

    engine = ys.Engine([charge_order], runtime="memory", redelivery_delay=1)
    engine.trigger("charge-order", execution_id=EXECUTION)
    # "charge" is recorded, but the response is lost: the delivery is released and redone.
    engine.runtime.failpoints.arm("put_step.after_commit")
    results = engine.run_until_idle()
    assert results[0].rejection is not None
    assert charge.calls == 1
    assert execution(engine).result == {"payment": "payment-1"}


def test_a_recorded_failure_is_raised_again_on_replay_without_running_the_body() -> None:
    calls: list[str] = []
    seen: list[tuple[Any, ...]] = []

    def decline() -> str:
        calls.append("charge")
        raise ValueError("card declined")

    @ys.workflow("charge-order")
    def charge_order(step: ys.StepRunner, params: object) -> Any:
        try:
            yield from step.run("charge", decline)
        except ys.StepError as error:
            seen.append((type(error), error.step_key, error.error, error.attempts, str(error)))
        yield from step.delay("wait", 30)
        return "compensated"

    engine, results = run(charge_order)
    assert len(results) == 2  # the first delivery, then the replay after the delay
    assert calls == ["charge"]
    expected = (
        ys.StepError,
        "charge",
        ErrorInfo("ValueError", "card declined"),
        1,
        "step 'charge' failed after 1 attempt: ValueError: card declined",
    )
    assert seen == [expected, expected]
    assert execution(engine).result == "compensated"


# --------------------------------------------------------------------------- the world


@pytest.mark.parametrize(
    ("use", "verb"),
    [
        pytest.param(lambda world: world.effect("card.charged", order=42), "effect", id="effect"),
        pytest.param(lambda world: world.elapse(5), "elapse", id="elapse"),
        pytest.param(lambda world: world.trigger("ship-order"), "trigger", id="trigger"),
        pytest.param(lambda world: world.read("seats_left"), "read", id="read"),
    ],
)
def test_the_world_outside_a_step_body_fails_telling_to_wrap_it_in_step_run(
    use: Any, verb: str
) -> None:
    @ys.workflow("charge-order")
    def charge_order(step: ys.StepRunner, params: object) -> Any:
        use(step.world)
        yield from step.run("charge", Counter())

    engine, results = run(charge_order)
    assert isinstance(failed_with(results), WorkflowDefinitionError)
    message = failure(engine, "WorkflowDefinitionError")
    assert f"step.world.{verb} was called outside a step body" in message
    assert "so wrap the call in a step" in message  # a read or an elapse is no effect
    assert f"yield from step.run(key, lambda: step.world.{verb}(...))" in message
    assert engine.ledger.effects == []
    assert engine.clock.now() == 0.0
    assert [record.execution_id for record in engine.runtime.executions()] == [EXECUTION]


# --------------------------------------------------------------------------- delays


def test_a_zero_delay_completes_at_once() -> None:
    @ys.workflow("charge-order")
    def charge_order(step: ys.StepRunner, params: object) -> Any:
        yield from step.delay("wait", 0)
        return "done"

    engine, results = run(charge_order)
    assert [type(result.outcome) for result in results] == [ys.Completed]
    assert engine.clock.now() == 0.0
    (record,) = engine.runtime.steps(EXECUTION)
    assert (record.step_key, record.status) == ("wait", "completed")
    assert execution(engine).result == "done"


@pytest.mark.parametrize(
    ("seconds", "error", "problem"),
    [
        (-1, "ValueError", "step.delay('wait'): -1 is not a delay"),
        (math.nan, "ValueError", "step.delay('wait'): nan is not a delay"),
        (math.inf, "ValueError", "step.delay('wait'): inf is not a delay"),
        ("30", "TypeError", "step.delay('wait'): seconds must be a number"),
        (True, "TypeError", "step.delay('wait'): seconds must be a number"),
    ],
)
def test_a_negative_or_nan_delay_fails_with_a_clear_error(
    seconds: Any, error: str, problem: str
) -> None:
    @ys.workflow("charge-order")
    def charge_order(step: ys.StepRunner, params: object) -> Any:
        yield from step.delay("wait", seconds)

    engine, _ = run(charge_order)
    assert problem in failure(engine, error)
    assert engine.runtime.steps(EXECUTION) == []


# --------------------------------------------------------------------------- registration


def test_a_workflow_needs_a_non_empty_name() -> None:
    with pytest.raises(ValueError, match="a workflow name must be a non-empty string"):
        ys.workflow("")


@pytest.mark.parametrize("name", ["charge\norder", "charge\x7forder", "a\x7f"])
def test_a_workflow_name_with_a_control_character_is_refused_at_definition(name: str) -> None:
    # DEL is a control character like the rest (ids.control_character, the one rule):
    # refused at the decorator, not later by the runtime.
    with pytest.raises(ValueError, match="contains an ASCII control character"):
        ys.workflow(name)


def test_an_engine_refuses_two_workflows_with_one_name() -> None:
    @ys.workflow("charge-order")
    def first(step: ys.StepRunner, params: object) -> Any:
        return 1

    @ys.workflow("charge-order")
    def second(step: ys.StepRunner, params: object) -> Any:
        return 2

    with pytest.raises(ValueError, match="two workflows are named 'charge-order'"):
        ys.Engine([first, second], runtime="memory")


def test_an_engine_registers_only_declared_workflows() -> None:
    def undeclared(step: ys.StepRunner, params: object) -> Any:
        return 1

    with pytest.raises(TypeError, match=r"@ys\.workflow\(name\)"):
        ys.Engine([undeclared], runtime="memory")  # type: ignore[list-item]
