"""``simulate``: one deterministic run of a scenario, checked; ``replay``: an artifact's run again.

>>> import yieldstar_sim as ys
>>> from yieldstar_sim.simulation.scenario_files import load_scenario
>>> run = ys.simulate(load_scenario("durable-start"), seed=0, runtime="memory")
>>> run.ok, len(run.effects_named("courier.booked"))
(True, 1)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.core.model import ExecutionNotFoundError
from yieldstar_sim.core.ops import Op
from yieldstar_sim.core.suggest import did_you_mean
from yieldstar_sim.simulation.artifact import ArtifactError, ReplayArtifact
from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT
from yieldstar_sim.simulation.determinism import first_difference, not_deterministic
from yieldstar_sim.simulation.execution import Execution
from yieldstar_sim.simulation.faults import trace_points
from yieldstar_sim.simulation.finish import finish, invariants_of
from yieldstar_sim.simulation.scenario import FaultPlanError, ScenarioError, given_scenario
from yieldstar_sim.simulation.scenario_runtime import runtime_for
from yieldstar_sim.simulation.trace_payloads import ClientAnswerData, TraceKind

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.faults import Fault
    from yieldstar_sim.simulation.moves import Move
    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.scenario import Scenario


def simulate(
    scenario: Scenario,
    seed: int = 0,
    *,
    runtime: RuntimeChoice | None = None,
    db: str | Path | None = None,
    faults: Sequence[Fault] = (),
    schedule: Sequence[Move] = (),
    scenario_faults: bool = True,
    timeout: float | None = DEFAULT_TIMEOUT,
    check_faults: bool = True,
    strict_schedule: bool = True,
    scheduler: Callable[[Execution], Move] | None = None,
) -> SimulationRun:
    """Run ``scenario`` once: deterministic for a given seed, schedule and faults.

    ``schedule`` is the moves to take at the first choice points (a replay artifact's); a move
    that does not fit its point raises ``ScheduleMismatch`` (with ``strict_schedule=False``,
    the run goes on from there as if the schedule had ended). Past the schedule, and wherever
    a move names no fault but the plan places one, the seed's choices and the fault plan decide
    (``Execution.default_move``), or ``scheduler``, called at each choice point for the move
    to take (a search's: PCT's priorities).

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
    scenario = given_scenario(scenario, "simulate")
    execution = Execution(
        scenario,
        seed=seed,
        runtime=runtime_for(scenario, runtime, "duckdb"),
        db=db,
        faults=faults,
        scenario_faults=scenario_faults,
        timeout=timeout,
    )
    try:
        follow(execution, schedule, strict=strict_schedule)
        if scheduler is None:
            execution.take_defaults()
        else:
            drive(execution, scheduler)
        execution.close_actors()
    except BaseException:
        execution.close()
        raise
    run = finish(execution)
    if check_faults and execution.plan.unfired and run.incomplete is None:
        run.runtime.close()
        raise FaultPlanError(unfired_faults(execution))
    unknown = (
        unknown_cancel_targets(execution) or unknown_prune_targets(execution)
        if check_faults
        else None
    )
    if unknown is not None:
        run.runtime.close()
        raise ScenarioError(unknown)
    # Only a run that finished: a cut one may not have come to the name yet.
    mistake = misnamed(run) if check_faults and run.incomplete is None else None
    if mistake is not None:
        run.runtime.close()
        raise ScenarioError(f"scenario {scenario.name!r}: {mistake}")
    return run


def drive(execution: Execution, scheduler: Callable[[Execution], Move]) -> None:
    """Take the move ``scheduler`` chooses at each choice point, to the run's end: the one loop
    every run of a scenario goes through."""
    while not execution.done():
        execution.take(scheduler(execution))


def follow(execution: Execution, schedule: Sequence[Move], *, strict: bool = True) -> int | None:
    """Take ``schedule``'s moves, in order, each struck by the fault the plan places at its
    point when it names none. A move that does not fit its point raises ``ScheduleMismatch``
    (``strict``), or ends the following there: returns the index of the first move not
    taken (None when every move was), the run left at that point.

    The seed's random numbers are drawn at each point followed as a plain run draws them, so
    that a run that leaves its schedule (it ended, or no longer fits) goes on as the seed's
    run would from there."""
    for index, move in enumerate(schedule):
        if execution.done():
            return index
        if not execution.fits(move):
            if strict:
                execution.take(move)  # raises, naming what does not fit
            return index
        execution.seeded_move()
        execution.take(execution.planned(move))
    return None


def unknown_cancel_targets(execution: Execution) -> str | None:
    """A client's cancel that the runtime refused because its execution never existed in the
    run: a misspelled ID, which would otherwise pass as an ordinary refused answer (and a
    green verdict). None when every cancel named an execution the run had."""
    clients = set(execution.scenario.client_names)
    missing: dict[str, str] = {}
    had: set[str] = set()
    for event in execution.trace:
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
        f"scenario {execution.scenario.name!r}: "
        + "; ".join(
            f"client {client}'s cancel names execution {execution_id!r}, which the run never had"
            for execution_id, client in never.items()
        )
        + f" (its executions: {known})"
    )


