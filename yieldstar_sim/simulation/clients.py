"""Clients as actors: the scenario's triggers and cancels made by a ``ys.Client``, and the
external events it sends (``ys.SendEvent``, made in ``senders.py``).

A client (an API server, a CLI) is an actor of the kernel like a worker: each attempt of its
request passes a choice point (``api trigger order-42``, ``ops cancel order-42``), so a fault
plan can crash it, freeze it, lose the response or fail the call. Its ``ClientRetry`` policy
decides what follows a failed or unanswered attempt: another attempt after ``backoff``
seconds, with the same request ID (RFC 003's rule) or a fresh one (the bug). The trace records
each attempt (``client_attempt``), the runtime's answer, seen or lost (``client_answer``), and
a client that stops without an answer (``client_give_up``).

A trigger with a caller-chosen ``execution_id`` is an external start whose request ID is that
business ID: the runtime's ``on_existing_id`` policy answers a repeat (refused, or the
existing execution returned), and the answer is an event of the run like any other.

The simulator spawns one actor per client; triggers and cancels without a client are made by
the scenario's own actor, without faults, exactly as before (so no existing trace changes). A
send always has a client: its own, or the default sender (``sends.SENDER``), since an event's
delivery is where its faults go.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.model import (
    ExecutionAdmissionError,
    ExecutionNotFoundError,
    ExecutionStateError,
)
from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.answers import answered, ask_runtime, attempts, trace_failure
from yieldstar_sim.simulation.faults import FaultKind, PointInfo
from yieldstar_sim.simulation.kernel import Wait
from yieldstar_sim.simulation.points import pass_point
from yieldstar_sim.simulation.scenario import Cancel, Trigger
from yieldstar_sim.simulation.scenario_clients import fresh_request_id
from yieldstar_sim.simulation.senders import send_event
from yieldstar_sim.simulation.sends import SendEvent
from yieldstar_sim.simulation.trace_payloads import (
    ClientAnswerData,
    ClientAttemptData,
    ClientGiveUpData,
    TraceKind,
)

if TYPE_CHECKING:
    from collections.abc import Generator

    from yieldstar_sim.simulation.kernel import Actor
    from yieldstar_sim.simulation.scenario import Scenario
    from yieldstar_sim.simulation.state import RunState


Request = Trigger | Cancel | SendEvent
"""What a client makes: a trigger, a cancel, or a send of an external event."""


def client_requests(scenario: Scenario) -> dict[str, list[Request]]:
    """Each client's triggers, cancels and sends, in time order (the order written breaks
    ties); a send without a client is the default sender's."""
    requests: dict[str, list[tuple[float, int, Request]]] = {}
    items: list[Request] = [*scenario.triggers, *scenario.cancels]
    for number, item in enumerate([*items, *scenario.sends]):
        client = item.sender if isinstance(item, SendEvent) else item.client
        if client is not None:
            requests.setdefault(client.name, []).append((item.at, number, item))
    return {name: [item for *_, item in sorted(queue)] for name, queue in requests.items()}


def client_actor(sim: RunState, name: str, requests: list[Request]) -> Actor:
    """The actor of client ``name``: makes its requests at their times, one at a time."""
    for number, request in enumerate(requests, 1):
        if request.at > sim.clock.now():
            yield Wait(request.at)
        if isinstance(request, SendEvent):
            crashed = yield from send_event(sim, name, request)
        else:
            crashed = yield from _Request(sim, name, request, number).run()
        if crashed:
            # A crashed client forgets its request; it comes back for its next one.
            yield Wait(sim.clock.now() + sim.scenario.restart_delay)


