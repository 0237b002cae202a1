"""``simulate``: one deterministic run of a scenario, checked; ``replay``: an artifact's run again.

>>> import yieldstar_sim as ys
>>> from yieldstar_sim.simulation.scenario_files import load_scenario
>>> run = ys.simulate(load_scenario("durable-start"), seed=0, runtime="memory")
>>> run.ok, len(run.effects_named("courier.booked"))
(True, 1)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.core.error_words import error_words
from yieldstar_sim.core.interrupts import raised_by_code
from yieldstar_sim.core.model import ExecutionNotFoundError
from yieldstar_sim.core.ops import Op
from yieldstar_sim.core.suggest import did_you_mean
from yieldstar_sim.simulation.artifact import ArtifactError, ReplayArtifact
from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT, UNGUARDED, Deadline, RunTimedOut
from yieldstar_sim.simulation.determinism import first_difference, not_deterministic
from yieldstar_sim.simulation.faults import trace_points
from yieldstar_sim.simulation.invariants import (
    BUILT_IN,
    AtMostOnce,
    AttemptsNeverOverlap,
    CancelledLiveExecutionsEndCancelled,
    ExecutionsEndAsExpected,
    Invariant,
    Violation,
    as_invariant,
)
from yieldstar_sim.simulation.result import SimulationRun
from yieldstar_sim.simulation.scenario import FaultPlanError, ScenarioError
from yieldstar_sim.simulation.scenario_runtime import runtime_for
from yieldstar_sim.simulation.simulator import Simulator
from yieldstar_sim.simulation.trace import Admission
from yieldstar_sim.simulation.trace_payloads import ClientAnswerData

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from yieldstar_sim.core.authoring import Workflow
    from yieldstar_sim.core.model import ExecutionRecord
    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.faults import Fault
    from yieldstar_sim.simulation.scenario import Scenario


def simulate(
    scenario: Scenario,
    seed: int = 0,
    *,
    runtime: RuntimeChoice | None = None,
    db: str | Path | None = None,
    faults: Sequence[Fault] = (),
    schedule: Sequence[str] = (),
    scenario_faults: bool = True,
    timeout: float | None = DEFAULT_TIMEOUT,
    check_faults: bool = True,
) -> SimulationRun:
    """Run ``scenario`` once: deterministic for a given seed, schedule and faults.

    ``runtime`` is ``"duckdb"`` (in memory, or the file ``db``), ``"memory"``, or your own: a
    factory the simulator calls with its virtual clock as ``clock=``, or its
    ``"package.module:factory"`` name; by default the scenario's own (``Scenario.runtime``),
    else DuckDB. ``faults`` are
    added to the scenario's own fault plan (``scenario_faults=False`` leaves that plan out, as a
    replay does: its artifact holds every fault that fired). A fault that no choice point of
    the run matched raises ``FaultPlanError`` (a scenario error): the run would not test what
    its plan says (``check_faults=False`` allows it: a what-if re-run whose new fault moved the
    old ones' points away). An invariant that watches a name the run never had, where the run
    had that name misspelt (``misnamed``: ``at_most_once("courier.bookd")`` beside a
    ``courier.booked``), raises ``ScenarioError`` too; a name with nothing like it in the run
    is a warning (``run.warnings``). ``timeout`` bounds the run's wall-clock seconds (None: no
    bound); a run it cuts is ``incomplete``.
    """
    simulator = Simulator(
        scenario,
        seed=seed,
        runtime=runtime_for(scenario, runtime, "duckdb"),
        db=db,
        schedule=schedule,
        faults=faults,
        scenario_faults=scenario_faults,
        timeout=timeout,
    )
    simulator.run()
    run = finish(simulator)
    if check_faults and simulator.plan.unfired and run.incomplete is None:
        run.runtime.close()
        raise FaultPlanError(unfired_faults(simulator))
    unknown = unknown_cancel_targets(simulator) if check_faults else None
    if unknown is not None:
        run.runtime.close()
        raise ScenarioError(unknown)
    # Only a run that finished: a cut one may not have come to the name yet.
    mistake = misnamed(run) if check_faults and run.incomplete is None else None
    if mistake is not None:
        run.runtime.close()
        raise ScenarioError(f"scenario {scenario.name!r}: {mistake}")
    return run


def unknown_cancel_targets(simulator: Simulator) -> str | None:
    """A client's cancel that the runtime refused because its execution never existed in the
    run: a misspelled ID, which would otherwise pass as an ordinary refused answer (and a
    green verdict). None when every cancel named an execution the run had."""
    clients = set(simulator.scenario.client_names)
    missing: dict[str, str] = {}
    had: set[str] = set()
    for event in simulator.trace:
        data = event.data
        if event.worker in clients and event.op == Op.CANCEL:
            if (
                isinstance(data, ClientAnswerData)
                and data.code == ExecutionNotFoundError.__name__
                and data.execution_id is not None
            ):
                missing.setdefault(data.execution_id, data.client)
            continue
        if event.execution_id is not None:
            had.add(event.execution_id)
    never = {
        execution_id: client for execution_id, client in missing.items() if execution_id not in had
    }
    if not never:
        return None
    known = ", ".join(sorted(had)) or "none"
    return (
        f"scenario {simulator.scenario.name!r}: "
        + "; ".join(
            f"client {client}'s cancel names execution {execution_id!r}, which the run never had"
            for execution_id, client in never.items()
        )
        + f" (its executions: {known})"
    )


def unfired_faults(simulator: Simulator) -> str:
    """Why the plan's unfired faults matched nothing: the fault and what it could have named."""
    seen: dict[str, dict[str, set[str]]] = {}
    for event in simulator.trace:
        if event.point is None or event.op is None:
            continue
        where = seen.setdefault(event.op, {"workers": set(), "steps": set(), "executions": set()})
        for part, value in (
            ("workers", event.worker),
            ("steps", event.step_key),
            ("executions", event.execution_id),
        ):
            if value is not None:
                where[part].add(value)
    # The points as the plan saw them (a claim's point did not know its execution yet).
    points = {index: info for index, (info, _) in trace_points(simulator.trace).items()}
    lines = []
    for fault in simulator.plan.unfired:
        matched = sum(1 for index, info in points.items() if fault.matches(index, info))
        if matched >= fault.occurrence:
            lines.append(
                f"the fault '{fault.describe()}' never fired: an earlier fault of the plan took "
                "its choice point (one fault per point)"
            )
            continue
        if matched:
            lines.append(
                f"the fault '{fault.describe()}' matches {matched} choice point(s) of the run, "
                f"fewer than its occurrence {fault.occurrence}"
            )
            continue
        sentence = f"the fault '{fault.describe()}' matches no choice point of the run"
        steps = {step for where in seen.values() for step in where["steps"]}
        if fault.step_key is not None and fault.step_key not in steps:
            sentence += f"; no step {fault.step_key!r}{did_you_mean(fault.step_key, steps)} runs"
        executions = {execution for where in seen.values() for execution in where["executions"]}
        if fault.execution_id is not None and fault.execution_id not in executions:
            sentence += (
                f"; no execution {fault.execution_id!r}"
                f"{did_you_mean(fault.execution_id, executions)} runs"
            )
        if fault.op is not None and fault.op in seen:
            where = seen[fault.op]
            parts = [
                f"{name} {', '.join(sorted(values))}" for name, values in where.items() if values
            ]
            sentence += f"; {fault.op} happens with " + "; ".join(parts)
        elif fault.op is not None:
            sentence += f"; no {fault.op} happens in it"
        lines.append(sentence)
    ops = ", ".join(sorted(seen)) or "none"
    clients = simulator.scenario.client_names
    return (
        f"{'; '.join(lines)} (the ops the run makes: {ops}; the workers: "
        f"{', '.join(simulator.scenario.worker_names)}"
        + (f"; the clients: {', '.join(clients)}" if clients else "")
        + ")"
    )


