"""Invariants checked after every run, each violation explained in a sentence.

Built in: exactly one target per start request; every target has its request record and parent
link; at most one admitted execution per (caller, step key), counting non-durable triggers by
their provenance; every accepted start recorded once and consistently; outcomes acknowledged
only under the current lease; no execution lost; owned targets follow their owner; joined runs
keep their owner. Users add ``at_most_once(effect, by=field)`` and plain callables over the
run.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from yieldstar_sim.engine.world import TRIGGERED, WORKFLOW_CODE

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from yieldstar_sim.core.model import ExecutionRecord
    from yieldstar_sim.engine.world import Effect
    from yieldstar_sim.simulation.run import SimulationRun
    from yieldstar_sim.simulation.scenario import Expect
    from yieldstar_sim.simulation.trace import TraceEvent


@dataclass(frozen=True, slots=True)
class Violation:
    """An invariant that did not hold: its name and a sentence saying what happened."""

    invariant: str
    message: str
    data: dict[str, Any] = field(default_factory=dict, compare=False)

    def __str__(self) -> str:
        return f"{self.invariant}: {self.message}"


class Invariant(Protocol):
    """Something that must hold after a run.

    Optional attributes: ``final_only`` (default True: checked only on runs that finished; a
    safety property that a cut run can break too says False) and ``unwatched(run)``, a warning
    when the invariant had nothing to watch in the run (or None).
    """

    @property
    def name(self) -> str:
        """The invariant's name, as violations report it."""
        ...

    def check(self, run: SimulationRun) -> list[Violation]:
        """The violations in ``run`` (empty when it holds)."""
        ...


@dataclass(frozen=True, slots=True)
class FunctionInvariant:
    """A plain callable over the run: returns None/True when it holds, else a message (or
    False, or a list of messages). It is checked on runs that finished (``final_only``): a
    callable may well count what a cut run has not done yet."""

    function: Callable[[SimulationRun], Any]
    name: str
    final_only: bool = True

    def check(self, run: SimulationRun) -> list[Violation]:
        """Call the function and turn what it says into violations."""
        said = self.function(run)
        if said is None or said is True:
            return []
        if said is False:
            return [Violation(self.name, f"{self.name} does not hold")]
        if isinstance(said, Violation):
            return [said]
        if isinstance(said, str):
            return [Violation(self.name, said)]
        return [v if isinstance(v, Violation) else Violation(self.name, str(v)) for v in said]


def as_invariant(item: Invariant | Callable[[SimulationRun], Any]) -> Invariant:
    """Accept an invariant object or a plain callable."""
    if hasattr(item, "check") and hasattr(item, "name"):
        return item
    if callable(item):
        return FunctionInvariant(item, getattr(item, "__name__", "user invariant"))
    raise TypeError(
        f"an invariant is an object with name and check(run), or a callable, not {item!r}"
    )


# --------------------------------------------------------------------------- helpers


def _admission_events(run: SimulationRun) -> dict[str, TraceEvent]:
    """For each execution admitted during the run, the trace event that admitted it."""
    admitted: dict[str, TraceEvent] = {}
    for event in run.trace:
        if event.kind == "call" and "accepted" in event.data:
            admitted.setdefault(str(event.data["accepted"]), event)
        elif event.kind == "effect" and event.data.get("name") == TRIGGERED:
            admitted.setdefault(str(event.data["data"]["execution_id"]), event)
    return admitted


def _why_again(run: SimulationRun, first: TraceEvent, second: TraceEvent) -> str:
    """What happened between two admissions for one step that made the step run again."""
    between = [e for e in run.trace if first.seq < e.seq < second.seq]
    redelivered = next(
        (
            e
            for e in between
            if e.kind == "call" and e.op == "claim" and e.execution_id == first.execution_id
        ),
        None,
    )
    again = (
        f", and {redelivered.worker} ran the step again at t={redelivered.t:g} "
        f"(token {redelivered.token})"
        if redelivered is not None
        else ""
    )
    for event in between:
        if event.kind == "fault" and event.worker == first.worker:
            what = event.data.get("kind")
            call = f"{event.op} of step {event.step_key}" if event.step_key else str(event.op)
            if what == "freeze":
                return f"after {first.worker} froze before {call} and its lease expired{again}"
            if what == "crash":
                return f"after {first.worker} crashed before {call}{again}"
            if what == "crash_after":
                return f"after {first.worker} crashed right after {call}{again}"
            if what == "child_exit":
                return f"after {first.worker}'s worker process exited before {call}{again}"
            if what == "lose_response":
                return f"after the response of {first.worker}'s {call} was lost{again}"
            if what == "infra_error":
                return f"after {first.worker}'s {call} failed{again}"
            return f"after a fault ({event.text}){again}"
    for event in between:
        if event.kind in ("reject", "refused", "crash"):
            return f"after {event.text}"
    return "on a replay"