def unknown_prune_targets(execution: Execution) -> str | None:
    """A ``ys.Prune`` of an execution the run never had: a misspelled ID, which passed as a
    refusal in the trace beside a green verdict (one that does not exist *yet* when a fault
    delays it is the runtime's answer). None when every prune named an execution of the run."""
    had = {
        event.execution_id
        for event in execution.trace
        if event.execution_id is not None and event.kind != TraceKind.PRUNE
    }
    never = [p for p in execution.scenario.prunes if p.execution_id not in had]
    if not never:
        return None
    return f"scenario {execution.scenario.name!r}: " + "; ".join(
        f"ys.Prune({p.execution_id!r}) at t={p.at:g} names no execution of the run"
        f"{did_you_mean(p.execution_id, had)} (its executions: {', '.join(sorted(had))})"
        for p in never
    )


def unfired_faults(execution: Execution) -> str:
    """Why the plan's unfired faults matched nothing: the fault and what it could have named."""
    seen: dict[str, dict[str, set[str]]] = {}
    for event in execution.trace:
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
    points = {index: info for index, (info, _) in trace_points(execution.trace).items()}
    lines = []
    for fault in execution.plan.unfired:
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
    clients = execution.scenario.client_names
    return (
        f"{'; '.join(lines)} (the ops the run makes: {ops}; the workers: "
        f"{', '.join(execution.scenario.worker_names)}"
        + (f"; the clients: {', '.join(clients)}" if clients else "")
        + ")"
    )


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


def replay_runtime(
    artifact: ReplayArtifact, scenario: Scenario, runtime: RuntimeChoice | None
) -> RuntimeChoice:
    """The runtime an artifact replays on: ``runtime`` if given, else the one this process
    made it on, the scenario's own, or the artifact's when that is a bundled one. An artifact
    made on your own runtime names it but never imports it (an artifact is data)."""
    from yieldstar_sim.runtime.factory import BUNDLED

    chosen = runtime if runtime is not None else artifact.runtime_choice
    if chosen is None and scenario.runtime is not None:
        chosen = scenario.runtime  # named by the scenario's code, which the artifact checks
    if chosen is None and artifact.runtime not in BUNDLED:
        raise ArtifactError(
            f"the artifact was made on the runtime {artifact.runtime!r}; an artifact never names "
            f"code to import: replay it with runtime={artifact.runtime!r} (the CLI's --runtime) "
            "if you trust that runtime, or on 'memory' or 'duckdb'"
        )
    return chosen if chosen is not None else artifact.runtime


def replay(
    artifact: ReplayArtifact | str | Path,
    *,
    runtime: RuntimeChoice | None = None,
    scenario: Scenario | None = None,
    check_trace: bool = True,
    timeout: float | None = 60.0,
    db: str | Path | None = None,
) -> SimulationRun:
    """Replay an artifact (or the file at a path) exactly and return the run (on DuckDB, in
    the file ``db`` if given; ``timeout``: its wall-clock limit, as for ``simulate``).

    Refuses when the scenario's code fingerprint differs from the artifact's (``ys.replay``,
    ``regression.replay``, runs the schedule against edited code instead); with
    ``check_trace`` it also refuses when the replay does not reproduce the recorded trace.
    ``runtime`` defaults to the artifact's when that is a bundled one; an artifact made on your
    own runtime names it but never imports it: pass ``runtime=`` (an artifact is data).
    """
    loaded = artifact if isinstance(artifact, ReplayArtifact) else ReplayArtifact.load(artifact)
    target = scenario if scenario is not None else loaded.scenario_object()
    chosen = replay_runtime(loaded, target, runtime)
    fingerprint = target.fingerprint()
    if fingerprint != loaded.fingerprint:
        raise ArtifactError(
            f"the artifact of scenario {loaded.scenario!r} was made from other code than "
            f"scenario {target.name!r} has now (fingerprint {loaded.fingerprint} then, "
            f"{fingerprint} now), so it does not replay exactly: ys.replay (the CLI's replay) "
            "runs its schedule against the code as it is and says whether the violation is gone"
        )

    def again(db: str | Path | None) -> SimulationRun:
        return simulate(
            target,
            loaded.seed,
            runtime=chosen,
            schedule=loaded.schedule,
            check_faults=False,  # a fault that no longer fires shows as a different trace
            timeout=timeout,
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