#: The invariants whose code is the toolkit's own: it ends, so the wall-clock limit does not
#: guard it (a guard cost about a microsecond and the text naming it, 14 times every run).
_OURS: frozenset[type] = frozenset(
    {*map(type, BUILT_IN), ExecutionsEndAsExpected, CancelledLiveExecutionsEndCancelled,
     AttemptsNeverOverlap, AtMostOnce}
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
        *map(as_invariant, scenario.invariants),
    )


def _deployed(scenario: Scenario) -> list[Workflow]:
    return [workflow for deploy in scenario.deploys for workflow in deploy.workflows]


def misnamed(run: SimulationRun) -> str | None:
    """The names the scenario's invariants watch that the run never had, each surely a
    misspelling of one it had (``Invariant.misnamed``): a mistake in the scenario, which a
    warning beside an ``ok`` would let pass as a green verdict. None when there is none."""
    mistakes = []
    for invariant in invariants_of(run.scenario):
        check = getattr(invariant, "misnamed", None)
        found = check(run) if callable(check) else None
        if found:
            mistakes.append(found)
    return "; ".join(mistakes) or None


def finish(simulator: Simulator) -> SimulationRun:
    """Collect a finished simulator's records and check every invariant."""
    runtime = simulator.runtime
    executions = runtime.executions()
    incomplete = simulator.incomplete_reason()
    if incomplete is not None:
        live = [record for record in executions if not record.terminal]
        if live:
            incomplete += (
                "; still live: "
                + ", ".join(f"{r.execution_id} ({r.workflow_id}, {r.status})" for r in live[:5])
                + (f" and {len(live) - 5} more" if len(live) > 5 else "")
            )
    run = SimulationRun(
        scenario=simulator.scenario,
        seed=simulator.seed,
        runtime_kind=simulator.runtime_kind,
        runtime_choice=simulator.runtime_choice,
        runtime=runtime,
        trace=simulator.trace,
        effects=list(simulator.ledger.effects),
        schedule=simulator.kernel.schedule,
        choices=list(simulator.kernel.choices),
        faults=[fault for _, fault in simulator.plan.applied],
        executions=executions,
        start_requests=runtime.start_requests(),
        steps={record.execution_id: runtime.steps(record.execution_id) for record in executions},
        points=simulator.kernel.points,
        ended_at=simulator.clock.now(),
        incomplete=incomplete,
        admissions=_all_admissions(simulator, executions),
        world=simulator.store.values(),
    )
    invariants = invariants_of(simulator.scenario)
    # The user's invariants' own wall-clock limit: armed only when there is one to guard.
    theirs = any(type(invariant) not in _OURS for invariant in invariants)
    deadline = Deadline(simulator.deadline.seconds if theirs else None)
    guarded = deadline.seconds is not None  # else no guard, and no text naming what it guards
    written = bool(run.world)
    with deadline:
        for invariant in invariants:
            if incomplete is not None and getattr(invariant, "final_only", True):
                continue  # about how a run ends: a cut run has not ended
            if written:
                # Each invariant reads the world as the run left it: one that popped a key
                # (or appended to a list) hid it from the next, which could then hold.
                run.world = simulator.store.values()
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
                    or simulator.incomplete_reason()
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
                    Violation(
                        invariant.name,
                        f"the invariant itself raised {error_words(error)}",
                    )
                )
            if warning:
                run.warnings.append(warning)
    if written:
        run.world = simulator.store.values()
    return run