def _where(event: TraceEvent) -> str:
    return f"at t={event.t:g} by {event.worker}"


# --------------------------------------------------------------------------- built-in invariants


class OneTargetPerStartRequest:
    """Exactly one target per start request, and every start-request target recorded as such."""

    name = "one target per start request"
    final_only = False  # a safety property: a cut run can break it too

    def check(self, run: SimulationRun) -> list[Violation]:
        """Group started executions by their parent link's request identity."""
        by_request: dict[tuple[str, str], list[str]] = defaultdict(list)
        for record in run.executions:
            if record.origin == "start" and record.parent is not None:
                by_request[(record.parent.execution_id, record.parent.step_key)].append(
                    record.execution_id
                )
        admitted = _admission_events(run)
        violations = []
        for (caller, key), targets in sorted(by_request.items()):
            if len(targets) > 1:
                violations.append(
                    Violation(
                        self.name,
                        f"request ({caller}, {key}) admitted {len(targets)} targets: "
                        + ", ".join(
                            f"{t} {_where(admitted[t])}" if t in admitted else t for t in targets
                        ),
                        {"request": [caller, key], "targets": targets},
                    )
                )
        return violations


class TargetsHaveRequestAndParent:
    """Every started target has its start-request record (while the caller is retained) and a
    parent link naming its caller."""

    name = "every target has its request record and parent link"
    final_only = False  # a safety property: a cut run can break it too

    def check(self, run: SimulationRun) -> list[Violation]:
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
                        self.name, f"{record.execution_id} was started but has no parent link"
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
                        f"{record.parent.step_key}) but no start-request record names it",
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
                        f"({request.request_id.execution_id}, {request.request_id.step_key})",
                    )
                )
        return violations


class OneAdmissionPerStep:
    """At most one admitted execution per (caller, step key), counting non-durable triggers made
    from step bodies by their provenance: the invariant RFC 003's Problem section breaks."""

    name = "at most one admitted execution per step"
    final_only = False  # a safety property: a cut run can break it too

    def check(self, run: SimulationRun) -> list[Violation]:
        """Group admissions (starts and triggers from bodies) by the step that made them."""
        by_step: dict[tuple[str, str], list[tuple[str, TraceEvent]]] = defaultdict(list)
        for target, event in _admission_events(run).items():
            if event.execution_id is not None and event.step_key is not None:
                entry = (target, event)
                if entry not in by_step[(event.execution_id, event.step_key)]:
                    by_step[(event.execution_id, event.step_key)].append(entry)
        violations = []
        for (caller, key), admitted in sorted(by_step.items()):
            if len(admitted) < 2:
                continue
            admitted.sort(key=lambda item: item[1].seq)
            (first, first_event), (second, second_event) = admitted[0], admitted[1]
            count = "two" if len(admitted) == 2 else str(len(admitted))
            violations.append(
                Violation(
                    self.name,
                    f"step ({caller}, {key}) admitted {count} executions, {first} "
                    f"{_where(first_event)} and {second} {_where(second_event)} "
                    f"{_why_again(run, first_event, second_event)}",
                    {"step": [caller, key], "executions": [t for t, _ in admitted]},
                )
            )
        return violations


class AcceptedStartsRecordedOnce:
    """Every completed start step records the target its request admitted, and no two steps
    claim one target."""

    name = "every accepted start recorded once"
    final_only = False  # a safety property: a cut run can break it too

    def check(self, run: SimulationRun) -> list[Violation]:
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
                        f"but its request admitted {target}",
                    )
                )
            if recorded in claimed:
                violations.append(
                    Violation(
                        self.name,
                        f"{recorded} is recorded by both {claimed[str(recorded)]} "
                        f"and ({caller}, {key})",
                    )
                )
            claimed[str(recorded)] = (caller, key)
        return violations


