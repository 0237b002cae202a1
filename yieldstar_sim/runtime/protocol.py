"""The runtime-adapter Protocols: ``ExecutionClient`` and ``WorkflowStartClient``.

One Protocol, several adapters (memory, DuckDB). The conformance suite in
``yieldstar_sim.testing`` holds every adapter to the same observable behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from yieldstar_sim.core.attempts import AttemptToken
    from yieldstar_sim.core.clock import Clock
    from yieldstar_sim.core.events import EventRecord, EventRequest, EventResult, ReceivedEvent
    from yieldstar_sim.core.model import (
        ChildRequest,
        ChildResult,
        Delivery,
        ExecutionRecord,
        Lease,
        StartRequest,
        StartRequestRecord,
        StartResult,
        StepRecord,
        StepStatus,
        WorkflowRunOutcome,
    )
    from yieldstar_sim.runtime.failpoints import FailPoints


@runtime_checkable
class WorkflowStartClient(Protocol):
    """Starts another workflow as a durable step (RFC 003, "Runtime API").

    ``start`` is idempotent by its request ID and is not fenced: a repeat with the same workflow
    ID and parameters returns the first target; a different one returns START_REQUEST_MISMATCH.
    """

    def start(self, request: StartRequest) -> StartResult:
        """Admit the target of ``request`` with its parent link and first wake, or find it."""
        ...


@runtime_checkable
class ExecutionClient(Protocol):
    """Admission, leases, steps, wakes, acknowledgement and pruning (RFC 001/002/007/013)."""

    @property
    def clock(self) -> Clock:
        """The clock every call reads its time from."""
        ...

    # -- admission
    def trigger(
        self, workflow_id: str, params: object = None, *, execution_id: str | None = None
    ) -> str:
        """Admit an execution with its first wake due now; return its ID. Runs no code."""
        ...

    # -- reads
    def execution(self, execution_id: str) -> ExecutionRecord | None:
        """The record of one execution, or ``None`` if there is none."""
        ...

    def executions(self) -> list[ExecutionRecord]:
        """Every execution, in admission order."""
        ...

    def steps(self, execution_id: str) -> list[StepRecord]:
        """The recorded steps of one execution, in the order they were first recorded."""
        ...

    def start_requests(self) -> list[StartRequestRecord]:
        """Every retained start request with its target, in admission order of the targets."""
        ...

    def due(self) -> list[str]:
        """The executions a claim could take now, in the order claims take them."""
        ...

    def next_wake_at(self) -> float | None:
        """The earliest time at which some execution becomes claimable, if any will."""
        ...

    # -- leases and fenced writes
    def claim(
        self, owner: str, *, lease_seconds: float, execution_id: str | None = None
    ) -> Delivery | None:
        """Lease the first claimable execution (or the named one) to ``owner``."""
        ...

    def renew(self, lease: Lease, *, lease_seconds: float) -> Lease:
        """Extend a held lease to ``lease_seconds`` from now. Fenced."""
        ...

    def put_step(
        self,
        lease: Lease,
        step_key: str,
        *,
        status: StepStatus,
        value: object = None,
        attempt: int = 1,
        wake_at: float | None = None,
    ) -> None:
        """Record (or rewrite) one step, and optionally its wake, atomically. Fenced."""
        ...

    def record_wake(self, lease: Lease, at: float) -> None:
        """Make the execution due again at ``at``. Fenced."""
        ...

    def acknowledge(self, lease: Lease, outcome: WorkflowRunOutcome) -> ExecutionRecord:
        """Record a delivery's outcome and give up the lease. Fenced."""
        ...

    def release(self, lease: Lease, *, delay: float) -> None:
        """Give up the lease without an outcome; redeliver after ``delay``. Fenced."""
        ...

    def wait_for(self, lease: Lease, execution_id: str) -> ExecutionRecord | None:
        """Register that the leased execution waits for another, and read that one. Fenced."""
        ...

    def start_child(self, request: ChildRequest) -> ChildResult:
        """Create a run with a business ID for a request, or join the run that has it."""
        ...

    def cancel(self, execution_id: str) -> list[str]:
        """Request cancellation of an execution and of what it owns (RFC 009)."""
        ...

    # -- retention
    def prune(self, execution_id: str) -> None:
        """Remove a terminal execution with its steps, wakes and start-request records."""
        ...

    def close(self) -> None:
        """Release the adapter's resources."""
        ...


