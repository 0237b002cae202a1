"""Persistent sets: where one actor's moves are enough, and the others' can wait.

At a state where several actors can go, a set of moves is *persistent* when nothing the other
actors can do before one of those moves is taken touches what those moves touch (Godefroid's
thesis, chapter 4). Searching only a persistent set at each state, on an acyclic state space,
still reaches every state a run can end in, and every run it leaves out is the same run as one
it takes with independent moves swapped (``footprints.py``).

The sets used here are one actor's moves at a point where nothing the others can do before it
goes touches what its moves touch. A step body's elapse is one: the moves there (the work goes
on, or a fault strikes the worker) touch nothing shared. The other is a worker's moves at a
call fenced by a lease it holds (a ``put_step``), where no other actor can touch that execution
before the worker goes:

- the worker holds the execution's lease, unexpired, and time cannot pass while it waits at a
  choice point (the kernel moves time only when no actor waits at one), so nobody claims the
  execution, and the lease stays the worker's;
- no other actor waits at a call on that execution (no stale attempt, no zombie of it), and
  none is a stalled attempt of this worker; an actor asleep cannot wake before time passes;
- so the others, until the worker goes, can only reach the execution's record by calls that
  neither read its steps nor write its lease (a start that finds it, a cancel, a wait for it),
  which ``put_step`` neither reads nor writes.

What the worker's move itself does after the call (its workflow code, the next step's body,
what lands at solo points until it next waits) is known only once it is taken: the search
takes the set's moves, checks each one's footprint (``Vouch.allows``: the execution's lease
read and its steps written, nothing else shared), and takes every other move too when one
touches more. The runtime must be one whose calls keep to what they name
(``footprints.trusted``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.footprints import (
    EVERYTHING,
    FAULTS,
    NOTHING,
    Footprint,
    lease,
    steps,
)

if TYPE_CHECKING:
    from yieldstar_sim.simulation.execution import Execution
    from yieldstar_sim.simulation.moves import Move


@dataclass(frozen=True, slots=True)
class Vouch:
    """``actor``'s moves are persistent at a state, as long as each touches no more than a
    fenced write to ``execution_id``'s steps (None: nothing shared)."""

    actor: str
    execution_id: str | None

    def allows(self, footprint: Footprint) -> bool:
        """Whether a move of the set (with what it went on to do alone) touched no more than
        the set may: the execution's lease read, its steps written, and the fault budget.

        >>> vouch = Vouch("w1", "order-1")
        >>> vouch.allows(Footprint(frozenset({lease("order-1")}), frozenset({steps("order-1")})))
        True
        >>> vouch.allows(Footprint(writes=frozenset({steps("order-2")})))
        False
        """
        mine = {FAULTS}
        if self.execution_id is not None:
            mine |= {lease(self.execution_id), steps(self.execution_id)}
        return footprint.reads <= mine and footprint.writes <= mine


def vouch(execution: Execution) -> Vouch | None:
    """An actor whose moves are persistent at ``execution``'s current state (see the module's
    docstring), or None where none can be vouched for."""
    if not execution.footprints:  # recorded only on a runtime whose footprints are trusted
        return None
    kernel = execution.kernel
    ready = execution.ready()
    if len(ready) < 2 or kernel.turns:
        return None
    now = execution.clock.now()
    runtime = execution.runtime
    for actor in ready:
        point = kernel.point(actor)
        info = point.info
        if info is None or point.options:
            continue
        if info.op == Op.ELAPSE:
            return Vouch(actor, None)
        if info.op != Op.PUT_STEP or "~" in actor:
            continue
        execution_id = info.execution_id
        record = runtime.execution(execution_id)
        held = None if record is None else record.lease
        if (
            record is None
            or record.status.terminal
            or held is None
            or held.owner != actor
            or held.expires_at <= now
        ):
            continue
        if any(_near(execution, other, actor, execution_id) for other in kernel.waits):
            continue
        return Vouch(actor, execution_id)
    return None


