"""Each trace event in words, for a design reviewer stepping through a run.

The trace's own text is terse (``put_step: recorded step ship: completed ...``); a sentence
says who did what and why it matters: a repeated start that returns the first target, a fenced
write refused because the lease moved on, an effect that a crash cannot undo.

>>> import yieldstar_sim as ys
>>> run = ys.simulate(ys.load_scenario("durable-start"), runtime="memory")
>>> sentences = narrate(run.trace)
>>> sentences[0]
'The scenario triggers charge-order: the runtime admits order-42, due now.'
>>> print([s for s in sentences if "same target" in s][0])  # doctest: +NORMALIZE_WHITESPACE
w1 calls start again for request (order-42, ship) (call 2): ...
same target, @ship-order:order-42/ship. ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.core.ops import Op
from yieldstar_sim.engine.world import TRIGGERED
from yieldstar_sim.simulation.narration import body_words, outcome_words
from yieldstar_sim.simulation.trace_payloads import (
    BodyData,
    CancelData,
    ClaimData,
    ClientAnswerData,
    ClientAttemptData,
    ClientGiveUpData,
    DeployData,
    DrawData,
    EffectData,
    ErrorData,
    FreezeData,
    HeartbeatData,
    OutcomeData,
    PutStepData,
    ReasonData,
    RecordWakeData,
    RenewData,
    SendData,
    SkewData,
    StallData,
    StartChildData,
    StartData,
    StatusData,
    StopData,
    TraceKind,
    TriggerData,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from yieldstar_sim.simulation.trace import TraceEvent


def narrate(trace: Iterable[TraceEvent]) -> list[str]:
    """One sentence (or two) per event, in order; the sentences know what came before (how
    many times a request was started, whose lease an execution is under)."""
    calls: dict[tuple[str, str], int] = {}
    first_target: dict[tuple[str, str], str] = {}
    sentences = []
    for event in trace:
        sentence = ""
        if isinstance(event.data, StartData):
            request = (event.execution_id or "?", event.step_key or "?")
            calls[request] = calls.get(request, 0) + 1
            sentence = _start(event, event.data, calls[request], first_target.get(request))
            if event.data.accepted is not None:
                first_target.setdefault(request, event.data.accepted)
        sentences.append(sentence or describe_event(event))
    return sentences


def describe_event(event: TraceEvent) -> str:
    """One event in words, without context."""
    who, eid, key, data = event.worker or "-", event.execution_id, event.step_key, event.data
    kind = event.kind
    if isinstance(data, TriggerData) and data.refused is not None:
        return (
            f"The scenario triggers {data.workflow_id} as "
            f"{data.execution_id or '?'}: the runtime refuses, the caller-chosen ID exists "
            "already, and nothing is admitted."
        )
    if isinstance(data, TriggerData):
        return f"The scenario triggers {data.workflow_id}: the runtime admits {eid}, due now."
    if isinstance(data, ClientAttemptData | ClientAnswerData | ClientGiveUpData):
        return _client(data)
    if isinstance(data, SendData):
        return _send(data)
    if isinstance(data, DeployData):
        return f"New code is deployed ({', '.join(data.workflows)}): deliveries from now on run it."
    if kind == TraceKind.CALL:
        return _call(event)
    if isinstance(data, BodyData):
        return (
            f"{who} runs the body of step {key} of {eid} (attempt {data.attempt}): "
            f"it {body_words(data) or 'ran'}. Nothing is recorded until the "
            "step's result is written."
        )
    if isinstance(data, EffectData):
        if data.name == TRIGGERED:
            admitted = data.data
            return (
                f"The body of step {key} triggers {admitted.get('workflow_id', '?')} without a "
                f"start request: the runtime admits {admitted.get('execution_id', '?')}, and "
                "nothing durable ties it to the step. If the step runs again, so does this."
            )
        return (
            f"In the outside world: {data.name} {_short(data.data)}, by "
            f"{who} for {eid} / {key}. A crash never undoes an effect."
        )
    if kind == TraceKind.FAULT:
        return f"Fault injected at choice point #{event.point}: {event.text}."
    if kind == TraceKind.CRASH:
        return (
            f"{who} crashes and forgets everything. Its lease stays in the runtime until it "
            "expires; then another delivery replays the execution from its recorded steps."
        )
    if kind == TraceKind.RESTART:
        return f"{who} restarts with no memory and asks for work again."
    if kind == TraceKind.FREEZE:
        seconds = f"{data.seconds:g}s" if isinstance(data, FreezeData) else "a while"
        return (
            f"{who} freezes ({seconds}): it does not "
            "heartbeat, so its lease runs out while it is stopped."
        )
    if kind == TraceKind.RESUME:
        return (
            f"{who} wakes up and goes on as if nothing happened. If its lease expired meanwhile, "
            "its next fenced write will be refused."
        )
    if kind == TraceKind.STALL and isinstance(data, StallData):
        return (
            f"Attempt {data.attempt} of step {key} of {eid} hangs for {data.seconds:g}s, but "
            f"{who} does not: it goes on with other work. Nobody heartbeats this lease (token "
            f"{event.token}), so it runs out and the step may be retried elsewhere."
        )
    if kind == TraceKind.UNSTALL and isinstance(data, StallData):
        return (
            f"The stalled attempt {data.attempt} of step {key} of {eid} resumes on {who}, "
            "unaware of the time it lost: what it does to the world lands (a second time, if "
            "its retry ran), and its fenced writes under token "
            f"{event.token} will be refused."
        )
    if kind == TraceKind.SKEW and isinstance(data, SkewData):
        return (
            f"{who}'s clock falls {data.behind:g}s behind true time: it reads "
            f"t={data.believed:g} at t={event.t:g}. {who} acts on what its clock says; the "
            "runtime judges leases by true time."
        )
    if kind == TraceKind.STOP and isinstance(data, StopData):
        why = {
            "failed": f"{data.failed} renewal{'s' if data.failed != 1 else ''} in a row failed",
            "refused": "the runtime refused a renewal: the lease has moved on or ended",
            "expired": "by its own clock its lease ended while it was stopped",
            "abandoned": "its worker gave up on it at its timeout",
        }.get(data.why, data.why)
        return (
            f"Attempt {data.attempt} of step {key} of {eid} is stopped: {why}. The body sees "
            "it at its heartbeat and does no more; the delivery is given back, so the step "
            "runs again from its start, and never beside this attempt."
        )
    if kind == TraceKind.DRAW and isinstance(data, DrawData):
        return (
            f"The body of step {key} of {eid} draws {data.value} (option {data.index + 1} of "
            f"{data.of}): a choice point, so every option is a schedule the explorer can try. "
            "The body runs once its draw is decided."
        )
    if kind == TraceKind.HEARTBEAT and isinstance(data, HeartbeatData):
        belief = "" if data.believed == event.t else f" (its clock reads t={data.believed:g})"
        if data.renewed:
            return (
                f"{who} is about to work {data.work:g}s on step {key} of {eid}{belief}: it "
                f"heartbeats, and its lease runs to t={data.expires_at:g}."
            )
        truth = (
            f" By true time it has expired: another worker may claim {eid}, and {who}'s next "
            "fenced write will be refused."
            if event.t >= data.expires_at
            else ""
        )
        return (
            f"{who} is about to work {data.work:g}s on step {key} of {eid}{belief}: by its "
            f"clock its lease (to t={data.expires_at:g}) outlasts the work, so it does not "
            f"renew.{truth}"
        )
    if kind == TraceKind.REFUSED and event.op in (Op.START, Op.START_CHILD):
        return (
            f"The runtime refuses {who}'s {event.op} for {eid}: {eid} has already ended, and a "
            f"terminal execution admits no new targets, so the stale delivery (token "
            f"{event.token}) cannot leave an orphan nobody would cancel. "
            f"({_reason(event)})"
        )
    if kind == TraceKind.REFUSED:
        return (
            f"The runtime refuses {who}'s {event.op} on {eid}: its lease (token {event.token}) is "
            f"no longer current. This is fencing: a stale worker cannot overwrite newer records. "
            f"({_reason(event)})"
        )
    if kind == TraceKind.ERROR:
        return f"{who}'s {event.op} does not come back: {_error(event)}."
    if kind == TraceKind.REJECT:
        return f"{who} gives up the delivery of {eid} without an outcome: {_reason(event)}."
    if kind == TraceKind.CANCEL:
        cancelled = data.cancelled if isinstance(data, CancelData) else ()
        reached = ", ".join(cancelled) or "nothing live"
        return (
            f"Cancellation is requested for {eid}: it reaches {reached} (what it owns; "
            "detached work is left alone). Each learns it at its next delivery."
        )
    if kind == TraceKind.PRUNE:
        return (
            f"{eid} is pruned: its steps, its wake and the start requests it made are gone; "
            "the executions it started keep running and keep their parent link."
        )
    if isinstance(data, OutcomeData) and data.status == "dead-lettered":
        return (
            f"{who} sets {eid} aside without running its workflow code: {outcome_words(data)}. "
            "It counts only once it is acknowledged."
        )
    if isinstance(data, OutcomeData):
        return (
            f"The workflow code of {eid} returns on {who}: {outcome_words(data)}. "
            "The outcome counts only once it is acknowledged."
        )
    return event.text


def _call(event: TraceEvent) -> str:
    who, eid, key, data, op = event.worker, event.execution_id, event.step_key, event.data, event.op
    if op == Op.CLAIM:
        if not isinstance(data, ClaimData):
            return f"{who} asks for due work: nothing is due."
        return (
            f"{who} claims {eid} ({data.workflow_id}): it holds the lease with "
            f"fencing token {event.token} until t={data.expires_at:g}, and replays "
            "the workflow from its recorded steps."
        )
    if isinstance(data, PutStepData):
        status, value = data.status, data.value_summary()
        if status == "pending":
            return (
                f"{who} records step {key} of {eid} as pending ({value}): the execution is due "
                "again when it wakes."
            )
        return (
            f"{who} records step {key} of {eid}: {status} {value}. From now on the step is "
            "replayed from this record and never run again."
        )
    if isinstance(data, StartChildData):
        target, detached = data.accepted, data.detached
        if data.rejected is not None:
            return f"{who} asks for child {key} of {eid}: refused with {data.rejected}."
        if data.created is False:
            return (
                f"{who} joins the existing {target} for step {key} of {eid}: joining never "
                "takes ownership, and no start request is recorded."
            )
        return (
            f"{who} creates {target} ({data.workflow_id}) for step {key} of {eid}, "
            f"with its parent link{' (detached: it outlives its parent)' if detached else ''}."
        )
    if op == Op.WAIT_FOR:
        target = data.execution_id if isinstance(data, StatusData) else None
        return (
            f"{who} registers that {eid} waits for {target or '?'}: its end will wake the caller."
        )
    if isinstance(data, RecordWakeData):
        return f"{who} records a wake for {eid}: wake at t={data.at:g}."
    if isinstance(data, RenewData):
        return (
            f"The body of step {key} of {eid} heartbeats: {who} renews its lease (token "
            f"{event.token}), which now runs to t={data.expires_at:g}."
        )
    if op == Op.ACKNOWLEDGE:
        status = data.status if isinstance(data, StatusData) else "?"
        return f"{who} acknowledges {eid}: its record is now {status}, and the lease is given up."
    if op == Op.RELEASE:
        return (
            f"{who} gives up its lease on {eid} without an outcome: it is due again after the "
            "redelivery delay."
        )
    return f"{who}: {event.text}"


def _reason(event: TraceEvent) -> str:
    """Why a write was refused or a delivery rejected (a trace written before these events
    had payloads: their whole text)."""
    return event.data.reason if isinstance(event.data, ReasonData) else event.text


def _error(event: TraceEvent) -> str:
    """What went wrong with a call that did not come back."""
    data = event.data
    if not isinstance(data, ErrorData):
        return event.text  # a trace written before errors had payloads
    return data.reason if data.reason is not None else f"the response of {event.op} is lost"


def _start(event: TraceEvent, data: StartData, call: int, first: str | None) -> str:
    who = event.worker
    request = f"({event.execution_id}, {event.step_key})"
    accepted, rejected = data.accepted, data.rejected
    if rejected is not None:
        why = {
            "START_REQUEST_MISMATCH": (
                "the request ID was first used for another workflow or other parameters; "
                "returning the old target would hide the change, starting a new one would "
                "break exactly-one"
            ),
            "INVALID_START_PARAMETERS": (
                "the parameters are not a durable value; nothing is admitted and no request "
                "is recorded"
            ),
        }.get(rejected, "")
        return (
            f"{who} calls start for request {request}: the runtime refuses it with {rejected}"
            + (f": {why}." if why else ".")
        )
    if call == 1 or first is None:
        return (
            f"{who} starts {data.workflow_id} for request {request}: in one "
            f"transaction the runtime records the request and admits {accepted} with its "
            "parent link."
        )
    return (
        f"{who} calls start again for request {request} (call {call}): the runtime finds the "
        f"request record and returns the same target, {accepted}. Nothing new is admitted."
    )


def _client(data: ClientAttemptData | ClientAnswerData | ClientGiveUpData) -> str:
    """A client's attempt, the runtime's answer to it, or the client giving up, in words."""
    who = f"The client {data.client}"
    if isinstance(data, ClientGiveUpData):
        if data.why == "crashed":
            return (
                f"{who} crashes and forgets its {data.action}: it never learns what the runtime "
                "did with it, and nothing it sent is undone."
            )
        return f"{who} gives up its {data.action} after {data.attempts} attempts without an answer."
    if isinstance(data, ClientAttemptData):
        if data.action == "cancel":
            return f"{who} asks to cancel {data.request_id} (attempt {data.attempt})."
        if data.request_id is None:
            how = "without a request ID: the runtime generates one, so it cannot tell a retry"
            how += " from a new request"
        elif data.fresh_id:
            how = (
                f"with a fresh request ID, {data.request_id}: to the runtime this retry is a new "
                "request"
            )
        elif data.attempt > 1:
            how = f"with the same request ID, {data.request_id}, so the runtime can recognise it"
        else:
            how = f"with the request ID {data.request_id}"
        return f"{who} asks to start {data.workflow_id} {how} (attempt {data.attempt})."
    lost = (
        f" The response is lost on the way back: {data.client} does not know, and retries."
        if data.lost
        else ""
    )
    if data.answer == "admitted":
        return f"The runtime admits {data.execution_id} for {data.client}, due now.{lost}"
    if data.answer == "existing":
        return (
            f"The runtime finds {data.execution_id} exists and returns it (its on_existing_id "
            f"policy is return_existing): nothing new is admitted.{lost}"
        )
    if data.answer == "cancel requested":
        reached = ", ".join(data.cancelled) or "nothing live"
        return f"Cancellation of {data.execution_id} is requested for {reached}.{lost}"
    if data.action == "trigger" and data.code == "EXECUTION_EXISTS":
        return (
            f"The runtime refuses {data.client}'s start of {data.execution_id} with "
            "EXECUTION_EXISTS: the ID exists already and nothing is admitted (to a client that "
            f"retries, this says its earlier attempt committed).{lost}"
        )
    return f"The runtime refuses {data.client}'s {data.action}: {data.code}.{lost}"


def _send(data: SendData) -> str:
    """A sender's event handed to the runtime, and the runtime's answer, in words."""
    sent = f"The sender {data.client} sends event {data.name!r} to {data.target}"
    lost = " Its answer is lost: the sender does not know." if data.lost else ""
    if data.answer == "refused":
        return f"{sent}: the runtime refuses it ({data.code}).{lost}"
    if data.answer == "duplicate":
        return f"{sent} again: the runtime has {data.event_id} already and keeps it once.{lost}"
    return (
        f"{sent}: the runtime accepts it as {data.event_id}, pending until a run takes it with "
        f"step.wait_for_event.{lost}"
    )


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