class AcknowledgedUnderCurrentLease:
    """Every acknowledgement that took effect was made under the execution's latest lease."""

    name = "outcomes acknowledged only under the current lease"
    final_only = False  # a safety property: a cut run can break it too

    def check(self, run: SimulationRun) -> list[Violation]:
        """Follow claims and acknowledgements through the trace."""
        latest: dict[str, int] = {}
        violations = []
        for event in run.trace:
            if event.kind != "call" or event.execution_id is None or event.token is None:
                continue
            if event.op == "claim":
                latest[event.execution_id] = event.token
            elif event.op == "acknowledge":
                current = latest.get(event.execution_id)
                if current != event.token:
                    violations.append(
                        Violation(
                            self.name,
                            f"{event.worker} acknowledged {event.execution_id} "
                            f"at t={event.t:g} with "
                            f"token {event.token}, but the current lease has token {current}",
                        )
                    )
        return violations


class NothingLost:
    """Every admitted execution reached an outcome or can still be delivered (a wake, a lease
    that will expire, or a live execution it waits for): none is stranded."""

    name = "no execution lost"
    final_only = True  # about how a run ends

    def check(self, run: SimulationRun) -> list[Violation]:
        """Look for live executions with neither a wake, a lease, nor a live one to wait for."""
        live = {r.execution_id for r in run.executions if not r.terminal}
        return [
            Violation(
                self.name,
                f"{record.execution_id} ({record.workflow_id}) is {record.status} with no wake "
                "and no lease"
                + (f", waiting for {record.waiting_on}, which is over" if record.waiting_on else "")
                + ": nothing will ever deliver it again",
            )
            for record in run.executions
            if not record.terminal
            and record.due_at is None
            and record.lease is None
            and record.waiting_on not in live
        ]


def _owned(run: SimulationRun) -> dict[str, list[str]]:
    """Owner -> the executions it owns: started or created by it without ``detached``."""
    owned: dict[str, list[str]] = defaultdict(list)
    for record in run.executions:
        if record.parent is not None and not record.parent.detached and record.origin != "trigger":
            owned[record.parent.execution_id].append(record.execution_id)
    return owned


_ENDED = {"completed": "had completed", "failed": "had failed", "cancelled": "had been cancelled"}


def _ended_events(run: SimulationRun) -> dict[str, TraceEvent]:
    """For each execution that reached a terminal outcome, the acknowledgement that recorded it."""
    ended: dict[str, TraceEvent] = {}
    for event in run.trace:
        if (
            event.kind == "call"
            and event.op == "acknowledge"
            and event.execution_id is not None
            and event.data.get("status") in _ENDED
        ):
            ended.setdefault(event.execution_id, event)
    return ended


def _cancel_events(run: SimulationRun) -> dict[str, TraceEvent]:
    """For each execution whose cancellation was requested, the event that first reached it
    (the scenario's cancel, or a worker's for a max duration), however far down it was owned."""
    requested: dict[str, TraceEvent] = {}
    for event in run.trace:
        if event.kind == "cancel" or (event.kind == "call" and event.op == "cancel"):
            for execution_id in event.data.get("cancelled", ()):
                requested.setdefault(str(execution_id), event)
    return requested


def _stale_admission(run: SimulationRun, admission: TraceEvent) -> str:
    """How a delivery came to admit a target for an owner that had already ended."""
    before = [
        e
        for e in run.trace
        if e.seq < admission.seq and e.kind == "fault" and e.worker == admission.worker
    ]
    if before and before[-1].data.get("kind") == "freeze":
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

    def check(self, run: SimulationRun) -> list[Violation]:
        """Compare each owned target's admission, cancellation and end with its owner's."""
        records = {r.execution_id: r for r in run.executions}
        admitted, ended, cancels = _admission_events(run), _ended_events(run), _cancel_events(run)
        owned = _owned(run)
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
        run: SimulationRun,
    ) -> Violation | None:
        who = f"{target.execution_id} ({target.workflow_id})"
        owner_end = ended.get(owner.execution_id)
        data = {"target": target.execution_id, "owner": owner.execution_id}
        if admission is not None and owner_end is not None and admission.seq > owner_end.seq:
            return Violation(
                self.name,
                f"{who} was admitted {_where(admission)} for owner {owner.execution_id}, which "
                f"{_ENDED[str(owner_end.data['status'])]} at t={owner_end.t:g} "
                f"({_stale_admission(run, admission)}): nobody will cancel it, and "
                f"{_fate(target)}",
                data,
            )
        if cancel is None or target.cancel_requested:
            return None
        target_end = ended.get(target.execution_id)
        if target_end is not None and target_end.seq < cancel.seq:
            return None  # it had ended before its owner's cancellation was requested
        if admission is not None and admission.seq > cancel.seq:
            how = (
                f"was admitted {_where(admission)} for owner {owner.execution_id}, whose "
                f"cancellation had been requested at t={cancel.t:g}"
            )
        else:
            how = (
                f"was live when the cancellation of its owner {owner.execution_id} was "
                f"requested at t={cancel.t:g}"
            )
        return Violation(
            self.name, f"{who} {how}, but its own was never requested: {_fate(target)}", data
        )


