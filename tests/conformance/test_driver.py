"""RFC 003's workflow-driver table: recorded steps and calls to a fake WorkflowStartClient.

The driver runs against a real runtime for leases and steps, but its start calls go to a fake
client that records each request and answers as the row says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.driver import CallStart, Command, PutStep, RunBody, drive
from yieldstar_sim.core.identity import params_digest
from yieldstar_sim.core.model import (
    StartAccepted,
    StartRejected,
    StartResult,
    StepRecord,
    Suspended,
    WorkflowRunOutcome,
)
from yieldstar_sim.engine import BodyWorld, EngineWorld, Ledger, run_delivery
from yieldstar_sim.engine.calls import perform_runtime_call
from yieldstar_sim.errors import InfrastructureError

REQUEST = ys.RequestId("order-42", "ship")
caught: list[str] = []


@ys.workflow("charge-order")
def charge_order(step: ys.StepRunner, params: Any) -> Any:
    try:
        target = yield from step.start("ship", "ship-order", {"order": params["order"]})
        result = {"shipment": target.execution_id}
    except ys.WorkflowStartError as error:
        caught.append(f"WorkflowStartError {error.code}")
        result = {"rejected": str(error.code)}
    except Exception as error:  # the RFC: workflow code must not be able to catch a client error
        caught.append(f"caught {type(error).__name__}")
        raise
    yield from step.delay("settle", 10)  # so that a second delivery replays the start step
    return result


class ClientError(InfrastructureError):
    """The fake client's failure: an infrastructure error, not a rejection."""


@dataclass
class FakeStartClient:
    """Records every request; answers with ``answer(request)``."""

    answer: Callable[[ys.StartRequest], StartResult]
    calls: list[ys.StartRequest] = field(default_factory=list)

    def start(self, request: ys.StartRequest) -> StartResult:
        self.calls.append(request)
        return self.answer(request)


@dataclass
class Harness:
    """One execution of charge-order, delivered by hand through the driver."""

    client: FakeStartClient
    clock: ys.ManualClock = field(default_factory=ys.ManualClock)
    crash_before: type | None = None  # stop the delivery before this command, like a crash

    def __post_init__(self) -> None:
        self.runtime = ys.MemoryRuntime(clock=self.clock)
        self.runtime.trigger("charge-order", {"order": 42}, execution_id="order-42")
        self.world = EngineWorld(self.runtime, self.clock, Ledger())

    def deliver(self) -> WorkflowRunOutcome:
        self.clock.advance(60)  # past any lease of an earlier, abandoned delivery
        delivery = self.runtime.claim("w1", lease_seconds=30)
        assert delivery is not None
        body_world = BodyWorld(self.world, "w1")

        def perform(command: Command) -> Any:
            if self.crash_before is not None and isinstance(command, self.crash_before):
                self.crash_before = None
                raise Crash
            if isinstance(command, CallStart):
                return self.client.start(command.request)
            if isinstance(command, RunBody):
                return body_world.run(command)
            return perform_runtime_call(self.runtime, command)

        try:
            outcome = run_delivery(drive(charge_order, delivery, body_world), perform)
        except (Crash, InfrastructureError):
            self.runtime.release(delivery.lease, delay=0)
            raise
        self.runtime.acknowledge(delivery.lease, outcome)
        return outcome

    def step(self, key: str = "ship") -> StepRecord:
        return next(step for step in self.runtime.steps("order-42") if step.step_key == key)


class Crash(Exception):
    """The harness's stand-in for a worker that stops between two commands."""


def accept(request: ys.StartRequest) -> StartResult:
    return StartAccepted("@ship-order-7")


@pytest.fixture(autouse=True)
def _reset_caught() -> None:
    caught.clear()


def test_returns_accepted() -> None:
    """The execution ID object is recorded and returned; replay makes no client call."""
    harness = Harness(FakeStartClient(accept))
    assert harness.deliver() == Suspended()
    assert harness.client.calls == [ys.StartRequest(REQUEST, "ship-order", {"order": 42})]
    step = harness.step()
    assert (step.status, step.value) == (
        "completed",
        {
            "executionId": "@ship-order-7",
            "step": {
                "kind": "start",
                "workflow": "ship-order",
                "params": params_digest({"order": 42}),
            },
        },
    )
    assert harness.deliver() == ys.Completed({"shipment": "@ship-order-7"})
    assert len(harness.client.calls) == 1, "replay called the start client again"


