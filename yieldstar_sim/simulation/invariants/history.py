"""Recorded history never changes (issue 54, item 5): a completed (or finally failed) step's
record, an execution's terminal outcome and a start request's target, once written, are never
written again with another value.

Every replay rests on it: a delivery gets a step's recorded value back instead of running its
body, so a record that changes under it hands a later delivery another past than the one its
earlier deliveries acted on (Cadence, where a superseded delivery's write overwrote a completed
step). Only the runtime keeps this promise. The invariant reads the trace's calls (each write
that committed, with what it wrote) and the final records: the first value each record held,
the write that changed it, or, when no call of the trace shows one, the record as the run left
it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from yieldstar_sim.core.codec import EncodedValue, durable_value_codec
from yieldstar_sim.core.frozen import maker
from yieldstar_sim.core.model import TERMINAL_STATUSES
from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.invariants.evidence import RUNTIME_FIX, seen_at
from yieldstar_sim.simulation.invariants.protocol import Violation
from yieldstar_sim.simulation.trace_payloads import (
    OutcomeData,
    PruneData,
    PutStepData,
    StartData,
    StatusData,
    TraceKind,
)
from yieldstar_sim.simulation.trace_values import summary, traced

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from yieldstar_sim.simulation.invariants.protocol import RunView
    from yieldstar_sim.simulation.trace import TraceEvent

#: The step statuses that end a step: written once, replayed ever after.
_FINAL_STEPS = frozenset({"completed", "failed"})
_TERMINAL = frozenset(str(status) for status in TERMINAL_STATUSES)
#: The fix named where an attempt's own completion wrote the record, or rewrote it.
ATTEMPT_FIX = (
    "only the runtime keeps this promise: a runtime adapter of your own breaks it, and its "
    "attempt conformance cases name the rule (yieldstar_sim.testing.attempts."
    "check_attempt_adapter: a stale attempt's completion is refused)"
)
#: The calls that write a step: the worker's, and an attempt's own completion by its token.
_STEP_WRITES = frozenset({Op.PUT_STEP, Op.COMPLETE_ATTEMPT})
#: The payloads the invariant reads; every other event is passed over at a glance.
_WATCHED = frozenset({PruneData, OutcomeData, PutStepData, StatusData, StartData})


@dataclass(frozen=True, slots=True)
class _First:
    """A record's first final value (compared with ``_same``), the event that wrote it, and
    what it was in words (made only for a violation: ``summary`` of every step written cost a
    search a tenth of its time)."""

    value: tuple[object, ...]
    said: Callable[[tuple[object, ...]], str]
    event: TraceEvent | None

    @property
    def words(self) -> str:
        """The first value in words."""
        return self.said(self.value)


#: A run's every outcome and start target is noted as one (``core.frozen``).
_new_first = _First if TYPE_CHECKING else maker(_First)


def _fingerprint(value: object, digest: str | None) -> object:
    """A step value as it can be compared: its digest when the trace kept only that, else its
    canonical JSON."""
    if digest is not None:
        return ("digest", digest)
    encoded = durable_value_codec.encode(value)
    return encoded.canonical if isinstance(encoded, EncodedValue) else repr(value)


def _plain_equal(a: object, b: object) -> bool:
    """Whether two plain values have the same canonical JSON, told without encoding them: the
    same types (a list and a tuple are both an array), keys and items; False also when either
    is not plain data (then the fingerprints tell).

    A dict's scalar items are told in its own loop, spelled out: every step value of every run
    is compared here, and a call per item was most of the comparison."""
    kind = type(a)
    if kind is str or kind is int or kind is bool or a is None:
        return type(b) is kind and a == b
    if kind is float:
        return type(b) is float and a == b and str(a) == str(b)  # -0.0 is not 0.0 in JSON
    if kind is dict:
        if type(b) is not dict or a.keys() != b.keys():  # type: ignore[attr-defined]
            return False
        for key, item in a.items():  # type: ignore[attr-defined]
            other = b[key]
            scalar = type(item)
            if scalar is str or scalar is int or scalar is bool or item is None:
                if type(other) is not scalar or item != other:
                    return False
            elif not _plain_equal(item, other):
                return False
        return True
    if kind is list or kind is tuple:
        return (
            (type(b) is list or type(b) is tuple)
            and len(a) == len(b)  # type: ignore[arg-type]
            and all(map(_plain_equal, a, b))  # type: ignore[call-overload]
        )
    return False


def _same(first: tuple[object, ...], now: tuple[object, ...]) -> bool:
    """Whether two step values ``(status, value, digest, size)`` are one: the same status, and
    the same canonical JSON (or digest, for a value the trace kept only as one)."""
    if first[0] != now[0]:
        return False
    if now[2] is None and _plainly_same(first, now[0], now[1]):
        return True
    return _fingerprint(first[1], _digest(first[2])) == _fingerprint(now[1], _digest(now[2]))


def _plainly_same(first: tuple[object, ...], status: object, value: object) -> bool:
    """Whether a step value ``first`` is ``status`` and ``value`` at a glance: the trace kept
    it whole, and the two are one object or plainly equal (no digest made, nothing encoded)."""
    held = first[1]
    return first[0] == status and first[2] is None and (held is value or _plain_equal(held, value))


def _digest(held: object) -> str | None:
    return held if isinstance(held, str) else None


def _step_value(status: str, value: object) -> tuple[object, ...]:
    """A step record's value as ``_First.value``, from the record itself."""
    kept, digest, size = traced(value)
    return (status, kept, digest, size)


