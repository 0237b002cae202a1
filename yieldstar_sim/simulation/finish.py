"""A run's end: its records collected and every invariant checked (``finish``), and the
invariants a scenario's runs are checked against (``invariants_of``).

``finish`` reads a run through ``Finished``, what an ``execution.Execution`` is once its
moves are taken: it does not import the execution, which calls it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from yieldstar_sim.core.error_words import error_words
from yieldstar_sim.core.interrupts import raised_by_code
from yieldstar_sim.runtime.protocol import EventClient
from yieldstar_sim.simulation.deadline import UNGUARDED, Deadline, RunTimedOut
from yieldstar_sim.simulation.invariants import (
    BUILT_IN,
    AtMostOnce,
    AttemptsNeverOverlap,
    CancelledLiveExecutionsEndCancelled,
    ExecutionsEndAsExpected,
    Invariant,
    NothingRecoveredWithoutEnd,
    Violation,
    as_invariant,
)
from yieldstar_sim.simulation.result import SimulationRun
from yieldstar_sim.simulation.trace import Admission

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.core.authoring import Workflow
    from yieldstar_sim.core.clock import ManualClock
    from yieldstar_sim.core.events import EventRecord
    from yieldstar_sim.core.model import ExecutionRecord
    from yieldstar_sim.engine.world import Ledger, WorldStore
    from yieldstar_sim.runtime.protocol import Runtime
    from yieldstar_sim.simulation.faults import Fault
    from yieldstar_sim.simulation.moves import Choice, Move
    from yieldstar_sim.simulation.scenario import Scenario
    from yieldstar_sim.simulation.trace import Trace


class Finished(Protocol):
    """What ``finish`` reads of a run (an ``execution.Execution`` is one)."""

    scenario: Scenario
    seed: int
    runtime_kind: str
    runtime_choice: Any
    runtime: Runtime
    trace: Trace
    ledger: Ledger
    store: WorldStore
    clock: ManualClock
    deadline: Deadline
    admissions: list[Admission]
    stopped: str | None

    @property
    def schedule(self) -> tuple[Move, ...]:
        """The moves taken."""
        ...

    @property
    def choices(self) -> Sequence[Choice]:
        """Every choice point taken."""
        ...

    @property
    def applied(self) -> list[Fault]:
        """Every fault that struck."""
        ...

    @property
    def points(self) -> int:
        """Choice points taken."""
        ...


#: The invariants whose code is the toolkit's own: it ends, so the wall-clock limit does not
#: guard it (a guard cost about a microsecond and the text naming it, 14 times every run).
_OURS: frozenset[type] = frozenset(
    {*map(type, BUILT_IN), ExecutionsEndAsExpected, CancelledLiveExecutionsEndCancelled,
     AttemptsNeverOverlap, AtMostOnce, NothingRecoveredWithoutEnd}
)  # fmt: skip


def invariants_of(scenario: Scenario) -> tuple[Invariant, ...]:
    """Every invariant a run of ``scenario`` is checked against: the built-in ones, those its
    ``expected`` and ``overlap_safe`` make, and its own."""
    return (
        *BUILT_IN,
        ExecutionsEndAsExpected(
            scenario.expected,
            registered={w.name for w in (*scenario.workflows, *_deployed(scenario))},
        ),
        CancelledLiveExecutionsEndCancelled(scenario.expected),
        AttemptsNeverOverlap(scenario.overlap_safe),
        NothingRecoveredWithoutEnd(scenario.max_recovery_attempts),
        *map(as_invariant, scenario.invariants),
    )


def _deployed(scenario: Scenario) -> list[Workflow]:
    return [workflow for deploy in scenario.deploys for workflow in deploy.workflows]


def finish(execution: Finished) -> SimulationRun:
    """Collect a run's records and check every invariant."""
    runtime = execution.runtime
    executions = runtime.executions()
    incomplete = incomplete_reason(execution)
    if incomplete is not None and execution.stopped == "max_points":
        incomplete += _looping(runtime, executions)
    if incomplete is not None:
        live = [record for record in executions if not record.terminal]
        if live:
            incomplete += (
                "; still live: "
                + ", ".join(f"{r.execution_id} ({r.workflow_id}, {r.status})" for r in live[:5])
                + (f" and {len(live) - 5} more" if len(live) > 5 else "")
            )
    run = SimulationRun(
        scenario=execution.scenario,
        seed=execution.seed,
        runtime_kind=execution.runtime_kind,
        runtime_choice=execution.runtime_choice,
        runtime=runtime,
        trace=execution.trace,
        effects=list(execution.ledger.effects),
        schedule=execution.schedule,
        choices=execution.choices,
        faults=execution.applied,
        executions=executions,
        start_requests=runtime.start_requests(),
        steps={record.execution_id: runtime.steps(record.execution_id) for record in executions},
        points=execution.points,
        ended_at=execution.clock.now(),
        incomplete=incomplete,
        admissions=_all_admissions(execution, executions),
        world=execution.store.values(),
        events=_events(runtime),
    )
    invariants = invariants_of(execution.scenario)
    # The user's invariants' own wall-clock limit: armed only when there is one to guard.
    theirs = any(type(invariant) not in _OURS for invariant in invariants)
    deadline = Deadline(execution.deadline.seconds if theirs else None)
    guarded = deadline.seconds is not None  # else no guard, and no text naming what it guards
    written = bool(run.world)
    with deadline:
        for invariant in invariants:
            if incomplete is not None and getattr(invariant, "final_only", True):
                continue  # about how a run ends: a cut run has not ended
            if written:
                # Each invariant reads the world as the run left it: one that popped a key
                # (or appended to a list) hid it from the next, which could then hold.
                run.world = execution.store.values()
            try:
                with (
                    deadline.user_code(f"the invariant {invariant.name}")
                    if guarded and type(invariant) not in _OURS
                    else UNGUARDED
                ):
                    run.violations.extend(invariant.check(run))
                    unwatched = getattr(invariant, "unwatched", None)
                    warning = unwatched(run) if callable(unwatched) else None
            except RunTimedOut:
                run.incomplete = (
                    run.incomplete
                    or incomplete_reason(execution)
                    or (
                        f"timed out after {deadline.seconds:g}s of wall-clock time in the "
                        f"invariant {invariant.name}"
                    )
                )
                break
            except Exception as error:  # a broken user invariant is reported, not fatal
                warning = None
                run.violations.append(
                    Violation(
                        invariant.name,
                        f"the invariant itself raised {error_words(error)}",
                    )
                )
            except SystemExit as exit:
                warning = None
                run.violations.append(
                    Violation(invariant.name, f"the invariant itself called sys.exit({exit.code})")
                )
            except BaseException as error:
                if not raised_by_code(error):
                    raise  # Ctrl-C
                warning = None
                run.violations.append(
                    Violation(invariant.name, f"the invariant itself raised {error_words(error)}")
                )
            if warning:
                run.warnings.append(warning)
    if written:
        run.world = execution.store.values()
    if execution.stopped in ("max_time", "max_points") and not run.violations:
        _judge_fairness(run)
    return run


