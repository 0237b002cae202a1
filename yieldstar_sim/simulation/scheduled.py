"""The scenario's own actor: its direct triggers, deploys, cancels and prunes, at their times.

Triggers and cancels made by a ``ys.Client`` are that client's actor's (``clients.py``), with
choice points and faults; these are made without either, exactly as a scenario writes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.core.model import (
    AdmissionErrorCode,
    ExecutionAdmissionError,
    ExecutionNotFoundError,
    ExecutionStateError,
)
from yieldstar_sim.simulation.kernel import Wait
from yieldstar_sim.simulation.runtime_actions import trace_actions
from yieldstar_sim.simulation.scenario import Cancel, Deploy, Prune, ScenarioError, Trigger
from yieldstar_sim.simulation.trace_payloads import (
    CancelData,
    DeployData,
    PruneData,
    TraceKind,
    TriggerData,
)

if TYPE_CHECKING:
    from yieldstar_sim.simulation.kernel import Actor
    from yieldstar_sim.simulation.state import RunState

#: The actor's name in the kernel (and in its choices).
SCHEDULED = "~client"


def scheduled_actor(state: RunState) -> Actor:
    """Make the scenario's direct triggers, cancels and prunes and announce its deploys, in
    time order (at one instant: triggers, deploys, cancels, prunes)."""
    scenario = state.scenario
    timeline: list[tuple[float, int, Trigger | Deploy | Cancel | Prune]] = [
        (t.at, 0, t) for t in scenario.triggers if t.client is None
    ]
    timeline += [(d.at, 1, d) for d in scenario.deploys if d.at > 0]
    timeline += [(c.at, 2, c) for c in scenario.cancels if c.client is None]
    timeline += [(p.at, 3, p) for p in scenario.prunes]
    for at, _, item in sorted(timeline, key=lambda entry: entry[:2]):
        if at > state.clock.now():
            yield Wait(at)
        # Each call, with what it writes of it, is one answer (``RunState.ask``).
        admitted = True
        if isinstance(item, Cancel):
            state.ask(_cancel, state, item, at)
        elif isinstance(item, Prune):
            state.ask(_prune, state, item.execution_id)
        elif isinstance(item, Trigger):
            admitted = state.ask(_trigger, state, item)
        if state.reports and not isinstance(item, Deploy):
            # What the runtime decided on its own during the call.
            state.tell(trace_actions, state)
        if not admitted:
            continue  # refused: nothing new for the workers
        if isinstance(item, Deploy):
            names = tuple(w.name for w in item.workflows)
            state.event(
                state.clock.now(), TraceKind.DEPLOY, f"deploy new code for {', '.join(names)}",
                data=DeployData(names),
            )  # fmt: skip
        state.nudge()


def _cancel(state: RunState, item: Cancel, at: float) -> None:
    try:
        cancelled = state.runtime.cancel(item.execution_id)
    except ExecutionNotFoundError as missing:
        # A scenario's own cancel has no client to answer: a misspelled ID is the scenario's
        # mistake, named as such (it read "ExecutionNotFoundError: ...").
        known = ", ".join(r.execution_id for r in state.runtime.executions())
        raise ScenarioError(
            f"scenario {state.scenario.name!r}: ys.Cancel({item.execution_id!r}) at t={at:g} "
            f"names no execution of the run (at that time: {known or 'none'})"
        ) from missing
    reached = ", ".join(cancelled) or "nothing live"
    state.trace.add(
        state.clock.now(), TraceKind.CANCEL, f"cancel {item.execution_id}: requested for {reached}",
        execution_id=item.execution_id, data=CancelData(tuple(cancelled)),
    )  # fmt: skip


def _trigger(state: RunState, item: Trigger) -> bool:
    """Admit the trigger's execution; False when the runtime refused it."""
    try:
        execution_id = state.runtime.trigger(
            item.workflow_id, item.params, execution_id=item.execution_id
        )
    except ExecutionAdmissionError as refused:
        if refused.code != AdmissionErrorCode.EXECUTION_EXISTS:
            # Refused for what the scenario wrote (its params, its ID): every run would admit
            # nothing from it and check nothing, and came back green.
            raise ScenarioError(
                f"scenario {state.scenario.name!r}: the runtime refused {item.describe()}: "
                f"{refused.code}: {refused}"
            ) from refused
        # The runtime's answer to a caller-chosen ID that exists: an event of the run, not the
        # end of it.
        state.trace.add(
            state.clock.now(), TraceKind.TRIGGER,
            f"trigger of {item.workflow_id} as {item.execution_id} refused: "
            f"{refused.code}: {refused}",
            data=TriggerData(item.workflow_id, item.execution_id, str(refused.code)),
        )  # fmt: skip
        return False
    event = state.trace.add(
        state.clock.now(), TraceKind.TRIGGER, f"trigger admits {execution_id} ({item.workflow_id})",
        execution_id=execution_id, data=TriggerData(item.workflow_id),
    )  # fmt: skip
    state.observe_admission(execution_id, "trigger", None, event)
    return True


def _prune(state: RunState, execution_id: str) -> None:
    try:
        state.runtime.prune(execution_id)
    except (ExecutionNotFoundError, ExecutionStateError) as refused:
        # Not there (yet: a fault may delay it) or not ended: an event of the run. One the run
        # never had at all is a typo, which ``simulate`` reports once the run is over.
        text, data = f"prune {execution_id} refused: {refused}", PruneData(str(refused))
    else:
        text = f"prune {execution_id}: its steps, wake and start requests are gone"
        data = PruneData(None)
    state.trace.add(state.clock.now(), TraceKind.PRUNE, text, execution_id=execution_id, data=data)