def _all_admissions(simulator: Simulator, executions: list[ExecutionRecord]) -> list[Admission]:
    """The admissions the simulator saw, and any the final records hold that it did not."""
    admissions = list(simulator.admissions)
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


def replay(
    artifact: ReplayArtifact | str | Path,
    *,
    runtime: RuntimeChoice | None = None,
    scenario: Scenario | None = None,
    check_trace: bool = True,
    timeout: float | None = 60.0,
    db: str | Path | None = None,
) -> SimulationRun:
    """Replay an artifact (or the file at a path) and return the run (on DuckDB, in the file
    ``db`` if given; ``timeout``: its wall-clock limit, as for ``simulate``).

    Refuses when the scenario's code fingerprint differs from the artifact's; with
    ``check_trace`` it also refuses when the replay does not reproduce the recorded trace.
    ``runtime`` defaults to the artifact's when that is a bundled one; an artifact made on your
    own runtime names it but never imports it: pass ``runtime=`` (an artifact is data).
    """
    from yieldstar_sim.runtime.factory import BUNDLED

    loaded = artifact if isinstance(artifact, ReplayArtifact) else ReplayArtifact.load(artifact)
    runtime = runtime if runtime is not None else loaded.runtime_choice
    target = scenario if scenario is not None else loaded.scenario_object()
    if runtime is None and target.runtime is not None:
        runtime = target.runtime  # named by the scenario's code, which the artifact checks
    if runtime is None and loaded.runtime not in BUNDLED:
        raise ArtifactError(
            f"the artifact was made on the runtime {loaded.runtime!r}; an artifact never names "
            f"code to import: replay it with runtime={loaded.runtime!r} (the CLI's --runtime) "
            "if you trust that runtime, or on 'memory' or 'duckdb'"
        )
    fingerprint = target.fingerprint()
    if fingerprint != loaded.fingerprint:
        raise ArtifactError(
            f"the code of scenario {target.name!r} changed since the artifact was made "
            f"(fingerprint {loaded.fingerprint} then, {fingerprint} now); the schedule no longer "
            "describes it: explore again for a new artifact"
        )

    def again(db: str | Path | None) -> SimulationRun:
        return simulate(
            target,
            loaded.seed,
            runtime=runtime or loaded.runtime,
            schedule=loaded.schedule,
            check_faults=False,  # a fault that no longer fires shows as a different trace
            timeout=timeout,
            faults=loaded.faults,
            scenario_faults=False,
            db=db,
        )

    try:
        run = again(db)
    except Exception as error:
        raise ArtifactError(
            f"the artifact does not replay: {type(error).__name__}: {error}"
        ) from error
    if check_trace and loaded.trace_digest and run.trace_digest() != loaded.trace_digest:
        # Two replays that differ from each other blame the scenario, not the artifact.
        second = again(None)
        second.runtime.close()
        where = first_difference(run.trace, second.trace)
        if where is not None:
            run.runtime.close()
            raise ArtifactError(f"the artifact does not replay: {not_deterministic(where)}")
        raise ArtifactError(
            "the replay took another path than the recorded run (trace digest "
            f"{run.trace_digest()} instead of {loaded.trace_digest})"
        )
    return run
