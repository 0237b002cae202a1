"""The invariants of start requests and leases: exactly one target per request, each with
its request record and parent link, one admission per step, accepted starts recorded once,
outcomes acknowledged under the current lease, no execution lost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.invariants.evidence import (
    RUNTIME_FIX,
    admission_events,
    repeated,
    seen_at,
    why_again,
)
from yieldstar_sim.simulation.invariants.protocol import Violation
from yieldstar_sim.simulation.trace_payloads import EffectData, TraceKind

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.simulation.invariants.protocol import RunView
    from yieldstar_sim.simulation.trace import TraceEvent


class OneTargetPerStartRequest:
    """Exactly one target per start request, and every start-request target recorded as such."""

    name = "one target per start request"
    final_only = False  # a safety property: a cut run can break it too

    def check(self, run: RunView) -> list[Violation]:
        """Group started executions by their parent link's request identity."""
        started = (
            ((record.parent.execution_id, record.parent.step_key), record.execution_id)
            for record in run.executions
            if record.origin == "start" and record.parent is not None
        )
        violations = []
        for (caller, key), targets in repeated(started):
            admitted = admission_events(run)  # only to say where: most runs hold
            violations.append(
                Violation(
                    self.name,
                    f"request ({caller}, {key}) admitted {len(targets)} targets: "
                    + ", ".join(
                        f"{t} {seen_at(admitted[t])}" if t in admitted else t for t in targets
                    )
                    + f"; a repeated start request gets its first target back: {RUNTIME_FIX}",
                    {"request": [caller, key], "targets": targets},
                )
            )
        return violations


class TargetsHaveRequestAndParent:
    """Every started target has its start-request record (while the caller is retained) and a
    parent link naming its caller."""

    name = "every target has its request record and parent link"
    final_only = False  # a safety property: a cut run can break it too

    def check(self, run: RunView) -> list[Violation]:
        """Compare started executions with the retained start-request records."""
        records = {r.execution_id: r for r in run.executions}
        requests = {r.target_execution_id: r for r in run.start_requests}
        violations = []
        for record in run.executions:
            if record.origin != "start":
                continue
            if record.parent is None:
                violations.append(
                    Violation(
                        self.name,
                        f"{record.execution_id} was started but has no parent link; {RUNTIME_FIX}",
                    )
                )
                continue
            caller_retained = record.parent.execution_id in records
            request = requests.get(record.execution_id)
            if caller_retained and request is None:
                violations.append(
                    Violation(
                        self.name,
                        f"{record.execution_id} was started by ({record.parent.execution_id}, "
                        f"{record.parent.step_key}) but no start-request record names it; "
                        f"{RUNTIME_FIX}",
                    )
                )
            elif request is not None and (
                request.request_id.execution_id,
                request.request_id.step_key,
            ) != (record.parent.execution_id, record.parent.step_key):
                violations.append(
                    Violation(
                        self.name,
                        f"{record.execution_id}'s parent link ({record.parent.execution_id}, "
                        f"{record.parent.step_key}) differs from its request "
                        f"({request.request_id.execution_id}, {request.request_id.step_key}); "
                        f"{RUNTIME_FIX}",
                    )
                )
        return violations


class OneAdmissionPerStep:
    """At most one admitted execution per (caller, step key), counting non-durable triggers made
    from step bodies by their provenance: the invariant RFC 003's Problem section breaks."""

    name = "at most one admitted execution per step"
    final_only = False  # a safety property: a cut run can break it too

    def check(self, run: RunView) -> list[Violation]:
        """Group admissions (starts and triggers from bodies) by the step that made them."""
        # Each target once: admission_events has one event per admitted execution.
        by_step = (
            ((event.execution_id, event.step_key), (target, event))
            for target, event in admission_events(run).items()
            if event.execution_id is not None and event.step_key is not None
        )
        violations = []
        for (caller, key), admitted in repeated(by_step):
            admitted.sort(key=lambda item: item[1].seq)
            (first, first_event), (second, second_event) = admitted[0], admitted[1]
            count = "two" if len(admitted) == 2 else str(len(admitted))
            violations.append(
                Violation(
                    self.name,
                    f"step ({caller}, {key}) admitted {count} executions, {first} "
                    f"{seen_at(first_event)} and {second} {seen_at(second_event)} "
                    f"{why_again(run, first_event, second_event)}"
                    f"{_admission_fix(key, [event for _, event in admitted])}",
                    {"step": [caller, key], "executions": [t for t, _ in admitted]},
                )
            )
        return violations


