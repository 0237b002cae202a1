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

from dataclasses import dataclass
from typing import TYPE_CHECKING

from yieldstar_sim.core.codec import EncodedValue, durable_value_codec
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
    from yieldstar_sim.simulation.invariants.protocol import RunView
    from yieldstar_sim.simulation.trace import TraceEvent

#: The step statuses that end a step: written once, replayed ever after.
_FINAL_STEPS = frozenset({"completed", "failed"})
_TERMINAL = frozenset(str(status) for status in TERMINAL_STATUSES)


@dataclass(frozen=True, slots=True)
class _First:
    """A record's first final value (comparable, and in words) and the event that wrote it."""

    value: tuple[object, ...]
    words: str
    event: TraceEvent | None


def _fingerprint(value: object, digest: str | None) -> object:
    """A step value as it can be compared: its digest when the trace kept only that, else its
    canonical JSON."""
    if digest is not None:
        return ("digest", digest)
    encoded = durable_value_codec.encode(value)
    return encoded.canonical if isinstance(encoded, EncodedValue) else repr(value)


def _step_value(status: str, value: object) -> tuple[tuple[object, ...], str]:
    """A step record's value as ``_First.value`` and in words, from the record itself."""
    kept, digest, _ = traced(value)
    return (status, _fingerprint(kept, digest)), f"{status} with {summary(value)}"


def _written(event: TraceEvent, data: PutStepData) -> tuple[tuple[object, ...], str]:
    """What a ``put_step`` call wrote, as ``_First.value`` and in words."""
    value = (data.status, _fingerprint(data.value, data.value_digest))
    return value, f"{data.status} with {data.value_summary()}"


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
        steps: dict[tuple[str, str], _First] = {}
        outcomes: dict[str, _First] = {}
        targets: dict[tuple[str, str], _First] = {}
        said: dict[tuple[str | None, str | None, int | None], OutcomeData] = {}
        violations: list[Violation] = []
        changed: set[tuple[str, ...]] = set()

        def rewritten(what: str, first: _First, now: str, event: TraceEvent | None) -> None:
            was = f" {seen_at(first.event)}" if first.event is not None else ""
            how = (
                f"{_by(event)} rewrote it to {now}"
                if event is not None
                else f"the runtime's record now says {now}, and no call of the run wrote that"
            )
            violations.append(
                Violation(
                    self.name,
                    f"{what} was recorded {first.words}{was}; {how}: a recorded value is what "
                    f"every later delivery replays, so it is written once; {RUNTIME_FIX}",
                    {"record": what},
                )
            )

        for event in run.trace:
            data, op = event.data, event.op
            if isinstance(data, PruneData) and data.refused is None:
                # A pruned execution's records are gone, and its ID may be admitted anew.
                pruned = event.execution_id
                for table in (steps, targets):
                    for key in [key for key in table if key[0] == pruned]:
                        del table[key]
                outcomes.pop(pruned or "", None)
                continue
            if isinstance(data, OutcomeData):
                said[(event.worker, event.execution_id, event.token)] = data
                continue
            if event.kind != TraceKind.CALL or event.execution_id is None:
                continue
            if op == Op.PUT_STEP and isinstance(data, PutStepData) and event.step_key:
                key = (event.execution_id, event.step_key)
                value, words = _written(event, data)
                first = steps.get(key)
                if first is None:
                    if data.status in _FINAL_STEPS:
                        steps[key] = _First(value, words, event)
                elif value != first.value and ("step", *key) not in changed:
                    changed.add(("step", *key))
                    rewritten(f"step {key[1]} of {key[0]}", first, words, event)
            elif op == Op.ACKNOWLEDGE and isinstance(data, StatusData):
                if data.status not in _TERMINAL:
                    continue
                outcome = said.get((event.worker, event.execution_id, event.token))
                result = None if outcome is None else (outcome.result or outcome.error)
                words = data.status + (f" with {result}" if result else "")
                held = outcomes.get(event.execution_id)
                if held is None:
                    outcomes[event.execution_id] = _First((data.status, result), words, event)
                elif data.status != held.value[0] and (
                    "outcome", event.execution_id,
                ) not in changed:  # fmt: skip
                    changed.add(("outcome", event.execution_id))
                    rewritten(f"the outcome of {event.execution_id}", held, words, event)
            elif (
                op == Op.START and isinstance(data, StartData) and data.accepted and event.step_key
            ):
                key = (event.execution_id, event.step_key)
                if key not in targets:
                    targets[key] = _First((data.accepted,), data.accepted, event)

        for what, first, now in _final(run, steps, outcomes, targets, changed):
            rewritten(what, first, now, None)
        return violations


def _final(
    run: RunView,
    steps: dict[tuple[str, str], _First],
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
            first = steps.get(key)
            if first is None or ("step", *key) in changed:
                continue
            value, words = _step_value(str(record.status), record.value)
            if value != first.value:
                found.append((f"step {key[1]} of {key[0]}", first, words))
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
        first = targets.get(key)
        if first is not None and (request.target_execution_id,) != first.value:
            what = f"the target of start request ({key[0]}, {key[1]})"
            found.append((what, first, request.target_execution_id))
    return found
