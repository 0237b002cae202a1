"""The order in which a ``step.all``'s concurrent step bodies complete, as a choice point.

The driver asks (``OrderCompletions``) once per delivery of a group, for the bodies not yet
recorded. Each body becomes a small actor of the kernel waiting at a choice point of its own
(``w1 complete order-42/email``); the order in which the kernel lets them go is the order in
which they complete, and are run and checkpointed. So every strategy explores it as it
explores any interleaving, and the exhaustive search's footprints see each completion touch
its execution, so two completions of one group are dependent and both orders are tried.

No fault is placed at a completion (``faults.KIND_OPS``): the runtime calls around it (each
body's elapses, each checkpoint's ``put_step``) are where the worker crashes or freezes.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.faults import new_point_info
from yieldstar_sim.simulation.kernel import Park
from yieldstar_sim.simulation.points import pass_point
from yieldstar_sim.simulation.trace_payloads import CompletionData, TraceKind

if TYPE_CHECKING:
    from collections.abc import Generator

    from yieldstar_sim.core.commands import OrderCompletions
    from yieldstar_sim.simulation.state import RunState


def completion_order(
    state: RunState, worker: str, command: OrderCompletions
) -> Generator[Any, Any, tuple[str, ...]]:
    """Let the kernel choose the order of ``command``'s step bodies; return it."""
    parent = state.kernel.running
    if parent is None:  # pragma: no cover - perform always runs inside an actor
        raise RuntimeError("a completion order is asked for outside any actor")
    # The order is shared with the bodies' actors, so it lives in the state (restored with
    # it), under a number this actor is told again when it is made again.
    what = f"complete {command.execution_id} {' '.join(command.step_keys)}"
    group = state.answer(partial(state.new_group, what))
    of = len(command.step_keys)
    for key in command.step_keys:
        info = new_point_info(worker, Op.COMPLETE, command.execution_id, key)
        # Named apart from its label, so that the state keys, which blind an actor's own name
        # in what it waits for, still read which body waits.
        actor = f"{info.label} (body)"
        state.spawn(actor, partial(_completes, state, info, group, of, parent))
    while state.answer(partial(len, state.groups[group])) < of:
        yield Park()
    return tuple(state.groups[group])


def _completes(
    state: RunState, info: Any, group: int, of: int, parent: str
) -> Generator[Any, Any, None]:
    """One body's completion: it waits at its choice point, then takes the next place."""
    _, where = yield from pass_point(state, info)
    order = state.groups[group]
    if not state.replaying:
        order.append(info.step_key)
    state.trace.add(
        state.clock.now(), TraceKind.COMPLETION,
        f"step {info.step_key} of {info.execution_id} completes {_ordinal(len(order))} of {of}",
        data=CompletionData(len(order), of), **where,
    )  # fmt: skip
    state.kernel.wake(parent)


def _ordinal(place: int) -> str:
    return {1: "first", 2: "second", 3: "third"}.get(place, f"#{place}")
