"""What the trace says of a runtime call, a step body and an outcome: the text of each event
and its typed payload."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.driver import (
    CallStart,
    PutStep,
    RecordWake,
    RequestCancel,
    StartChild,
    WaitFor,
)
from yieldstar_sim.core.model import (
    ChildAccepted,
    Delivery,
    ExecutionRecord,
    Failed,
    StartAccepted,
    StartRejected,
)
from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.trace import (
    NO_DATA,
    CancelData,
    ClaimData,
    Payload,
    PutStepData,
    RecordWakeData,
    StartChildData,
    StartData,
    StatusData,
)
from yieldstar_sim.simulation.trace_values import summary, traced

if TYPE_CHECKING:
    from yieldstar_sim.core.driver import BodyResult, Command
    from yieldstar_sim.core.model import WorkflowRunOutcome
    from yieldstar_sim.simulation.faults import PointInfo


def narration(command: Command) -> str | None:
    """What the trace says a runtime call did (None: the result says it)."""
    if isinstance(command, PutStep):
        return f"recorded step {command.step_key}: {command.status} {summary(command.value)}"
    if isinstance(command, RecordWake):
        return f"wake at t={command.at:g}"
    if isinstance(command, WaitFor):
        return f"waits for {command.execution_id}"
    if isinstance(command, RequestCancel):
        return f"cancel requested for {command.execution_id} and what it owns"
    return None


def command_data(command: Command, result: Any) -> Payload:
    """A driver command's call event payload: the command's part and the result's."""
    if isinstance(command, PutStep):
        value, digest, size = traced(command.value)
        return PutStepData(command.status, command.attempt, command.wake_at, value, digest, size)
    if isinstance(command, RecordWake):
        return RecordWakeData(command.at)
    rejected = str(result.code) if isinstance(result, StartRejected) else None
    if isinstance(command, StartChild):
        child = command.request
        accepted = result if isinstance(result, ChildAccepted) else None
        return StartChildData(
            child.workflow_id, child.child_id, child.detached,
            None if accepted is None else accepted.execution_id,
            None if accepted is None else accepted.created, rejected,
        )  # fmt: skip
    if isinstance(command, CallStart):
        request = command.request
        accepted_id = result.execution_id if isinstance(result, StartAccepted) else None
        return StartData(request.workflow_id, request.detached, accepted_id, rejected)
    return result_data(result)


def call_text(info: PointInfo, result: Any, done: str | None) -> str:
    """The text of a runtime call's event: what ``done`` says it did, or what its result
    says."""
    if done is not None:
        return f"{info.op}: {done}"
    if info.op == Op.CLAIM:
        if result is None:
            return "claim: nothing due"
        lease = result.lease
        expires = f"until t={lease.expires_at:g}"
        return f"claim: {lease.execution_id} leased with token {lease.token} {expires}"
    if info.op == Op.START_CHILD:
        if isinstance(result, ChildAccepted):
            how = "created" if result.created else "joined"
            return (
                f"start_child ({info.execution_id}, {info.step_key}): {how} {result.execution_id}"
            )
        return f"start_child ({info.execution_id}, {info.step_key}): rejected {result.code}"
    if info.op == Op.START:
        if isinstance(result, StartAccepted):
            return f"start ({info.execution_id}, {info.step_key}): accepted {result.execution_id}"
        return f"start ({info.execution_id}, {info.step_key}): rejected {result.code}"
    if info.op == Op.ACKNOWLEDGE:
        return f"acknowledge: {result.execution_id} is {result.status}"
    if info.op == Op.RELEASE:
        return "release: lease given up; redelivery after the delay"
    return f"{info.op}: ok"


def result_data(result: Any) -> Payload:
    """The structured part of a call's result, for invariants and views."""
    if isinstance(result, Delivery):
        return ClaimData(
            result.lease.execution_id, result.lease.expires_at, result.execution.workflow_id
        )
    if isinstance(result, ExecutionRecord):
        return StatusData(str(result.status))
    if isinstance(result, list):  # a cancellation: the executions it reached
        return CancelData(tuple(result))
    return NO_DATA


def body_text(result: BodyResult) -> str:
    """What a step body returned or raised, in a few words."""
    if result.error is None:
        return f"returned {summary(result.value)}"
    return f"raised {type(result.error).__name__}: {result.error}"


def outcome_text(outcome: WorkflowRunOutcome) -> str:
    """A workflow run's outcome in a few words: its status, and its result or error."""
    if isinstance(outcome, Failed):
        return f"failed ({outcome.error.name}: {outcome.error.message})"
    if outcome.status == "completed":
        return f"completed with {summary(getattr(outcome, 'result', None))}"
    return outcome.status
