"""``step.wait_for_event`` and ``step.continue_as_new`` through the engine, on every adapter:
recorded in history, replayed, timed out, and the mistakes a workflow can make."""

from __future__ import annotations

from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.model import ContinuedAsNew, Failed


@ys.workflow("counter")
def counter(step: ys.StepRunner, params: Any) -> Any:
    n = params["n"]
    event = yield from step.wait_for_event("tick", "tick", timeout=10)
    if n < 2:
        yield from step.continue_as_new({"n": n + 1})
    return {"n": n, "payload": None if event is None else event.payload}


@pytest.fixture(params=["memory", "duckdb"])
def engine(request: pytest.FixtureRequest) -> ys.Engine:
    return ys.Engine([counter], runtime=request.param)


def test_an_instance_event_reaches_each_run_across_continue_as_new(engine: ys.Engine) -> None:
    engine.trigger("counter", {"n": 0}, execution_id="c")
    engine.run_until_idle(until=1)
    for payload in (1, 2, 3):
        engine.send_event("tick", payload, instance_id="c")
    outcomes = [result.outcome for result in engine.run_until_idle()]
    assert outcomes[:2] == [ContinuedAsNew({"n": 1}), ContinuedAsNew({"n": 2})]
    runs = engine.runtime.executions()
    assert [run.instance for run in runs] == ["c", "c", "c"]
    assert runs[-1].result == {"n": 2, "payload": 3}
    assert [event.consumed_by for event in engine.runtime.events()] == [  # type: ignore[attr-defined]
        run.execution_id for run in runs
    ]


def test_a_wait_without_an_event_times_out_and_returns_none(engine: ys.Engine) -> None:
    engine.trigger("counter", {"n": 2}, execution_id="c")
    engine.run_until_idle()
    record = engine.runtime.execution("c")
    assert record is not None
    assert record.result == {"n": 2, "payload": None}
    assert engine.clock.now() == 10
    (step,) = engine.runtime.steps("c")
    assert (step.status, step.value) == ("completed", {"timedOut": True, "until": 10.0})


def test_a_taken_event_replays_from_its_step_record(engine: ys.Engine) -> None:
    engine.trigger("counter", {"n": 2}, execution_id="c")
    engine.send_event("tick", "first", execution_id="c")
    delivery = engine.runtime.claim("w1", lease_seconds=30)
    assert delivery is not None
    engine.runtime.wait_for_event(delivery.lease, "tick", "tick")  # type: ignore[attr-defined]
    engine.runtime.release(delivery.lease, delay=0)  # the worker died after taking it
    engine.send_event("tick", "second", execution_id="c")
    engine.run_until_idle()
    record = engine.runtime.execution("c")
    assert record is not None
    assert record.result == {"n": 2, "payload": "first"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (lambda step: step.wait_for_event("w", "e", timeout=-1), "is not a timeout"),
        (lambda step: step.wait_for_event("w", "", timeout=1), "the event name"),
        (lambda step: step.continue_as_new({"x": {1}}), "new run's params must be plain data"),
        (lambda step: step.continue_as_new([1]), "must be an object or None"),
    ],
)
def test_a_mistake_in_an_event_verb_fails_the_run_saying_what(body: Any, message: str) -> None:
    @ys.workflow("wrong")
    def wrong(step: ys.StepRunner, params: Any) -> Any:
        yield from body(step)

    engine = ys.Engine([wrong], runtime="memory")
    engine.trigger("wrong", execution_id="w-1")
    (result,) = engine.run_until_idle()
    assert isinstance(result.outcome, Failed)
    assert message in result.outcome.error.message


def test_an_owned_child_cannot_continue_as_new() -> None:
    @ys.workflow("child")
    def child(step: ys.StepRunner, params: Any) -> Any:
        yield from step.continue_as_new(None)

    @ys.workflow("parent")
    def parent(step: ys.StepRunner, params: Any) -> Any:
        return (yield from step.call("kid", "child"))

    engine = ys.Engine([parent, child], runtime="memory")
    engine.trigger("parent", execution_id="p")
    engine.run_until_idle()
    record = engine.runtime.execution("p")
    assert record is not None
    assert record.status == "failed"
    assert record.error is not None
    assert "only a run nobody waits for" in record.error.message


def test_a_wait_for_event_cannot_be_a_member_of_step_all() -> None:
    @ys.workflow("group")
    def group(step: ys.StepRunner, params: Any) -> Any:
        yield from step.all([step.wait_for_event("w", "e")])

    engine = ys.Engine([group], runtime="memory")
    engine.trigger("group", execution_id="g")
    (result,) = engine.run_until_idle()
    assert isinstance(result.outcome, Failed)
    assert "step.all cannot hold step.wait_for_event('w')" in result.outcome.error.message