def _written(data: PutStepData) -> tuple[object, ...]:
    """What a ``put_step`` call wrote, as ``_First.value``."""
    return (data.status, data.value, data.value_digest, data.value_bytes)


def _first_step(event: TraceEvent) -> _First:
    """A step's first final value, from the ``put_step`` call that wrote it."""
    data = event.data
    assert type(data) is PutStepData
    return _First(_written(data), _step_words, event)


def _step_words(value: tuple[object, ...]) -> str:
    """A step value ``(status, value, digest, size)`` in words, as the trace gives it."""
    status, kept, digest, size = value
    if isinstance(digest, str):
        return f"{status} with <{size} bytes, {digest[:19]}>"
    return f"{status} with {summary(kept)}"


def _outcome_words(value: tuple[object, ...]) -> str:
    """An outcome ``(status, result)`` in words."""
    status, result = value
    return f"{status} with {result}" if result else str(status)


def _target_words(value: tuple[object, ...]) -> str:
    return str(value[0])


def _by(event: TraceEvent) -> str:
    token = f" under token {event.token}" if event.token is not None else ""
    return f"{event.worker}'s {event.op} at t={event.t:g}{token}"


class RecordedHistoryNeverChanges:
    """A completed (or finally failed) step's record, an execution's terminal outcome and a
    start request's target are written once and never rewritten: every replay rests on them.
    A violation names the record, its first value and the write that changed it. A safety
    property: checked on cut runs too."""

    name = "recorded history never changes"
    final_only = False

    def check(self, run: RunView) -> list[Violation]:
        """Follow each record's writes through the trace, then compare the final records."""
        # Read on from what the run's trace kept of its restore point (``Trace.fold``).
        reader = run.trace.fold("recorded history", _Reader)
        found = reader.found
        for what, first, now in _final(
            run, reader.steps, reader.outcomes, reader.targets, reader.changed
        ):
            found.append((what, first, now, None))
        return [self._violation(*one) for one in found]

    def _violation(self, what: str, first: _First, now: str, event: TraceEvent | None) -> Violation:
        was = f" {seen_at(first.event)}" if first.event is not None else ""
        how = (
            f"{_by(event)} rewrote it to {now}"
            if event is not None
            else f"the runtime's record now says {now}, and no call of the run wrote that"
        )
        by_token = any(
            seen is not None and seen.op == Op.COMPLETE_ATTEMPT for seen in (first.event, event)
        )
        return Violation(
            self.name,
            f"{what} was recorded {first.words}{was}; {how}: a recorded value is what "
            f"every later delivery replays, so it is written once; "
            f"{ATTEMPT_FIX if by_token else RUNTIME_FIX}",
            {"record": what},
        )


