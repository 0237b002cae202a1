"""The trace of a run: every choice, runtime call and result, fault, lease change, wake,
outcome and effect, in order. The same inputs give the same trace, byte for byte.

An event's ``kind`` is a `TraceKind` (each member says what emits it) and its ``data`` a small
frozen dataclass per kind (``EffectData``, ``ClaimData`` ...), so a writer and a reader that
disagree on a field's name disagree under mypy, not in a run. The JSON form (``to_jsonl``) is
the one the trace had when ``data`` was a dict, key for key; ``Trace.from_jsonl`` reads it
back into the typed payloads.

Adding a kind of event takes two things here: a member of `TraceKind`, and, if the event
carries data, a frozen dataclass deriving from `Payload`, registered with ``@payload(kind)``
(``@payload(TraceKind.CALL, op=...)`` for a runtime call's result).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from yieldstar_sim.core.frozen import maker

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
    """A runtime call that failed, was not made, or whose response was lost."""
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
    EFFECT = "effect"
    """An effect reached the outside world (`EffectData`)."""
    WORLD = "world"
    """A read of the world's clock or random numbers (`WorldReadData`)."""
    STORE_READ = "store_read"
    """A step body read a key of the world's key-value store (`StoreReadData`)."""
    STORE_WRITE = "store_write"
    """A step body wrote a key of the world's key-value store (`StoreWriteData`)."""
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


_OMIT = "omitted while default"

_PAYLOADS: dict[tuple[TraceKind, str | None], type[Payload]] = {}

P = TypeVar("P", bound="type[Payload]")
T = TypeVar("T")


def payload(kind: TraceKind, *, op: str | None = None) -> Callable[[P], P]:
    """Register a payload class as the data of ``kind`` events (of the runtime call ``op``,
    for ``TraceKind.CALL``): ``Trace.from_jsonl`` reads such events' data back into it."""

    def register(cls: P) -> P:
        if (kind, op) in _PAYLOADS:
            raise ValueError(f"{kind} events ({op or 'any op'}) have a payload already")
        _PAYLOADS[(kind, op)] = cls
        cls.kinds = (*cls.kinds, (kind, op))
        return cls

    return register


def omittable(default: Any = None) -> Any:
    """A field the JSON form leaves out while it holds ``default``, as the dict form did."""
    return field(default=default, metadata={_OMIT: True})


class Payload(Mapping[str, Any]):
    """The data of one event. Subclasses are frozen dataclasses; read them by attribute.

    A payload is also a read-only mapping over its JSON form (``event.data["accepted"]``,
    ``"refused" in event.data``), so that code written when ``data`` was a dict still reads.
    """

    __slots__ = ()

    kinds: ClassVar[tuple[tuple[TraceKind, str | None], ...]] = ()
    """The (kind, op) pairs this payload is registered for (``op`` None: any op)."""

    def to_json(self) -> dict[str, Any]:
        """The payload as plain data: every field, less those left at an omittable default."""
        out: dict[str, Any] = {}
        for each in fields(self):  # type: ignore[arg-type]
            value = getattr(self, each.name)
            if each.metadata.get(_OMIT) and value == each.default:
                continue
            out[each.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Payload:
        """The payload from its JSON form; a ``ValueError`` names a key it does not know or
        one it needs and lacks."""
        known = {each.name: each for each in fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"{cls.__name__} has no field {', '.join(map(repr, unknown))}")
        missing = [
            name
            for name, each in known.items()
            if name not in data and each.default is MISSING and each.default_factory is MISSING
        ]
        if missing:
            raise ValueError(f"{cls.__name__} needs {', '.join(map(repr, missing))}")
        return cast("Any", cls)(**data)  # type: ignore[no-any-return]

    def __getitem__(self, key: str) -> Any:
        return self.to_json()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_json())

    def __len__(self) -> int:
        return len(self.to_json())


@dataclass(frozen=True, slots=True)
class NoData(Payload):
    """The data of an event that carries none (its JSON form is ``{}``)."""


NO_DATA = NoData()


@payload(TraceKind.TRIGGER)
@dataclass(frozen=True, slots=True)
class TriggerData(Payload):
    """A scenario's trigger. When refused, the caller-chosen ID and the refusal's code (an
    admitted trigger's ID is the event's ``execution_id``)."""

    workflow_id: str
    execution_id: str | None = omittable()
    refused: str | None = omittable()


@payload(TraceKind.CANCEL)
@payload(TraceKind.CALL, op="cancel")
@dataclass(frozen=True, slots=True)
class CancelData(Payload):
    """A cancellation: the live executions it reached."""

    cancelled: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "cancelled", tuple(self.cancelled))


