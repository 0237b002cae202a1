"""The order in which a ``step.all``'s concurrent step bodies complete, as choice points.

The driver asks (``OrderCompletions``) once per delivery of a group, for the bodies not yet
recorded. The worker then passes one choice point per body, whose options are the bodies not
completed yet (``w1 complete order-42``, options ``email`` and ``label``): the move taken
there names the one that completes next (``Move.choice``). Other actors may go between two
completions, as they may between any two points of a worker. So every strategy explores the
order as a move: the exhaustive and the systematic searches try each body at each place.

No fault is placed at a completion (``faults.KIND_OPS``): the runtime calls around it (each
body's elapses, each checkpoint's ``put_step``) are where the worker crashes or freezes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.faults import new_point_info
from yieldstar_sim.simulation.points import pass_point
from yieldstar_sim.simulation.trace_payloads import CompletionData, TraceKind

if TYPE_CHECKING:
    from collections.abc import Generator

    from yieldstar_sim.core.commands import OrderCompletions
    from yieldstar_sim.simulation.state import RunState


def completion_order(
    state: RunState, worker: str, command: OrderCompletions
) -> Generator[Any, Any, tuple[str, ...]]:
    """Let the moves taken at one choice point per body choose the order of ``command``'s
    step bodies; return it."""
    left = list(command.step_keys)
    of = len(left)
    info = new_point_info(worker, Op.COMPLETE, command.execution_id)
    order: list[str] = []
    while left:
        move, where = yield from pass_point(state, info, options=tuple(left))
        index = move.choice
        if index is None or not 0 <= index < len(left):  # pragma: no cover - Execution checks
            raise ValueError(f"a completion among {len(left)} bodies was given {index!r}")
        key = left.pop(index)
        order.append(key)
        where["step_key"] = key
        state.event(
            state.clock.now(), TraceKind.COMPLETION,
            f"step {key} of {command.execution_id} completes {_ordinal(len(order))} of {of}",
            data=CompletionData(len(order), of), **where,
        )  # fmt: skip
    return tuple(order)


def _ordinal(place: int) -> str:
    return {1: "first", 2: "second", 3: "third"}.get(place, f"#{place}")