class OwnedChildrenEndWithTheirOwner:
    """An owned child never outlives an owner that was cancelled (RFC 009, the guide's Child)."""

    name = "owned children never outlive a cancelled owner"
    final_only = True  # about how a run ends

    def check(self, run: SimulationRun) -> list[Violation]:
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
                            "cancelled",
                        )
                    )
        return violations


class JoinedRunsKeepTheirOwner:
    """Joining a run by its business ID never takes ownership (the guide's Child)."""

    name = "joined runs keep their original owner"
    final_only = False  # a safety property: a cut run can break it too

    def check(self, run: SimulationRun) -> list[Violation]:
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
                            "became its owner",
                        )
                    )
        return violations


def _failed_at(run: SimulationRun, execution_id: str) -> str | None:
    """Where an execution's failing delivery was when it failed, from the trace: ``at step
    ship`` (the step failed) or ``after step pay-back`` (workflow code raised after it)."""
    where = None
    for event in run.trace:
        if event.execution_id != execution_id:
            continue
        if event.kind == "call" and event.op == "claim":
            where = None  # a new delivery: what the last one did is replayed
        elif event.step_key is not None and event.kind in ("body", "call", "refused", "error"):
            done = event.kind == "call" and event.op == "put_step"
            done = done and event.data.get("status") == "completed"
            where = f"{'after' if done else 'at'} step {event.step_key}"
        elif event.kind == "outcome" and event.data.get("status") == "failed":
            return where
    return where


def _error_words(record: ExecutionRecord) -> str:
    if record.error is None:
        return "an error with no record"
    code = f" {record.error.code}" if record.error.code else ""
    return f"{record.error.name}{code}: {record.error.message}"


class ExecutionsEndAsExpected:
    """Every execution ends as the scenario allows: completed, cancelled after a cancellation
    request, or as an expectation (``ys.expect``) declares. A failure nobody declared, or one
    other than the declared one, is a violation that names the execution, the step and the
    error; an execution that never finished is one too."""

    name = "executions end as expected"
    final_only = True  # about how a run ends

    def __init__(self, expected: Sequence[Expect] = ()) -> None:
        self.expected = tuple(expected)

    def check(self, run: SimulationRun) -> list[Violation]:
        """Compare each execution's end with what the scenario allows of it."""
        live = {r.execution_id for r in run.executions if not r.terminal}
        violations = []
        for record in run.executions:
            wanted = [e for e in self.expected if e.names(record.execution_id, record.workflow_id)]
            who = f"{record.execution_id} ({record.workflow_id})"
            if not record.terminal:
                stranded = (
                    record.due_at is None and record.lease is None and record.waiting_on not in live
                )
                if not stranded:  # a stranded one is "no execution lost"'s to report
                    waits = f", waiting for {record.waiting_on}" if record.waiting_on else ""
                    violations.append(
                        Violation(self.name, f"{who} never finished: it is {record.status}{waits}")
                    )
                continue
            if str(record.status) != "failed" or any(_ends_as(record, e) for e in wanted):
                continue
            if wanted:
                violations.append(
                    Violation(
                        self.name,
                        f"{who} ended {_end_words(run, record)}, but the scenario expects "
                        + " or ".join(e.describe() for e in wanted),
                        {"execution": record.execution_id},
                    )
                )
                continue
            step = _failed_at(run, record.execution_id)
            where = f" {step}" if step else ""
            hint = f'ys.expect("{record.workflow_id}"'
            if record.error is not None:
                hint += f', error="{record.error.name}"'
            violations.append(
                Violation(
                    self.name,
                    f"{who} failed{where}: {_error_words(record)}{_why_diverged(run, record)} "
                    f"(a scenario that means it to fail declares it: expected=[{hint})])",
                    {"execution": record.execution_id, "where": step},
                )
            )
        return violations

    def unwatched(self, run: SimulationRun) -> str | None:
        """A warning for each expectation that named no execution of the run, or whose
        executions all ended otherwise (the expected failure did not happen)."""
        warnings = []
        idle = [
            e.describe()
            for e in self.expected
            if not any(e.names(r.execution_id, r.workflow_id) for r in run.executions)
        ]
        if idle:
            present = sorted({r.workflow_id for r in run.executions})
            warnings.append(
                f"the expectation{'s' if len(idle) > 1 else ''} {'; '.join(idle)} named no "
                f"execution of the run (its workflows: {', '.join(present) or 'none'})"
            )
        for expectation in self.expected:
            named = [r for r in run.executions if expectation.names(r.execution_id, r.workflow_id)]
            if named and not any(_ends_as(r, expectation) for r in named):
                ends = ", ".join(f"{r.execution_id} ended {r.status}" for r in named[:3])
                warnings.append(
                    f"the expectation {expectation.describe()} did not come true ({ends})"
                )
        return "; ".join(warnings) or None