@runtime_checkable
class Runtime(ExecutionClient, WorkflowStartClient, Protocol):
    """A complete runtime adapter: both clients plus its failure points."""

    @property
    def failpoints(self) -> FailPoints:
        """The adapter's named failure points (see ``FailPoints``)."""
        ...


@runtime_checkable
class EventClient(Protocol):
    """External events and their waits (``step.wait_for_event``): the memory, DuckDB and
    PostgreSQL adapters implement it. A runtime of your own without it runs every workflow
    that neither waits for events nor is sent one.

    Continue-as-new needs no call of its own: ``acknowledge(lease, ContinuedAsNew(params))``
    ends the run and admits the instance's next one in one write."""

    def send_event(self, request: EventRequest) -> EventResult:
        """Accept an event for a run or an instance (and wake its current run), or refuse it
        (``EXECUTION_NOT_FOUND``, ``EXECUTION_ENDED``). Idempotent by ``event_id``. Not
        fenced: the sender holds no lease."""
        ...

    def wait_for_event(self, lease: Lease, step_key: str, name: str) -> ReceivedEvent | None:
        """Take the oldest pending event ``name`` sent to the leased run or to its instance,
        and record it as the completed step ``step_key``, in one write; ``None`` when there
        is none (nothing is written). Fenced."""
        ...

    def events(self) -> list[EventRecord]:
        """Every accepted event, in the order they were accepted, with its status now."""
        ...


def events_of(runtime: object) -> EventClient:
    """``runtime`` as an ``EventClient``; a ``TypeError`` naming it when it has no events."""
    if not isinstance(runtime, EventClient):
        raise TypeError(
            f"{type(runtime).__name__} has no external events (send_event, wait_for_event, "
            "events: runtime.protocol.EventClient); run the scenario on the memory, DuckDB "
            "or PostgreSQL runtime, or add them to yours"
        )
    return runtime


@runtime_checkable
class AttemptClient(Protocol):
    """Steps whose attempts complete through their own call (``completes_by_token()``): the
    memory, DuckDB and PostgreSQL adapters implement it. A runtime of your own without it
    runs every workflow whose steps do not complete by token."""

    def complete_attempt(self, token: AttemptToken, value: object = None) -> None:
        """Record ``token``'s attempt as the step's completion with ``value``, only if it is
        the step's current attempt: under a lease that still holds (``LeaseLostError``), with
        the attempt number the step is at, the step still open (``StaleAttemptError``)."""
        ...


def attempts_of(runtime: object) -> AttemptClient:
    """``runtime`` as an ``AttemptClient``; a ``TypeError`` naming it when it has none."""
    if not isinstance(runtime, AttemptClient):
        raise TypeError(
            f"{type(runtime).__name__} has no attempt completion (complete_attempt: "
            "runtime.protocol.AttemptClient); run the scenario on the memory, DuckDB or "
            "PostgreSQL runtime, or add it to yours"
        )
    return runtime


@dataclass(frozen=True, slots=True)
class RuntimeAction:
    """Something a runtime decided on its own, as it reports it (``ReportsActions``): what it
    did to ``execution_id`` (a verb: ``archived``, ``expired``, ``dead-lettered``,
    ``requeued``, ``moved`` ...) and why, in words."""

    action: str
    execution_id: str
    reason: str = ""


@runtime_checkable
class ReportsActions(Protocol):
    """A runtime that reports what it decided on its own: an optional part of an adapter. One
    that does not report keeps working; one that does has each action traced where it was
    taken, and a sentence that explains a violation names it (a run the runtime archived
    ends failed with no step having failed)."""

    def take_actions(self) -> list[RuntimeAction]:
        """The actions taken since the last call, oldest first, each reported once (the
        simulator asks after each runtime call)."""
        ...


class RuntimeChoiceError(ValueError):
    """A runtime that cannot be resolved or made (``yieldstar_sim.runtime.factory``, or an
    adapter's own factory such as ``postgres.from_env``): the message names the problem."""
