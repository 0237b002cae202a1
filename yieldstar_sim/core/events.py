"""External events: what a client sends to an execution, what the runtime keeps of it, and
what ``step.wait_for_event`` hands workflow code.

An event is sent either to one run (``execution_id``) or to a workflow instance
(``instance_id``), whose current run receives it, whichever run that is when it looks: a run
made by ``step.continue_as_new`` keeps its instance, so an event sent to the instance while a
run continues as new waits for the next run (Temporal's signal to a workflow ID, the Durable
Task framework's event raised to an instance ID).

>>> EventRequest("approve", {"by": "ana"}, instance_id="order-42").target
'instance order-42'
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    from yieldstar_sim.core.codec import DurableValue


@dataclass(frozen=True, slots=True)
class EventRequest:
    """An event to send: its ``name``, a durable ``payload``, and exactly one of
    ``execution_id`` (that run only) or ``instance_id`` (the instance's current run).

    ``event_id`` makes a resend idempotent: the runtime accepts one event per ID and
    instance, and answers a repeat with the first acceptance (``duplicate``)."""

    name: str
    payload: object = None
    execution_id: str | None = None
    instance_id: str | None = None
    event_id: str | None = None

    @property
    def target(self) -> str:
        """Where the event goes, in words: ``run x-1`` or ``instance order-42``."""
        if self.execution_id is not None:
            return f"run {self.execution_id}"
        return f"instance {self.instance_id}"


class EventErrorCode(enum.StrEnum):
    """Why a runtime refused an event: nothing is kept of it, and the sender knows."""

    EXECUTION_NOT_FOUND = "EXECUTION_NOT_FOUND"
    """No run with that execution ID, or no instance with that ID."""
    EXECUTION_ENDED = "EXECUTION_ENDED"
    """The run (or every run of the instance) has ended: nothing would ever receive it."""


@dataclass(frozen=True, slots=True)
class EventAccepted:
    """The runtime kept the event: ``seq`` is its place in the runtime's order of events,
    ``instance_id`` the instance it belongs to; ``duplicate`` when ``event_id`` named an
    event accepted before (this answer is that one's)."""

    seq: int
    event_id: str
    instance_id: str
    duplicate: bool = False
    status: Literal["accepted"] = "accepted"


@dataclass(frozen=True, slots=True)
class EventRejected:
    """The runtime refused the event (``code``, and ``message`` in words)."""

    code: EventErrorCode
    message: str
    status: Literal["rejected"] = "rejected"


EventResult: TypeAlias = EventAccepted | EventRejected

EventStatus: TypeAlias = Literal["pending", "consumed", "undelivered"]


@dataclass(frozen=True, slots=True)
class EventRecord:
    """An accepted event as the runtime keeps it (``runtime.events()``).

    ``status`` is ``pending`` (its run, or a run of its instance, may still take it),
    ``consumed`` (``consumed_by`` took it at step ``step_key``) or ``undelivered``: the run
    it was sent to, or the instance's last run, ended without taking it; ``reason`` says
    which and how. An undelivered event is reported, not lost: the runtime says so."""

    seq: int
    event_id: str
    instance_id: str
    execution_id: str | None
    name: str
    payload: DurableValue
    sent_at: float
    status: EventStatus = "pending"
    consumed_by: str | None = None
    step_key: str | None = None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ReceivedEvent:
    """What ``step.wait_for_event`` returns when an event came: its ``name``, ``payload`` and
    ``event_id`` (``None`` is returned instead when the wait timed out)."""

    name: str
    payload: DurableValue
    event_id: str

    def to_value(self) -> dict[str, DurableValue]:
        """The durable value the step records."""
        return {"event": {"name": self.name, "payload": self.payload, "eventId": self.event_id}}

    @classmethod
    def from_value(cls, value: DurableValue) -> ReceivedEvent | None:
        """Inverse of ``to_value``; ``None`` for a wait recorded as timed out."""
        if not isinstance(value, dict) or not isinstance(value.get("event"), dict):
            return None
        event = value["event"]
        assert isinstance(event, dict)
        return cls(str(event["name"]), event.get("payload"), str(event["eventId"]))


def generated_event_id(seq: int) -> str:
    """The ID the runtime gives the ``seq``-th event when the sender named none.

    >>> generated_event_id(3)
    '@event-3'
    """
    return f"@event-{seq}"