def _why_diverged(run: SimulationRun, record: ExecutionRecord) -> str:
    """For a nondeterminism error: what its workflow code read outside any step, delivery by
    delivery, that made a replay take another path."""
    if record.error is None or record.error.name != "NondeterminismError":
        return ""
    reads = [
        event
        for event in run.trace.of_kind("world")
        if event.execution_id == record.execution_id and event.data.get("in_workflow_code")
    ]
    if not reads:
        return ""
    call = "random()" if reads[0].data.get("read") == "random" else "now()"
    seen = ", ".join(f"{e.data.get('value'):.6g} under token {e.token}" for e in reads[:4])
    return (
        f"; its workflow code read step.world.{call} outside any step ({seen}), so the replay "
        "took another path: read it inside a step, whose recorded result every replay gets"
    )


def _ends_as(record: ExecutionRecord, expectation: Expect) -> bool:
    if str(record.status) != expectation.status:
        return False
    error = record.error
    if expectation.error and (error is None or error.name != expectation.error):
        return False
    if expectation.code and (error is None or error.code != expectation.code):
        return False
    return not (expectation.message and (error is None or expectation.message not in error.message))


def _end_words(run: SimulationRun, record: ExecutionRecord) -> str:
    if str(record.status) != "failed":
        return str(record.status)
    step = _failed_at(run, record.execution_id)
    return f"failed{f' {step}' if step else ''} ({_error_words(record)})"


BUILT_IN: tuple[Invariant, ...] = (
    OneTargetPerStartRequest(),
    TargetsHaveRequestAndParent(),
    OneAdmissionPerStep(),
    AcceptedStartsRecordedOnce(),
    AcknowledgedUnderCurrentLease(),
    NothingLost(),
    OwnedChildrenEndWithTheirOwner(),
    OwnedTargetsFollowTheirOwner(),
    JoinedRunsKeepTheirOwner(),
)


@dataclass(frozen=True, slots=True)
class AtMostOnce:
    """The effect ``effect`` happened at most once per value of its data field ``by``.

    Effects that share an idempotency key count once: the outside service deduplicated them.
    """

    effect: str
    by: str | None = None
    final_only = False  # a safety property: a cut run can break it too

    @property
    def name(self) -> str:
        """``at_most_once(courier.booked, by=order)``."""
        return f"at_most_once({self.effect}" + (f", by={self.by})" if self.by else ")")

    def check(self, run: SimulationRun) -> list[Violation]:
        """Count the effects per value of ``by``."""
        groups: dict[str, list[Any]] = defaultdict(list)
        keys: set[tuple[str, str]] = set()
        for effect in run.effects:
            if effect.name == self.effect:
                key = repr(effect.data.get(self.by)) if self.by else ""
                if effect.idempotency_key is not None:
                    if (key, effect.idempotency_key) in keys:
                        continue  # the same effect again, deduplicated by the service
                    keys.add((key, effect.idempotency_key))
                groups[key].append(effect)
        violations = []
        for key, effects in groups.items():
            if len(effects) < 2:
                continue
            which = f" for {self.by}={key}" if self.by else ""
            times = " and ".join(_effect_words(e) for e in effects)
            violations.append(
                Violation(
                    self.name,
                    f"{self.effect} happened {len(effects)} times{which}: {times}; "
                    f"{_why_repeated(run, effects[0], effects[1])}",
                    {"count": len(effects)},
                )
            )
        return violations

    def unwatched(self, run: SimulationRun) -> str | None:
        """A warning when the run made no effect of this name (a misspelled name?)."""
        if any(effect.name == self.effect for effect in run.effects):
            return None
        names = sorted({effect.name for effect in run.effects})
        return (
            f"{self.name} watched nothing: the run made no effect named {self.effect!r} "
            f"(the effects it made: {', '.join(names) or 'none'})"
        )


