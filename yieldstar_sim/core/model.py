"""Records, requests, results, outcomes and errors, named in RFC 003's own words.

Everything here is plain data: frozen dataclasses and enums that the runtime adapters return,
the driver consumes, and the views draw. Nothing here knows about storage or scheduling.

>>> request = StartRequest(RequestId("order-42", "ship"), "ship-order", {"order": 42})
>>> request.request_id
RequestId(execution_id='order-42', step_key='ship')
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from yieldstar_sim.core.error_words import error_code, error_text, error_words

if TYPE_CHECKING:
    from yieldstar_sim.core.codec import DurableObject, DurableValue

# --------------------------------------------------------------------------- identities


@dataclass(frozen=True, slots=True)
class RequestId:
    """A start request's identity: the caller's execution ID and the step key.

    A replay of the caller reaches the same step, so it sends the same request ID.
    """

    execution_id: str
    step_key: str


@dataclass(frozen=True, slots=True)
class StartRequest:
    """What ``WorkflowStartClient.start`` receives (RFC 003, "Runtime API").

    ``params`` is validated by the runtime with the durable value codec; ``None`` means the
    request has no parameters, which does not match an empty object.
    """

    request_id: RequestId
    workflow_id: str
    params: object = None
    detached: bool = False


@dataclass(frozen=True, slots=True)
class ParentLink:
    """The link a started target keeps to the step that started it (RFC 008 and RFC 009)."""

    execution_id: str
    step_key: str
    detached: bool = False


# --------------------------------------------------------------------------- start results


class WorkflowStartErrorCode(enum.StrEnum):
    """Why a start request was rejected."""

    INVALID_START_PARAMETERS = "INVALID_START_PARAMETERS"
    START_REQUEST_MISMATCH = "START_REQUEST_MISMATCH"


@dataclass(frozen=True, slots=True)
class StartAccepted:
    """The runtime admitted (or found) the target of a start request."""

    execution_id: str
    status: Literal["accepted"] = "accepted"


@dataclass(frozen=True, slots=True)
class StartRejected:
    """The runtime refused a start request; nothing was admitted for it."""

    code: WorkflowStartErrorCode
    message: str
    status: Literal["rejected"] = "rejected"


StartResult: TypeAlias = StartAccepted | StartRejected


# --------------------------------------------------------------------------- errors


class YieldstarError(Exception):
    """Base class of the errors yieldstar_sim raises to users and to workflow code."""


class WorkflowStartError(YieldstarError):
    """A rejected start, thrown to workflow code by ``step.start``.

    Replay restores the same class and code without calling the start client again.
    """

    def __init__(self, code: WorkflowStartErrorCode | str, message: str) -> None:
        super().__init__(message)
        self.code = WorkflowStartErrorCode(code)
        self.message = message

    def __reduce__(self) -> tuple[type[WorkflowStartError], tuple[str, str]]:
        return (type(self), (str(self.code), self.message))


class AdmissionErrorCode(enum.StrEnum):
    """Why the runtime refused to admit an execution (our reading of RFC 001)."""

    EXECUTION_EXISTS = "EXECUTION_EXISTS"
    INVALID_EXECUTION_ID = "INVALID_EXECUTION_ID"
    INVALID_PARAMETERS = "INVALID_PARAMETERS"
    CALLER_NOT_FOUND = "CALLER_NOT_FOUND"


class ExecutionAdmissionError(YieldstarError):
    """The runtime refused to admit an execution; nothing was admitted."""

    def __init__(self, code: AdmissionErrorCode | str, message: str) -> None:
        super().__init__(message)
        self.code = AdmissionErrorCode(code)
        self.message = message

    def __reduce__(self) -> tuple[type[ExecutionAdmissionError], tuple[str, str]]:
        return (type(self), (str(self.code), self.message))


class InvalidIDError(ExecutionAdmissionError):
    """An execution ID that is empty, holds ASCII control characters, or is reserved."""

    def __init__(
        self, message: str, code: AdmissionErrorCode | str = "INVALID_EXECUTION_ID"
    ) -> None:
        super().__init__(code, message)

    def __reduce__(self) -> tuple[type[ExecutionAdmissionError], tuple[str, str]]:
        return (type(self), (self.message, str(self.code)))


class ExecutionNotFoundError(YieldstarError, LookupError):
    """No execution has that ID (never admitted, or pruned)."""


class ExecutionStateError(YieldstarError):
    """The execution is in a state that does not allow the operation (e.g. pruning a live one)."""


class InfrastructureError(Exception):
    """A failure of the runtime itself, not of workflow code.

    It is never an outcome: the delivery rejects, the worker replies retry and the lease is
    released (RFC 003, "Delivery acknowledgement").
    """


class LeaseLostError(InfrastructureError):
    """A fenced write was refused because the caller no longer holds the execution's lease."""


