"""The invariant of a step's attempts: two attempts of one step never run at the same time,
unless the scenario declares the step safe to overlap (``Scenario(overlap_safe=[...])``).

An attempt runs from when its body starts to when its last work ends: its last elapse waited
out or its last effect landed, the heartbeat that stopped it, or, for an attempt its worker
gave up on at its timeout, the end of what it did after. Each is read from the attempt's
``body`` event (``BodyData``: ``started`` and ``ended`` where the event's time and the work do
not tell them). A worker that crashes mid-body leaves no such event: its attempt ends at the
crash, before any retry of it can start, so only an earlier attempt still running can overlap
it, and that one overlaps the retry too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from yieldstar_sim.core.ops import Op
from yieldstar_sim.core.suggest import misspelt
from yieldstar_sim.simulation.invariants.protocol import Violation
from yieldstar_sim.simulation.trace_payloads import BodyData, FaultData, StallData, TraceKind

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.simulation.invariants.protocol import RunView
    from yieldstar_sim.simulation.trace import TraceEvent


@dataclass(frozen=True, slots=True)
class AttemptSpan:
    """One attempt of a step and when it ran."""

    execution_id: str
    step_key: str
    worker: str
    token: int | None
    attempt: int
    start: float
    end: float
    event: TraceEvent

    def words(self) -> str:
        """``w2's attempt 1 (token 1, t=0 to t=60)``."""
        token = "" if self.token is None else f"token {self.token}, "
        return f"{self.worker}'s attempt {self.attempt} ({token}t={self.start:g} to t={self.end:g})"


def attempt_spans(events: Sequence[TraceEvent]) -> list[AttemptSpan]:
    """Every attempt of a step body the trace shows ended (its ``body`` event), with when it
    started and when its last work ended."""
    spans = []
    for event in events:
        data = event.data
        if type(data) is not BodyData or event.execution_id is None or event.step_key is None:
            continue
        start = data.started if data.started is not None else event.t - data.elapsed
        end = data.ended if data.ended is not None else event.t
        spans.append(
            AttemptSpan(
                event.execution_id, event.step_key, event.worker or "?", event.token,
                data.attempt, start, end, event,
            )
        )  # fmt: skip
    return spans


@dataclass(slots=True)
class _Bodies:
    """The ``body`` events of each step (by execution and step key), in order, as the events
    read so far show."""

    by_step: dict[tuple[str, str], tuple[TraceEvent, ...]] = field(default_factory=dict)

    def copy(self) -> _Bodies:
        """A reader that stands where this one stands (``Trace.fold`` keeps one): its steps'
        events are tuples, so that the two share them."""
        return _Bodies(dict(self.by_step))

    def read(self, events: Sequence[TraceEvent]) -> None:
        """Take ``events``, the next ones in order."""
        by_step = self.by_step
        for event in events:
            if type(event.data) is not BodyData:
                continue
            execution_id, step_key = event.execution_id, event.step_key
            if execution_id is None or step_key is None:
                continue
            key = (execution_id, step_key)
            held = by_step.get(key)
            by_step[key] = (event,) if held is None else (*held, event)