@pytest.mark.parametrize(
    "code",
    [
        ys.WorkflowStartErrorCode.START_REQUEST_MISMATCH,
        ys.WorkflowStartErrorCode.INVALID_START_PARAMETERS,
    ],
)
def test_returns_rejected(code: ys.WorkflowStartErrorCode) -> None:
    """A WorkflowStartError and its code are recorded and thrown to workflow code; replay
    restores the same class and code without a client call."""
    harness = Harness(FakeStartClient(lambda request: StartRejected(code, "no")))
    assert harness.deliver() == Suspended()
    assert caught == [f"WorkflowStartError {code}"]
    step = harness.step()
    assert step.status == "failed"
    assert step.value == {
        "error": {"name": "WorkflowStartError", "message": "no", "code": str(code)}
    }
    caught.clear()
    assert harness.deliver() == ys.Completed({"rejected": str(code)})
    assert caught == [f"WorkflowStartError {code}"], "replay did not restore the same error"
    assert len(harness.client.calls) == 1


def test_returns_invalid_start_parameters() -> None:
    """The driver records and throws that rejection after one client call."""

    @ys.workflow("charge-order")
    def invalid(step: ys.StepRunner, params: Any) -> Any:
        try:
            yield from step.start("ship", "ship-order", {"when": float("nan")})
        except ys.WorkflowStartError as error:
            return {"rejected": str(error.code), "message": str(error)}
        return None

    runtime = ys.MemoryRuntime()
    client = FakeStartClient(runtime.start)
    runtime.trigger("charge-order", execution_id="order-42")
    delivery = runtime.claim("w1", lease_seconds=30)
    assert delivery is not None
    world = BodyWorld(EngineWorld(runtime, ys.ManualClock(), Ledger()), "w1")

    def perform(command: Command) -> Any:
        if isinstance(command, CallStart):
            return client.start(command.request)
        return perform_runtime_call(runtime, command)

    outcome = run_delivery(drive(invalid, delivery, world), perform)
    assert outcome == ys.Completed(
        {
            "rejected": "INVALID_START_PARAMETERS",
            "message": "params.when: float nan is not a durable value",
        }
    )
    assert len(client.calls) == 1
    (step,) = runtime.steps("order-42")
    assert step.status == "failed"
    assert step.value["error"]["code"] == "INVALID_START_PARAMETERS"  # type: ignore[index,call-overload]
    assert [r.execution_id for r in runtime.executions()] == ["order-42"]


def test_throws() -> None:
    """No step is recorded, workflow code cannot catch the error, and the next execution
    attempt calls the client again."""
    answers: list[Callable[[], StartResult]] = [
        lambda: (_ for _ in ()).throw(ClientError("connection reset")),
        lambda: StartAccepted("@ship-order-7"),
    ]
    harness = Harness(FakeStartClient(lambda request: answers.pop(0)()))
    with pytest.raises(ClientError):
        harness.deliver()
    assert harness.runtime.steps("order-42") == []
    assert caught == [], f"workflow code caught the client's error: {caught}"
    assert harness.deliver() == Suspended()
    assert harness.step().value["executionId"] == "@ship-order-7"
    assert [c.request_id for c in harness.client.calls] == [REQUEST, REQUEST]


def test_caller_stops_after_accepted_but_before_recording_the_step() -> None:
    """The next attempt calls the client with the same start-request ID and records its first
    execution ID."""
    runtime = ys.MemoryRuntime()
    runtime.trigger("charge-order", execution_id="order-42")
    harness = Harness(FakeStartClient(runtime.start), crash_before=PutStep)
    with pytest.raises(Crash):
        harness.deliver()
    first_target = runtime.start_requests()[0].target_execution_id
    assert harness.runtime.steps("order-42") == []
    assert harness.deliver() == Suspended()
    assert [c.request_id for c in harness.client.calls] == [REQUEST, REQUEST]
    assert harness.step().value["executionId"] == first_target
    assert len(runtime.executions()) == 2, "the repeated start admitted a second target"