class TerminalCallerError(ExecutionStateError, LeaseLostError):
    """A new start or child was requested by an execution that is already terminal.

    Nothing is admitted: a terminal execution admits no new targets, so that a delivery that
    outlived its lease (a frozen worker that wakes after its execution was cancelled and
    finished) cannot create work nobody owns. A repeat of a request the caller already made is
    still answered with its target. It is a ``LeaseLostError`` (no delivery of a terminal
    execution holds a lease: the delivery rejects, like a fenced write) and an
    ``ExecutionStateError`` (the caller's state does not allow the operation).
    """


class InjectedFailure(InfrastructureError):
    """Raised by an armed failure point of a runtime adapter (see ``FailPoints``)."""


# --------------------------------------------------------------------------- records


class ExecutionStatus(enum.StrEnum):
    """Where an execution stands. Every status after ``suspended`` is terminal."""

    PENDING = "pending"
    SUSPENDED = "suspended"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    DEAD_LETTERED = "dead-lettered"
    """Recovered more times than the engine's ``max_recovery_attempts``: set aside, never run
    again (DBOS's ``MAX_RECOVERY_ATTEMPTS_EXCEEDED``). Its error says how often it was
    recovered."""
    CONTINUED_AS_NEW = "continued-as-new"
    """The run ended by ``step.continue_as_new``: a new run of the same instance took over
    (its record's ``result`` names it, ``{"continuedAs": execution ID}``)."""
    PRUNED = "pruned"
    """Only on the start-request record of a pruned target: the execution itself is gone."""

    @property
    def terminal(self) -> bool:
        """Whether the execution has a final outcome and will never run workflow code again."""
        return self in TERMINAL_STATUSES


#: The statuses after which an execution never runs workflow code again (as strings, too:
#: ``"failed" in TERMINAL_STATUSES``).
TERMINAL_STATUSES = frozenset(
    {
        ExecutionStatus.COMPLETED,
        ExecutionStatus.FAILED,
        ExecutionStatus.CANCELLED,
        ExecutionStatus.DEAD_LETTERED,
        ExecutionStatus.CONTINUED_AS_NEW,
        ExecutionStatus.PRUNED,
    }
)

ExecutionOrigin: TypeAlias = Literal["trigger", "start", "child", "spawn", "continue"]
"""How an execution was admitted: a direct trigger, ``step.start``/``step.call`` (a generated
ID), ``step.child`` (a business ID, owned), ``step.spawn`` (a business ID, detached) or
``step.continue_as_new`` (a generated ID, the next run of its instance)."""


@dataclass(frozen=True, slots=True)
class Lease:
    """The right to deliver one execution until ``expires_at`` (RFC 002).

    ``token`` is the fencing token: it only grows, and every fenced write names it.
    ``incarnation`` is the admission the lease belongs to (the record's ``seq``): an ID pruned
    and admitted again starts its tokens anew, and must not accept an old incarnation's lease.
    """

    execution_id: str
    owner: str
    token: int
    expires_at: float
    incarnation: int = 0


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """An error as a durable value: its class name, message and, for coded errors, the code."""

    name: str
    message: str
    code: str | None = None

    @classmethod
    def from_exception(cls, error: BaseException) -> ErrorInfo:
        """Describe an exception durably, keeping the code of coded errors."""
        return cls(type(error).__name__, error_text(error), error_code(error))

    def to_value(self) -> DurableObject:
        """The durable value stored for this error."""
        value: DurableObject = {"name": self.name, "message": self.message}
        if self.code is not None:
            value["code"] = self.code
        return value

    @classmethod
    def from_value(cls, value: DurableValue) -> ErrorInfo:
        """Inverse of ``to_value``."""
        if not isinstance(value, dict):
            raise TypeError(f"an error record must be an object, not {type(value).__name__}")
        code = value.get("code")
        return cls(str(value["name"]), str(value["message"]), None if code is None else str(code))


@dataclass(frozen=True, slots=True)
class ExecutionRecord:
    """One execution as the runtime stores it (RFC 007 as fixed in docs/decisions.md).

    ``due_at`` is the pending wake, if any; ``lease`` the current lease, if one is held (it may
    have expired: compare ``lease.expires_at`` with the clock).
    """

    execution_id: str
    workflow_id: str
    params: DurableObject | None
    origin: ExecutionOrigin
    parent: ParentLink | None
    status: ExecutionStatus
    created_at: float
    seq: int
    result: DurableValue = None
    error: ErrorInfo | None = None
    finished_at: float | None = None
    due_at: float | None = None
    lease: Lease | None = None
    lease_token: int = 0
    cancel_requested: bool = False
    """A cancellation was requested (RFC 009); the next delivery throws it into workflow code."""
    waiting_on: str | None = None
    """The execution this one waits for (``step.call``/``step.child``); its end wakes us."""
    recoveries: int = 0
    """How many claims took this execution over from a holder whose lease had expired (a
    worker that crashed or froze while it held it): its recoveries. A runtime that does not
    count them leaves 0, and the engine then never dead-letters it."""
    instance_id: str | None = None
    """The workflow instance this run continues (``step.continue_as_new``): the first run's
    execution ID; ``None`` for a first run, whose instance is itself (``instance``)."""

    @property
    def terminal(self) -> bool:
        """Whether the execution reached a terminal outcome."""
        return self.status.terminal

    @property
    def instance(self) -> str:
        """The workflow instance this run belongs to: the execution ID of its first run,
        which every run made by ``step.continue_as_new`` keeps (Temporal's workflow ID)."""
        return self.instance_id or self.execution_id


