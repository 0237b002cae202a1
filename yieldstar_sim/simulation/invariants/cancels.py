"""The invariant of a cancellation request: one that finds its execution live ends it
cancelled (RFC 009), unless the scenario expects that execution to end otherwise."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.invariants.evidence import listed
from yieldstar_sim.simulation.invariants.protocol import Violation
from yieldstar_sim.simulation.trace_payloads import (
    CancelData,
    ClaimData,
    ClientAnswerData,
    PutStepData,
    StatusData,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.simulation.invariants.protocol import RunView
    from yieldstar_sim.simulation.scenario import Expect
    from yieldstar_sim.simulation.trace import TraceEvent

_TERMINAL = frozenset({"completed", "failed", "cancelled", "dead-lettered", "continued-as-new"})


@dataclass(slots=True)
class _Request:
    """The first cancellation request that found an execution live, and what followed it."""

    event: TraceEvent
    reached: tuple[str, ...]
    claimed_again: TraceEvent | None = None
    thrown_at: str | None = None


def _requests(run: RunView) -> dict[str, _Request]:
    """For each execution, the first request to cancel it made while it was not terminal (a
    scenario's ``ys.Cancel``, a client's, a worker's for a max duration), with the first claim
    of it after the request and the step the cancellation was thrown at."""
    # Read on from the run's restore point (``Trace.fold``): a search's run shares the
    # events before it with the run before.
    return run.trace.fold("cancel requests", _Requests).found


@dataclass(slots=True)
class _Requests:
    """``_requests`` of the events read so far, and the executions seen ended."""

    ended: set[str] = field(default_factory=set)
    found: dict[str, _Request] = field(default_factory=dict)

    def copy(self) -> _Requests:
        """A reader that stands where this one stands (``Trace.fold`` keeps one): its
        requests are its own, since reading on fills them in."""
        return _Requests(
            set(self.ended),
            {target: replace(request) for target, request in self.found.items()},
        )

    def read(self, events: Sequence[TraceEvent]) -> None:
        """Take ``events``, the next ones in order."""
        ended, found = self.ended, self.found
        for event in events:
            data, target = event.data, event.execution_id
            kind = type(data)  # exact types: this runs over every event
            if target is None:
                continue
            if kind is StatusData:
                if event.op == Op.ACKNOWLEDGE and data.status in _TERMINAL:  # type: ignore[attr-defined]
                    ended.add(target)
            elif kind is CancelData or (
                kind is ClientAnswerData
                and data.action == Op.CANCEL  # type: ignore[attr-defined]
                and data.answer == "cancel requested"  # type: ignore[attr-defined]
            ):
                if target not in ended and target not in found:
                    found[target] = _Request(event, data.cancelled)  # type: ignore[attr-defined]
            elif target in found:
                request = found[target]
                if kind is ClaimData and request.claimed_again is None:
                    request.claimed_again = event
                elif (
                    kind is PutStepData
                    and isinstance(data.value, dict)  # type: ignore[attr-defined]
                    and data.value.get("cancelled")  # type: ignore[attr-defined]
                    and request.thrown_at is None
                ):
                    request.thrown_at = event.step_key


class CancelledLiveExecutionsEndCancelled:
    """A cancellation requested while its execution is live ends it cancelled once the
    execution is next delivered, unless the scenario expects that execution to end otherwise
    (``ys.expect(..., status="completed")``)."""

    name = "a cancelled live execution ends cancelled"
    final_only = True  # about how executions end

    def __init__(self, expected: Sequence[Expect] = ()) -> None:
        self.expected = tuple(expected)

    def check(self, run: RunView) -> list[Violation]:
        """Each execution whose cancellation found it live, delivered again, and not ended
        cancelled."""
        requests = _requests(run)
        violations = []
        for record in run.executions:
            request = requests.get(record.execution_id)
            status = str(record.status)
            if request is None or not record.terminal or status == "cancelled":
                continue
            if request.claimed_again is None:
                continue  # its delivery in flight finished first: the request came too late
            if any(
                e.names(record.execution_id, record.workflow_id) and e.status == status
                for e in self.expected
            ):
                continue
            asked = request.event
            who = f"{record.execution_id} ({record.workflow_id})"
            if request.thrown_at is not None:
                why = (
                    f"the cancellation was thrown into its workflow code at step "
                    f"{request.thrown_at!r}, which caught it and went on (catch ys.StepError, "
                    "not Exception, or re-raise ys.WorkflowCancelledError)"
                )
            elif record.execution_id not in request.reached:
                every = f"the trace's cancel at t={asked.t:g} lists all"
                reached = listed(request.reached, ", ", where=every) or "nothing live"
                why = (
                    f"the runtime answered that the request reached {reached}, so the "
                    f"delivery claimed at t={request.claimed_again.t:g} never saw it"
                )
            else:
                why = f"the delivery claimed at t={request.claimed_again.t:g} did not throw it"
            violations.append(
                Violation(
                    self.name,
                    f"{who} was live when its cancellation was requested at t={asked.t:g}, "
                    f"but it ended {status}: {why}",
                    {"execution": record.execution_id, "event": asked.seq},
                )
            )
        return violations
