"""The invariants of ownership: owned targets follow their owner (no orphan after a
cancel or an end), owned children end with their owner, joined runs keep theirs."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.invariants.evidence import RUNTIME_FIX, admission_events, seen_at
from yieldstar_sim.simulation.invariants.protocol import Violation
from yieldstar_sim.simulation.trace_payloads import CancelData, FaultData, StatusData, TraceKind

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.core.model import ExecutionRecord
    from yieldstar_sim.simulation.invariants.protocol import RunView
    from yieldstar_sim.simulation.trace import TraceEvent


def _owned(run: RunView) -> dict[str, list[str]]:
    """Owner -> the executions it owns: started or created by it without ``detached``."""
    owned: dict[str, list[str]] = defaultdict(list)
    for record in run.executions:
        if record.parent is not None and not record.parent.detached and record.origin != "trigger":
            owned[record.parent.execution_id].append(record.execution_id)
    return owned


_ENDED = {
    "completed": "had completed",
    "failed": "had failed",
    "cancelled": "had been cancelled",
    "dead-lettered": "had been dead-lettered",
    "continued-as-new": "had continued as new",
}


def _ended_and_cancel_events(
    run: RunView,
) -> tuple[dict[str, TraceEvent], dict[str, TraceEvent]]:
    """For each execution that reached a terminal outcome, the acknowledgement that recorded
    it; for each whose cancellation was requested, the event that first reached it (the
    scenario's cancel, or a worker's for a max duration), however far down it was owned."""
    # Read on from the run's restore point (``Trace.fold``): a search's run shares the
    # events before it with the run before.
    reader = run.trace.fold("ends and cancels", _EndsAndCancels)
    return reader.ended, reader.requested


@dataclass(slots=True)
class _EndsAndCancels:
    """``_ended_and_cancel_events`` of the events read so far."""

    ended: dict[str, TraceEvent] = field(default_factory=dict)
    requested: dict[str, TraceEvent] = field(default_factory=dict)

    def copy(self) -> _EndsAndCancels:
        """A reader that stands where this one stands (``Trace.fold`` keeps one)."""
        return _EndsAndCancels(dict(self.ended), dict(self.requested))

    def read(self, events: Sequence[TraceEvent]) -> None:
        """Take ``events``, the next ones in order."""
        ended, requested = self.ended, self.requested
        for event in events:
            data = event.data
            kind = type(data)  # exact types: this runs over every event
            if kind is StatusData:
                if (
                    event.op == Op.ACKNOWLEDGE
                    and event.execution_id is not None
                    and data.status in _ENDED  # type: ignore[attr-defined]
                ):
                    ended.setdefault(event.execution_id, event)
            elif kind is CancelData:
                for execution_id in data.cancelled:  # type: ignore[attr-defined]
                    requested.setdefault(execution_id, event)


def _ended_words(ended: TraceEvent) -> str:
    """How an acknowledgement from ``_ended_and_cancel_events`` ended its execution, in words."""
    status = ended.data.status if isinstance(ended.data, StatusData) else "?"
    return _ENDED.get(status, f"ended {status}")


def _stale_admission(run: RunView, admission: TraceEvent) -> str:
    """How a delivery came to admit a target for an owner that had already ended."""
    before = [
        e
        for e in run.trace
        if e.seq < admission.seq and e.kind == TraceKind.FAULT and e.worker == admission.worker
    ]
    if before and isinstance(before[-1].data, FaultData) and before[-1].data.kind == "freeze":
        return (
            f"{admission.worker} froze before {admission.op} and woke after its lease "
            f"(token {admission.token}) had expired"
        )
    return f"the delivery of {admission.worker} (token {admission.token}) was stale"


def _fate(record: ExecutionRecord) -> str:
    if record.terminal and record.finished_at is not None:
        return f"it {record.status} at t={record.finished_at:g}"
    return f"it is still {record.status}"


class OwnedTargetsFollowTheirOwner:
    """An owned target follows its owner (RFC 009, the guide's Child): it is never admitted
    for an owner that already ended, and its cancellation is requested with its owner's (also
    when it is admitted after that request). That a cancelled owner's targets end is
    ``OwnedChildrenEndWithTheirOwner``'s business."""

    name = "owned targets follow their owner"
    final_only = False  # a safety property: a cut run can break it too

    def check(self, run: RunView) -> list[Violation]:
        """Compare each owned target's admission, cancellation and end with its owner's."""
        owned = _owned(run)
        if not owned:
            return []  # most runs own nothing: no need to index the trace three times
        records = {r.execution_id: r for r in run.executions}
        admitted = admission_events(run)
        ended, cancels = _ended_and_cancel_events(run)
        violations: list[Violation] = []
        for owner_id, targets in sorted(owned.items()):
            owner = records.get(owner_id)
            if owner is None:
                continue  # pruned: nothing is left to follow
            for target_id in targets:
                target = records[target_id]
                if target.created_at < owner.created_at:
                    continue  # owned by an earlier incarnation of this ID, since pruned
                violation = self._unfollowed(
                    target,
                    owner,
                    admission=admitted.get(target_id),
                    ended=ended,
                    cancel=cancels.get(owner_id),
                    run=run,
                )
                if violation is not None:
                    violations.append(violation)
        return violations

    def _unfollowed(
        self,
        target: ExecutionRecord,
        owner: ExecutionRecord,
        *,
        admission: TraceEvent | None,
        ended: dict[str, TraceEvent],
        cancel: TraceEvent | None,
        run: RunView,
    ) -> Violation | None:
        who = f"{target.execution_id} ({target.workflow_id})"
        owner_end = ended.get(owner.execution_id)
        data = {"target": target.execution_id, "owner": owner.execution_id}
        if admission is not None and owner_end is not None and admission.seq > owner_end.seq:
            return Violation(
                self.name,
                f"{who} was admitted {seen_at(admission)} for owner {owner.execution_id}, which "
                f"{_ended_words(owner_end)} at t={owner_end.t:g} "
                f"({_stale_admission(run, admission)}): nobody will cancel it, and "
                f"{_fate(target)}; a runtime refuses a new start from an owner that ended "
                f"{_GUARD}",
                data,
            )
        if cancel is None or target.cancel_requested:
            return None
        target_end = ended.get(target.execution_id)
        if target_end is not None and target_end.seq < cancel.seq:
            return None  # it had ended before its owner's cancellation was requested
        if admission is not None and admission.seq > cancel.seq:
            how = (
                f"was admitted {seen_at(admission)} for owner {owner.execution_id}, whose "
                f"cancellation had been requested at t={cancel.t:g}"
            )
            fix = f"a runtime requests it with the new start from such an owner {_GUARD}"
        else:
            how = (
                f"was live when the cancellation of its owner {owner.execution_id} was "
                f"requested at t={cancel.t:g}"
            )
            fix = f"a cancellation reaches what its execution owns (RFC 009): {RUNTIME_FIX}"
        return Violation(
            self.name, f"{who} {how}, but its own was never requested: {_fate(target)}; {fix}", data
        )


