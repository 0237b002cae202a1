"""The trace's vocabulary: what an event is (`TraceKind`) and the typed data it carries, one
small frozen dataclass per kind (``EffectData``, ``ClaimData`` ...), registered with
``@payload(kind)`` (``@payload(TraceKind.CALL, op=Op.CLAIM)`` for a runtime call's result).

A writer and a reader that disagree on a field's name disagree under mypy, not in a run; a
reader that wants to know what happened reads these fields, never the event's text, which is
written for people (``simulation/narration.py``). The JSON form (``Payload.to_json``) is the one
the trace had when ``data`` was a dict, key for key. The ``Payload`` base and its
registry are ``trace_payload_base``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.trace_payload_base import Payload, TuplePayload, omittable, payload
from yieldstar_sim.simulation.trace_values import summary

if TYPE_CHECKING:
    from yieldstar_sim.core.codec import DurableObject


class TraceKind(StrEnum):
    """What an event is. A ``StrEnum``: it compares, formats and serialises as its value."""

    TRIGGER = "trigger"
    """The scenario triggered a workflow: admitted, or refused (`TriggerData`)."""
    DEPLOY = "deploy"
    """New workflow code was deployed."""
    CANCEL = "cancel"
    """The scenario requested a cancellation (`CancelData`)."""
    PRUNE = "prune"
    """The scenario pruned an execution, or was refused."""
    CALL = "call"
    """A runtime call and its result; the payload depends on the call's ``op``."""
    REFUSED = "refused"
    """A fenced write refused: the lease was lost."""
    ERROR = "error"
    """A runtime call that failed, was not made, or whose response was lost; or a step body's
    call to the outside world that failed (a ``world_error``)."""
    FAULT = "fault"
    """The fault plan fired at a choice point (`FaultData`)."""
    CRASH = "crash"
    """A worker crashed."""
    RESTART = "restart"
    """A crashed worker came back with no memory."""
    FREEZE = "freeze"
    """A worker froze (a freeze fault)."""
    RESUME = "resume"
    """A frozen worker woke up."""
    BODY = "body"
    """A step body ran (`BodyData`)."""
    COMPLETION = "completion"
    """A concurrent step body of a ``step.all`` completes, in the order chosen at its choice
    point (`CompletionData`)."""
    EFFECT = "effect"
    """An effect reached the outside world (`EffectData`)."""
    WORLD = "world"
    """A read of the world's clock or random numbers (`WorldReadData`)."""
    STORE_READ = "store_read"
    """A step body read a key of the world's key-value store (`StoreReadData`)."""
    STORE_WRITE = "store_write"
    """A step body wrote a key of the world's key-value store (`StoreWriteData`)."""
    RUNTIME = "runtime"
    """The runtime reported an action it took on its own: archived, expired, dead-lettered,
    requeued ... (`RuntimeActionData`; ``runtime.protocol.ReportsActions``)."""
    TRANSACTION = "transaction"
    """A step body's transaction committed its writes or rolled them back
    (`TransactionData`)."""
    OUTCOME = "outcome"
    """A delivery ended with an outcome (`OutcomeData`)."""
    REJECT = "reject"
    """A delivery ended without an outcome."""
    CLIENT_ATTEMPT = "client_attempt"
    """A client (``ys.Client``) sent one attempt of its trigger or cancel, past its choice
    point (`ClientAttemptData`)."""
    CLIENT_ANSWER = "client_answer"
    """The runtime's answer to a client's attempt, seen by the client or lost on the way
    (`ClientAnswerData`)."""
    CLIENT_GIVE_UP = "client_give_up"
    """A client stopped without an answer: its attempts ran out, or it crashed
    (`ClientGiveUpData`)."""
    STALL = "stall"
    """One step attempt hung at its elapse while its worker went on (`StallData`)."""
    UNSTALL = "unstall"
    """A stalled attempt resumed, unaware of the time it lost (`StallData`)."""
    SKEW = "skew"
    """A worker's clock was set back: from now on it runs behind true time (`SkewData`)."""
    HEARTBEAT = "heartbeat"
    """A worker, about to let a step body work, judged its lease by its own clock and renewed
    it, or (its clock behind) believed it did not need to (`HeartbeatData`)."""
    STOP = "stop"
    """A worker stopped a step attempt that lost its lease (failed or refused renewals, or a
    lease its clock says has ended); the body sees it at its heartbeat (`StopData`)."""
    SEND = "send"
    """A sender (``ys.SendEvent``) handed an external event to the runtime, and the runtime
    answered: accepted (or a duplicate of one accepted before) or refused (`SendData`)."""
    DELIVERY = "delivery"
    """An external event was struck on its way to the runtime: lost, delivered a second time,
    or held back (`DeliveryData`)."""
    DRAW = "draw"
    """A step body's draw (``step.world.choice``, ``coin``) was decided: the option that
    passed its choice point first (`DrawData`)."""