@dataclass
class _Reader:
    """The records' first values as the trace's calls wrote them, and each rewrite seen (the
    record, its first value, what it was rewritten to, the write)."""

    steps: dict[tuple[str, str], TraceEvent] = field(default_factory=dict)
    """The call that wrote each step's first final value (``_first_step`` reads it): a
    ``_First`` of every step written cost a search more than the rest of the check."""
    outcomes: dict[str, _First] = field(default_factory=dict)
    targets: dict[tuple[str, str], _First] = field(default_factory=dict)
    said: dict[tuple[str | None, str | None, int | None], OutcomeData] = field(default_factory=dict)
    changed: set[tuple[str, ...]] = field(default_factory=set)
    found: list[tuple[str, _First, str, TraceEvent | None]] = field(default_factory=list)

    def copy(self) -> _Reader:
        """A reader that stands where this one stands (``Trace.fold`` keeps one)."""
        return _Reader(
            dict(self.steps), dict(self.outcomes), dict(self.targets), dict(self.said),
            set(self.changed), list(self.found),
        )  # fmt: skip

    def read(self, events: Iterable[TraceEvent]) -> None:
        """Take ``events``, in order, passing over at a glance each whose payload is not
        ``_WATCHED`` (spelled out, dispatched on the payload's exact type: every event of every
        run passes here, and a payload is a ``Mapping``, whose ``isinstance`` answers "no" in
        Python)."""
        steps, said, targets = self.steps, self.said, self.targets
        for event in events:
            data = event.data
            if type(data) not in _WATCHED:
                continue
            if type(data) is PutStepData:  # most of them: first
                execution_id, step_key = event.execution_id, event.step_key
                if (
                    event.op in _STEP_WRITES
                    and event.kind == TraceKind.CALL
                    and execution_id
                    and step_key
                ):
                    key = (execution_id, step_key)
                    if key in steps:
                        self.rewritten(event, key, data)
                    elif data.status in _FINAL_STEPS:
                        steps[key] = event
            elif type(data) is OutcomeData:
                said[(event.worker, event.execution_id, event.token)] = data
            elif type(data) is PruneData:
                if data.refused is None:
                    self.prune(event.execution_id)
            elif event.kind != TraceKind.CALL or event.execution_id is None:
                continue
            elif type(data) is StatusData:
                self.acknowledged(event, data)
            elif (
                event.step_key
                and type(data) is StartData
                and event.op == Op.START
                and data.accepted
            ):
                key = (event.execution_id, event.step_key)
                if key not in targets:
                    targets[key] = _new_first((data.accepted,), _target_words, event)

    def prune(self, pruned: str | None) -> None:
        """A pruned execution's records are gone, and its ID may be admitted anew."""
        for table in (self.steps, self.targets):
            for key in [key for key in table if key[0] == pruned]:
                del table[key]
        self.outcomes.pop(pruned or "", None)

    def rewritten(self, event: TraceEvent, key: tuple[str, str], data: PutStepData) -> None:
        """A step written again, after its first final value: seen when it writes another."""
        first = _first_step(self.steps[key])
        value = _written(data)
        if not _same(first.value, value) and ("step", *key) not in self.changed:
            self.changed.add(("step", *key))
            told = _step_words(value)
            self.found.append((f"step {key[1]} of {key[0]}", first, told, event))

    def acknowledged(self, event: TraceEvent, data: StatusData) -> None:
        """An outcome acknowledged: its first terminal status kept, a later other one seen."""
        execution_id = event.execution_id
        if event.op != Op.ACKNOWLEDGE or execution_id is None or data.status not in _TERMINAL:
            return
        outcome = self.said.get((event.worker, execution_id, event.token))
        result = None if outcome is None else (outcome.result or outcome.error)
        held = self.outcomes.get(execution_id)
        if held is None:
            self.outcomes[execution_id] = _new_first((data.status, result), _outcome_words, event)
        elif data.status != held.value[0] and ("outcome", execution_id) not in self.changed:
            self.changed.add(("outcome", execution_id))
            told = _outcome_words((data.status, result))
            self.found.append((f"the outcome of {execution_id}", held, told, event))


def _final(
    run: RunView,
    steps: dict[tuple[str, str], TraceEvent],
    outcomes: dict[str, _First],
    targets: dict[tuple[str, str], _First],
    changed: set[tuple[str, ...]],
) -> list[tuple[str, _First, str]]:
    """The final records against the first values: each change no call of the trace shows (a
    runtime that rewrote a record inside another call, or on its own), as (the record, its
    first value, what it says now)."""
    found: list[tuple[str, _First, str]] = []
    for execution_id, records in run.steps.items():
        for record in records:
            key = (execution_id, record.step_key)
            written = steps.get(key)
            if written is None or (changed and ("step", *key) in changed):
                continue
            data = written.data
            assert type(data) is PutStepData
            # At a glance, spelled out (``_plainly_same``): every step of every run is here.
            held = data.value
            if (
                data.status == record.status
                and data.value_digest is None
                and (held is record.value or _plain_equal(held, record.value))
            ):
                continue
            first = _first_step(written)
            value = _step_value(str(record.status), record.value)
            if not _same(first.value, value):
                found.append((f"step {key[1]} of {key[0]}", first, _step_words(value)))
    for execution in run.executions:
        held = outcomes.get(execution.execution_id)
        if held is None or ("outcome", execution.execution_id) in changed:
            continue
        status, result = str(execution.status), held.value[1]
        now = result
        if status == "completed" and result is not None:
            now = summary(execution.result)
        elif status == "failed" and result is not None and execution.error is not None:
            now = f"{execution.error.name}: {execution.error.message}"
        if (status, now) != held.value:
            words = status + (f" with {now}" if now else "")
            found.append((f"the outcome of {execution.execution_id}", held, words))
    for request in run.start_requests:
        key = (request.request_id.execution_id, request.request_id.step_key)
        target = targets.get(key)
        if target is not None and (request.target_execution_id,) != target.value:
            what = f"the target of start request ({key[0]}, {key[1]})"
            found.append((what, target, request.target_execution_id))
    return found
