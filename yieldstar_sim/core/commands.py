"""The driver's commands: the runtime calls, clock reads and step bodies ``drive`` yields, and
what a step body did. Plain frozen data: the engine, the worker pipe and the simulator carry
them out (``engine.calls`` says which runtime call each is).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

# At run time: the request calls' bases name their request types.
from yieldstar_sim.core.model import ChildRequest, StartRequest

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.core.codec import DurableValue
    from yieldstar_sim.core.model import Lease, StepStatus

#: The request a ``RequestCall`` carries.
Q = TypeVar("Q")


@dataclass(frozen=True, slots=True)
class FencedCall:
    """A runtime call fenced by the delivery's lease, its first field: the worker pipe carries
    the call's other fields and puts the delivery's lease back (``engine.calls``)."""

    lease: Lease


@dataclass(frozen=True, slots=True)
class PutStep(FencedCall):
    """Runtime call: record (or rewrite) a step, and optionally its wake. Fenced."""

    step_key: str
    status: StepStatus
    value: DurableValue = None
    attempt: int = 1
    wake_at: float | None = None


@dataclass(frozen=True, slots=True)
class CompleteAttempt(FencedCall):
    """Runtime call: record attempt ``attempt`` of step ``step_key`` completed with ``value``,
    through the attempt's own token (``AttemptClient.complete_attempt``: the delivery's lease,
    the step key, the attempt). Refused unless the attempt is the step's current one."""

    step_key: str
    attempt: int
    value: DurableValue = None


@dataclass(frozen=True, slots=True)
class RecordWake(FencedCall):
    """Runtime call: make the execution due again at ``at``. Fenced."""

    at: float


@dataclass(frozen=True, slots=True)
class ConsumeEvent(FencedCall):
    """Runtime call: take the oldest pending event ``name`` of this run (or its instance) and
    record it as step ``step_key``, in one write; answers the ``ReceivedEvent`` or ``None``.
    Fenced."""

    step_key: str
    name: str


@dataclass(frozen=True, slots=True)
class RequestCall(Generic[Q]):
    """A runtime call that carries a start's or a child's request, whose ID names the step:
    not fenced, as the request's ID makes a repeat answer alike; the worker pipe carries the
    request's fields (``engine.calls``)."""

    request: Q


@dataclass(frozen=True, slots=True)
class CallStart(RequestCall[StartRequest]):
    """Runtime call: ``WorkflowStartClient.start``. Not fenced."""


@dataclass(frozen=True, slots=True)
class WaitFor(FencedCall):
    """Runtime call: register that this execution waits for another, and read that one.
    Fenced."""

    execution_id: str


@dataclass(frozen=True, slots=True)
class StartChild(RequestCall[ChildRequest]):
    """Runtime call: create or join a run with a business ID (``step.child``/``spawn``)."""


@dataclass(frozen=True, slots=True)
class RequestCancel:
    """Runtime call: request cancellation of an execution and what it owns (max duration)."""

    execution_id: str


@dataclass(frozen=True, slots=True)
class ReadClock:
    """Ask for the current virtual time."""


@dataclass(frozen=True, slots=True)
class OrderCompletions:
    """Ask in which order the concurrent step bodies ``step_keys`` of a ``step.all`` complete:
    the answer is those keys, reordered. An engine answers in call order; the simulator makes
    the order a choice point (``simulation.completions``)."""

    execution_id: str
    step_keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RunBody:
    """Run one attempt of a step body, within ``timeout`` seconds of virtual time."""

    execution_id: str
    step_key: str
    attempt: int
    body: Callable[..., Any] = field(repr=False)
    args: tuple[Any, ...] = field(default=(), repr=False)
    kwargs: dict[str, Any] = field(default_factory=dict, repr=False)
    timeout: float | None = None
    completes_by_token: bool = False
    """Whether the attempt completes through its own call (``CompleteAttempt``): an attempt
    its worker gave up on then still makes that call when it ends (the simulator)."""


@dataclass(frozen=True, slots=True)
class BodyResult:
    """What one attempt of a step body did: its value, or the error it raised."""

    value: Any = None
    error: BaseException | None = None


RuntimeCall: TypeAlias = (
    PutStep
    | RecordWake
    | CallStart
    | WaitFor
    | StartChild
    | RequestCancel
    | ConsumeEvent
    | CompleteAttempt
)
Command: TypeAlias = RuntimeCall | ReadClock | OrderCompletions | RunBody
