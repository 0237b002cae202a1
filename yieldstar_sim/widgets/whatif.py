"""What if a fault struck here? Re-run a scenario from the same seed with one more fault, and
say how the new run differs from the old one.

Runs are deterministic: the same scenario, seed and faults give the same trace, so a re-run
with a fault added at choice point ``n`` makes exactly the same choices up to ``n`` and differs
only from there.

>>> import yieldstar_sim as ys
>>> run = ys.simulate(ys.load_scenario("durable-start"), runtime="memory")
>>> point = choice_point_at(run.trace, 0)
>>> point.index, point.label
(0, 'w2 claim')
>>> rerun = what_if(run, "crash", point.index)
>>> print(compare_runs(run, rerun).summary())
verdict before: ok: every invariant held and the run finished
verdict after:  ok: every invariant held and the run finished
first divergence at event #1:
  before: #1 t=0 w2 call: claim: order-42 leased with token 1 until t=30
  after:  #1 t=0 w2 fault: crash before w2 claim
trace events: 20 -> 18
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.faults import (
    TIMED_KINDS,
    Fault,
    FaultKind,
    PointInfo,
    applies_at,
    by_description,
    trace_points,
)
from yieldstar_sim.simulation.moves import Move
from yieldstar_sim.simulation.run import simulate

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.trace import TraceEvent

#: The faults a what-if offers, in menu order: every kind but a worker process's exit, which
#: only means something on the worker invoker. A stall goes only at a step body's elapse.
WHAT_IF_KINDS: tuple[FaultKind, ...] = (
    FaultKind.CRASH,
    FaultKind.CRASH_AFTER,
    FaultKind.LOSE_RESPONSE,
    FaultKind.FREEZE,
    FaultKind.INFRA_ERROR,
    FaultKind.STALL,
    FaultKind.SKEW,
)


@dataclass(frozen=True, slots=True)
class ChoicePoint:
    """A choice point of a run: its index, what call it is, and its first trace event."""

    index: int
    info: PointInfo
    seq: int

    @property
    def label(self) -> str:
        """``w1 put_step order-42/ship``."""
        return self.info.label


def choice_points(trace: Iterable[TraceEvent]) -> dict[int, ChoicePoint]:
    """Every choice point that left an event, by index, with the call it was."""
    return {
        index: ChoicePoint(index, info, seq) for index, (info, seq) in trace_points(trace).items()
    }


def choice_point_at(trace: Iterable[TraceEvent], seq: int) -> ChoicePoint | None:
    """The choice point of event ``seq``, or of the first event after it that has one (the
    next runtime call): where a fault placed "here" would strike. None after the last one."""
    events = list(trace)
    points = choice_points(events)
    for event in events[seq:]:
        if event.point is not None and event.point in points:
            return points[event.point]
    return None


def fault_plan(run: SimulationRun, new: Fault) -> tuple[list[Fault], list[str]]:
    """The run's own faults with ``new`` added (``new.at`` must be set), and notes on what
    changed.

    Faults before the new one stay at their choice points: the runs agree up to there. A fault
    already at that point is replaced. Faults after it keep their description (worker, call,
    execution, step and which occurrence) instead of their index, since the indices after a
    new fault no longer name the same calls.
    """
    if new.at is None:
        raise ValueError("a what-if fault needs its choice point: Fault(kind, at=index)")
    points = {index: info for index, (info, _) in trace_points(run.trace).items()}
    plan: list[Fault] = []
    notes: list[str] = []
    for fault in run.faults:
        at = fault.at
        if at is None or at < new.at:
            plan.append(fault)
        elif at == new.at:
            notes.append(f"replaced {fault.describe()}")
        else:
            described = by_description(fault, points)
            if described is None:
                notes.append(f"dropped {fault.describe()}: its call left no event")
                continue
            plan.append(described)
            notes.append(f"kept {described.describe()} (it came after the new fault)")
    plan.append(new)
    return plan, notes


def what_if(
    run: SimulationRun,
    kind: FaultKind | str,
    at: int,
    *,
    seconds: float | None = None,
    runtime: RuntimeChoice | None = None,
) -> SimulationRun:
    """Re-run ``run``'s scenario from the same seed with a ``kind`` fault added at choice point
    ``at`` (``seconds`` for a freeze, a stall or a skew: how long, or how far behind; their
    default when None), on the same runtime unless ``runtime`` says otherwise.

    The scenario's own fault plan is not added again: the faults that fired are in
    ``run.faults`` (see ``fault_plan``). The new run makes the same choices as the old one up
    to ``at``: the seed decides them, or, for a run made from a schedule (a PCT exploration),
    the old run's schedule up to ``at``.
    """
    points = choice_points(run.trace)
    if at not in points:
        raise ValueError(f"the run has no choice point #{at} (it has {run.points})")
    if not applies_at(kind, points[at].info.op):
        # Such a fault never fires: the re-run came back as the old run with the point's own
        # fault replaced, and read as "this fault changes nothing".
        raise ValueError(
            f"a {FaultKind(kind)} cannot go at choice point #{at} ({points[at].label}): there "
            + ("is no call to fail at an elapse" if points[at].info.op == Op.ELAPSE
               else "is no step body's elapse to stall at a call")
        )  # fmt: skip
    new = Fault(kind, at=at, seconds=seconds if FaultKind(kind) in TIMED_KINDS else None)
    plan, _ = fault_plan(run, new)
    kind_of_runtime = runtime or run.runtime_choice or run.runtime_kind
    # The old run's later faults may not come again once the new one changes the path.
    rerun = simulate(
        run.scenario, run.seed, runtime=kind_of_runtime, faults=plan, scenario_faults=False,
        check_faults=False,
    )  # fmt: skip
    before = points[at].seq
    if _prefix(rerun.trace.events, before) != _prefix(run.trace.events, before):
        # The old run's choices did not all come from the seed: replay them up to the fault.
        rerun.runtime.close()
        rerun = simulate(
            run.scenario, run.seed, runtime=kind_of_runtime, faults=plan,
            # The old run's moves, their faults left to the plan (the old ones, and the new).
            schedule=[Move(move.actor, choice=move.choice) for move in run.schedule[: at + 1]],
            scenario_faults=False, check_faults=False,
        )  # fmt: skip
    return rerun


def _prefix(events: Sequence[TraceEvent], upto: int) -> list[tuple[object, ...]]:
    return [event.facts() for event in events[:upto]]


# --------------------------------------------------------------------------- diffs


@dataclass(frozen=True)
class RunDiff:
    """How a run differs from the one before it: verdicts, the first diverging event, the
    faults, and counts of effects and executions."""

    verdict_before: str
    verdict_after: str
    ok_before: bool
    ok_after: bool
    divergence_seq: int | None
    before_line: str
    after_line: str
    faults_after: tuple[str, ...]
    counts: tuple[tuple[str, int, int], ...]
    violations_after: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def summary(self) -> str:
        """The diff in a few lines of text."""
        lines = [
            f"verdict before: {self.verdict_before}",
            f"verdict after:  {self.verdict_after}",
        ]
        if self.divergence_seq is None:
            lines.append("the traces are identical")
        else:
            lines.append(f"first divergence at event #{self.divergence_seq}:")
            lines.append(f"  before: {self.before_line}")
            lines.append(f"  after:  {self.after_line}")
        lines += [f"{name}: {a} -> {b}" for name, a, b in self.counts if a != b]
        lines += [f"violated: {v}" for v in self.violations_after]
        return "\n".join(lines)

    def html(self) -> str:
        """The diff as an HTML block, every value escaped."""
        colour = {True: "#1b7f4c", False: "#b00020"}
        verdict = (
            f"<span style='color:{colour[self.ok_before]}'>{html.escape(self.verdict_before)}"
            f"</span> &rarr; <b style='color:{colour[self.ok_after]}'>"
            f"{html.escape(self.verdict_after)}</b>"
        )
        if self.divergence_seq is None:
            divergence = "<div>the traces are identical</div>"
        else:
            divergence = (
                f"<div>first divergence at event #{self.divergence_seq}:</div>"
                "<div style='font-family:monospace;font-size:12px;margin-left:1em'>"
                f"<div>before: {html.escape(self.before_line)}</div>"
                f"<div>after:&nbsp; {html.escape(self.after_line)}</div></div>"
            )
        counts = "".join(
            f"<li>{html.escape(name)}: {a} &rarr; <b>{b}</b></li>"
            for name, a, b in self.counts
            if a != b
        )
        violations = "".join(f"<li>{html.escape(v)}</li>" for v in self.violations_after)
        faults = "; ".join(self.faults_after) or "none"
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (
            f"<div class='ys-diff'><div>verdict: {verdict}</div>"
            f"<div>faults now: {html.escape(faults)}</div>{divergence}"
            + (f"<ul style='margin:2px 0'>{counts}</ul>" if counts else "")
            + (f"<div>violations:</div><ul style='margin:2px 0'>{violations}</ul>"
               if violations else "")
            + (f"<ul style='margin:2px 0;color:#555'>{notes}</ul>" if notes else "")
            + "</div>"
        )  # fmt: skip


def _line(event: TraceEvent | None) -> str:
    if event is None:
        return "(the trace has ended)"
    return f"#{event.seq} t={event.t:g} {event.worker or '-'} {event.kind}: {event.text}"


def compare_runs(before: SimulationRun, after: SimulationRun, notes: Sequence[str] = ()) -> RunDiff:
    """The verdicts, the first event where the traces differ, and what changed in number."""
    old, new = before.trace.events, after.trace.events
    divergence: int | None = None
    for a, b in zip(old, new, strict=False):
        if a.facts() != b.facts():
            divergence = a.seq
            break
    else:
        if len(old) != len(new):
            divergence = min(len(old), len(new))
    counts: dict[str, list[int]] = {}
    for slot, run in enumerate((before, after)):
        for effect in run.effects:
            counts.setdefault(f"effects {effect.name}", [0, 0])[slot] += 1
        counts.setdefault("executions", [0, 0])[slot] = len(run.executions)
        counts.setdefault("trace events", [0, 0])[slot] = len(run.trace)
    return RunDiff(
        verdict_before=before.verdict_text,
        verdict_after=after.verdict_text,
        ok_before=before.ok,
        ok_after=after.ok,
        divergence_seq=divergence,
        before_line=_line(old[divergence] if divergence is not None and divergence < len(old)
                          else None),
        after_line=_line(new[divergence] if divergence is not None and divergence < len(new)
                         else None),
        faults_after=tuple(f.describe() for f in after.faults),
        counts=tuple((name, a, b) for name, (a, b) in counts.items()),
        violations_after=tuple(str(v) for v in after.violations),
        notes=tuple(notes),
    )  # fmt: skip
