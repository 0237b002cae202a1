"""RFC 003's runner and delivery tables, on both invokers and both runtime adapters.

"@yieldstar/worker-invoker and @yieldstar/test-invoker will implement the same deliver
contract": every test here runs with the in-process test invoker and with the worker-process
invoker (a child process that sends its runtime calls to the parent).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.model import (
    Cancelled,
    Delivery,
    ErrorInfo,
    ExecutionStatus,
    Failed,
    ParentLink,
    Suspended,
    WorkflowRunOutcome,
)
from yieldstar_sim.engine import ExecutionEvent, WorkerProcessInvoker
from yieldstar_sim.errors import DeliveryRejectedError, InfrastructureError, InjectedFailure

LEASE = 30.0
DELAY = 5.0
REQUEST = ys.RequestId("order-42", "ship")
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
    except Exception as error:  # must never see an error of the start client
        caught.append(type(error).__name__)
        if "caught" in params:  # a file: the worker invoker's child process writes it too
            with open(params["caught"], "a", encoding="utf-8") as file:
                file.write(type(error).__name__ + "\n")
        raise
    return {"shipment": target.execution_id}


@ys.workflow("every-call")
def every_call(step: ys.StepRunner, params: Any) -> Any:
    """Makes each runtime call a delivery can make: put_step, start, start_child, wait_for."""
    total = yield from step.run("compute", lambda: 1)
    started = yield from step.start("start", "returns", {"a": total, "b": 1})
    spawned = yield from step.spawn("spawn", "returns", "spawned-1", {"a": 2, "b": 2})
    called = yield from step.call("call", "returns", {"a": 3, "b": 3})
    return {"started": started.execution_id, "spawned": spawned, "called": called["sum"]}


class LockedError(Exception):
    """A runtime error that cannot cross a pipe: it holds a lock."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lock = threading.Lock()