def _events(runtime: Runtime) -> list[EventRecord]:
    """The runtime's events, as it reports them now (none from a runtime without events)."""
    # One protocol check (about 13 us: every run's end passes here), not a second in events_of.
    return runtime.events() if isinstance(runtime, EventClient) else []


def _judge_fairness(run: SimulationRun) -> None:
    """For a run a bound cut: when every live execution was being recovered while a worker
    ready at those very instants was never given it (``NothingRecoveredWithoutEnd.starved``),
    say so in ``run.incomplete`` and ``run.unfair``: only an unfair scheduler keeps that up."""
    starved = NothingRecoveredWithoutEnd(run.scenario.max_recovery_attempts).starved(run)
    live = [record.execution_id for record in run.executions if not record.terminal]
    if not live or not set(live) <= set(starved):
        return
    each = "; ".join(
        f"{execution_id} was taken back at each recovery by a worker that let its lease run "
        f"out, while {' and '.join(ready)} was ready to claim it at those instants and "
        f"{'was' if len(ready) == 1 else 'were'} not given it"
        for execution_id, ready in ((e, starved[e]) for e in live)
    )
    run.unfair = f"{each}: only an unfair scheduler keeps that up; a fair one ends it"
    run.incomplete = f"{run.incomplete}; {run.unfair}"


def _all_admissions(execution: Finished, executions: list[ExecutionRecord]) -> list[Admission]:
    """The admissions the simulator saw, and any the final records hold that it did not."""
    admissions = list(execution.admissions)
    seen = {(a.execution_id, a.seq) for a in admissions}
    for record in executions:
        if (record.execution_id, record.seq) not in seen:
            parent = record.parent
            admissions.append(
                Admission(
                    record.execution_id, record.seq, record.workflow_id, str(record.origin),
                    None if parent is None else (parent.execution_id, parent.step_key),
                    record.created_at,
                )
            )  # fmt: skip
    return admissions


#: Steps of one live execution past which a run the point bound cut is said to loop.
LOOPING_STEPS = 100


def _looping(runtime: Runtime, executions: list[ExecutionRecord]) -> str:
    """For a run the point bound cut: the live execution that recorded the most steps, when
    it recorded many, as a loop of steps that may never end; else nothing. (Such a loop was
    cut by the wall clock instead, "in the workflow code", each delivery replaying more.)"""
    live = [record for record in executions if not record.terminal]
    counted = [(len(runtime.steps(record.execution_id)), record) for record in live]
    steps, record = max(counted, key=lambda pair: pair[0], default=(0, None))
    if record is None or steps < LOOPING_STEPS:
        return ""
    keys = [step.step_key for step in runtime.steps(record.execution_id)]
    return (
        f"; {record.execution_id} ({record.workflow_id}) had recorded {steps:,} steps "
        f"({', '.join(keys[:3])} ... {keys[-1]}) and was still running: a loop of steps in "
        "its workflow code that never ends? Give the loop an exit (or raise max_points if "
        "the story is that long)"
    )


def incomplete_reason(execution: Finished) -> str | None:
    """Why the run did not finish, in words (None when it did, or goes on)."""
    scenario = execution.scenario
    now = execution.clock.now()
    if execution.stopped == "max_time":
        return (
            f"cut at max_time={scenario.max_time:g}s of virtual time with work still due "
            f"(after {execution.points} choice points; a longer story raises it: "
            "ys.Scenario(..., max_time=...))"
        )
    if execution.stopped == "max_points":
        return (
            f"cut after max_points={scenario.point_limit} choice points at t={now:g} (a "
            "bound against a run that never settles; a longer one raises it: "
            "ys.Scenario(..., max_points=...))"
        )
    if execution.stopped == "timeout":
        where = execution.deadline.where or f"the simulator at choice point {execution.points}"
        return f"timed out after {execution.deadline.seconds:g}s of wall-clock time in {where}"
    return None