#: The runtime option that makes an owned target follow an owner that ended or is cancelling.
_GUARD = "(its orphan guard: Scenario(runtime_options={'orphan_guard': True}), the default)"


class OwnedChildrenEndWithTheirOwner:
    """An owned child never outlives an owner that was cancelled (RFC 009, the guide's Child)."""

    name = "owned children never outlive a cancelled owner"
    final_only = True  # about how a run ends

    def check(self, run: RunView) -> list[Violation]:
        """Every live descendant of a cancelled execution, through owned links, is a violation."""
        records = {r.execution_id: r for r in run.executions}
        owned = _owned(run)
        violations = []
        for owner in (r for r in run.executions if str(r.status) == "cancelled"):
            frontier = list(owned.get(owner.execution_id, []))
            while frontier:
                child = records.get(frontier.pop())
                if child is None:
                    continue
                frontier.extend(owned.get(child.execution_id, []))
                if not child.terminal:
                    violations.append(
                        Violation(
                            self.name,
                            f"{child.execution_id} ({child.workflow_id}) is still "
                            f"{child.status} although its owner {owner.execution_id} was "
                            f"cancelled; a cancellation reaches what its execution owns "
                            f"(RFC 009): {RUNTIME_FIX}",
                        )
                    )
        return violations


class JoinedRunsKeepTheirOwner:
    """Joining a run by its business ID never takes ownership (the guide's Child)."""

    name = "joined runs keep their original owner"
    final_only = False  # a safety property: a cut run can break it too

    def check(self, run: RunView) -> list[Violation]:
        """A joined run's parent link must still name its creator, not the joiner."""
        records = {r.execution_id: r for r in run.executions}
        violations = []
        for joiner, steps in run.steps.items():
            for step in steps:
                value = step.value
                if not isinstance(value, dict) or value.get("joined") is not True:
                    continue
                joined = records.get(str(value.get("executionId")))
                if joined is None or joined.parent is None:
                    continue
                if (joined.parent.execution_id, joined.parent.step_key) == (joiner, step.step_key):
                    violations.append(
                        Violation(
                            self.name,
                            f"{joiner} joined {joined.execution_id} at step {step.step_key} and "
                            f"became its owner; joining by business ID never takes ownership: "
                            f"{RUNTIME_FIX}",
                        )
                    )
        return violations