@payload(TraceKind.FAULT)
@dataclass(frozen=True, slots=True)
class FaultData(Payload):
    """The kind of fault that fired (a ``FaultKind`` value)."""

    kind: str


@payload(TraceKind.BODY)
@dataclass(frozen=True, slots=True)
class BodyData(Payload):
    """A step body's attempt and the seconds of work it said it did (``step.world.elapse``)."""

    attempt: int
    elapsed: float


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


@payload(TraceKind.OUTCOME)
@dataclass(frozen=True, slots=True)
class OutcomeData(Payload):
    """The status of a delivery's outcome."""

    status: str


@payload(TraceKind.CALL, op="claim")
@dataclass(frozen=True, slots=True)
class ClaimData(Payload):
    """A claim that got a delivery (a claim that found nothing due carries no data)."""

    claimed: str
    expires_at: float
    workflow_id: str


@payload(TraceKind.CALL, op="put_step")
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

    def to_json(self) -> dict[str, Any]:
        """The JSON form: ``value``, or ``value_digest`` and ``value_bytes``."""
        out = Payload.to_json(self)
        if self.value_digest is not None:
            del out["value"]
        return out


@payload(TraceKind.CALL, op="record_wake")
@dataclass(frozen=True, slots=True)
class RecordWakeData(Payload):
    """The time the execution is due again."""

    at: float


@payload(TraceKind.CALL, op="acknowledge")
@payload(TraceKind.CALL, op="wait_for")
@dataclass(frozen=True, slots=True)
class StatusData(Payload):
    """The status of the record a call returned (an acknowledged execution, or the one
    waited for)."""

    status: str


@payload(TraceKind.CALL, op="release")
@dataclass(frozen=True, slots=True)
class ReleaseData(Payload):
    """The seconds after which a released execution is delivered again."""

    delay: float


@payload(TraceKind.CALL, op="start")
@dataclass(frozen=True, slots=True)
class StartData(Payload):
    """A start request's target and its answer: the execution accepted, or the rejection's
    code."""

    workflow_id: str
    detached: bool
    accepted: str | None = omittable()
    rejected: str | None = omittable()


@payload(TraceKind.CALL, op="start_child")
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
class ClientAnswerData(Payload):
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "cancelled", tuple(self.cancelled))


@payload(TraceKind.CLIENT_GIVE_UP)
@dataclass(frozen=True, slots=True)
class ClientGiveUpData(Payload):
    """A client that stopped without an answer: after ``attempts`` attempts, ``why``
    (``attempts used up`` or ``crashed``)."""

    client: str
    action: str
    attempts: int
    why: str


def payload_from_json(kind: TraceKind, op: str | None, data: Mapping[str, Any]) -> Payload:
    """The typed payload of a ``kind`` event (of call ``op``) from its JSON form."""
    if not data:
        return NO_DATA
    cls = _PAYLOADS.get((kind, op)) or _PAYLOADS.get((kind, None))
    if cls is None:
        what = f"{kind} events of op {op!r}" if op is not None else f"{kind} events"
        raise ValueError(f"{what} carry no data, yet this one has {sorted(data)}")
    return cls.from_json(data)


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One thing that happened, at virtual time ``t``.

    ``kind`` is a `TraceKind`, ``data`` the kind's payload (`NO_DATA` when it has none).
    ``point`` is the choice point the event belongs to, if any.
    """

    seq: int
    t: float
    kind: TraceKind
    worker: str | None = None
    op: str | None = None
    execution_id: str | None = None
    step_key: str | None = None
    token: int | None = None
    point: int | None = None
    text: str = ""
    data: Payload = NO_DATA

    def __post_init__(self) -> None:
        # Trace.add makes the same checks itself and builds its events without this method
        # (core.frozen): a check added here must be added there too.
        if not isinstance(self.kind, TraceKind):
            try:
                object.__setattr__(self, "kind", TraceKind(self.kind))
            except ValueError:
                kinds = ", ".join(TraceKind)
                raise ValueError(
                    f"unknown trace event kind {self.kind!r}; the kinds are {kinds}"
                ) from None
        kinds = type(self.data).kinds
        if kinds and (self.kind, self.op) not in kinds and (self.kind, None) not in kinds:
            raise TypeError(
                f"a {self.kind} event{f' of {self.op}' if self.op else ''} does not carry "
                f"{type(self.data).__name__}"
            )

    def to_json(self) -> dict[str, Any]:
        """The event as plain data."""
        return {
            "seq": self.seq, "t": self.t, "kind": self.kind, "worker": self.worker,
            "op": self.op, "execution_id": self.execution_id, "step_key": self.step_key,
            "token": self.token, "point": self.point, "text": self.text,
            "data": self.data.to_json(),
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TraceEvent:
        """The event from ``to_json``'s form; a ``ValueError`` says what does not fit."""
        if not isinstance(data, Mapping):
            raise ValueError(f"an event is a JSON object, not {type(data).__name__}")
        try:
            kind = TraceKind(str(data.get("kind")))
        except ValueError:
            kinds = ", ".join(TraceKind)
            raise ValueError(
                f"unknown trace event kind {data.get('kind')!r}; the kinds are {kinds}"
            ) from None
        envelope = {key: value for key, value in data.items() if key not in ("kind", "data")}
        payload = payload_from_json(kind, envelope.get("op"), data.get("data") or {})
        return cls(kind=kind, data=payload, **envelope)