@payload(TraceKind.TRIGGER)
@dataclass(frozen=True, slots=True)
class TriggerData(Payload):
    """A scenario's trigger. When refused, the caller-chosen ID and the refusal's code (an
    admitted trigger's ID is the event's ``execution_id``)."""

    workflow_id: str
    execution_id: str | None = omittable()
    refused: str | None = omittable()


@payload(TraceKind.CANCEL)
@payload(TraceKind.CALL, op=Op.CANCEL)
@dataclass(frozen=True, slots=True)
class CancelData(TuplePayload):
    """A cancellation: the live executions it reached."""

    cancelled: tuple[str, ...]
    tuple_fields = ("cancelled",)


@payload(TraceKind.FAULT)
@dataclass(frozen=True, slots=True)
class FaultData(Payload):
    """The kind of fault that fired (a ``FaultKind`` value), and its seconds for a freeze, a
    stall or a skew."""

    kind: str
    seconds: float | None = omittable()


@payload(TraceKind.FREEZE)
@dataclass(frozen=True, slots=True)
class FreezeData(Payload):
    """How long a frozen worker stays stopped."""

    seconds: float


@payload(TraceKind.DEPLOY)
@dataclass(frozen=True, slots=True)
class DeployData(TuplePayload):
    """The workflows whose new code was deployed."""

    workflows: tuple[str, ...]
    tuple_fields = ("workflows",)


@payload(TraceKind.PRUNE)
@dataclass(frozen=True, slots=True)
class PruneData(Payload):
    """A prune: done (``refused`` None), or refused, and why (the error's message)."""

    refused: str | None


@payload(TraceKind.REFUSED)
@payload(TraceKind.REJECT)
@dataclass(frozen=True, slots=True)
class ReasonData(Payload):
    """Why a fenced write was refused, or why a delivery ended without an outcome (the
    error's message)."""

    reason: str


@payload(TraceKind.ERROR)
@dataclass(frozen=True, slots=True)
class ErrorData(Payload):
    """A runtime call that failed or was not made (``reason``: the error's message), or whose
    response was lost (``reason`` None)."""

    reason: str | None
    made: bool = omittable(True)
    """False: the call was never made (the worker process exited before it)."""


@payload(TraceKind.BODY)
@dataclass(frozen=True, slots=True)
class BodyData(Payload):
    """A step body's attempt and the seconds of work it said it did (``step.world.elapse``)."""

    attempt: int
    elapsed: float
    returned: str | None = omittable()
    """What the body returned, summarised as the trace keeps values (``trace_values.summary``)."""
    raised: str | None = omittable()
    """What the body raised: ``ValueError: boom``."""
    started: float | None = omittable()
    """When the attempt started, where that is not the event's ``t`` less ``elapsed``: a stall
    or a freeze made it last longer than its work."""
    ended: float | None = omittable()
    """When the attempt's last work ended, where that is not the event's ``t``: a stopped
    attempt's last work came before the heartbeat that stopped it, and an attempt its worker
    gave up on at its timeout works on after the event."""
    stopped: bool = omittable(False)
    """Its worker stopped it at a heartbeat (or before an elapse): its lease was lost, and the
    rest of the body did not run."""


@payload(TraceKind.EFFECT)
@dataclass(frozen=True, slots=True)
class EffectData(Payload):
    """An effect as the ledger holds it. ``at`` is the moment inside a body that took time
    (left out when the body took none); ``in_workflow_code`` marks one made outside any step."""

    name: str
    data: DurableObject
    attempt: int
    idempotency_key: str | None
    in_workflow_code: bool = omittable(False)
    at: float | None = omittable()


@payload(TraceKind.WORLD)
@dataclass(frozen=True, slots=True)
class WorldReadData(Payload):
    """A read of ``step.world.now()`` or ``random()`` and the value it gave."""

    read: str
    value: float
    in_workflow_code: bool


@payload(TraceKind.STALL)
@payload(TraceKind.UNSTALL)
@dataclass(frozen=True, slots=True)
class StallData(Payload):
    """A stalled attempt: its number, how long it hung and the time it resumes (or
    resumed)."""

    attempt: int
    seconds: float
    until: float
    timed_out: bool = omittable(False)
    """The stall outlasted the attempt's timeout: its worker gave up on it and retried, while
    the attempt hung on apart."""


@payload(TraceKind.SKEW)
@dataclass(frozen=True, slots=True)
class SkewData(Payload):
    """How far behind true time a worker's clock runs from this event on, and what it reads
    at the event (the event's ``t`` is the true time)."""

    behind: float
    believed: float