class _Request:
    """One request of a client, attempt after attempt."""

    def __init__(self, sim: RunState, client: str, request: Trigger | Cancel, number: int):
        self.sim = sim
        self.client = client
        self.request = request
        assert request.client is not None
        self.retry = request.client.retry
        self.action = Op.CANCEL if isinstance(request, Cancel) else Op.TRIGGER
        # The request the client means, whatever ID its attempts carry: what the one-execution
        # invariant groups admissions by.
        self.meant = request.execution_id or f"request {number}"

    def run(self) -> Generator[Any, Any, bool]:
        """Attempt until answered or out of attempts; True when the client crashed."""
        return (yield from attempts(self.sim, self.retry, self._attempt, self._give_up))

    def _request_id(self, attempt: int) -> tuple[str | None, bool]:
        """The ID attempt ``attempt`` carries, and whether it is a freshly minted one."""
        asked = self.request.execution_id
        if asked is None or attempt == 1 or self.retry.reuse_request_id:
            return asked, False
        if self.action == Op.CANCEL:
            return asked, False  # a cancel names the execution: there is no ID to mint
        return fresh_request_id(asked, attempt), True

    def _attempt(self, attempt: int) -> Generator[Any, Any, str]:
        """One attempt past its choice point: ``answered``, ``retry`` or ``crashed``."""
        sim = self.sim
        request_id, fresh = self._request_id(attempt)
        info = PointInfo(self.client, self.action, request_id)
        move, where = yield from pass_point(sim, info)
        kind = move.fault
        if kind == FaultKind.FREEZE:
            assert move.seconds is not None
            yield Wait(sim.clock.now() + move.seconds)  # the client stalls, then sends
        elif kind == FaultKind.CRASH:
            return "crashed"
        workflow_id = self.request.workflow_id if isinstance(self.request, Trigger) else None
        what = f"trigger {workflow_id}" if workflow_id else f"cancel {request_id}"
        if workflow_id and request_id:
            what += f" as {request_id}"
        sim.event(
            sim.clock.now(), TraceKind.CLIENT_ATTEMPT,
            f"sends {what} (attempt {attempt}"
            + (", a fresh request ID" if fresh else "") + ")",
            data=ClientAttemptData(
                self.client, self.action, attempt, workflow_id, request_id, fresh
            ),
            **where,
        )  # fmt: skip
        if kind in (FaultKind.INFRA_ERROR, FaultKind.CHILD_EXIT):
            trace_failure(sim, self.action, f"infrastructure error at {info.label}", where)
            return "retry"
        lost = kind == FaultKind.LOSE_RESPONSE
        seen = ask_runtime(sim, self.action, where, self._call, attempt, request_id, lost=lost)
        return answered(kind, seen, lost)

    def _call(
        self, attempt: int, request_id: str | None, where: dict[str, Any], *, lost: bool
    ) -> None:
        """Make the runtime call and record its answer (a refusal is an answer too)."""
        sim, request = self.sim, self.request
        unseen = "; the response is lost" if lost else ""
        answer: ClientAnswerData
        if isinstance(request, Cancel):
            try:
                reached = sim.runtime.cancel(request.execution_id)
            except (ExecutionNotFoundError, ExecutionStateError) as refused:
                answer = ClientAnswerData(
                    self.client, Op.CANCEL, attempt, "refused", request.execution_id,
                    code=type(refused).__name__, lost=lost,
                )  # fmt: skip
                text = f"cancel {request.execution_id} refused: {refused}"
            else:
                answer = ClientAnswerData(
                    self.client, Op.CANCEL, attempt, "cancel requested", request.execution_id,
                    cancelled=tuple(reached), lost=lost,
                )  # fmt: skip
                text = f"cancel {request.execution_id}: requested for " + (
                    ", ".join(reached) or "nothing live"
                )
            sim.trace.add(
                sim.clock.now(), TraceKind.CLIENT_ANSWER, text + unseen, data=answer, **where
            )
            sim.kernel.nudge()
            return
        before = sim.runtime.execution(request_id) if request_id is not None else None
        try:
            admitted = sim.runtime.trigger(
                request.workflow_id, request.params, execution_id=request_id
            )
        except ExecutionAdmissionError as refused:
            answer = ClientAnswerData(
                self.client, Op.TRIGGER, attempt, "refused", request_id, request.workflow_id,
                code=str(refused.code), lost=lost,
            )  # fmt: skip
            sim.trace.add(
                sim.clock.now(), TraceKind.CLIENT_ANSWER,
                f"trigger of {request.workflow_id} as {request_id} refused: {refused.code}: "
                f"{refused}{unseen}",
                data=answer, **where,
            )  # fmt: skip
            return
        record = sim.runtime.execution(admitted)
        existing = before is not None and record is not None and record.seq == before.seq
        answer = ClientAnswerData(
            self.client, Op.TRIGGER, attempt, "existing" if existing else "admitted", admitted,
            request.workflow_id, lost=lost,
        )  # fmt: skip
        text = (
            f"trigger returns the existing {admitted}"
            if existing
            else f"trigger admits {admitted} ({request.workflow_id})"
        )
        event = sim.trace.add(
            sim.clock.now(), TraceKind.CLIENT_ANSWER, text + unseen, data=answer,
            **{**where, "execution_id": admitted},
        )  # fmt: skip
        if not existing:
            sim.observe_admission(admitted, "client trigger", (self.client, self.meant), event)
            sim.kernel.nudge()

    def _give_up(self, attempts: int, why: str) -> None:
        sim = self.sim
        sim.event(
            sim.clock.now(), TraceKind.CLIENT_GIVE_UP,
            f"gives up its {self.action} of {self.meant}: {why}",
            worker=self.client, op=self.action, execution_id=self.request.execution_id,
            data=ClientGiveUpData(self.client, self.action, attempts, why),
        )  # fmt: skip
