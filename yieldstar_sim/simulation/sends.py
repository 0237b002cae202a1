"""External events a scenario sends (``ys.SendEvent``): the scenario's item, and its checks.

A send is made by a sender, an actor like a ``ys.Client``: ``client=ys.Client("api")`` names
it (and its retry policy), and a send without one is made by the default sender, ``sender``.
Each attempt passes a choice point (``sender send_event instance counter``), where a fault
plan or the explorer can crash or freeze the sender, fail the call or lose its answer, and
strike the event on its way: lost, delivered twice, or held back (``faults.EVENT_KINDS``).
``senders.py`` makes the sends.

>>> SendEvent("approve", {"by": "ana"}, instance_id="order-42", at=5).describe()
"ys.SendEvent('approve', instance_id='order-42', at=5)"
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from yieldstar_sim.core.events import EventRequest
from yieldstar_sim.simulation.scenario_clients import Client

if TYPE_CHECKING:
    from collections.abc import Sequence

#: Who makes a send that names no client: a sender with the default retry policy.
SENDER = Client("sender")


@dataclass(frozen=True, slots=True)
class SendEvent:
    """An external event the scenario sends at virtual time ``at`` (default: the start):
    ``name``, a durable ``payload``, and exactly one of ``execution_id`` (that run only) or
    ``instance_id`` (whichever run of the instance takes it: one made by
    ``step.continue_as_new`` keeps its instance). ``event_id`` makes a resend idempotent
    (the runtime keeps one event per ID and instance); a sender's retry resends it, or a
    fresh one when its client does not reuse request IDs.

    ``client`` (a ``ys.Client``) is the sender, an actor whose attempts are choice points
    (a fault names it as its ``worker``); without one, the default sender ``sender``.
    """

    name: str
    payload: object = None
    execution_id: str | None = None
    instance_id: str | None = None
    event_id: str | None = None
    at: float = 0.0
    client: Client | None = None

    @property
    def sender(self) -> Client:
        """The client that makes the send: ``client``, or the default sender."""
        return SENDER if self.client is None else self.client

    @property
    def target(self) -> str:
        """The ID the event is sent to: the run's or the instance's."""
        target = self.execution_id if self.execution_id is not None else self.instance_id
        assert target is not None, "checked when the scenario was made"
        return target

    def request(self, event_id: str | None) -> EventRequest:
        """The request one attempt sends, carrying ``event_id``."""
        return EventRequest(
            self.name, self.payload, execution_id=self.execution_id,
            instance_id=self.instance_id, event_id=event_id,
        )  # fmt: skip

    def describe(self) -> str:
        """The send as a scenario writes it, for messages."""
        where = (
            f"execution_id={self.execution_id!r}"
            if self.execution_id is not None
            else f"instance_id={self.instance_id!r}"
        )
        named = f", event_id={self.event_id!r}" if self.event_id is not None else ""
        at = f", at={self.at:g}" if self.at else ""
        return f"ys.SendEvent({self.name!r}, {where}{named}{at})"


def check_sends(
    scenario: str, sends: Sequence[object], actors: Sequence[str], mistake: type[Exception]
) -> None:
    """Refuse a send the runtime would refuse on every run (a sender's mistake), with what is
    wrong, as ``mistake`` (the scenario's ``ScenarioDefinitionError``): never a verdict.
    ``actors`` are the workers' names, which a sender may not take."""
    from yieldstar_sim.runtime._events_common import check_event

    for send in sends:
        if not isinstance(send, SendEvent):
            raise TypeError(f"scenario {scenario!r}: {send!r} is not a ys.SendEvent")
        if (
            isinstance(send.at, bool)
            or not isinstance(send.at, int | float)
            or not 0 <= send.at < math.inf
        ):
            raise ValueError(
                f"scenario {scenario!r}: a send's at is finite seconds >= 0, not {send.at!r}"
            )
        if send.client is not None and not isinstance(send.client, Client):
            raise TypeError(
                f"scenario {scenario!r}: client= takes a ys.Client, not {send.client!r}"
            )
        try:
            check_event(send.request(send.event_id))
        except (TypeError, ValueError) as wrong:
            raise mistake(f"scenario {scenario!r}: {send.describe()}: {wrong}") from None
        if send.sender.name in actors:
            raise ValueError(
                f"scenario {scenario!r}: the sender {send.sender.name!r} has the name of a "
                "worker: senders and workers need names of their own"
            )