def _near(execution: Execution, other: str, actor: str, execution_id: str) -> bool:
    """Whether ``other`` may touch ``actor``'s execution before ``actor`` goes: it waits at a
    call on it, or it is a stalled attempt of the same worker."""
    if other == actor:
        return False
    if other.partition("~")[0] == actor:
        return True
    point = execution.kernel.waits.get(other)
    info = getattr(point, "info", None)
    return info is not None and getattr(info, "execution_id", None) == execution_id


@dataclass(slots=True)
class Held:
    """A searched state's part in the reduction: what the moves taken from it touched (with
    what their actor went on to do alone, at solo points, before it next waited), and where
    one actor's moves were vouched for, the others' moves held back meanwhile."""

    solo: bool
    """An actor waits here at a solo point, alone: part of the move that brought it here."""
    feeds: Held | None = None
    """The state whose move this one's actor is still on: it takes what this one touched."""
    touched: Footprint = NOTHING
    vouch: Vouch | None = None
    moves: list[Move] = field(default_factory=list)


class Reduction:
    """The exhaustive search's partial-order reduction (see the module's docstring): it splits
    a state's moves where one actor's are enough, follows what those moves touch, and says, once
    they are all taken, whether the others stay untaken. What the actor alone at each solo state
    went on to touch is kept by the state's key, for a run that reaches the state again: the
    check does not depend on what state caching cut."""

    def __init__(self) -> None:
        self.alone: dict[str, Footprint] = {}
        self.spared = 0
        """Moves left untaken, where another actor's were enough."""
        self.states = 0
        """States where moves were left untaken."""

    @staticmethod
    def arrive(execution: Execution, parent: Held | None, actor: str | None) -> Held:
        """The record of a state reached by ``actor``'s move from ``parent``'s: it feeds
        ``parent`` where the actor that moved is alone at a solo point, still on that move."""
        turns = execution.kernel.turns
        alone = parent if parent is not None and turns and turns[0] == actor else None
        return Held(bool(turns), alone)

    def cached(self, key: str, held: Held) -> None:
        """The run reached a state searched before (``key``; ``held``, its record now): what
        its solo actor went on to touch from there then (not known there: more than any
        vouch allows) goes to the move it is on."""
        if held.feeds is not None:
            held.feeds.touched = held.feeds.touched | self.alone.get(key, EVERYTHING)

    def split(self, execution: Execution, held: Held, moves: list[Move]) -> list[Move]:
        """The moves to take now from a state with ``moves``: one actor's where its moves are
        vouched for (the others kept in ``held``), else all."""
        if held.solo or len(moves) < 2 or not execution.footprints:
            return moves
        vouched = vouch(execution)
        if vouched is None:
            return moves
        held.vouch = vouched
        held.moves = [move for move in moves if move.actor != vouched.actor]
        return [move for move in moves if move.actor == vouched.actor]

    @staticmethod
    def took(held: Held, footprint: Footprint | None) -> None:
        """A move from ``held``'s state touched ``footprint``."""
        if footprint is not None:
            held.touched = held.touched | footprint

    def release(self, held: Held) -> list[Move]:
        """Every vouched move of ``held``'s state is taken: the moves held back that must be
        taken after all (every move of the vouch, with what its actor went on to do alone,
        touched no more than the vouch allows: none)."""
        moves, held.moves = held.moves, []
        if not moves or held.vouch is None or held.vouch.allows(held.touched):
            self.spared += len(moves)
            self.states += bool(moves)
            return []
        held.vouch = None
        return moves

    def searched(self, key: str, held: Held) -> None:
        """``held``'s state is searched to its end: the move its actor is on takes what it
        touched, and a solo state keeps it for a run that comes back."""
        if held.feeds is not None:
            held.feeds.touched = held.feeds.touched | held.touched
        if held.solo:
            self.alone[key] = held.touched
