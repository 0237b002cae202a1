"""A step body's draw (``step.world.choice``, ``step.world.coin``) as a choice point.

A body is a plain function run at once, so it cannot wait at a choice point halfway. So a body
that draws runs up to its first draw not decided yet (``port.Undecided``), and that run is
taken back (``workers._Delivering._body``: nothing of it had landed, its store writes and reads
are undone); the draw is then decided here, and the body runs again from its start with that
value, up to its next draw, and so on. Its Python code before a draw thus runs again, as
workflow code replays: what it did to the world counts once.

The draw is decided the way a ``step.all``'s completion order is (``completions.py``): each
option becomes a small kernel actor (``w1 draw order-42/route (draw 0, option 1 of 2)``)
waiting at a choice point of its own (``draw order-42/route: 'east'``), and the first the
kernel lets pass is the option drawn.
So every strategy explores it through the kernel's one choice mechanism: the exhaustive search
tries each option, the random and PCT strategies vary it across schedules, a seed picks it in
a plain run. The option drawn takes the others out of the run (``Kernel.withdraw``): one
choice point decides a draw, and no option left over lingers at a point of its own, to be
interleaved with everything else for nothing. No fault is placed at a draw
(``faults.KIND_OPS``).

The order is kept in ``RunState.groups``, under a number of its own, beside the completion
orders: the option drawn is the first in it.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.faults import new_point_info
from yieldstar_sim.simulation.kernel import Park
from yieldstar_sim.simulation.points import pass_point
from yieldstar_sim.simulation.trace_payloads import DrawData, TraceKind

if TYPE_CHECKING:
    from collections.abc import Generator

    from yieldstar_sim.simulation.faults import PointInfo
    from yieldstar_sim.simulation.state import RunState


def draw(
    state: RunState,
    worker: str,
    *,
    execution_id: str,
    step_key: str,
    attempt: int,
    options: tuple[str, ...],
) -> Generator[Any, Any, int]:
    """Let the kernel choose one of ``options`` (their labels); return its index."""
    parent = state.kernel.running
    if parent is None:  # pragma: no cover - a body runs inside an actor
        raise RuntimeError("a draw is made outside any actor")
    # Shared with the options' actors, so kept in the state (restored with it) under a number
    # this actor is told again when it is made again.
    what = f"draw {execution_id}/{step_key} attempt {attempt}"
    number = state.answer(partial(state.new_group, what))
    info = new_point_info(worker, Op.DRAW, execution_id, step_key)
    for index in range(len(options)):
        state.spawn(
            _actor(info, number, index, len(options)),
            partial(
                _option, state, info, number=number, index=index, options=options,
                attempt=attempt, parent=parent,
            ),
        )  # fmt: skip
    while (drawn := state.answer(partial(_drawn, state, number))) is None:
        yield Park()
    return drawn


def _actor(info: PointInfo, number: int, index: int, of: int) -> str:
    """The name of option ``index`` of draw ``number``: apart from its point's label, since the
    state keys blind an actor's own name in what it waits for and must still read which option
    waits."""
    return f"{info.label} (draw {number}, option {index + 1} of {of})"


def _drawn(state: RunState, number: int) -> int | None:
    """The index of the option drawn in draw ``number``, None while none passed."""
    order = state.groups[number]
    return int(order[0]) if order else None


def _option(
    state: RunState,
    info: PointInfo,
    *,
    number: int,
    index: int,
    options: tuple[str, ...],
    attempt: int,
    parent: str,
) -> Generator[Any, Any, None]:
    """One option: it waits at its choice point; the first to pass is drawn, takes the others
    out of the run and wakes the body's actor."""
    # The label leaves out the worker, as the state keys leave out which worker is which
    # (they blind a worker's name in its own history): the actor's name says who draws.
    label = f"draw {info.execution_id}/{info.step_key}: {options[index]}"
    _, where = yield from pass_point(state, info, label=label)
    if not state.replaying:
        state.groups[number].append(str(index))
    for other in range(len(options)):
        if other != index:
            state.kernel.withdraw(_actor(info, number, other, len(options)))
    shown = ", ".join(options)
    state.trace.add(
        state.clock.now(), TraceKind.DRAW,
        f"step {info.step_key} of {info.execution_id} draws {options[index]} (of {shown})",
        data=DrawData(index, len(options), options[index], attempt), **where,
    )  # fmt: skip
    state.kernel.wake(parent)