def _admission_fix(key: str, admitted: list[TraceEvent]) -> str:
    """What fixes one step that admitted several executions: a start made in a step body
    (``step.world.trigger``, RFC 003's Problem) is not durable; ``step.start`` is."""
    if any(isinstance(event.data, EffectData) for event in admitted):
        return (
            f": a trigger inside a step body starts a new execution each time the body runs "
            f"again; start it from the workflow code with step.start({key!r}, workflow, "
            "params), whose repeat gets the first target back (RFC 003's durable start)"
        )
    return f"; every start of one step gets its first target back: {RUNTIME_FIX}"


class AcceptedStartsRecordedOnce:
    """Every completed start step records the target its request admitted, and no two steps
    claim one target."""

    name = "every accepted start recorded once"
    final_only = False  # a safety property: a cut run can break it too

    def check(self, run: RunView) -> list[Violation]:
        """Compare start steps' recorded execution IDs with the start-request records."""
        requests = {
            (r.request_id.execution_id, r.request_id.step_key): r.target_execution_id
            for r in run.start_requests
        }
        claimed: dict[str, tuple[str, str]] = {}
        violations = []
        for (caller, key), target in requests.items():
            steps = {s.step_key: s for s in run.steps.get(caller, [])}
            step = steps.get(key)
            if step is None or step.status != "completed" or not isinstance(step.value, dict):
                continue
            recorded = step.value.get("executionId")
            if recorded != target:
                violations.append(
                    Violation(
                        self.name,
                        f"step ({caller}, {key}) recorded {recorded}, "
                        f"but its request admitted {target}; {RUNTIME_FIX}",
                    )
                )
            if recorded in claimed:
                violations.append(
                    Violation(
                        self.name,
                        f"{recorded} is recorded by both {claimed[str(recorded)]} "
                        f"and ({caller}, {key}); {RUNTIME_FIX}",
                    )
                )
            claimed[str(recorded)] = (caller, key)
        return violations


class AcknowledgedUnderCurrentLease:
    """Every acknowledgement that took effect was made under the execution's latest lease."""

    name = "outcomes acknowledged only under the current lease"
    final_only = False  # a safety property: a cut run can break it too

    def check(self, run: RunView) -> list[Violation]:
        """Follow claims and acknowledgements through the trace."""
        # Read on from the run's restore point (``Trace.fold``): a search's run shares the
        # events before it with the run before.
        return [
            Violation(
                self.name,
                f"{event.worker} acknowledged {event.execution_id} at t={event.t:g} with "
                f"token {event.token}, but the current lease has token {current}: "
                f"a fenced write checks the token (RFC 002); {RUNTIME_FIX}",
            )
            for event, current in run.trace.fold("leases", _Leases).stale
        ]


@dataclass(slots=True)
class _Leases:
    """Each execution's latest lease token, and each acknowledgement made under another
    (with the token current then), as the events read so far show."""

    latest: dict[str, int] = field(default_factory=dict)
    stale: list[tuple[TraceEvent, int | None]] = field(default_factory=list)

    def copy(self) -> _Leases:
        """A reader that stands where this one stands (``Trace.fold`` keeps one)."""
        return _Leases(dict(self.latest), list(self.stale))

    def read(self, events: Sequence[TraceEvent]) -> None:
        """Take ``events``, the next ones in order."""
        latest, stale = self.latest, self.stale
        call = TraceKind.CALL  # once: an enum member's lookup costs more than the comparison
        for event in events:
            if event.kind is not call or event.execution_id is None or event.token is None:
                continue
            if event.op == Op.CLAIM:
                latest[event.execution_id] = event.token
            elif event.op == Op.ACKNOWLEDGE:
                current = latest.get(event.execution_id)
                if current != event.token:
                    stale.append((event, current))


class NothingLost:
    """Every admitted execution reached an outcome or can still be delivered (a wake, a lease
    that will expire, or a live execution it waits for): none is stranded."""

    name = "no execution lost"
    final_only = True  # about how a run ends

    def check(self, run: RunView) -> list[Violation]:
        """Look for live executions with neither a wake, a lease, nor a live one to wait for."""
        live = {r.execution_id for r in run.executions if not r.terminal}
        return [
            Violation(
                self.name,
                f"{record.execution_id} ({record.workflow_id}) is {record.status} with no wake "
                "and no lease"
                + (f", waiting for {record.waiting_on}, which is over" if record.waiting_on else "")
                + f": nothing will ever deliver it again; {RUNTIME_FIX}",
            )
            for record in run.executions
            if not record.terminal
            and record.due_at is None
            and record.lease is None
            and record.waiting_on not in live
        ]
