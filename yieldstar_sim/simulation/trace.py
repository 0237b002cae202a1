"""The trace of a run: every choice, runtime call and result, fault, lease change, wake,
outcome and effect, in order. The same inputs give the same trace, byte for byte.

An event's ``kind`` is a `TraceKind` (each member says what emits it), its ``op`` an `Op` (the
runtime call it is about, if any) and its ``data`` a small frozen dataclass per kind
(``EffectData``, ``ClaimData`` ...). The kinds and the payloads are owned by
`yieldstar_sim.simulation.trace_payloads` and imported from there, ``Op`` by
`yieldstar_sim.core.ops`; this module owns the event and the trace. Code reads those; an
event's ``text`` is written for people, once, by ``simulation/narration.py``, and only
narration and the trace's own serialisation read it (``tests/unit/test_trace_text.py``). The
JSON form (``to_jsonl``) is the one the trace had when ``data`` was a dict, key for key;
``Trace.from_jsonl`` reads it back into the typed payloads.

Adding a kind of event takes two things in ``trace_payloads``: a member of `TraceKind`, and, if
the event carries data, a frozen dataclass deriving from `Payload`, registered with
``@payload(kind)`` (``@payload(TraceKind.CALL, op=Op.CLAIM)`` for a runtime call's result).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from yieldstar_sim.core.frozen import maker
from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.trace_payload_base import NO_DATA, Payload, payload_from_json
from yieldstar_sim.simulation.trace_payloads import (
    TraceKind,
)

__all__ = ["Admission", "Trace", "TraceEvent"]

T = TypeVar("T")
F = TypeVar("F", bound="Fold")


class Fold(Protocol):
    """What ``Trace.fold`` keeps: a reader of events, in order, that can be copied."""

    def read(self, events: Sequence[TraceEvent]) -> None:
        """Take ``events``, the next ones after those read so far."""
        ...

    def copy(self: F) -> F:
        """A reader that stands where this one stands, and goes on apart from it."""
        ...


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
    op: Op | None = None
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
        if self.op is not None and type(self.op) is not Op:
            object.__setattr__(self, "op", _op(self.op))
        kinds = type(self.data).kinds
        if kinds and (self.kind, self.op) not in kinds and (self.kind, None) not in kinds:
            raise TypeError(
                f"a {self.kind} event{f' of {self.op}' if self.op else ''} does not carry "
                f"{type(self.data).__name__}"
            )

    def facts(self) -> tuple[object, ...]:
        """What happened, without the event's place in the trace and its words: two runs did
        the same thing here when their events' facts are equal (the text is written from
        them, for people)."""
        return (
            self.t, self.kind, self.worker, self.op, self.execution_id, self.step_key,
            self.token, self.data,
        )  # fmt: skip

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
        op = envelope.get("op")
        if op is not None:
            envelope["op"] = op = _op(str(op))
        payload = payload_from_json(kind, op, data.get("data") or {})
        return cls(kind=kind, data=payload, **envelope)


#: The ops by value: a lookup here costs a tenth of ``Op(value)``, and most events pass one.
_OPS: dict[str, Op] = {op.value: op for op in Op}


def _op(value: str) -> Op:
    """``value`` as an `Op`; a ``ValueError`` names the ops when it is none of them."""
    op = _OPS.get(value)
    if op is None:
        raise ValueError(f"unknown op {value!r}; the ops are {', '.join(Op)}")
    return op


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
        self._folds: dict[str, tuple[int, TraceEvent | None, Fold]] = {}
        self._kept: dict[str, int] = {}
        """For each fold's name, how many events stayed untouched since its last ``fold``
        (the shortest the trace was cut to since): where a search's run restored from, which
        its next run shares. One count a name: several readers fold one trace, and a fold
        that counted another's would read on past a restore point the next run does not
        share, and start again from the first event."""

    def parts_from(self, other: Trace) -> int | None:
        """The number of the first event where this run did something other than ``other``
        (their ``facts()`` differ, or one trace ends where the other goes on); None when
        the two did the same thing, event for event, whatever their words."""
        for number, (mine, theirs) in enumerate(zip(self.events, other.events, strict=False)):
            if mine.facts() != theirs.facts():
                return number
        if len(self.events) == len(other.events):
            return None
        return min(len(self.events), len(other.events))

    def truncate(self, length: int) -> None:
        """Forget every event from ``length`` on: a run restored to a state it saved then."""
        del self.events[length:]
        self._derived.clear()
        kept = self._kept
        for name, untouched in kept.items():
            if untouched > length:
                kept[name] = length

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

    def fold(self, name: str, make: Callable[[], F]) -> F:
        """A reader ``make()`` made that has read every event so far, in order: a copy, the
        caller's to read on or keep. What the events up to the last cut (``truncate``: a
        restore) made of a reader is kept under ``name`` and read on from, so that a search,
        whose runs go on from restored states, reads each run's events past its restore
        point, not its whole trace (docs/decisions.md, "The search rebuilt around one
        Execution"). The kept reader counts only while the event it stopped after is still
        in its place: a trace cut before it and grown again has other events there."""
        events = self.events
        kept = self._folds.get(name)
        if (
            kept is None
            or kept[0] > len(events)
            or (kept[0] and events[kept[0] - 1] is not kept[1])
        ):
            kept = (0, None, make())
        at, _, reader = kept
        cut = max(min(self._kept.get(name, 0), len(events)), at)
        if cut > at:
            reader.read(events[at:cut])
            kept = (cut, events[cut - 1], reader)
        self._folds[name] = kept
        self._kept[name] = len(events)
        mine = cast("F", reader.copy())  # kept under ``name``: made by the same ``make``
        mine.read(events[cut:])
        return mine

    def add(
        self,
        t: float,
        kind: TraceKind,
        text: str,
        *,
        worker: str | None = None,
        op: Op | None = None,
        execution_id: str | None = None,
        step_key: str | None = None,
        token: int | None = None,
        point: int | None = None,
        data: Payload = NO_DATA,
    ) -> TraceEvent:
        """Append an event and return it."""
        if op is not None and type(op) is not Op:
            # The package's writers pass an Op; code of your own may pass its string, and the
            # event keeps the member all the same.
            found = _OPS.get(op)
            op = _op(op) if found is None else found
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
