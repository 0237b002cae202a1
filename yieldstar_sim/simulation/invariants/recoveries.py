"""The invariant that nothing is recovered without end.

A recovery is a claim that takes an execution over from a holder whose lease ran out: the
holder's worker crashed, froze or stalled while it held it, and neither acknowledged nor
released it. It is read from the trace alone (each committed claim of an execution, and the
acknowledgement or release that ends a delivery), so it holds a runtime that counts wrongly,
or not at all, to account as well as the engine.

With a bound (``Scenario(max_recovery_attempts=N)``), an execution recovered more than N
times must be set aside, dead-lettered, and never run again: workflow code (a step body, a
runtime call of its delivery, an outcome other than the dead letter) under a lease claimed
past the bound is a violation. With no bound, a run cut (by ``max_time`` or ``max_points``)
while an execution keeps being recovered is one: a poison workflow, whose own code crashes its
worker on every attempt, would be recovered for ever, and the cut would otherwise only say
that the run was incomplete.

"For ever" is said of fair schedules only. A worker that was offered its claim at the very
instant the execution was recovered (beside the worker that took it back, or whose claim found
nothing due then) was ready to take it; if it never lost the execution on its own (in a
delivery of it where no fault was placed), nothing in the run says it would fail too, and only
a scheduler that never lets it win the claim keeps the loop going (one worker whose clock a
skew set behind works past its lease on every delivery, while a healthy one is offered its
claim at each of them). Such a run is not said to recover the execution without end: it
stays incomplete (``starved``), and the exhaustive search, which also runs the schedule where
the ready worker wins the claim, does not count it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.faults import FaultKind
from yieldstar_sim.simulation.invariants.protocol import Violation
from yieldstar_sim.simulation.trace_payloads import ClaimData, FaultData, OutcomeData, TraceKind

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from yieldstar_sim.simulation.invariants.protocol import RunView
    from yieldstar_sim.simulation.trace import TraceEvent

#: Recoveries of one live execution in a cut run past which it is said to be recovered
#: without end (one fault recovers an execution once, or twice at most).
RECOVERED_WITHOUT_END = 3

#: The calls that begin or end a delivery without running workflow code.
_DELIVERY_EDGES = frozenset({Op.CLAIM, Op.ACKNOWLEDGE, Op.RELEASE})

#: The fault kinds that let their call commit and take its answer from the worker: at a claim,
#: the delivery it makes is lost to the fault, not to its worker.
_AFTER_THE_CALL = frozenset({FaultKind.CRASH_AFTER, FaultKind.LOSE_RESPONSE})


@dataclass
class _Recoveries:
    """One execution's recoveries as the trace shows them."""

    workflow_id: str
    held: bool = False
    count: int = 0
    past: int | None = None
    """The token of the first claim past the bound, once there was one."""
    ran: TraceEvent | None = None
    """The first event of workflow code under a lease claimed past the bound."""
    crashes: dict[str, int] = field(default_factory=dict)
    """By step key: how often the execution's own code crashed its worker there."""
    last: float = 0.0
    holder: tuple[str | None, int | None] = (None, None)
    """The worker and token of the latest claim of it."""
    instants: set[float] = field(default_factory=set)
    """The times it was recovered."""
    failed: set[str] = field(default_factory=set)
    """The workers it was recovered from after a delivery of it where no fault was placed: each
    would let its lease run out again, with no new fault."""


