"""What the trace says of a runtime call, a step body and an outcome: the text of each event
and its typed payload, and the words a payload stands for.

The text is written here, once, for people; code that wants to know what happened reads the
payload, and a reader that puts an event into words (``views/words.py``, an invariant's
sentence) gets its pieces from the payload through ``body_words`` and ``outcome_words``, never
by slicing the text (``tests/unit/test_trace_text.py``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.commands import CompleteAttempt, ConsumeEvent
from yieldstar_sim.core.driver import (
    CallStart,
    PutStep,
    RecordWake,
    RequestCancel,
    StartChild,
    WaitFor,
)
from yieldstar_sim.core.error_words import error_words
from yieldstar_sim.core.events import ReceivedEvent
from yieldstar_sim.core.frozen import maker
from yieldstar_sim.core.model import (
    ChildAccepted,
    DeadLettered,
    Delivery,
    ExecutionRecord,
    Failed,
    StartAccepted,
    StartRejected,
)
from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.faults import Fault
from yieldstar_sim.simulation.trace_payload_base import NO_DATA, Payload
from yieldstar_sim.simulation.trace_payloads import (
    BodyData,
    CancelData,
    ClaimData,
    EventTakenData,
    FaultData,
    OutcomeData,
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
    from yieldstar_sim.simulation.trace import TraceEvent

#: The payloads of a run's most frequent events: every claim, acknowledgement, body run, step
#: written and outcome has one (``core.frozen``).
if TYPE_CHECKING:
    _new_claim_data, _new_status_data, _new_body_data = ClaimData, StatusData, BodyData
    _new_put_step_data, _new_outcome_data = PutStepData, OutcomeData
else:
    _new_claim_data, _new_status_data, _new_body_data, _new_put_step_data, _new_outcome_data = map(
        maker, (ClaimData, StatusData, BodyData, PutStepData, OutcomeData)
    )


def narration(command: Command) -> str | None:
    """What the trace says a runtime call did (None: the result says it)."""
    if isinstance(command, PutStep):
        return f"recorded step {command.step_key}: {command.status} {summary(command.value)}"
    if isinstance(command, CompleteAttempt):
        return (
            f"attempt {command.attempt} completed step {command.step_key}: {summary(command.value)}"
        )
    if isinstance(command, RecordWake):
        return f"wake at t={command.at:g}"
    if isinstance(command, WaitFor):
        return f"waits for {command.execution_id}"
    if isinstance(command, RequestCancel):
        return f"cancel requested for {command.execution_id} and what it owns"
    return None


def completion_data(attempt: int, value: object) -> PutStepData:
    """A ``complete_attempt`` call's payload: the step write it asks for, as ``put_step``'s
    (the invariant that recorded history never changes reads both alike)."""
    kept, digest, size = traced(value)
    return _new_put_step_data("completed", attempt, None, kept, digest, size)


def command_data(command: Command, result: Any) -> Payload:
    """A driver command's call event payload: the command's part and the result's."""
    if isinstance(command, PutStep):
        value, digest, size = traced(command.value)
        return _new_put_step_data(
            command.status, command.attempt, command.wake_at, value, digest, size
        )
    if isinstance(command, CompleteAttempt):
        return completion_data(command.attempt, command.value)
    if isinstance(command, RecordWake):
        return RecordWakeData(command.at)
    if isinstance(command, WaitFor) and isinstance(result, ExecutionRecord):
        return StatusData(str(result.status), command.execution_id)
    if isinstance(command, ConsumeEvent):
        taken = result if isinstance(result, ReceivedEvent) else None
        return EventTakenData(command.name, None if taken is None else taken.event_id)
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
    if info.op == Op.RENEW:
        return f"renew: the lease runs to t={result.expires_at:g}"
    if info.op == Op.WAIT_FOR_EVENT:
        if isinstance(result, ReceivedEvent):
            return f"wait_for_event: took {result.name!r} {result.event_id} as step {info.step_key}"
        return "wait_for_event: none pending"
    return f"{info.op}: ok"


def result_data(result: Any) -> Payload:
    """The structured part of a call's result, for invariants and views."""
    if isinstance(result, Delivery):
        return _new_claim_data(
            result.lease.execution_id, result.lease.expires_at, result.execution.workflow_id
        )
    if isinstance(result, ExecutionRecord):
        # A run that continued as new names the run that took over (its result says which).
        after = result.result if result.status == "continued-as-new" else None
        return _new_status_data(
            str(result.status), str(after["continuedAs"]) if isinstance(after, dict) else None
        )
    if isinstance(result, list):  # a cancellation: the executions it reached
        return CancelData(tuple(result))
    return NO_DATA


def fault_words(data: FaultData) -> str:
    """What a fault did, as the start of a sentence (``freeze 40s before``): the words the
    fault's event begins with."""
    try:
        return Fault(data.kind, seconds=data.seconds).action()
    except ValueError:  # a trace written before faults' payloads held their seconds
        return data.kind


def body_data(attempt: int, elapsed: float, result: BodyResult) -> BodyData:
    """A step body's event payload: its attempt, the seconds it worked, and what it returned
    (summarised) or raised."""
    if result.error is None:
        return _new_body_data(attempt, elapsed, summary(result.value))
    # Not str(error) alone: an error's message is user code, and may be past printing.
    return BodyData(attempt, elapsed, raised=error_words(result.error))


def body_words(data: BodyData) -> str | None:
    """What a body returned or raised, in a few words (None: a trace written before bodies'
    payloads said)."""
    if data.stopped:
        return "stopped by its worker: its lease was lost"
    if data.raised is not None:
        return f"raised {data.raised}"
    if data.returned is not None:
        return f"returned {data.returned}"
    return None


def outcome_data(outcome: WorkflowRunOutcome) -> OutcomeData:
    """An outcome event's payload: the status, and a completed run's result (summarised) or a
    failed run's error."""
    if isinstance(outcome, Failed | DeadLettered):
        return _new_outcome_data(
            outcome.status, error=f"{outcome.error.name}: {outcome.error.message}"
        )
    if outcome.status == "completed":
        return _new_outcome_data(outcome.status, result=summary(getattr(outcome, "result", None)))
    return _new_outcome_data(outcome.status)


def outcome_words(data: OutcomeData) -> str:
    """An outcome in a few words: its status, and its result or error."""
    if data.status == "dead-lettered":
        return f"dead-lettered, never run again ({data.error})"
    if data.error is not None:
        return f"failed ({data.error})"
    if data.result is not None:
        return f"completed with {data.result}"
    return data.status


def parting_words(number: int, first: TraceEvent | None, second: TraceEvent | None) -> str:
    """Where two runs of one schedule part, in words: event #``number`` as each run has it
    (None: that run ended before it), and the first field that differs when the text is the
    same (``determinism.first_difference`` finds the event)."""
    if first is None or second is None:
        present = first if first is not None else second
        goes_on = present.text if present is not None else ""
        return f"event #{number} (one run ends there, the other goes on with {goes_on!r})"
    one, other = first.to_json(), second.to_json()
    field = next((k for k in sorted({*one, *other}) if one.get(k) != other.get(k)), "text")
    if field == "text":
        return f"event #{number} ({first.text!r} in one run, {second.text!r} in the other)"
    return (
        f"event #{number} ({first.text!r}: its {field} is {_short(one.get(field))} in one run, "
        f"{_short(other.get(field))} in the other)"
    )


def _short(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