StepStatus: TypeAlias = Literal["completed", "failed", "pending"]


@dataclass(frozen=True, slots=True)
class StepRecord:
    """A recorded step of one execution, keyed by (execution, step key).

    ``position`` is the order in which the step was first recorded; rewriting a step (a pending
    delay that completes, a retried attempt) keeps its position.
    """

    execution_id: str
    step_key: str
    position: int
    status: StepStatus
    value: DurableValue
    attempt: int
    recorded_at: float


@dataclass(frozen=True, slots=True)
class StartRequestRecord:
    """A retained start request and the one target it admitted."""

    request_id: RequestId
    workflow_id: str
    params: DurableObject | None
    detached: bool
    target_execution_id: str
    created_at: float


@dataclass(frozen=True, slots=True)
class ChildRequest:
    """``step.child`` or ``step.spawn``: create the run ``child_id`` or join the existing one.

    Identified, like a start, by the caller's execution ID and the step key, so that a replay
    gets the same answer: created (the caller owns it, unless detached) or joined.
    """

    request_id: RequestId
    workflow_id: str
    child_id: str
    params: object = None
    detached: bool = False


@dataclass(frozen=True, slots=True)
class ChildAccepted:
    """The child run: ``created`` by this request, or an existing run it joined."""

    execution_id: str
    created: bool
    status: Literal["accepted"] = "accepted"


ChildResult: TypeAlias = ChildAccepted | StartRejected


@dataclass(frozen=True, slots=True)
class Delivery:
    """What a claim hands a worker: the lease, the execution and its recorded steps."""

    lease: Lease
    execution: ExecutionRecord
    steps: tuple[StepRecord, ...]


# --------------------------------------------------------------------------- outcomes


@dataclass(frozen=True, slots=True)
class Completed:
    """The workflow returned ``result``."""

    result: DurableValue = None
    status: Literal["completed"] = "completed"


@dataclass(frozen=True, slots=True)
class Suspended:
    """The unfinished step and every wake needed to resume it are recorded."""

    status: Literal["suspended"] = "suspended"


@dataclass(frozen=True, slots=True)
class Failed:
    """Workflow code threw an uncaught error.

    ``exception`` keeps the live exception for in-process callers; it is not stored and does not
    take part in equality.
    """

    error: ErrorInfo
    exception: BaseException | None = field(default=None, compare=False, repr=False)
    status: Literal["failed"] = "failed"


@dataclass(frozen=True, slots=True)
class Cancelled:
    """Workflow code ended by throwing WorkflowCancelledError after a recorded request."""

    status: Literal["cancelled"] = "cancelled"


@dataclass(frozen=True, slots=True)
class DeadLettered:
    """Not an outcome of workflow code: the engine set the execution aside without running
    it, because it was recovered more times than its ``max_recovery_attempts`` (``error``
    says how often, with the code ``MAX_RECOVERY_ATTEMPTS_EXCEEDED``). Acknowledged like an
    outcome, it ends the execution ``dead-lettered``."""

    error: ErrorInfo
    status: Literal["dead-lettered"] = "dead-lettered"


#: The code of a dead-lettered execution's error (DBOS's status of the same name).
MAX_RECOVERY_ATTEMPTS_EXCEEDED = "MAX_RECOVERY_ATTEMPTS_EXCEEDED"


@dataclass(frozen=True, slots=True)
class ContinuedAsNew:
    """Workflow code called ``step.continue_as_new(params)``: acknowledged, it ends this run
    ``continued-as-new`` and admits the next run of the same instance with ``params``, in one
    write. Its record's result names the new run."""

    params: DurableValue = None
    status: Literal["continued-as-new"] = "continued-as-new"


WorkflowRunOutcome: TypeAlias = (
    Completed | Suspended | Failed | Cancelled | DeadLettered | ContinuedAsNew
)


# --------------------------------------------------------------------------- workflow errors


