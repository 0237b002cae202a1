"""What a runtime decided on its own, in the trace (issue 54, item 6).

A runtime adapter may report the actions it takes by itself (``runtime.protocol.
ReportsActions``: archived, expired, dead-lettered, requeued ...): the simulator asks it after
each runtime call and traces each action as a ``runtime`` event at that call's time and
execution, so that a run the runtime ended on its own shows why, and a violation's sentence
names the action (``invariants.outcomes``) instead of a step that never failed. A runtime that
does not report is never asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.runtime.protocol import ReportsActions, RuntimeAction
from yieldstar_sim.simulation.trace_payloads import RuntimeActionData, TraceKind

if TYPE_CHECKING:
    from yieldstar_sim.core.ops import Op
    from yieldstar_sim.simulation.state import RunState


def reports(runtime: object) -> bool:
    """Whether ``runtime`` reports the actions it takes on its own."""
    return isinstance(runtime, ReportsActions)


def trace_actions(state: RunState, op: Op | None = None) -> None:
    """Trace every action the runtime reports since it was last asked (a write: actors
    ``tell`` it, after the call ``op`` during which it acted)."""
    runtime = state.runtime
    assert isinstance(runtime, ReportsActions)
    for action in runtime.take_actions():
        if not isinstance(action, RuntimeAction):
            raise TypeError(
                f"{type(runtime).__name__}.take_actions() returned {action!r}: a runtime "
                "reports yieldstar_sim.runtime.RuntimeAction(action, execution_id, reason) values"
            )
        reason = f": {action.reason}" if action.reason else ""
        # Where the action left the execution (no call of the trace says it otherwise).
        record = runtime.execution(action.execution_id)
        state.trace.add(
            state.clock.now(), TraceKind.RUNTIME,
            f"the runtime {action.action} {action.execution_id}{reason}",
            execution_id=action.execution_id, op=op,
            data=RuntimeActionData(
                action.action, action.reason, None if record is None else str(record.status)
            ),
        )  # fmt: skip
