"""A step body's draw (``step.world.choice``, ``step.world.coin``) as a choice point.

A body is a plain function run at once, so it cannot wait at a choice point halfway. So a body
that draws runs up to its first draw not decided yet (``port.Undecided``), and that run is
taken back (``workers._Delivering._body``: nothing of it had landed, its store writes and reads
are undone); the draw is then decided here, and the body runs again from its start with that
value, up to its next draw, and so on. Its Python code before a draw thus runs again, as
workflow code replays: what it did to the world counts once.

The draw is decided at a choice point of the worker's whose options are the draw's values
(``w2 draw order-42/route``, options ``east`` and ``west``): the move taken there names the option
drawn (``Move.choice``), so every strategy explores it as a move: the exhaustive and the
systematic searches try each option, the random and PCT strategies vary it, a seed picks it in
a plain run. No fault is placed at a draw (``faults.KIND_OPS``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.faults import new_point_info
from yieldstar_sim.simulation.points import pass_point
from yieldstar_sim.simulation.trace_payloads import DrawData, TraceKind

if TYPE_CHECKING:
    from collections.abc import Generator

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
    """Let the move taken at a choice point choose one of ``options`` (their labels); return
    its index."""
    info = new_point_info(worker, Op.DRAW, execution_id, step_key)
    move, where = yield from pass_point(state, info, options=options)
    index = move.choice
    if index is None or not 0 <= index < len(options):  # pragma: no cover - Execution checks
        raise ValueError(f"a draw of {len(options)} options was given {index!r}")
    shown = ", ".join(options)
    state.event(
        state.clock.now(), TraceKind.DRAW,
        f"step {step_key} of {execution_id} draws {options[index]} (of {shown})",
        data=DrawData(index, len(options), options[index], attempt), **where,
    )  # fmt: skip
    return index
