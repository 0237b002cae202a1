"""Senders as actors: the external events a scenario sends (``ys.SendEvent``), attempt after
attempt.

A send is one of its client's requests (``clients.client_actor`` makes them in time order;
a send without a client is the default sender's). Each attempt passes a choice point (``sender
send_event counter``) where the move brings what befalls it:

- the sender's own faults, as a client's: a crash before the call (it forgets the send), a
  freeze (it sends later), an infrastructure error or a process exit (the call is not made:
  it retries after its backoff), a lost response or a crash after the call (the runtime
  accepted it, the sender never learns: it retries, or dies);
- the event's, on its way (``faults.EVENT_KINDS``): lost (the runtime never sees it and the
  sender, with no refusal, takes it as sent), duplicated (the runtime is handed the same
  request twice, its event ID with it), delayed (held back, then handed over).

A retry carries the same event ID, or a fresh one (``~retry-2``) when the client's policy mints
fresh request IDs; an event sent without an ID is a new event each time it is sent. The trace
records each hand-over and its answer (``send``), what struck the event (``delivery``), and a
sender that stops without an answer (``client_give_up``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.events import EventAccepted
from yieldstar_sim.core.ops import Op
from yieldstar_sim.runtime.protocol import events_of
from yieldstar_sim.simulation.answers import answered, ask_runtime, attempts, trace_failure
from yieldstar_sim.simulation.faults import FaultKind, PointInfo
from yieldstar_sim.simulation.kernel import Wait
from yieldstar_sim.simulation.points import pass_point
from yieldstar_sim.simulation.scenario_clients import fresh_request_id
from yieldstar_sim.simulation.trace_payloads import (
    ClientGiveUpData,
    DeliveryData,
    SendData,
    TraceKind,
)

if TYPE_CHECKING:
    from collections.abc import Generator

    from yieldstar_sim.simulation.sends import SendEvent
    from yieldstar_sim.simulation.state import RunState

#: What each of the event's own faults does to it, in the trace's words.
_STRUCK = {
    FaultKind.LOSE_EVENT: "lost",
    FaultKind.DUPLICATE_EVENT: "duplicated",
    FaultKind.DELAY_EVENT: "delayed",
}


def send_event(sim: RunState, client: str, send: SendEvent) -> Generator[Any, Any, bool]:
    """Send ``send`` until answered or out of attempts; True when the sender crashed."""
    return (yield from _Send(sim, client, send).run())


class _Send:
    """One send of a sender, attempt after attempt."""

    def __init__(self, sim: RunState, client: str, send: SendEvent) -> None:
        self.sim = sim
        self.client = client
        self.send = send
        self.target = send.request(None).target
        """Where the event goes, in words: ``instance counter``."""

    def run(self) -> Generator[Any, Any, bool]:
        """Attempt until answered or out of attempts; True when the sender crashed."""
        return (yield from attempts(self.sim, self.send.sender.retry, self._attempt, self._give_up))

    def _event_id(self, attempt: int) -> str | None:
        """The event ID attempt ``attempt`` carries: the send's own, or a fresh one for a
        client that mints fresh request IDs."""
        send = self.send
        if send.event_id is None or attempt == 1 or send.sender.retry.reuse_request_id:
            return send.event_id
        return fresh_request_id(send.event_id, attempt)

    def _attempt(self, attempt: int) -> Generator[Any, Any, str]:
        """One attempt past its choice point: ``answered``, ``retry`` or ``crashed``."""
        sim, client = self.sim, self.client
        info = PointInfo(client, Op.SEND_EVENT, self.send.target)
        move, where = yield from pass_point(sim, info)
        kind = move.fault
        what = f"event {self.send.name!r} to {self.target}"
        if kind == FaultKind.CRASH:
            return "crashed"
        if kind in (FaultKind.FREEZE, FaultKind.DELAY_EVENT):
            assert move.seconds is not None
            if kind == FaultKind.DELAY_EVENT:
                self._struck(kind, f"{what} is held back {move.seconds:g}s", where, move.seconds)
            yield Wait(sim.clock.now() + move.seconds)
        if kind in (FaultKind.INFRA_ERROR, FaultKind.CHILD_EXIT):
            trace_failure(sim, Op.SEND_EVENT, f"infrastructure error at {info.label}", where)
            return "retry"
        if kind == FaultKind.LOSE_EVENT:
            self._struck(
                kind, f"{what} is lost on the way: the runtime never sees it, and {client} "
                "takes it as sent", where,
            )  # fmt: skip
            return "answered"
        lost = kind == FaultKind.LOSE_RESPONSE
        event_id = self._event_id(attempt)
        seen = True
        for copy in range(2 if kind == FaultKind.DUPLICATE_EVENT else 1):
            if copy:
                self._struck(
                    FaultKind.DUPLICATE_EVENT, f"{what} reaches the runtime a second time", where
                )
            if not ask_runtime(sim, Op.SEND_EVENT, where, self._call, attempt, event_id, lost=lost):
                seen = False
        return answered(kind, seen, lost)

    def _call(
        self, attempt: int, event_id: str | None, where: dict[str, Any], *, lost: bool
    ) -> None:
        """Hand the event to the runtime, record its answer, and wake the workers."""
        sim, send, client = self.sim, self.send, self.client
        result = events_of(sim.runtime).send_event(send.request(event_id))
        unseen = "; the answer is lost" if lost else ""
        text = f"send_event {send.name!r} to {self.target}"
        if isinstance(result, EventAccepted):
            answer = "duplicate" if result.duplicate else "accepted"
            data = SendData(
                client, attempt, send.name, self.target, answer, event_id, result.seq,
                result.event_id, result.instance_id, lost=lost,
            )  # fmt: skip
            text += (
                f": already accepted as {result.event_id}, kept once"
                if result.duplicate
                else f": accepted as {result.event_id}"
            )
        else:
            data = SendData(
                client, attempt, send.name, self.target, "refused", event_id,
                code=str(result.code), lost=lost,
            )  # fmt: skip
            text += f": refused {result.code}: {result.message}"
        sim.trace.add(sim.clock.now(), TraceKind.SEND, text + unseen, data=data, **where)
        sim.kernel.nudge()

    def _struck(
        self, kind: FaultKind, text: str, where: dict[str, Any], seconds: float | None = None
    ) -> None:
        """Trace what struck the event on its way."""
        data = DeliveryData(self.client, _STRUCK[kind], self.send.name, self.target, seconds)
        self.sim.event(self.sim.clock.now(), TraceKind.DELIVERY, text, data=data, **where)

    def _give_up(self, attempts: int, why: str) -> None:
        sim, client = self.sim, self.client
        sim.event(
            sim.clock.now(), TraceKind.CLIENT_GIVE_UP,
            f"gives up its send of {self.send.name!r} to {self.target}: {why}",
            worker=client, op=Op.SEND_EVENT, execution_id=self.send.target,
            data=ClientGiveUpData(client, str(Op.SEND_EVENT), attempts, why),
        )  # fmt: skip