class StepError(YieldstarError):
    """A step that failed after its last attempt, thrown to workflow code.

    ``error`` describes the body's error (its class name and message); replay restores the same
    ``StepError`` from the record without running the body again.
    """

    def __init__(self, step_key: str, error: ErrorInfo, *, attempts: int = 1) -> None:
        super().__init__(
            f"step {step_key!r} failed after {attempts} attempt{'s' if attempts != 1 else ''}: "
            f"{error.name}: {error.message}"
        )
        self.step_key = step_key
        self.error = error
        self.attempts = attempts

    def __reduce__(self) -> tuple[type[StepError], tuple[str, ErrorInfo], dict[str, int]]:
        return (type(self), (self.step_key, self.error), {"attempts": self.attempts})


class StepKeyError(YieldstarError, ValueError):
    """A step key that is not a non-empty string, or one used twice in one execution."""


class ExitCalled(YieldstarError):
    """User code called ``sys.exit()`` (raised ``SystemExit``): a failure of that code (a step
    body, workflow code, an invariant), never an exit of the simulator or the engine."""

    @classmethod
    def from_exit(cls, exit: SystemExit, where: str) -> ExitCalled:
        """The failure for ``exit`` raised in ``where`` (``step body ship``)."""
        code = exit.code
        return cls(f"{where} called sys.exit({'' if code is None else repr(code)})")


class BaseExceptionRaised(YieldstarError):
    """User code raised a ``BaseException`` other than ``Exception`` and ``SystemExit`` (say
    ``GeneratorExit``): a failure of that code, never a stop of the simulator or the engine."""

    @classmethod
    def from_base(cls, error: BaseException, where: str) -> BaseExceptionRaised:
        """The failure for ``error`` raised in ``where`` (``step body 'ship'``)."""
        return cls(f"{where} raised {error_words(error)}")


class WorkflowDefinitionError(YieldstarError, TypeError):
    """Workflow code that misuses the step runner (e.g. ``yield`` instead of ``yield from``);
    ``code`` is ``STEP_NOT_RUN`` for a verb never run, whose message names verb, key and line."""

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code

    def __reduce__(self) -> tuple[type[WorkflowDefinitionError], tuple[str], dict[str, object]]:
        return (type(self), (str(self),), {"code": self.code})


STEP_NOT_RUN = "STEP_NOT_RUN"  # a verb called without `yield from`, or iterated by the code


class StepDeclarationError(YieldstarError, ValueError):
    """A step declaration with an invalid policy (negative delay, cap or timeout)."""


class NondeterminismError(YieldstarError):
    """A replay asked for another step than the one recorded at that point, or for the same
    step with other arguments (``detail``: the first field that differs).

    Carries what was recorded and what was asked, so the code change can be found.
    """

    def __init__(
        self,
        execution_id: str,
        position: int,
        recorded: str | None,
        requested: str,
        *,
        detail: str | None = None,
    ) -> None:
        recorded_text = "no step" if recorded is None else f"step {recorded!r}"
        if detail is None:
            text = f"the record has {recorded_text}, the code asked for step {requested!r}"
        else:
            text = f"step {requested!r} is not the one recorded: {detail}"
        super().__init__(
            f"execution {execution_id!r} replayed differently at step #{position}: {text}"
        )
        self.execution_id = execution_id
        self.position = position
        self.recorded = recorded
        self.requested = requested
        self.detail = detail

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _nondeterminism_error,
            (self.execution_id, self.position, self.recorded, self.requested, self.detail),
        )


def _nondeterminism_error(
    execution_id: str, position: int, recorded: str | None, requested: str, detail: str | None
) -> NondeterminismError:
    """Unpickle a ``NondeterminismError`` (its ``detail`` is keyword-only)."""
    return NondeterminismError(execution_id, position, recorded, requested, detail=detail)


class WorkflowCancelledError(YieldstarError):
    """Thrown into workflow code after a recorded cancellation request (RFC 009)."""


class StepTimeoutError(BaseException):
    """Raised inside a step body whose attempt ran past its per-attempt timeout.

    A ``BaseException`` so that a body's ``except Exception`` does not swallow it.
    """


class DeliveryRejectedError(InfrastructureError):
    """A delivery ended without an outcome: the worker replied retry, or its process exited."""


class ChildFailedError(YieldstarError):
    """The execution a ``step.call`` or ``step.child`` waited for ended failed or cancelled.

    Carries the target's ID, how it ended and its error; replay restores it from the record.
    """

    def __init__(self, execution_id: str, status: str, error: ErrorInfo) -> None:
        super().__init__(f"{execution_id} ended {status}: {error.name}: {error.message}")
        self.execution_id = execution_id
        self.status = status
        self.error = error

    def __reduce__(self) -> tuple[type[ChildFailedError], tuple[str, str, ErrorInfo]]:
        return (type(self), (self.execution_id, self.status, self.error))


class ProfileError(YieldstarError):
    """The chosen driver profile (an engine's native rules) refuses this workflow or step."""