class LockedInfrastructureError(InfrastructureError):
    """An infrastructure error that cannot cross a pipe."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lock = threading.Lock()


class TwoPartError(Exception):
    """A runtime error whose pickled form does not rebuild it (its __init__ takes two parts)."""

    def __init__(self, what: str, why: str) -> None:
        super().__init__(f"{what}: {why}")


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


WORKFLOWS = [
    returns, throws, cancels_itself, delays, ship_order, charge_order, kills_its_worker, mixed,
    every_call,
]  # fmt: skip


@pytest.fixture(params=["in-process", "worker"])
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


def deliver(engine: ys.Engine, execution_id: str) -> WorkflowRunOutcome:
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
    assert isinstance(outcome, Failed)
    assert outcome.error == ErrorInfo("ValueError", "card declined")


def test_workflow_throws_workflow_cancelled_error_without_a_cancellation_request(
    engine: ys.Engine,
) -> None:
    """cancelled means thrown *after a recorded cancellation request*; without one, the error
    is an ordinary failure: deliver resolves with failed and the error."""
    execution_id = engine.trigger("cancels-itself")
    result = engine.dispatch("w1")
    assert result is not None
    assert isinstance(result.outcome, Failed)
    assert result.outcome.error == ErrorInfo("WorkflowCancelledError", "gave up on its own")
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert (record.status, record.cancel_requested) == (ExecutionStatus.FAILED, False)


def test_workflow_throws_workflow_cancelled_error_after_a_cancellation_request(
    engine: ys.Engine,
) -> None:
    """With a recorded request, deliver resolves with cancelled."""
    execution_id = engine.trigger("cancels-itself")
    assert engine.cancel(execution_id) == [execution_id]
    assert deliver(engine, execution_id) == Cancelled()


def test_an_infrastructure_operation_fails_during_a_run(engine: ys.Engine) -> None:
    """deliver rejects, the worker replies retry, and no outcome is recorded."""
    execution_id = engine.trigger("returns", {"a": 1, "b": 2})
    engine.runtime.failpoints.arm("put_step.before_commit")
    with pytest.raises(InfrastructureError) as rejected:
        deliver(engine, execution_id)
    if isinstance(engine.invoker, WorkerProcessInvoker):
        assert "the worker replied retry: InjectedFailure" in str(rejected.value)
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert record.status == ExecutionStatus.PENDING
    assert record.result is None
    assert engine.runtime.steps(execution_id) == []


def test_a_delay_suspends_the_workflow(engine: ys.Engine) -> None:
    """The unfinished step and its wake are recorded before deliver resolves with suspended."""
    execution_id = engine.trigger("delays")
    assert deliver(engine, execution_id) == Suspended()
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
    assert record.status == ExecutionStatus.COMPLETED
    assert record.result == {"sum": 3, "from": execution_id}
    assert record.lease is None
    assert record.lease_token == result.lease.token == 1


@pytest.mark.parametrize(
    ("how", "invoker_kind"),
    [("deliver rejects", "in-process"), ("the worker replies retry", "worker")],
)
def test_a_rejected_delivery_is_delivered_again_after_the_redelivery_delay(
    runtime_kind: str, how: str, invoker_kind: str
) -> None:
    """The lease is released; the execution is delivered again after the redelivery delay.

    "deliver rejects": the in-process invoker's deliver raises the runtime's own error.
    "the worker replies retry": the worker process stays alive and answers retry, and the same
    process serves the next delivery (unlike a child that exits, below).
    """
    with ys.Engine(
        WORKFLOWS,
        runtime=runtime_kind,  # type: ignore[arg-type]
        invoker=invoker_kind,  # type: ignore[arg-type]
        lease_seconds=LEASE,
        redelivery_delay=DELAY,
    ) as engine:
        execution_id = engine.trigger("returns", {"a": 1, "b": 2})
        refused = InjectedFailure("put_step refused")
        engine.runtime.failpoints.arm("put_step.before_commit", error=refused)
        first = engine.dispatch("w1")
        assert first is not None
        assert first.outcome is None
        if how == "deliver rejects":
            assert first.rejection is refused, "deliver did not reject with the runtime's error"
        else:
            assert isinstance(engine.invoker, WorkerProcessInvoker)
            assert isinstance(first.rejection, DeliveryRejectedError)
            assert str(first.rejection) == (
                "the worker replied retry: InjectedFailure: put_step refused"
            )
            pid = engine.invoker.child_pid
            assert pid is not None, "the worker exited instead of replying retry"
        record = engine.runtime.execution(execution_id)
        assert record is not None
        assert record.lease is None, "the lease was not released"
        assert record.due_at == DELAY
        assert engine.runtime.steps(execution_id) == []
        assert engine.dispatch("w2") is None, "delivered again before the redelivery delay"
        engine.clock.advance(DELAY)
        again = engine.dispatch("w2")
        assert again is not None
        assert again.acknowledged
        assert again.lease.token == 2
        if how == "the worker replies retry":
            assert isinstance(engine.invoker, WorkerProcessInvoker)
            assert (engine.invoker.child_pid, engine.invoker.children_started) == (pid, 1)


def test_the_child_exits_before_an_outcome(runtime_kind: str, tmp_path: Any) -> None:
    """A worker process killed with SIGKILL mid-delivery: the lease is released, the execution
    is delivered again after the delay, and nothing is lost."""
    with ys.Engine(
        WORKFLOWS,
        runtime=runtime_kind,  # type: ignore[arg-type]
        invoker="worker",
        redelivery_delay=DELAY,
    ) as engine:
        assert isinstance(engine.invoker, WorkerProcessInvoker)
        execution_id = engine.trigger("kills-its-worker", {"marker": str(tmp_path / "died")})
        first = engine.dispatch("w1")
        assert first is not None
        assert isinstance(first.rejection, DeliveryRejectedError)
        assert f"code {-signal.SIGKILL}" in str(first.rejection)
        assert [step.step_key for step in engine.runtime.steps(execution_id)] == ["before"]
        assert engine.dispatch("w1") is None
        engine.clock.advance(DELAY)
        again = engine.dispatch("w1")
        assert again is not None
        assert again.outcome == ys.Completed("survived")
        assert engine.invoker.children_started == 2
        assert [e.name for e in engine.ledger.effects] == ["before"], "a recorded step re-ran"


CLIENT_ERRORS: dict[str, Callable[[], Exception]] = {
    "an infrastructure error": lambda: InjectedFailure("the start client broke"),
    "a RuntimeError": lambda: RuntimeError("the start client broke"),
    "an error that cannot be pickled": lambda: LockedError("the start client broke"),
    "an infrastructure error that cannot be pickled": lambda: LockedInfrastructureError(
        "the start client broke"
    ),
    "an error that does not unpickle": lambda: TwoPartError("the start client broke", "for good"),
}


class AnswersWithALock(ys.MemoryRuntime):
    """A runtime whose first put_step answers with something no pipe can carry."""

    def put_step(self, *args: Any, **kwargs: Any) -> Any:
        super().put_step(*args, **kwargs)
        if not getattr(self, "answered", False):
            self.answered = True
            return threading.Lock()
        return None


def test_an_answer_that_cannot_cross_the_pipe_stops_the_worker_process() -> None:
    """The child waits for an answer that never comes: it cannot serve another delivery. The
    delivery rejects, the lease is released, and the next delivery gets a new child."""
    clock = ys.ManualClock()
    runtime = AnswersWithALock(clock=clock)
    with ys.Engine(WORKFLOWS, runtime=runtime, invoker="worker", redelivery_delay=DELAY) as engine:
        assert isinstance(engine.invoker, WorkerProcessInvoker)
        execution_id = engine.trigger("returns", {"a": 1, "b": 2})
        first = engine.dispatch("w1")
        assert first is not None
        assert isinstance(first.rejection, DeliveryRejectedError)
        assert "cannot pickle" in str(first.rejection)
        assert str(first.rejection).endswith("the worker process was stopped")
        assert engine.runtime.execution(execution_id).lease is None  # type: ignore[union-attr]
        engine.clock.advance(DELAY)
        again = engine.dispatch("w1")
        assert again is not None
        assert again.outcome == ys.Completed({"sum": 3, "from": execution_id})
        assert engine.invoker.children_started == 2


@pytest.mark.parametrize("point", ["start.before_commit", "start.after_commit"])
@pytest.mark.parametrize("kind", sorted(CLIENT_ERRORS))
def test_the_workflow_start_client_throws(
    engine: ys.Engine, tmp_path: Any, kind: str, point: str
) -> None:
    """The driver records no step, workflow code cannot catch the error, deliver rejects, and
    the execution is delivered again: whatever the client throws, before or after its commit,
    on both invokers."""
    marker = tmp_path / "caught"
    params = {"order": 42, "caught": str(marker)}
    execution_id = engine.trigger("charge-order", params, execution_id="order-42")
    engine.runtime.failpoints.arm(point, error=CLIENT_ERRORS[kind]())
    first = engine.dispatch("w1")
    assert first is not None
    assert first.outcome is None, "the client's error became an outcome"
    assert isinstance(first.rejection, InfrastructureError), "deliver did not reject"
    assert "the start client broke" in str(first.rejection)
    assert [step.step_key for step in engine.runtime.steps(execution_id)] == ["charge"]
    assert not marker.exists(), f"workflow code caught {marker.read_text()}"
    assert caught == [], f"workflow code caught {caught}"
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert (record.status, record.lease, record.lease_token) == (
        ExecutionStatus.PENDING, None, 1,
    ), "the lease was not released"  # fmt: skip
    assert record.due_at == DELAY
    engine.clock.advance(DELAY)
    results = engine.run_until_idle()
    assert [r.lease.token for r in results if r.execution_id == "order-42"] == [2]
    assert all(r.acknowledged for r in results)
    ship_orders = [r for r in engine.runtime.executions() if r.workflow_id == "ship-order"]
    assert len(ship_orders) == 1
    assert ship_orders[0].parent == ParentLink("order-42", "ship")
    assert [r.request_id for r in engine.runtime.start_requests()] == [REQUEST]
    done = engine.runtime.execution(execution_id)
    assert done is not None
    assert done.result == {"shipment": ship_orders[0].execution_id}
    assert not marker.exists()


@pytest.mark.parametrize("call", ["put_step", "start", "start_child", "wait_for"])
def test_any_error_of_a_runtime_call_rejects_the_delivery(engine: ys.Engine, call: str) -> None:
    """Not only infrastructure errors: an error of any kind from any runtime call of a
    delivery rejects it, the lease is released, and the redelivery finishes the work."""
    execution_id = engine.trigger("every-call", execution_id="every")
    engine.runtime.failpoints.arm(f"{call}.before_commit", error=RuntimeError(f"{call} broke"))
    results = engine.run_until_idle()
    rejected = [r for r in results if r.rejection is not None]
    assert len(rejected) == 1
    assert isinstance(rejected[0].rejection, DeliveryRejectedError)
    assert f"RuntimeError: {call} broke" in str(rejected[0].rejection)
    assert rejected[0].outcome is None
    assert all(r.acknowledged for r in results if r.rejection is None)
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert record.status == ExecutionStatus.COMPLETED, record.error
    assert isinstance(record.result, dict)
    assert (record.result["spawned"], record.result["called"]) == ("spawned-1", 6)
    assert sorted(r.workflow_id for r in engine.runtime.executions()) == [
        "every-call", "returns", "returns", "returns",
    ], "a runtime call that failed admitted something, or its retry admitted twice"  # fmt: skip


def test_direct_trigger_is_called(engine: ys.Engine) -> None:
    """It resolves once admission commits; the dispatcher delivers the execution."""
    execution_id = engine.trigger("delays")
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert record.status == ExecutionStatus.PENDING
    assert engine.ledger.effects == [], "trigger ran workflow code"
    assert engine.runtime.due() == [execution_id]
    engine.run_until_idle()
    assert [e.name for e in engine.ledger.effects] == ["before", "after"]
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert record.status == ExecutionStatus.COMPLETED


def test_a_terminal_execution_is_delivered_without_running_code(engine: ys.Engine) -> None:
    """A delivery of a terminal execution returns the recorded outcome (RFC 001 as fixed)."""
    execution_id = engine.trigger("returns", {"a": 2, "b": 3})
    delivery = engine.runtime.claim("w1", lease_seconds=LEASE)
    assert delivery is not None
    record = engine.runtime.acknowledge(delivery.lease, ys.Completed("recorded"))
    event = ExecutionEvent(Delivery(delivery.lease, record, ()), "w1")
    assert engine.invoker.deliver(event) == ys.Completed("recorded")
    assert engine.runtime.steps(execution_id) == []


# --------------------------------------------------------------------------- invoker parity


SCENARIOS = [
    ("returns", {"a": 40, "b": 2}),
    ("throws", None),
    ("cancels-itself", None),
    ("delays", None),
    ("charge-order", {"order": 42}),
    ("mixed", {"k": 7}),
    ("every-call", None),
]


def _exit_child(engine: ys.Engine) -> None:
    """At the point: the worker's child process dies (SIGKILL) before the call is made; on the
    in-process invoker, where there is no child, the same point rejects the delivery."""
    if isinstance(engine.invoker, WorkerProcessInvoker):
        pid = engine.invoker.child_pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
    raise InjectedFailure("the worker process exited")


#: Fault kinds, each as the failure points it arms: (point, error or action, times).
FAULTS: dict[str, list[tuple[str, Any, int]]] = {
    "fault-free": [],
    "rejection": [("put_step.before_commit", None, 3)],
    "rejection by a RuntimeError": [("put_step.before_commit", RuntimeError("refused"), 2)],
    "the start client throws": [("start.before_commit", None, 2)],
    "the start client throws a RuntimeError": [
        ("start.before_commit", RuntimeError("the start client broke"), 2)
    ],
    "a lost start response": [("start.after_commit", None, 2)],
    "a lost step response": [("put_step.after_commit", None, 3)],
    "a lost child response": [("start_child.after_commit", None, 1)],
    "a wait that throws": [("wait_for.before_commit", ValueError("no wait"), 1)],
    "the child exits": [("put_step.before_commit", _exit_child, 2)],
}


def _trace(invoker: str, runtime_kind: str, fault: str) -> list[Any]:
    with ys.Engine(WORKFLOWS, runtime=runtime_kind, invoker=invoker) as engine:  # type: ignore[arg-type]
        for workflow_id, params in SCENARIOS:
            engine.trigger(workflow_id, params, execution_id=f"run-{workflow_id}")
        for point, armed, times in FAULTS[fault]:
            if callable(armed):
                engine.runtime.failpoints.arm(point, action=partial(armed, engine), times=times)
            else:
                engine.runtime.failpoints.arm(point, error=armed, times=times)
        results = engine.run_until_idle(workers=("w1", "w2"))
        assert engine.runtime.failpoints.armed == {}, "a fault did not fire"
        deliveries = [
            (r.execution_id, r.worker, r.outcome, r.lease.token, r.acknowledged,
             isinstance(r.rejection, InfrastructureError))
            for r in results
        ]  # fmt: skip
        return [
            deliveries,
            engine.runtime.executions(),
            {
                r.execution_id: engine.runtime.steps(r.execution_id)
                for r in engine.runtime.executions()
            },
            engine.runtime.start_requests(),
            engine.ledger.effects,
        ]


@pytest.mark.parametrize("fault", list(FAULTS))
def test_worker_and_test_invokers_receive_the_same_event_and_runner_behavior(
    runtime_kind: str, fault: str
) -> None:
    """Their deliver results match, over a set of workflows, without faults and with each
    kind of fault: rejections, a start client that throws, lost responses, a child exit."""
    worker = _trace("worker", runtime_kind, fault)
    assert worker == _trace("in-process", runtime_kind, fault)
    if fault != "fault-free":
        assert any(rejected for *_, rejected in worker[0]), "no delivery was rejected"