#: Builds a TraceEvent without its ``__post_init__``, for ``Trace.add``, which makes the same
#: checks first (an event is built for most things a run does: ``core.frozen``).
_new_event = TraceEvent if TYPE_CHECKING else maker(TraceEvent, checked=True)


@dataclass(frozen=True, slots=True)
class Admission:
    """One admission of an execution, as the runtime's records show it.

    ``seq`` is the record's admission number: an ID pruned and admitted again is a second
    admission, while a replayed start that answers for the same record is not. ``how`` is
    ``trigger`` (by the scenario), ``client trigger`` (by a scenario's ``ys.Client``; ``by``
    is then the client and the request it was retrying), ``body trigger`` (a non-durable
    trigger from a step body), ``start``, ``child`` or ``spawn``; ``by`` is the (caller, step
    key) that asked for it.
    ``event`` is the sequence number of the trace event that first showed it, if any.
    """

    execution_id: str
    seq: int
    workflow_id: str
    how: str
    by: tuple[str, str] | None
    at: float
    event: int | None = None


class Trace:
    """An append-only list of events with helpers to read it."""

    def __init__(self, events: Sequence[TraceEvent] = ()) -> None:
        self.events: list[TraceEvent] = list(events)
        self._derived: dict[str, tuple[int, object]] = {}

    def derived(self, name: str, compute: Callable[[Trace], T]) -> T:
        """``compute(self)``, kept under ``name`` until an event is added: several invariants
        read the same summary of a trace, and each scan of it costs a whole pass.

        >>> trace = Trace()
        >>> trace.derived("n", len), trace.derived("n", lambda t: -1)
        (0, 0)
        """
        length = len(self.events)
        kept = self._derived.get(name)
        if kept is not None and kept[0] == length:
            return cast("T", kept[1])
        value = compute(self)
        self._derived[name] = (length, value)
        return value

    def add(
        self,
        t: float,
        kind: TraceKind,
        text: str,
        *,
        worker: str | None = None,
        op: str | None = None,
        execution_id: str | None = None,
        step_key: str | None = None,
        token: int | None = None,
        point: int | None = None,
        data: Payload = NO_DATA,
    ) -> TraceEvent:
        """Append an event and return it."""
        kinds = type(data).kinds
        if type(kind) is TraceKind and (not kinds or (kind, op) in kinds or (kind, None) in kinds):
            event = _new_event(
                len(self.events), t, kind, worker, op, execution_id, step_key, token, point, text,
                data,
            )  # fmt: skip
        else:  # TraceEvent converts a kind given as text, or refuses with its message
            event = TraceEvent(
                len(self.events), t, kind, worker, op, execution_id, step_key, token, point, text,
                data,
            )  # fmt: skip
        self.events.append(event)
        return event

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self.events)

    def of_kind(self, *kinds: TraceKind | str) -> list[TraceEvent]:
        """The events of the given kinds, in order."""
        return [event for event in self.events if event.kind in kinds]

    def to_jsonl(self) -> str:
        """One JSON object per line, keys sorted: the byte-identical form of the trace."""
        return "".join(
            json.dumps(event.to_json(), sort_keys=True, separators=(",", ":"), default=str) + "\n"
            for event in self.events
        )

    @classmethod
    def from_jsonl(cls, text: str) -> Trace:
        """A trace from ``to_jsonl``'s form (a ``-trace.jsonl`` file written beside a replay
        artifact, by this version or an earlier one); a ``ValueError`` names the line that
        does not fit."""
        events = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                events.append(TraceEvent.from_json(json.loads(line)))
            except (ValueError, TypeError, KeyError) as problem:
                raise ValueError(f"trace line {number}: {problem}") from None
        return cls(events)

    def lines(self) -> list[str]:
        """The trace as readable lines: ``t=  3.0  w1  call put_step order-42/ship: ok``."""
        return [
            f"t={event.t:>6.1f}  {event.worker or '-':<4} {event.kind:<8} {event.text}"
            for event in self.events
        ]