class AttemptsNeverOverlap:
    """Two attempts of one step (one execution's step key) never run at the same time: one
    starts only after the other's last work ended. A step whose attempts may overlap (what it
    does is safe twice at once) is declared so: ``Scenario(overlap_safe=["charge"])``."""

    name = "attempts of one step never overlap"
    final_only = False  # a safety property: a cut run can break it too

    def __init__(self, overlap_safe: Sequence[str] = ()) -> None:
        self.overlap_safe = frozenset(overlap_safe)

    def check(self, run: RunView) -> list[Violation]:
        """The first overlapping pair of attempts of each step, in the order the steps first
        ran."""
        # Most steps ran one attempt, which overlaps nothing: the body events are grouped by
        # step first, and spans made only of the steps that ran more than one (a long run's
        # spans were half of checking its invariants, made twice: here and in ``unwatched``).
        # Read on from the run's restore point (``Trace.fold``): a search's run shares the
        # events before it with the run before.
        by_step = run.trace.fold("attempt bodies", _Bodies).by_step
        safe = self.overlap_safe
        violations = []
        for (execution_id, step_key), events in by_step.items():
            if len(events) < 2 or step_key in safe:
                continue
            spans = attempt_spans(events)
            pair = _first_overlap(sorted(spans, key=lambda span: (span.start, span.event.seq)))
            if pair is None:
                continue
            first, second = pair
            violations.append(
                Violation(
                    self.name,
                    f"step {step_key} of {execution_id} ran two attempts at once: "
                    f"{first.words()} and {second.words()}; {_why(run, first)}. If the step "
                    "is safe to run twice at once (an effect the service deduplicates), "
                    f"declare it: Scenario(overlap_safe=[{step_key!r}])",
                    {"execution": execution_id, "step": step_key, "event": second.event.seq},
                )
            )
        return violations

    def misnamed(self, run: RunView) -> str | None:
        """A scenario mistake: a step declared overlap-safe that no attempt ran, whose key
        misspells one that ran."""
        if not self.overlap_safe:
            return None
        ran = _steps_ran(run)
        mistakes = [
            f"overlap_safe names step {key!r}, which no attempt ran; {meant!r} ran"
            for key in sorted(self.overlap_safe)
            if (meant := misspelt(key, ran)) is not None
        ]
        return "; ".join(mistakes) or None

    def unwatched(self, run: RunView) -> str | None:
        """A warning when a step declared overlap-safe never ran (one whose key is a slip of
        a step that ran is an error: ``misnamed``)."""
        if not self.overlap_safe:
            return None  # nothing declared, nothing to miss
        ran = _steps_ran(run)
        missing = sorted(self.overlap_safe - ran)
        if not missing:
            return None
        return (
            f"overlap_safe names step {', '.join(map(repr, missing))}, which no attempt ran "
            f"(the steps that ran: {', '.join(sorted(ran)) or 'none'})"
        )


def _steps_ran(run: RunView) -> set[str]:
    """The step keys some attempt ran."""
    return {span.step_key for span in attempt_spans(run.trace.events)}


def _first_overlap(spans: list[AttemptSpan]) -> tuple[AttemptSpan, AttemptSpan] | None:
    """The first attempt (by start) that starts before an earlier one's last work ended."""
    for index, later in enumerate(spans):
        for earlier in spans[:index]:
            if earlier.start < later.end and later.start < earlier.end:
                return earlier, later
    return None


def _why(run: RunView, attempt: AttemptSpan) -> str:
    """Why ``attempt`` was still running when the other started: what happened to it (a
    renewal that failed and was ignored, a stall, a freeze, a skew), from the trace."""
    for event in run.trace.events:
        if (
            event.execution_id != attempt.execution_id
            or event.step_key != attempt.step_key
            or event.token != attempt.token
            or not attempt.start <= event.t <= attempt.end
        ):
            continue
        data = event.data
        if event.kind == TraceKind.STALL and isinstance(data, StallData):
            if data.timed_out:
                return (
                    f"the earlier one hung at t={event.t:g} past its timeout, and its worker "
                    "retried while it hung on (a worker cannot stop a hung attempt)"
                )
            return (
                f"the earlier one hung at t={event.t:g} (a stall) while its lease lapsed, then "
                "worked on, unaware: no heartbeat can stop a hung attempt before it works again"
            )
        if event.kind == TraceKind.FAULT and isinstance(data, FaultData):
            if data.kind == "freeze":
                return f"its worker froze at t={event.t:g} past its lease, then worked on"
            if data.kind == "skew":
                return (
                    f"its worker's clock fell behind at t={event.t:g}, so it believed its lease "
                    "held and did not renew it"
                )
        if event.op == Op.RENEW and event.kind in (TraceKind.ERROR, TraceKind.REFUSED):
            what = "was refused" if event.kind == TraceKind.REFUSED else "failed"
            return (
                f"its renewal at t={event.t:g} {what} and its worker let it work on "
                "(Scenario(stop_after_failed_renewals=None); a worker that stops the attempt "
                "after a failed renewal ends it there)"
            )
    return "the earlier one outlived its lease"