def _effect_words(effect: Effect) -> str:
    token = f", token {effect.token}" if effect.token is not None else ""
    return (
        f"at t={effect.at:g} by {effect.worker} ({effect.execution_id} / {effect.step_key}, "
        f"attempt {effect.attempt}{token})"
    )


def _effect_event(run: SimulationRun, effect: Effect) -> TraceEvent | None:
    """The trace event that recorded ``effect`` (effects and their events are in one order)."""
    for number, event in enumerate(run.trace.of_kind("effect")):
        if number < len(run.effects) and run.effects[number] is effect:
            return event
    return None


def _admitted_how(run: SimulationRun, execution_id: str) -> str:
    admissions = [a for a in run.admissions if a.execution_id == execution_id]
    if not admissions:
        return "admitted before the run"
    words = []
    for admission in admissions:
        by = f" ({admission.by[0]}, {admission.by[1]})" if admission.by else ""
        words.append(
            {
                "trigger": "triggered by the scenario",
                "body trigger": f"triggered without a request identity from step{by}",
                "start": f"started by request{by}",
                "child": f"created as an owned child by step{by}",
                "spawn": f"spawned by step{by}",
            }.get(admission.how, f"admitted ({admission.how}{by})")
            + f" at t={admission.at:g}"
        )
    if len(admissions) > 1:
        return f"admitted {len(admissions)} times, " + ", then ".join(words)
    return words[0]


def _why_repeated(run: SimulationRun, first: Effect, second: Effect) -> str:
    """Why an effect happened again: a replay, a retry, or another execution."""
    dedup = (
        "the service does not deduplicate it (an idempotency_key= on the effect models one that "
        "does)"
    )
    if first.execution_id != second.execution_id:
        return (
            f"two different executions did it: {first.execution_id}, "
            f"{_admitted_how(run, first.execution_id)}, and {second.execution_id}, "
            f"{_admitted_how(run, second.execution_id)}"
        )
    if first.step_key != second.step_key:
        return f"{first.execution_id} did it in two steps, {first.step_key} and {second.step_key}"
    if first.step_key == WORKFLOW_CODE:
        return (
            f"it is made in workflow code, outside any step, and workflow code runs again on "
            f"every delivery of {first.execution_id} (token {first.token}, then token "
            f"{second.token}): wrap it in a step, `yield from step.run(key, lambda: "
            f"step.world.effect(...))`, so that a replay returns the recorded result"
        )
    step = f"step {first.step_key} of {first.execution_id}"
    incarnations = [a for a in run.admissions if a.execution_id == first.execution_id]
    if len(incarnations) > 1 and any(first.at < a.at <= second.at for a in incarnations):
        return (
            f"{first.execution_id} was {_admitted_how(run, first.execution_id)}: its record was "
            f"pruned and the ID admitted again, so {step} ran in a new run; {dedup}"
        )
    if first.attempt != second.attempt:
        ended = next(
            (
                event.text.split(": ", 1)[-1]
                for event in run.trace.of_kind("body")
                if event.execution_id == first.execution_id
                and event.step_key == first.step_key
                and event.token == first.token
                and event.data.get("attempt") == first.attempt
            ),
            "failed",
        )
        timeout = "timeout" in ended
        return (
            f"a retry: attempt {first.attempt} of {step} acted and then "
            + ("ran past its timeout" if timeout else ended)
            + f", so attempt {second.attempt} ran the body again"
            + ("" if first.token == second.token else f" (in delivery token {second.token})")
            + f"; {dedup}"
        )
    if first.token != second.token:
        cause = "on a replay"
        before, after = _effect_event(run, first), _effect_event(run, second)
        if before is not None and after is not None:
            cause = _why_again(run, before, after)
        return (
            f"the same execution ran {step} again in a new delivery (token {second.token} after "
            f"token {first.token}) {cause}: the body acted before its result was recorded, and "
            f"{dedup}"
        )
    return f"the body of {step} made it twice in one attempt"


def at_most_once(effect: str, *, by: str | None = None) -> AtMostOnce:
    """The effect named ``effect`` happens at most once (per value of data field ``by``).

    >>> at_most_once("courier.booked", by="order").name
    'at_most_once(courier.booked, by=order)'
    """
    if not isinstance(effect, str) or not effect:
        raise ValueError(f"at_most_once needs an effect name, not {effect!r}")
    return AtMostOnce(effect, by)
