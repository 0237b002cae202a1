"""``ys.replay``: an artifact's run again, exactly, or against code edited since: the check of a
fix against the failure it fixes.

An artifact holds a run's moves (the actor that went at each choice point, every fault that
fired) and, since artifacts keep it, the run's trace. When the scenario's code is the one the
artifact was made from, ``replay`` reproduces the run exactly (``run.replay``). When it was
edited (a fix), the same moves run against the edited code: the schedule is followed while
its actors wait at their points, each fault fires at the call it was recorded at (placed by
description, so a fault's point moves with the code), and the run is compared with the
recorded one event by event (``TraceEvent.facts``): where it leaves it, which recorded
violations are gone, which remain, which are new, and which recorded faults no longer fire
(their call is gone: the replay then tests nothing, and says so by its verdict, incomplete).

How the moves are run is this module's one function, ``_run_moves``: a schedule of another
form replaces it here.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from yieldstar_sim.simulation.artifact import ArtifactError, ReplayArtifact
from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT
from yieldstar_sim.simulation.faults import by_description, trace_points
from yieldstar_sim.simulation.moves import plain_move
from yieldstar_sim.simulation.result import Regression
from yieldstar_sim.simulation.run import replay as replay_exactly
from yieldstar_sim.simulation.run import replay_runtime, simulate

if TYPE_CHECKING:
    from pathlib import Path

    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.faults import Fault
    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.scenario import Scenario
    from yieldstar_sim.simulation.trace import Trace, TraceEvent


def replay(
    artifact: ReplayArtifact | str | Path,
    *,
    runtime: RuntimeChoice | None = None,
    scenario: Scenario | None = None,
    check_trace: bool = True,
    timeout: float | None = DEFAULT_TIMEOUT,
    db: str | Path | None = None,
) -> SimulationRun:
    """Replay an artifact (or the file at a path) and return the run.

    With the code the artifact was made from, the run is reproduced exactly (with
    ``check_trace``, a replay that does not reproduce the recorded trace is refused). With
    ``scenario=`` code edited since (the scenario as fixed), the recorded schedule and faults
    run against it instead, and ``run.regression`` says where the run leaves the recorded one
    and whether the violation is gone (``run.regression.fixed``); ``run.explain()`` starts with
    it. ``runtime``, ``timeout`` and ``db`` are as for ``simulate``; by default the runtime
    the artifact was made on.

    >>> import yieldstar_sim as ys
    >>> found = ys.simulate(ys.load_scenario("trigger-in-step"), runtime="memory")
    >>> fixed = ys.load_scenario("durable-start")
    >>> run = ys.replay(found.artifact(), scenario=fixed)
    >>> run.regression.fixed, run.verdict
    (True, 'ok')
    """
    loaded = artifact if isinstance(artifact, ReplayArtifact) else ReplayArtifact.load(artifact)
    target = scenario if scenario is not None else loaded.scenario_object()
    if target.fingerprint() == loaded.fingerprint:
        return replay_exactly(
            loaded, runtime=runtime, scenario=target, check_trace=check_trace, timeout=timeout,
            db=db,
        )  # fmt: skip
    return replay_against(loaded, target, runtime=runtime, timeout=timeout, db=db)


def replay_against(
    artifact: ReplayArtifact,
    scenario: Scenario,
    *,
    runtime: RuntimeChoice | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    db: str | Path | None = None,
) -> SimulationRun:
    """Run ``artifact``'s moves against ``scenario`` (its code edited since the artifact was
    made) and compare the run with the recorded one (``run.regression``). A recorded fault
    that no longer fires makes the run incomplete: it did not test what the artifact says."""
    faults = _recorded_faults(artifact)
    try:
        chosen = replay_runtime(artifact, scenario, runtime)
        run = _run_moves(artifact, scenario, faults, chosen, timeout=timeout, db=db)
    except ArtifactError:
        raise
    except Exception as error:
        raise ArtifactError(
            f"the artifact's schedule does not run against scenario {scenario.name!r}: "
            f"{type(error).__name__}: {error}"
        ) from error
    regression = compare(artifact, run, faults)
    run.regression = regression
    if regression.unfired and run.incomplete is None:
        run.incomplete = (
            f"{len(regression.unfired)} recorded fault(s) no longer fire, so the replay did "
            "not test the fix"
        )
    return run


def _run_moves(
    artifact: ReplayArtifact,
    scenario: Scenario,
    faults: list[Fault],
    runtime: RuntimeChoice,
    *,
    timeout: float | None,
    db: str | Path | None,
) -> SimulationRun:
    """The artifact's moves, run against ``scenario`` as far as its code still takes them:
    bare (each fault placed by its description instead), followed while they fit, the seed's
    moves after."""
    bare = [plain_move(move.actor, move.choice) for move in artifact.schedule]
    return simulate(
        scenario, artifact.seed, runtime=runtime, schedule=bare, strict_schedule=False,
        faults=faults, scenario_faults=False, check_faults=False, timeout=timeout, db=db,
    )  # fmt: skip


def _recorded_faults(artifact: ReplayArtifact) -> list[Fault]:
    """The artifact's faults placed by description (the worker, call, execution, step and
    occurrence of the call each fired at), read from its trace: edited code moves the
    choice-point indices, not the calls. Without a trace, as recorded (by index)."""
    if artifact.trace is None:
        return list(artifact.faults)
    points = {index: info for index, (info, _) in trace_points(artifact.trace).items()}
    return [by_description(fault, points) or fault for fault in artifact.faults]


def compare(artifact: ReplayArtifact, run: SimulationRun, faults: list[Fault]) -> Regression:
    """How ``run`` (the artifact's moves against edited code) compares with the recorded
    run: where it leaves it, and what became of the violations and the faults."""
    recorded = tuple(dict.fromkeys(v["invariant"] for v in artifact.violations))
    now = tuple(dict.fromkeys(v.invariant for v in run.violations))
    return Regression(
        recorded_scenario=artifact.scenario,
        scenario=run.scenario.name,
        recorded=recorded,
        gone=tuple(name for name in recorded if name not in now),
        still=tuple(name for name in recorded if name in now),
        new=tuple(name for name in now if name not in recorded),
        unfired=tuple(fault.describe() for fault in _unfired(run, faults)),
        parted_at=None if artifact.trace is None else run.trace.parts_from(artifact.trace),
        parting=_parting(artifact.trace, run.trace),
    )


def _unfired(run: SimulationRun, faults: list[Fault]) -> list[Fault]:
    """The faults of ``faults`` that no point of ``run`` took: each fired fault, described
    at the point it fired, is crossed off once."""
    points = {index: info for index, (info, _) in trace_points(run.trace).items()}
    fired = [by_description(fault, points) or fault for fault in run.faults]
    left = []
    for fault in faults:
        if fault in fired:
            fired.remove(fault)
        else:
            left.append(fault)
    # A fault recorded by index (an artifact without a trace) cannot be matched by
    # description: only how many fired is known.
    return left[len(fired) :] if any(f.at is not None for f in faults) else left


def _parting(recorded: Trace | None, trace: Trace) -> str:
    """Where the run leaves the recorded one, in words."""
    if recorded is None:
        return (
            "the artifact kept no trace of the recorded run (a long run, or an older "
            "artifact), so where the run leaves it is not known"
        )
    at = trace.parts_from(recorded)
    if at is None:
        return f"the run does what the recorded one did, event for event ({len(trace)} events)"
    return f"the run leaves the recorded one at event #{at}: {_event_words(recorded, trace, at)}"


def _event_words(recorded: Trace, trace: Trace, at: int) -> str:
    """Event ``at`` as each run has it (or that one of them ended before it)."""

    def line(event: TraceEvent) -> str:
        return f'"t={event.t:g} {event.worker or "-"} {event.text}"'

    was = recorded.events[at] if at < len(recorded.events) else None
    now = trace.events[at] if at < len(trace.events) else None
    if was is None and now is not None:
        return f"the recorded run ended there; the edited code goes on with {line(now)}"
    if now is None and was is not None:
        return f"the edited code ends there; the recorded run went on with {line(was)}"
    assert was is not None
    assert now is not None  # parts_from found them different
    old, new = was.to_json(), now.to_json()
    field = next(
        (k for k in ("t", "kind", "worker", "op", "execution_id", "step_key", "token", "data")
         if old.get(k) != new.get(k)),
        "data",
    )  # fmt: skip
    if field not in ("token", "data"):
        return f"recorded {line(was)}, now {line(now)}"
    # The same call, other facts (an effect's idempotency key, a payload's field): name it.
    was_value, now_value = old.get(field), new.get(field)
    if isinstance(was_value, dict) and isinstance(now_value, dict):
        field = next(
            k for k in sorted({*was_value, *now_value}) if was_value.get(k) != now_value.get(k)
        )
        was_value, now_value = was_value.get(field), now_value.get(field)
    return f"{line(now)}, whose {field} was {_short(was_value)}, is {_short(now_value)}"


def _short(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."
