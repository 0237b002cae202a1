"""The trace of a run: every choice, runtime call and result, fault, lease change, wake,
outcome and effect, in order. The same inputs give the same trace, byte for byte.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One thing that happened, at virtual time ``t``.

    ``kind`` is one of: ``trigger``, ``deploy``, ``call`` (a runtime call and its result),
    ``refused`` (a fenced write refused), ``error`` (a call that failed), ``fault``, ``crash``,
    ``restart``, ``freeze``, ``resume``, ``claim``, ``body`` (a step body ran), ``effect``,
    ``outcome``, ``ack``, ``reject`` (a delivery ended without an outcome), ``release``.
    ``point`` is the choice point the event belongs to, if any.
    """

    seq: int
    t: float
    kind: str
    worker: str | None = None
    op: str | None = None
    execution_id: str | None = None
    step_key: str | None = None
    token: int | None = None
    point: int | None = None
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The event as plain data (``data`` is shared, not copied)."""
        return {
            "seq": self.seq, "t": self.t, "kind": self.kind, "worker": self.worker,
            "op": self.op, "execution_id": self.execution_id, "step_key": self.step_key,
            "token": self.token, "point": self.point, "text": self.text, "data": self.data,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class Admission:
    """One admission of an execution, as the runtime's records show it.

    ``seq`` is the record's admission number: an ID pruned and admitted again is a second
    admission, while a replayed start that answers for the same record is not. ``how`` is
    ``trigger`` (by the scenario), ``body trigger`` (a non-durable trigger from a step body),
    ``start``, ``child`` or ``spawn``; ``by`` is the (caller, step key) that asked for it.
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

    def __init__(self) -> None:
        self.events: list[TraceEvent] = []

    def add(self, t: float, kind: str, text: str, **fields: Any) -> TraceEvent:
        """Append an event and return it."""
        event = TraceEvent(len(self.events), t, kind, text=text, **fields)
        self.events.append(event)
        return event

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Any:
        return iter(self.events)

    def of_kind(self, *kinds: str) -> list[TraceEvent]:
        """The events of the given kinds, in order."""
        return [event for event in self.events if event.kind in kinds]

    def to_jsonl(self) -> str:
        """One JSON object per line, keys sorted: the byte-identical form of the trace."""
        return "".join(
            json.dumps(event.to_json(), sort_keys=True, separators=(",", ":"), default=str) + "\n"
            for event in self.events
        )

    def lines(self) -> list[str]:
        """The trace as readable lines: ``t=  3.0  w1  call put_step order-42/ship: ok``."""
        return [
            f"t={event.t:>6.1f}  {event.worker or '-':<4} {event.kind:<8} {event.text}"
            for event in self.events
        ]