@payload(TraceKind.COMPLETION)
@dataclass(frozen=True, slots=True)
class CompletionData(Payload):
    """The ``place``-th of ``of`` concurrent step bodies of one ``step.all`` to complete."""

    place: int
    of: int


@payload(TraceKind.HEARTBEAT)
@dataclass(frozen=True, slots=True)
class HeartbeatData(Payload):
    """A lease judged by the worker's clock before ``work`` seconds of a body: the time it
    believed (the event's ``t`` is the true time), when the lease ends, and whether the worker
    renewed it (``expires_at`` is then the new end)."""

    believed: float
    expires_at: float
    work: float
    renewed: bool


@payload(TraceKind.STOP)
@dataclass(frozen=True, slots=True)
class StopData(Payload):
    """A stopped attempt: its number and why (``failed``: renewals that failed in a row,
    ``refused``: the runtime refused a renewal, ``expired``: by its clock the worker's lease had
    ended before more work, ``abandoned``: its worker had given up on it at its timeout)."""

    attempt: int
    why: str
    failed: int = omittable(0)
    """Failed renewals in a row when it stopped (``why`` ``failed``)."""


@payload(TraceKind.DRAW)
@dataclass(frozen=True, slots=True)
class DrawData(Payload):
    """A draw decided: the option drawn (its place among ``of`` options, from 0, and its value
    as the trace keeps values) and the attempt of the body that drew it."""

    index: int
    of: int
    value: str
    attempt: int


@payload(TraceKind.CALL, op=Op.RENEW)
@dataclass(frozen=True, slots=True)
class RenewData(Payload):
    """A renewal at a body's heartbeat: where the lease now ends."""

    expires_at: float


@payload(TraceKind.STORE_READ)
@dataclass(frozen=True, slots=True)
class StoreReadData(Payload):
    """``step.world.read(key)``: the value it gave (``found`` False: nothing was written there
    and the body got its default), and the attempt of the body that read it (the event holds
    the execution, step key, worker and fencing token)."""

    key: str
    value: object
    found: bool
    attempt: int


@payload(TraceKind.STORE_WRITE)
@dataclass(frozen=True, slots=True)
class StoreWriteData(Payload):
    """``step.world.write(key, value)``: the value written, the one it replaced (``previous``,
    None when the key was new) and the attempt of the body that wrote it."""

    key: str
    value: object
    previous: object
    attempt: int


@payload(TraceKind.TRANSACTION)
@dataclass(frozen=True, slots=True)
class TransactionData(TuplePayload):
    """A transaction's end: the keys it wrote (``writes``), whether they landed, why not
    (``reason``: the error that ended it), and the attempt of the body."""

    writes: tuple[str, ...]
    committed: bool
    reason: str | None
    attempt: int
    tuple_fields = ("writes",)


@payload(TraceKind.RUNTIME)
@dataclass(frozen=True, slots=True)
class RuntimeActionData(Payload):
    """What the runtime did on its own to the event's execution (``action``, a verb) and why,
    as it reported it, and the execution's status just after (the views draw it)."""

    action: str
    reason: str
    status: str | None = omittable()


@payload(TraceKind.OUTCOME)
@dataclass(frozen=True, slots=True)
class OutcomeData(Payload):
    """The status of a delivery's outcome; a completed run's result, summarised as the trace
    keeps values, or a failed run's error (``name: message``)."""

    status: str
    result: str | None = omittable()
    error: str | None = omittable()


@payload(TraceKind.CALL, op=Op.CLAIM)
@dataclass(frozen=True, slots=True)
class ClaimData(Payload):
    """A claim that got a delivery (a claim that found nothing due carries no data)."""

    claimed: str
    expires_at: float
    workflow_id: str


@payload(TraceKind.CALL, op=Op.COMPLETE_ATTEMPT)  # the same write, by the attempt's token
@payload(TraceKind.CALL, op=Op.PUT_STEP)
@dataclass(frozen=True, slots=True)
class PutStepData(Payload):
    """A step written. A value too large for the trace is its digest and size instead (and
    ``value`` is then left out of the JSON form)."""

    status: str
    attempt: int
    wake_at: float | None
    value: object = None
    value_digest: str | None = omittable()
    value_bytes: int | None = omittable()

    def value_summary(self) -> str:
        """The value in at most 80 characters, as the event's text gives it (a large one as
        its size and digest)."""
        if self.value_digest is not None:
            return f"<{self.value_bytes} bytes, {self.value_digest[:19]}>"
        return summary(self.value)

    def to_json(self) -> dict[str, Any]:
        """The JSON form: ``value``, or ``value_digest`` and ``value_bytes``."""
        out = Payload.to_json(self)
        if self.value_digest is not None:
            del out["value"]
        return out