class NothingRecoveredWithoutEnd:
    """No execution is recovered without end: past the scenario's ``max_recovery_attempts``
    it is dead-lettered and never run again, and with no bound a run is never cut while an
    execution keeps being recovered. A violation names the execution, how often it was
    recovered and why. A safety property: checked on cut runs too."""

    name = "nothing is recovered without end"
    final_only = False

    def __init__(self, max_recovery_attempts: int | None = None) -> None:
        self.max_recovery_attempts = max_recovery_attempts

    def check(self, run: RunView) -> list[Violation]:
        """Count each execution's recoveries in the trace, and judge them by the bound."""
        bound = self.max_recovery_attempts
        cut = getattr(run, "incomplete", None)
        if bound is None and cut is None:
            return []  # with no bound only a cut run can be recovering without end
        seen, idle = self._recoveries(run)
        live = {record.execution_id for record in run.executions if not record.terminal}
        violations = []
        for execution_id, each in seen.items():
            who = f"{execution_id} ({each.workflow_id})"
            times = _times(each.count)
            if bound is not None and each.ran is not None:
                ran = each.ran
                violations.append(
                    Violation(
                        self.name,
                        f"{who} was recovered {times}, more than max_recovery_attempts={bound}, "
                        f"and was run again at t={ran.t:g} by {ran.worker} (token {ran.token}): "
                        f"{_why(each)}; past the bound it must be dead-lettered, never run "
                        "(the workers read the runtime's count of recoveries, "
                        "ExecutionRecord.recoveries: a runtime must count each claim that "
                        "takes an execution over from a holder whose lease ran out)",
                        {"execution": execution_id, "recoveries": each.count},
                    )
                )
            elif (
                bound is None
                and cut is not None
                and execution_id in live
                and each.count >= RECOVERED_WITHOUT_END
                and not _starved(each, idle)
            ):
                violations.append(
                    Violation(
                        self.name,
                        f"{who} was recovered {times} (the last at t={each.last:g}) and was "
                        f"still being recovered when the run was cut: {_why(each)}; nothing "
                        "ends it, so it would be recovered for ever. Bound it: "
                        "Scenario(max_recovery_attempts=N) dead-letters an execution "
                        "recovered more than N times (DBOS's max_recovery_attempts); or fix "
                        "what kills its worker",
                        {"execution": execution_id, "recoveries": each.count},
                    )
                )
        return violations

    def starved(self, run: RunView) -> dict[str, list[str]]:
        """By execution: the workers a cut run starved of one it kept recovering (``_starved``),
        for each live execution recovered ``RECOVERED_WITHOUT_END`` times or more; none when
        the run was not cut, or a bound is set (then the dead letter ends the loop)."""
        if self.max_recovery_attempts is not None or getattr(run, "incomplete", None) is None:
            return {}
        seen, idle = self._recoveries(run)
        live = {record.execution_id for record in run.executions if not record.terminal}
        return {
            execution_id: starved
            for execution_id, each in seen.items()
            if execution_id in live
            and each.count >= RECOVERED_WITHOUT_END
            and (starved := _starved(each, idle))
        }

    def _recoveries(self, run: RunView) -> tuple[dict[str, _Recoveries], dict[float, set[str]]]:
        """Each execution's recoveries, and by time the workers that could have claimed it
        then: whose claim found nothing, or that were offered a claim beside the recovering
        one (``_Rivals``)."""
        log = RecoveryLog(self.max_recovery_attempts)
        rivals: _Rivals | None = None  # read from the whole run: only where one is recovered

        def at(claim: TraceEvent) -> list[str]:
            nonlocal rivals
            rivals = rivals or _Rivals(run)
            return rivals.at(claim)

        for event in run.trace:
            log.take(event, at)
        return log.seen, log.idle


class RecoveryLog:
    """Each execution's recoveries so far, read from the trace an event at a time (``take``):
    what "nothing is recovered without end" judges a run by, and what of a run's past its
    judgement needs beside the run's state (``simulation.statekeys`` keeps one per run, so
    that a search does not let a state reached with one past stand for the same state
    reached with another). ``copy`` is cheap: the copies share each execution's record
    until one of them changes it."""

    def __init__(self, bound: int | None) -> None:
        self.bound = bound
        self.seen: dict[str, _Recoveries] = {}
        self.idle: dict[float, set[str]] = {}
        """By time, the workers that could have claimed an execution then."""
        self.faulted: set[tuple[str, int | None]] = set()
        """The deliveries (execution, token) a fault struck."""
        self.struck: dict[str, int | None] = {}
        """By worker, the choice point of a claim a fault struck after the call: the fault's
        event comes before the claim's, which names the delivery it made."""
        self._own: set[int] = set()
        """The records (by id) this log made itself, and may change in place."""

    def copy(self) -> RecoveryLog:
        """This log, kept apart: a saved state's."""
        new = object.__new__(RecoveryLog)
        new.bound, new.seen, new._own = self.bound, dict(self.seen), set()
        new.idle = {t: set(workers) for t, workers in self.idle.items()}
        new.faulted, new.struck = set(self.faulted), dict(self.struck)
        self._own = set()  # shared with the copy from now on
        return new

    def _mine(self, execution_id: str) -> _Recoveries:
        each = self.seen[execution_id]
        if id(each) not in self._own:
            each = self.seen[execution_id] = replace(
                each, crashes=dict(each.crashes), instants=set(each.instants),
                failed=set(each.failed),
            )  # fmt: skip
            self._own.add(id(each))
        return each

    def take(self, event: TraceEvent, rivals: Callable[[TraceEvent], Iterable[str]]) -> None:
        """Read ``event``; ``rivals`` names the other workers offered their claim at a claim
        that recovers an execution."""
        execution_id = event.execution_id
        kind, data = event.kind, event.data
        if execution_id is None:
            if event.op != Op.CLAIM or event.worker is None:
                return
            if kind == TraceKind.CALL:
                self.idle.setdefault(event.t, set()).add(event.worker)  # claim: nothing due
                self.struck.pop(event.worker, None)
            elif isinstance(data, FaultData) and data.kind in _AFTER_THE_CALL:
                self.struck[event.worker] = event.point
            return
        if kind == TraceKind.FAULT:
            self.faulted.add((execution_id, event.token))
        if kind == TraceKind.CALL and isinstance(data, ClaimData):
            if self.struck and self.struck.pop(event.worker or "", -1) == event.point:
                self.faulted.add((execution_id, event.token))
            if execution_id not in self.seen:
                made = self.seen[execution_id] = _Recoveries(data.workflow_id)
                self._own.add(id(made))
            each = self._mine(execution_id)
            if each.held:
                each.count += 1
                each.last = event.t
                each.instants.add(event.t)
                self.idle.setdefault(event.t, set()).update(rivals(event))
                worker, token = each.holder
                if worker is not None and (execution_id, token) not in self.faulted:
                    each.failed.add(worker)
                if self.bound is not None and each.count > self.bound and each.past is None:
                    each.past = event.token
            each.held = True
            each.holder = (event.worker, event.token)
            return
        known = self.seen.get(execution_id)
        if known is None:
            return
        if kind == TraceKind.CALL and event.op in (Op.ACKNOWLEDGE, Op.RELEASE):
            self._mine(execution_id).held = False
        elif kind == TraceKind.CRASH and event.step_key is not None:
            crashes = self._mine(execution_id).crashes
            crashes[event.step_key] = crashes.get(event.step_key, 0) + 1
        if known.past is not None and known.ran is None and _runs_code(event, known.past):
            self._mine(execution_id).ran = event


