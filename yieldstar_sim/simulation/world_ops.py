"""A step body's calls to the outside world, landing where its work reaches them.

A step body runs at once (``workers._Delivering._body``); what it did lands in time
(``attempts.play_body``). Each of its calls to the outside world (``step.world.read``,
``write``, ``effect``, a transaction's commit) is a ``WorldOp`` in what it did, and lands at a
*solo* point of its own (``kernel.Point(solo=True)``): only a fault is decided there (a
``world_error``), never who goes, so the calls of one instant still land together, and a plain
run draws no random number for them.

Two things send the body back to run again from its start (``Redo``), handed back every value
it was given before that call (its *tape*):

- a ``world_error`` at the call: the call raises ``WorldError`` in the body this time;
- a read that, where the work reaches it, finds another value than the body got when it ran
  (another actor wrote the key while this body worked): the read gives the value found.

What landed before the call stays landed; what the body does from there lands from there on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.frozen import maker
from yieldstar_sim.simulation.faults import new_point_info
from yieldstar_sim.simulation.footprints import stored
from yieldstar_sim.simulation.kernel import Point
from yieldstar_sim.simulation.points import struck
from yieldstar_sim.simulation.trace_payloads import ErrorData, TraceKind

if TYPE_CHECKING:
    from collections.abc import Callable, Generator

    from yieldstar_sim.core.model import Lease
    from yieldstar_sim.core.ops import Op
    from yieldstar_sim.simulation.moves import Move
    from yieldstar_sim.simulation.state import RunState


#: Each call's solo point is asked for with a Point (``core.frozen``), as ``points.py`` asks.
_new_point = Point if TYPE_CHECKING else maker(Point)  # calls type-checked as Point(...)


@dataclass(frozen=True, slots=True, eq=False)
class WorldOp:
    """A step body's call to the outside world, in what it did: ``op`` (the point's op), its
    ``number`` among the body's calls, how many values the body had been given before it
    (``tape``), what it names (a key, an effect's name, a transaction's keys: the point's
    label ends with it) and how it lands. A read also keeps its ``key`` and what it gave the
    body (``seen``: whether the key held a value, and the value as canonical JSON)."""

    op: Op
    number: int
    tape: int
    what: str
    land: Callable[[], None]
    key: str | None = None
    seen: tuple[bool, str | None] | None = None

    def __call__(self) -> None:
        """Land it as it is, with no point (an attempt its worker gave up on lands the rest of
        what it did so)."""
        self.land()


@dataclass(frozen=True, slots=True)
class Redo:
    """How a body runs again from its call numbered ``call``: handed back ``tape`` (the values
    it was given, in order) before it computes any, the call raising ``WorldError`` when it
    is the one that ``fails`` (else, a read, giving the value found), its clock at its first
    start as ``clock`` (``step.world.now()`` reads it plus the work)."""

    call: int
    tape: tuple[Any, ...]
    fails: bool
    clock: float

    @property
    def fail(self) -> int | None:
        """The number of the call that fails in the run again (None: none does)."""
        return self.call if self.fails else None

    def misfit(self, ops: list[Any], at: int, earlier: list[Any]) -> bool:
        """Whether ``ops``, what the run again did, is not where ``earlier``, what the last
        run did, stood at ``at``: the same calls to the world before it, and the read itself
        there when it gave another value."""
        if len(ops) < at or _calls(ops[:at]) != _calls(earlier[:at]):
            return True
        if self.fails:
            return False
        here = ops[at] if at < len(ops) else None
        return not (isinstance(here, WorldOp) and _calls([here]) == _calls(earlier[at : at + 1]))


def _calls(ops: list[Any]) -> list[tuple[Op, str]]:
    return [(op.op, op.what) for op in ops if isinstance(op, WorldOp)]


def land(
    state: RunState,
    name: str,
    lease: Lease,
    step_key: str,
    op: WorldOp,
    *,
    tape: tuple[Any, ...],
    clock: float,
    passed: bool = False,
) -> Generator[Any, Any, Redo | None]:
    """Land ``op`` at a solo point (``passed``: it passed its point already, before the body
    ran again); a ``Redo`` when the body must run again from it, else None (it landed)."""
    if not passed:
        info = new_point_info(name, op.op, lease.execution_id, step_key)
        label = f"{info.label} {op.what}"
        # The point passed as ``pass_point`` passes it, spelled out: where a fault struck is
        # made only when one did (most of a search's world calls see none).
        move: Move = yield _new_point(label, info, (), True)
        if move.fault is not None:  # a world_error: the only kind placed at these ops
            where = struck(state, info, move, lease.token)
            message = f"outside-world error at {label}"
            state.event(
                state.clock.now(), TraceKind.ERROR, f"{op.op} failed: {message}",
                data=ErrorData(message), **where,
            )  # fmt: skip
            return Redo(op.number, tape[: op.tape], True, clock)
    if op.seen is not None and op.key is not None:
        found = state.ask(_stored, state, op.key)
        if found != op.seen:
            return Redo(op.number, (*tape[: op.tape], found), False, clock)
    state.tell(op.land)
    return None


def _stored(state: RunState, key: str) -> tuple[bool, str | None]:
    """Whether the store holds ``key`` now, and its value as canonical JSON."""
    if state.touches is not None:
        state.touches.read(stored(key))
    text = state.store.canonical.get(key)
    return text is not None, text
