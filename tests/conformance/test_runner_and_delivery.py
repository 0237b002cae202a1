"""RFC 003's runner and delivery tables, on both invokers and both runtime adapters.

"@yieldstar/worker-invoker and @yieldstar/test-invoker will implement the same deliver
contract": every test here runs with the in-process test invoker and with the worker-process
invoker (a child process that sends its runtime calls to the parent).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.engine import ExecutionEvent

LEASE = 30.0
DELAY = 5.0
caught: list[str] = []


@ys.workflow("returns")
def returns(step: ys.StepRunner, params: Any) -> Any:
    value = yield from step.run("compute", lambda: {"total": params["a"] + params["b"]})
    return {"sum": value["total"], "from": step.execution_id}


@ys.workflow("throws")
def throws(step: ys.StepRunner, params: Any) -> Any:
    yield from step.run("fine", lambda: 1)
    raise ValueError("card declined")


@ys.workflow("cancels-itself")
def cancels_itself(step: ys.StepRunner, params: Any) -> Any:
    yield from step.run("fine", lambda: 1)
    raise ys.WorkflowCancelledError("gave up on its own")


@ys.workflow("delays")
def delays(step: ys.StepRunner, params: Any) -> Any:
    yield from step.run("before", lambda: step.world.effect("before"))
    yield from step.delay("wait", 60)
    yield from step.run("after", lambda: step.world.effect("after"))
    return "done"


@ys.workflow("ship-order")
def ship_order(step: ys.StepRunner, params: Any) -> Any:
    booking = yield from step.run(
        "book-courier", lambda: step.world.effect("courier.booked", order=params["order"])
    )
    return booking


@ys.workflow("charge-order")
def charge_order(step: ys.StepRunner, params: Any) -> Any:
    yield from step.run("charge", lambda: step.world.effect("card.charged", order=params["order"]))
    try:
        target = yield from step.start("ship", "ship-order", {"order": params["order"]})
    except Exception as error:  # must never see an infrastructure error
        caught.append(type(error).__name__)
        raise
    return {"shipment": target.execution_id}


@ys.workflow("kills-its-worker")
def kills_its_worker(step: ys.StepRunner, params: Any) -> Any:
    yield from step.run("before", lambda: step.world.effect("before"))

    def die_once() -> str:
        marker = params["marker"]
        if not os.path.exists(marker):
            with open(marker, "w"):
                pass
            os.kill(os.getpid(), signal.SIGKILL)
        return "survived"

    survived = yield from step.run("risky", die_once)
    return survived


@ys.workflow("mixed")
def mixed(step: ys.StepRunner, params: Any) -> Any:
    total = 0
    for i in range(3):
        total += yield from step.run(f"add-{i}", lambda i=i: i * params["k"])
    target = yield from step.start("child", "returns", {"a": total, "b": 1}, detached=True)
    try:
        yield from step.run("flaky", lambda: 1 / 0)
    except ys.StepError as error:
        total += len(error.error.name)
    yield from step.delay("nap", 5)
    return {"total": total, "child": target.execution_id}


WORKFLOWS = [returns, throws, cancels_itself, delays, ship_order, charge_order, kills_its_worker, mixed]


@pytest.fixture(params=["test", "worker"])
def invoker(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["memory", "duckdb"])
def runtime_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def engine(invoker: str, runtime_kind: str) -> Iterator[ys.Engine]:
    caught.clear()
    with ys.Engine(
        WORKFLOWS,
        runtime=runtime_kind,  # type: ignore[arg-type]
        invoker=invoker,  # type: ignore[arg-type]
        lease_seconds=LEASE,
        redelivery_delay=DELAY,
    ) as made:
        yield made


def deliver(engine: ys.Engine, execution_id: str) -> ys.WorkflowRunOutcome:
    """Claim and deliver, without acknowledging: what ``deliver`` itself resolves with."""
    delivery = engine.runtime.claim("w1", lease_seconds=LEASE, execution_id=execution_id)
    assert delivery is not None
    return engine.invoker.deliver(ExecutionEvent(delivery, "w1"))


# --------------------------------------------------------------------------- runner table


def test_workflow_returns(engine: ys.Engine) -> None:
    """deliver resolves with completed and the result."""
    execution_id = engine.trigger("returns", {"a": 40, "b": 2})
    assert deliver(engine, execution_id) == ys.Completed({"sum": 42, "from": execution_id})


def test_workflow_throws_outside_a_step(engine: ys.Engine) -> None:
    """deliver resolves with failed and the error."""
    outcome = deliver(engine, engine.trigger("throws"))
    assert isinstance(outcome, ys.Failed)
    assert outcome.error == ys.ErrorInfo("ValueError", "card declined")


def test_workflow_throws_workflow_cancelled_error_without_a_cancellation_request(
    engine: ys.Engine,
) -> None:
    """cancelled means thrown *after a recorded cancellation request*; without one, the error
    is an ordinary failure: deliver resolves with failed and the error."""
    execution_id = engine.trigger("cancels-itself")
    result = engine.dispatch("w1")
    assert result is not None
    assert isinstance(result.outcome, ys.Failed)
    assert result.outcome.error == ys.ErrorInfo("WorkflowCancelledError", "gave up on its own")
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert (record.status, record.cancel_requested) == (ys.ExecutionStatus.FAILED, False)


def test_workflow_throws_workflow_cancelled_error_after_a_cancellation_request(
    engine: ys.Engine,
) -> None:
    """With a recorded request, deliver resolves with cancelled."""
    execution_id = engine.trigger("cancels-itself")
    assert engine.cancel(execution_id) == [execution_id]
    assert deliver(engine, execution_id) == ys.Cancelled()


def test_an_infrastructure_operation_fails_during_a_run(engine: ys.Engine) -> None:
    """deliver rejects, the worker replies retry, and no outcome is recorded."""
    execution_id = engine.trigger("returns", {"a": 1, "b": 2})
    engine.runtime.failpoints.arm("put_step.before_commit")
    with pytest.raises(ys.InfrastructureError) as rejected:
        deliver(engine, execution_id)
    if isinstance(engine.invoker, ys.WorkerProcessInvoker):
        assert "the worker replied retry: InjectedFailure" in str(rejected.value)
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert record.status == ys.ExecutionStatus.PENDING
    assert record.result is None
    assert engine.runtime.steps(execution_id) == []


def test_a_delay_suspends_the_workflow(engine: ys.Engine) -> None:
    """The unfinished step and its wake are recorded before deliver resolves with suspended."""
    execution_id = engine.trigger("delays")
    assert deliver(engine, execution_id) == ys.Suspended()
    steps = {step.step_key: step for step in engine.runtime.steps(execution_id)}
    assert steps["wait"].status == "pending"
    assert steps["wait"].value == {"until": 60}
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert record.due_at == 60.0, "the wake was not recorded before deliver resolved"


# --------------------------------------------------------------------------- delivery table


def test_deliver_resolves(engine: ys.Engine) -> None:
    """The dispatcher acknowledges the outcome under its lease."""
    execution_id = engine.trigger("returns", {"a": 1, "b": 2})
    result = engine.dispatch("w1")
    assert result is not None
    assert result.acknowledged
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert record.status == ys.ExecutionStatus.COMPLETED
    assert record.result == {"sum": 3, "from": execution_id}
    assert record.lease is None
    assert record.lease_token == result.lease.token == 1


@pytest.mark.parametrize("how", ["deliver rejects", "the worker replies retry"])
def test_a_rejected_delivery_is_delivered_again_after_the_redelivery_delay(
    engine: ys.Engine, how: str
) -> None:
    """The lease is released; the execution is delivered again after the redelivery delay."""
    execution_id = engine.trigger("returns", {"a": 1, "b": 2})
    engine.runtime.failpoints.arm("put_step.before_commit")
    first = engine.dispatch("w1")
    assert first is not None
    assert first.outcome is None
    assert isinstance(first.rejection, ys.InfrastructureError)
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert record.lease is None, "the lease was not released"
    assert record.due_at == DELAY
    assert engine.dispatch("w2") is None, "delivered again before the redelivery delay"
    engine.clock.advance(DELAY)
    again = engine.dispatch("w2")
    assert again is not None
    assert again.acknowledged
    assert again.lease.token == 2


def test_the_child_exits_before_an_outcome(runtime_kind: str, tmp_path: Any) -> None:
    """A worker process killed with SIGKILL mid-delivery: the lease is released, the execution
    is delivered again after the delay, and nothing is lost."""
    with ys.Engine(
        WORKFLOWS,
        runtime=runtime_kind,
        invoker="worker",
        redelivery_delay=DELAY,  # type: ignore[arg-type]
    ) as engine:
        assert isinstance(engine.invoker, ys.WorkerProcessInvoker)
        execution_id = engine.trigger("kills-its-worker", {"marker": str(tmp_path / "died")})
        first = engine.dispatch("w1")
        assert first is not None
        assert isinstance(first.rejection, ys.DeliveryRejectedError)
        assert f"code {-signal.SIGKILL}" in str(first.rejection)
        assert [step.step_key for step in engine.runtime.steps(execution_id)] == ["before"]
        assert engine.dispatch("w1") is None
        engine.clock.advance(DELAY)
        again = engine.dispatch("w1")
        assert again is not None
        assert again.outcome == ys.Completed("survived")
        assert engine.invoker.children_started == 2
        assert [e.name for e in engine.ledger.effects] == ["before"], "a recorded step re-ran"


def test_the_workflow_start_client_throws(engine: ys.Engine) -> None:
    """The driver records no step, workflow code cannot catch the error, deliver rejects, and
    the execution is delivered again."""
    execution_id = engine.trigger("charge-order", {"order": 42}, execution_id="order-42")
    engine.runtime.failpoints.arm("start.before_commit")
    first = engine.dispatch("w1")
    assert first is not None
    assert first.outcome is None
    assert [step.step_key for step in engine.runtime.steps(execution_id)] == ["charge"]
    assert caught == [], f"workflow code caught {caught}"
    engine.clock.advance(DELAY)
    results = engine.run_until_idle()
    assert [r.execution_id for r in results] == ["order-42", "@ship-order-3"]
    ship_orders = [r for r in engine.runtime.executions() if r.workflow_id == "ship-order"]
    assert len(ship_orders) == 1
    assert ship_orders[0].parent == ys.ParentLink("order-42", "ship")


def test_direct_trigger_is_called(engine: ys.Engine) -> None:
    """It resolves once admission commits; the dispatcher delivers the execution."""
    execution_id = engine.trigger("delays")
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert record.status == ys.ExecutionStatus.PENDING
    assert engine.ledger.effects == [], "trigger ran workflow code"
    assert engine.runtime.due() == [execution_id]
    engine.run_until_idle()
    assert [e.name for e in engine.ledger.effects] == ["before", "after"]
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert record.status == ys.ExecutionStatus.COMPLETED


def test_a_terminal_execution_is_delivered_without_running_code(engine: ys.Engine) -> None:
    """A delivery of a terminal execution returns the recorded outcome (RFC 001 as fixed)."""
    execution_id = engine.trigger("returns", {"a": 2, "b": 3})
    delivery = engine.runtime.claim("w1", lease_seconds=LEASE)
    assert delivery is not None
    record = engine.runtime.acknowledge(delivery.lease, ys.Completed("recorded"))
    event = ExecutionEvent(ys.Delivery(delivery.lease, record, ()), "w1")
    assert engine.invoker.deliver(event) == ys.Completed("recorded")
    assert engine.runtime.steps(execution_id) == []


# --------------------------------------------------------------------------- invoker parity


SCENARIOS = [
    ("returns", {"a": 40, "b": 2}),
    ("throws", None),
    ("delays", None),
    ("charge-order", {"order": 42}),
    ("mixed", {"k": 7}),
]


def _trace(invoker: str, runtime_kind: str) -> list[Any]:
    with ys.Engine(WORKFLOWS, runtime=runtime_kind, invoker=invoker) as engine:  # type: ignore[arg-type]
        for workflow_id, params in SCENARIOS:
            engine.trigger(workflow_id, params, execution_id=f"run-{workflow_id}")
        results = engine.run_until_idle()
        return [
            [(r.execution_id, r.outcome, r.lease.token, r.acknowledged) for r in results],
            engine.runtime.executions(),
            {
                r.execution_id: engine.runtime.steps(r.execution_id)
                for r in engine.runtime.executions()
            },
            engine.ledger.effects,
        ]


def test_worker_and_test_invokers_receive_the_same_event_and_runner_behavior(
    runtime_kind: str,
) -> None:
    """Their deliver results match, over a set of workflows."""
    assert _trace("worker", runtime_kind) == _trace("test", runtime_kind)