@payload(TraceKind.CALL, op=Op.RECORD_WAKE)
@dataclass(frozen=True, slots=True)
class RecordWakeData(Payload):
    """The time the execution is due again."""

    at: float


@payload(TraceKind.CALL, op=Op.ACKNOWLEDGE)
@payload(TraceKind.CALL, op=Op.WAIT_FOR)
@dataclass(frozen=True, slots=True)
class StatusData(Payload):
    """The status of the record a call returned (an acknowledged execution, or the one
    waited for: ``execution_id``); an acknowledged run that continued as new names the run
    that took over in ``execution_id``."""

    status: str
    execution_id: str | None = omittable()


@payload(TraceKind.CALL, op=Op.RELEASE)
@dataclass(frozen=True, slots=True)
class ReleaseData(Payload):
    """The seconds after which a released execution is delivered again."""

    delay: float


@payload(TraceKind.CALL, op=Op.START)
@dataclass(frozen=True, slots=True)
class StartData(Payload):
    """A start request's target and its answer: the execution accepted, or the rejection's
    code."""

    workflow_id: str
    detached: bool
    accepted: str | None = omittable()
    rejected: str | None = omittable()


@payload(TraceKind.CALL, op=Op.START_CHILD)
@dataclass(frozen=True, slots=True)
class StartChildData(Payload):
    """A child request and its answer: the child accepted (``created`` False when it joined
    one that existed), or the rejection's code."""

    workflow_id: str
    child_id: str | None
    detached: bool
    accepted: str | None = omittable()
    created: bool | None = omittable()
    rejected: str | None = omittable()


@payload(TraceKind.CLIENT_ATTEMPT)
@dataclass(frozen=True, slots=True)
class ClientAttemptData(Payload):
    """One attempt of a client's request: which client, ``trigger`` or ``cancel``, the
    attempt's number, the workflow and the request ID sent (None: the runtime generates one);
    ``fresh_id`` marks a retry that minted a new request ID instead of reusing its own."""

    client: str
    action: str
    attempt: int
    workflow_id: str | None = omittable()
    request_id: str | None = omittable()
    fresh_id: bool = omittable(False)


@payload(TraceKind.CLIENT_ANSWER)
@dataclass(frozen=True, slots=True)
class ClientAnswerData(TuplePayload):
    """The runtime's answer to a client's attempt: ``admitted`` (a new execution),
    ``existing`` (the execution the ID names, returned), ``refused`` (with ``code``) or
    ``cancel requested`` (reaching ``cancelled``); ``lost`` when the client never saw it.
    ``workflow_id`` is the workflow a trigger asked for."""

    client: str
    action: str
    attempt: int
    answer: str
    execution_id: str | None = omittable()
    workflow_id: str | None = omittable()
    code: str | None = omittable()
    cancelled: tuple[str, ...] = omittable(())
    lost: bool = omittable(False)
    tuple_fields = ("cancelled",)


@payload(TraceKind.CLIENT_GIVE_UP)
@dataclass(frozen=True, slots=True)
class ClientGiveUpData(Payload):
    """A client that stopped without an answer: after ``attempts`` attempts, ``why``
    (``attempts used up`` or ``crashed``)."""

    client: str
    action: str
    attempts: int
    why: str


@payload(TraceKind.SEND)
@dataclass(frozen=True, slots=True)
class SendData(Payload):
    """One send of an external event and the runtime's answer: the sender (``client``), its
    attempt, the event's ``name``, where it was sent (``target``: ``run x-1`` or ``instance
    counter``) and the event ID it carried (None: the runtime gives one). ``answer`` is
    ``accepted``, ``duplicate`` (its event ID was accepted before) or ``refused`` (with
    ``code``); an accepted event's ``seq``, ``event_id`` as kept and ``instance_id``;
    ``lost`` when the sender never saw the answer."""

    client: str
    attempt: int
    name: str
    target: str
    answer: str
    sent_id: str | None = omittable()
    seq: int | None = omittable()
    event_id: str | None = omittable()
    instance_id: str | None = omittable()
    code: str | None = omittable()
    lost: bool = omittable(False)


@payload(TraceKind.DELIVERY)
@dataclass(frozen=True, slots=True)
class DeliveryData(Payload):
    """What struck an external event on its way (``lost``, ``duplicated`` or ``delayed``,
    with the delay's ``seconds``): its sender, the event's name and where it was sent."""

    client: str
    what: str
    name: str
    target: str
    seconds: float | None = omittable()


@payload(TraceKind.CALL, op=Op.WAIT_FOR_EVENT)
@dataclass(frozen=True, slots=True)
class EventTakenData(Payload):
    """A run's look for an external event ``name`` (``step.wait_for_event``): the ID of the
    event it took and recorded as its step, or None when none was pending."""

    name: str
    event_id: str | None = omittable()
