"""A run's totals: what a reviewer would otherwise count box by box (``run.totals()``).

Executions per workflow and status (the runtime's final records), effects per kind with the
idempotency keys the outside service saw more than once, start requests with how many got back
a target that existed, per worker its deliveries, redeliveries, crashes and freezes (the
trace), and, in a run that sent external events, what became of them. The pictures, the
exports, the review page, ``yieldstar-sim run`` and its ``--json`` all print these, so no reader
has to count.

>>> import yieldstar_sim as ys
>>> totals = ys.simulate(ys.load_scenario("durable-start"), runtime="memory").totals()
>>> totals.starts.returned_existing, totals.workers["w2"].crashes
(1, 1)
>>> print(totals)
executions (2): charge-order 1 completed; ship-order 1 completed
effects: card.charged 1; courier.booked 1
start requests: 1 (2 calls: 1 created a target, 1 returned an existing target)
w1: 2 deliveries, 1 redelivery
w2: 1 delivery, 1 crash
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.trace_payloads import (
    ClaimData,
    ClientAnswerData,
    DeliveryData,
    SendData,
    StartChildData,
    StartData,
    TraceKind,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from yieldstar_sim.core.events import EventRecord
    from yieldstar_sim.core.model import ExecutionRecord
    from yieldstar_sim.engine.world import Effect
    from yieldstar_sim.simulation.trace import TraceEvent

__all__ = ["EffectTotals", "EventTotals", "StartTotals", "Totals", "WorkerTotals", "totals_of"]

#: How many repeated idempotency keys a line of text names before it counts the rest.
KEYS_NAMED = 3


@dataclass(frozen=True)
class EffectTotals:
    """One kind of effect: how many a body made (``made``), how many the outside world saw
    (``seen``: one per idempotency key, every unkeyed one), and each key made more than once,
    with how often (``duplicates``: what the outside service deduplicated)."""

    made: int
    seen: int
    duplicates: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class StartTotals:
    """Start requests (``step.start``, ``call``, ``child``, ``spawn``, and a client's trigger
    with its request ID): the distinct requests, the calls that carried them, and how the
    runtime answered each call: a new target, the existing one (a replayed start, a joined
    child, a client's retry), or a refusal."""

    requests: int = 0
    calls: int = 0
    created: int = 0
    returned_existing: int = 0
    rejected: int = 0


@dataclass(frozen=True)
class WorkerTotals:
    """One worker: deliveries it claimed, how many of them were redeliveries (the execution's
    delivery before never acknowledged: a crash, a freeze past the lease, a release), and its
    crashes and freezes."""

    deliveries: int = 0
    redeliveries: int = 0
    crashes: int = 0
    freezes: int = 0


@dataclass(frozen=True)
class EventTotals:
    """External events (``ys.SendEvent``): the hand-overs to the runtime (``sends``) and its
    answers (accepted, a duplicate of one accepted before, refused), those lost on the way
    (``lost``: the runtime never saw them), and what became of the accepted ones (consumed by
    a run, or reported undelivered)."""

    sends: int = 0
    accepted: int = 0
    duplicates: int = 0
    refused: int = 0
    lost: int = 0
    consumed: int = 0
    undelivered: int = 0


@dataclass(frozen=True)
class Totals:
    """A run's totals (``run.totals()``): ``executions`` per workflow and status, ``effects``
    per kind, ``starts``, ``workers`` by name, and ``events`` (external events, in a run that
    sent any). ``to_json()`` is the ``"totals"`` of ``yieldstar-sim run --json``; ``lines()``
    (and ``str``) the words every view prints."""

    executions: dict[str, dict[str, int]]
    effects: dict[str, EffectTotals]
    starts: StartTotals
    workers: dict[str, WorkerTotals]
    events: EventTotals = field(default_factory=EventTotals)

    @property
    def execution_count(self) -> int:
        """How many executions the records hold."""
        return sum(sum(statuses.values()) for statuses in self.executions.values())

    def to_json(self) -> dict[str, Any]:
        """Plain data: dictionaries of numbers (and of keys to numbers), for JSON."""
        return {
            "executions": {workflow: dict(s) for workflow, s in self.executions.items()},
            "effects": {
                name: {"made": e.made, "seen": e.seen, "duplicates": dict(e.duplicates)}
                for name, e in self.effects.items()
            },
            "starts": {
                "requests": self.starts.requests,
                "calls": self.starts.calls,
                "created": self.starts.created,
                "returned_existing": self.starts.returned_existing,
                "rejected": self.starts.rejected,
            },
            "workers": {
                name: {
                    "deliveries": w.deliveries,
                    "redeliveries": w.redeliveries,
                    "crashes": w.crashes,
                    "freezes": w.freezes,
                }
                for name, w in self.workers.items()
            },
            # Only in a run that sent events: every other run's totals read as they did.
            **({"events": vars(self.events).copy()} if self.events.sends else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Totals:
        """The totals ``to_json`` wrote (an export's ``totals``), back as ``Totals``."""
        return cls(
            {workflow: dict(statuses) for workflow, statuses in data["executions"].items()},
            {
                name: EffectTotals(e["made"], e["seen"], dict(e["duplicates"]))
                for name, e in data["effects"].items()
            },
            StartTotals(**data["starts"]),
            {name: WorkerTotals(**worker) for name, worker in data["workers"].items()},
            EventTotals(**data.get("events", {})),
        )

    def lines(self) -> list[str]:
        """The totals in words, a line per kind of total and one per worker."""
        workflows = "; ".join(
            f"{workflow} {_statuses(statuses)}" for workflow, statuses in self.executions.items()
        )
        lines = [f"executions ({self.execution_count}): {workflows or 'none'}"]
        effects = "; ".join(_effect(name, e) for name, e in self.effects.items())
        lines.append(f"effects: {effects or 'none'}")
        lines.append(_starts(self.starts))
        lines += [f"{name}: {_worker(w)}" for name, w in self.workers.items()]
        if self.events.sends or self.events.lost:
            lines.append(_events(self.events))
        return lines

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else many or word + 's'}"


def _statuses(statuses: Mapping[str, int]) -> str:
    """``300 completed`` or ``12 (10 completed, 2 failed)``."""
    total = sum(statuses.values())
    if len(statuses) == 1:
        return f"{total} {next(iter(statuses))}"
    return f"{total} (" + ", ".join(f"{n} {status}" for status, n in statuses.items()) + ")"


def _effect(name: str, effect: EffectTotals) -> str:
    """``courier.booked 301``, or with the keys the outside service saw twice or more."""
    if not effect.duplicates:
        return f"{name} {effect.seen}"
    keys = sorted(effect.duplicates.items(), key=lambda item: (-item[1], item[0]))
    named = ", ".join(f"{key} \u00d7{times}" for key, times in keys[:KEYS_NAMED])
    if len(keys) > KEYS_NAMED:
        named += f" and {len(keys) - KEYS_NAMED} more"
    repeated = _plural(len(keys), "key")
    return f"{name} {effect.seen} ({effect.made} made; {repeated} repeated: {named})"


def _starts(starts: StartTotals) -> str:
    if not starts.calls:
        return "start requests: none"
    answers = [f"{starts.created} created a target"] if starts.created else []
    if starts.returned_existing:
        answers.append(f"{starts.returned_existing} returned an existing target")
    if starts.rejected:
        answers.append(f"{starts.rejected} refused")
    return (
        f"start requests: {starts.requests} ({_plural(starts.calls, 'call')}: "
        + ", ".join(answers)
        + ")"
    )


def _events(events: EventTotals) -> str:
    """``events: 3 sends (2 accepted, 1 duplicate), 1 lost on the way; 2 consumed``."""
    answers = [f"{events.accepted} accepted"]
    if events.duplicates:
        answers.append(_plural(events.duplicates, "duplicate"))
    if events.refused:
        answers.append(f"{events.refused} refused")
    text = f"events: {_plural(events.sends, 'send')} ({', '.join(answers)})"
    if events.lost:
        text += f", {events.lost} lost on the way"
    fates = [f"{events.consumed} consumed"]
    if events.undelivered:
        fates.append(f"{events.undelivered} reported undelivered")
    return text + "; " + ", ".join(fates)


def _events_of(trace: Sequence[TraceEvent], kept: Iterable[EventRecord]) -> EventTotals:
    answers: Counter[str] = Counter()
    lost = 0
    for event in trace:
        data = event.data
        if isinstance(data, SendData):
            answers[data.answer] += 1
        elif isinstance(data, DeliveryData) and data.what == "lost":
            lost += 1
    fates = Counter(event.status for event in kept)
    return EventTotals(
        sum(answers.values()), answers["accepted"], answers["duplicate"], answers["refused"],
        lost, fates["consumed"], fates["undelivered"],
    )  # fmt: skip


def _worker(worker: WorkerTotals) -> str:
    parts = [_plural(worker.deliveries, "delivery", "deliveries")]
    if worker.redeliveries:
        parts.append(_plural(worker.redeliveries, "redelivery", "redeliveries"))
    if worker.crashes:
        parts.append(_plural(worker.crashes, "crash", "crashes"))
    if worker.freezes:
        parts.append(_plural(worker.freezes, "freeze"))
    return ", ".join(parts)


def _effects(effects: Iterable[Effect]) -> dict[str, EffectTotals]:
    made: Counter[str] = Counter()
    unkeyed: Counter[str] = Counter()
    keys: dict[str, Counter[str]] = {}
    for effect in effects:
        made[effect.name] += 1
        if effect.idempotency_key is None:
            unkeyed[effect.name] += 1
        else:
            keys.setdefault(effect.name, Counter())[effect.idempotency_key] += 1
    result = {}
    for name in sorted(made):
        keyed = keys.get(name, Counter())
        result[name] = EffectTotals(
            made[name],
            unkeyed[name] + len(keyed),
            {key: times for key, times in sorted(keyed.items()) if times > 1},
        )
    return result


def _starts_of(events: Sequence[TraceEvent]) -> StartTotals:
    requests: set[tuple[str, str]] = set()
    targets: set[str] = set()
    calls = created = existing = rejected = 0
    for event in events:
        data = event.data
        if isinstance(data, StartData | StartChildData):
            if not (event.execution_id and event.step_key):
                continue
            requests.add((event.execution_id, event.step_key))
            calls += 1
            if data.rejected is not None or data.accepted is None:
                rejected += 1
            elif isinstance(data, StartChildData) and data.created is False:
                existing += 1  # a joined child, or a replayed child request
            elif isinstance(data, StartChildData) and data.created:
                created += 1
            elif data.accepted in targets:
                existing += 1
            else:
                created += 1
            if data.accepted is not None:
                targets.add(data.accepted)
        elif isinstance(data, ClientAnswerData) and data.action == "trigger":
            if data.answer not in ("admitted", "existing", "refused"):
                continue
            requests.add((data.client, str(data.execution_id or event.seq)))
            calls += 1
            if data.answer == "admitted":
                created += 1
            elif data.answer == "existing":
                existing += 1
            else:
                rejected += 1
    return StartTotals(len(requests), calls, created, existing, rejected)


def _workers(events: Sequence[TraceEvent], names: Sequence[str]) -> dict[str, WorkerTotals]:
    counts: dict[str, Counter[str]] = {name: Counter() for name in names}
    unacknowledged: set[str] = set()  # executions whose last delivery has not ended well
    for event in events:
        worker = event.worker
        if worker is None:
            continue
        if isinstance(event.data, ClaimData):
            count = counts.setdefault(worker, Counter())
            count["deliveries"] += 1
            claimed = event.data.claimed
            if claimed in unacknowledged:
                count["redeliveries"] += 1
            unacknowledged.add(claimed)
        elif event.kind == TraceKind.CALL and event.op == Op.ACKNOWLEDGE and event.execution_id:
            unacknowledged.discard(event.execution_id)
        elif event.kind == TraceKind.CRASH:
            counts.setdefault(worker, Counter())["crashes"] += 1
        elif event.kind == TraceKind.FREEZE:
            counts.setdefault(worker, Counter())["freezes"] += 1
    return {
        name: WorkerTotals(c["deliveries"], c["redeliveries"], c["crashes"], c["freezes"])
        for name, c in counts.items()
    }


def totals_of(
    events: Sequence[TraceEvent],
    effects: Iterable[Effect],
    executions: Iterable[ExecutionRecord],
    workers: Sequence[str] = (),
    kept: Iterable[EventRecord] = (),
) -> Totals:
    """The totals of a run's trace, effects' ledger and final execution records; ``workers``
    are the scenario's, listed even when one never claimed anything; ``kept``, the runtime's
    external events as the run left them."""
    by_workflow: dict[str, Counter[str]] = {}
    for record in executions:
        by_workflow.setdefault(record.workflow_id, Counter())[str(record.status)] += 1
    return Totals(
        {workflow: dict(sorted(by_workflow[workflow].items())) for workflow in sorted(by_workflow)},
        _effects(effects),
        _starts_of(events),
        _workers(events, workers),
        _events_of(events, kept),
    )