class _Rivals:
    """The workers that could have claimed what a claim took, at its choice point: an idle
    worker blocks until something is due (``kernel.Point(blocking=True)``), so at the instant
    an execution is recovered each idle worker is offered its claim beside the one that took
    it, and leaves no line in the trace. A worker ready there was at its claim when its next
    move was one, or when it never moved again (then nothing ever gave it a turn)."""

    def __init__(self, run: RunView) -> None:
        choices = getattr(run, "choices", None) or ()
        scenario = getattr(run, "scenario", None)
        self._workers = frozenset(getattr(scenario, "worker_names", ()) or ())
        self._among = {choice.index: choice.among for choice in choices}
        self._moves: dict[str, list[int]] = {}
        for choice in choices:
            self._moves.setdefault(choice.actor, []).append(choice.index)
        self._claims = {
            event.point
            for event in run.trace
            if event.op == Op.CLAIM and event.point is not None and event.worker is not None
        }

    def at(self, claim: TraceEvent) -> list[str]:
        """The other workers waiting at their claim at ``claim``'s choice point."""
        point = claim.point
        among = None if point is None else self._among.get(point)
        if point is None or not among:
            return []
        ready = []
        for actor in among:
            if actor == claim.worker or "~" in actor:
                continue
            if self._workers and actor not in self._workers:
                continue  # a client or the scenario's own schedule claims nothing
            moves = self._moves.get(actor, [])
            later = bisect.bisect_right(moves, point)
            if later == len(moves) or moves[later] in self._claims:
                ready.append(actor)
        return ready


def _starved(each: _Recoveries, idle: dict[float, set[str]]) -> list[str]:
    """The workers that found nothing due at an instant the execution was recovered, and never
    lost it on their own: a fair scheduler gives them the claim some time, and nothing in the
    run says they would let its lease run out too."""
    ready: set[str] = set()
    for t in each.instants:
        ready |= idle.get(t, set())
    return sorted(ready - each.failed)


def _runs_code(event: TraceEvent, past: int) -> bool:
    """Whether ``event`` is workflow code run under a lease claimed at or after ``past``."""
    if event.token is None or event.token < past:
        return False  # a stale holder's, from before the bound was passed
    if event.kind == TraceKind.BODY or (event.kind == TraceKind.CRASH and event.step_key):
        return True  # a body ran (one that crashed its worker leaves only the crash)
    if event.kind == TraceKind.OUTCOME:
        return isinstance(event.data, OutcomeData) and event.data.status != "dead-lettered"
    return event.kind == TraceKind.CALL and event.op not in _DELIVERY_EDGES


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _why(each: _Recoveries) -> str:
    """Why the execution kept being recovered, as the trace shows it."""
    if each.crashes:
        steps = ", ".join(
            f"step {key} ({_times(count)})" for key, count in sorted(each.crashes.items())
        )
        return (
            f"its own code crashed its worker every time it ran (step.world.crash_worker() in "
            f"{steps}), and each crash left its lease to run out"
        )
    return (
        "each time, the worker holding it let its lease run out (it crashed, froze, stalled, "
        "or worked past it by a clock behind)"
    )
