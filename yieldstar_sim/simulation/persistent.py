"""Persistent sets: where one actor's moves are enough, and the others' can wait.

At a state where several actors can go, a set of moves is *persistent* when nothing the other
actors can do before one of those moves is taken touches what those moves touch (Godefroid's
thesis, chapter 4). Searching only a persistent set at each state, on an acyclic state space,
still reaches every state a run can end in, and every run it leaves out is the same run as one
it takes with independent moves swapped (``footprints.py``).

The sets used here are one actor's moves at a point where nothing the others can do before it
goes touches what its moves touch. A step body's elapse is one: the moves there (the work goes
on, or a fault strikes the worker) touch nothing shared. The others are a worker's moves at a
call fenced by a lease it holds, where no other actor can touch that execution before the
worker goes:

- the worker holds the execution's lease, unexpired, and time cannot pass while it waits at a
  choice point (the kernel moves time only when no actor waits at one), so nobody claims the
  execution, and the lease stays the worker's: every move the others make before it goes is
  made at this instant;
- no other actor waits at a call on that execution (no stale attempt, no zombie of it), and
  none is a stalled attempt of this worker; an actor asleep cannot wake before time passes.

At a ``put_step`` that is enough: the others can reach the execution's record only by calls
that neither read its steps nor write its lease (a start that finds it, a cancel, a wait for
it), and ``put_step`` reads only the lease and writes only the steps. An acknowledgement or a
release (``Vouch.ends``) writes the lease and the record too, which those calls read, so it
needs more: nothing waits for the execution and it waits for nothing live (whose end would
wake it), no live owner's cancel reaches it through owned links, and no move made at this
instant in the runs searched from the set touched its lease or record
(``Reduction.release``: the others' moves that could have come first are made at this instant
after it too, since they do not depend on it, and name what they touch).

What the worker's move itself does after the call (its workflow code, the next step's body,
what lands at solo points until it next waits) is known only once it is taken: the search
takes the set's moves, checks each one's footprint (``Vouch.allows``), and takes every other
move too when one touches more. The runtime must be one whose calls keep to what they name
(``footprints.trusted``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.footprints import (
    EVERYTHING,
    FAULTS,
    NOTHING,
    QUEUE,
    Footprint,
    Thing,
    lease,
    status,
    steps,
)
from yieldstar_sim.simulation.kernel import PARKED, Point

if TYPE_CHECKING:
    from collections.abc import Mapping

    from yieldstar_sim.runtime.memory_rows import Row
    from yieldstar_sim.simulation.execution import Execution
    from yieldstar_sim.simulation.moves import Move

#: The calls that give up the lease: a vouch there is an ``ends`` one.
_ENDS = frozenset({Op.ACKNOWLEDGE, Op.RELEASE})
#: Marks a summary that took in a state whose runs this process did not search.
_UNSEEN: Thing = ("unseen", "")
#: What a run searched from a state may have touched, where it is not known.
_UNKNOWN: frozenset[Thing] = frozenset({("lease", None), ("status", None), _UNSEEN})

Summary = tuple[float, frozenset[Thing], Footprint | None]
"""What a state searched to its end tells the reduction of the runs below it, known whole:
its instant, what was touched of executions' rows below it then (``Reduction.below``), and for
a state where an actor is alone at a solo point, what that actor went on to touch
(``Reduction.alone``; None elsewhere). A function of the state, not of the order it was
searched in, so one process can take another's as its own."""


class Heard(Protocol):
    """Where the summaries other processes shared are read (``SharedStates``)."""

    def summary(self, key: str) -> Summary | None:
        """What the process that searched ``key``'s state to its end shared of it (None:
        nothing known whole, or not heard yet)."""
        ...


@dataclass(frozen=True, slots=True)
class Vouch:
    """``actor``'s moves are persistent at a state, as long as each touches no more than a
    fenced write to ``execution_id``'s steps (None: nothing shared), or with ``ends``, its
    lease and record too."""

    actor: str
    execution_id: str | None
    ends: bool = False
    """The call gives up the lease (an acknowledgement or a release): it writes the lease and
    the record too, and holds only while no other move at this instant touches them."""

    def allows(self, footprint: Footprint) -> bool:
        """Whether a move of the set (with what it went on to do alone) touched no more than
        the set may: the execution's lease read, its steps written, and the fault budget;
        with ``ends``, its lease and record written, and the queue read (the worker, back at
        its claim, blocks or not by what is due now, which every move that adds to it
        follows with a nudge: it is offered its claim again in either order).

        >>> vouch = Vouch("w1", "order-1")
        >>> vouch.allows(Footprint(frozenset({lease("order-1")}), frozenset({steps("order-1")})))
        True
        >>> vouch.allows(Footprint(writes=frozenset({steps("order-2")})))
        False
        >>> ends = Vouch("w1", "order-1", ends=True)
        >>> ended = frozenset({lease("order-1"), status("order-1")})
        >>> ends.allows(Footprint(frozenset({QUEUE}), ended))
        True
        >>> ends.allows(Footprint(writes=frozenset({QUEUE})))
        False
        """
        mine = {FAULTS}
        if self.execution_id is not None:
            mine |= {lease(self.execution_id), steps(self.execution_id)}
            if self.ends:
                mine.add(status(self.execution_id))
        reads = mine | {QUEUE} if self.ends else mine
        return footprint.reads <= reads and footprint.writes <= mine

    def untouched(self, below: frozenset[Thing]) -> bool:
        """Whether no move made at this instant in the runs searched from the set touched
        what an ``ends`` set writes (``below``: what they touched of executions' rows)."""
        if not self.ends or self.execution_id is None:
            return True
        ours = Footprint(writes=frozenset({lease(self.execution_id), status(self.execution_id)}))
        return ours.independent_of(Footprint(writes=below))


def vouch(execution: Execution) -> Vouch | None:
    """An actor whose moves are persistent at ``execution``'s current state (see the module's
    docstring), or None where none can be vouched for. Of several, the one on the first
    execution by ID (then step, then call): not the first by name, which would vouch for
    different work in two states that mirror each other by the workers' names (worker
    symmetry), and make the states a search reaches depend on which of them it met first."""
    if not execution.footprints:  # recorded only on a runtime whose footprints are trusted
        return None
    kernel = execution.kernel
    ready = execution.ready()
    if len(ready) < 2 or kernel.turns:
        return None
    now = execution.clock.now()
    runtime = execution.runtime
    best: tuple[tuple[str, str, str, bool, str], Vouch] | None = None
    for actor in ready:
        point = kernel.point(actor)
        info = point.info
        if info is None or point.options:
            continue
        rank = (info.execution_id or "", info.step_key or "", str(info.op), "~" in actor, actor)
        if best is not None and rank >= best[0]:
            continue
        if info.op == Op.ELAPSE:
            best = rank, Vouch(actor, None)
            continue
        ends = info.op in _ENDS
        if not (ends or info.op == Op.PUT_STEP) or "~" in actor:
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
        if ends and not _unreached(execution, actor, execution_id):
            continue
        best = rank, Vouch(actor, execution_id, ends)
    return None if best is None else best[1]


def _unreached(execution: Execution, actor: str, execution_id: str) -> bool:
    """Whether no other execution can reach ``execution_id``'s record at this instant
    without naming it: nothing live waits for it, it waits for nothing live, and no cancel
    can reach it through owned links (none of its owners is live, nor, where an actor other
    than the workers can go now, is it owned at all)."""
    rows_view = getattr(execution.runtime, "rows_view", None)
    if rows_view is None:
        return False
    rows: Mapping[str, Row] = rows_view()
    row = rows.get(execution_id)
    if row is None:
        return False
    waited = rows.get(row.waiting_on) if row.waiting_on is not None else None
    if waited is not None and not waited.status.terminal:
        return False
    if any(
        other.waiting_on == execution_id and not other.status.terminal for other in rows.values()
    ):
        return False
    # A client's cancel of an ended owner still reaches what it owns.
    clients = _others_can_go(execution, actor)
    while row.parent_execution_id is not None and not row.parent_detached:
        if clients:
            return False
        owner = rows.get(row.parent_execution_id)
        if owner is None or owner.seq != row.parent_seq:
            break  # pruned: no cancel reaches it through there
        if not owner.status.terminal:
            return False
        row = owner
    return True


def _others_can_go(execution: Execution, actor: str) -> bool:
    """Whether an actor that is not a worker (a client, a sender) can go at this instant: it
    waits at a choice point, or parked, for a nudge."""
    workers = set(execution.scenario.worker_names)
    for name, wait in execution.kernel.waits.items():
        if name == actor or name.partition("~")[0] in workers:
            continue
        if wait is PARKED or isinstance(wait, Point):
            return True
    return False


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
    instant: float
    """The time at this state."""
    feeds: Held | None = None
    """The state whose move this one's actor is still on: it takes what this one touched."""
    touched: Footprint = NOTHING
    below: frozenset[Thing] = frozenset()
    """What the moves made at this instant in the runs searched from the states its moves
    reached touched of executions' rows."""
    vouch: Vouch | None = None
    moves: list[Move] = field(default_factory=list)
    watched: bool = False
    """A state above at this instant holds moves back on an ``ends`` vouch."""

    @property
    def needs_below(self) -> bool:
        """Whether what is touched below this state is needed (not only wanted): its actor
        is alone, still on a move whose vouch waits on it, or a state above at this instant
        holds moves back until it knows what was touched below at this instant."""
        return self.feeds is not None or self.watched


def _rows_of(footprint: Footprint) -> frozenset[Thing]:
    """What ``footprint`` touched of executions' rows (their leases and records)."""
    return frozenset(
        thing for thing in footprint.reads | footprint.writes if thing[0] in ("lease", "status")
    )


class Reduction:
    """The exhaustive search's partial-order reduction (see the module's docstring): it splits
    a state's moves where one actor's are enough, follows what those moves touch, and says, once
    they are all taken, whether the others stay untaken. What the actor alone at each solo state
    went on to touch, and what the runs from each state touched at its instant, are kept by the
    state's key, for a run that reaches the state again: the checks do not depend on what state
    caching cut."""

    def __init__(self) -> None:
        self.alone: dict[str, Footprint] = {}
        self.below: dict[str, tuple[float, frozenset[Thing]]] = {}
        """Each searched state's instant and what was touched below it then
        (``Held.below``, with what its own moves touched)."""
        self._interned: dict[frozenset[Thing], frozenset[Thing]] = {}
        self.spared = 0
        """Moves left untaken, where another actor's were enough."""
        self.states = 0
        """States where moves were left untaken."""

    @staticmethod
    def arrive(execution: Execution, parent: Held | None, actor: str | None) -> Held:
        """The record of a state reached by ``actor``'s move from ``parent``'s: it feeds
        ``parent`` where the actor that moved is alone at a solo point, still on that move."""
        kernel = execution.kernel
        turns = kernel.turns
        alone = parent if parent is not None and turns and kernel.ready() == [actor] else None
        now = execution.clock.now()
        watched = (
            parent is not None
            and parent.instant == now
            and (parent.watched or (parent.vouch is not None and parent.vouch.ends))
        )
        return Held(bool(turns), now, alone, watched=watched)

    def cached(self, key: str, held: Held, parent: Held | None) -> None:
        """The run reached a state searched before (``key``; ``held``, its record now, reached
        from ``parent``'s): what its solo actor went on to touch from there then (not known
        there: more than any vouch allows) goes to the move it is on, and what was touched
        below it at the parent's instant to the parent."""
        if held.feeds is not None:
            held.feeds.touched = held.feeds.touched | self.alone.get(key, EVERYTHING)
        if parent is not None:
            instant, below = self.below.get(key, (held.instant, _UNKNOWN))
            if instant == parent.instant:
                parent.below = parent.below | below

    def unseen(self, key: str, held: Held) -> None:
        """``key``'s state is cut because another process searched it: what was touched
        below it is not known here."""
        self.below.setdefault(key, (held.instant, _UNKNOWN))

    def known(self, key: str, shared: Heard | None = None, filed: str | None = None) -> bool:
        """Whether what was touched below ``key``'s state is known whole: a summary that took
        in a state another process searched and did not share whole (or one cut while it was
        being searched) is not, and a search that needs it searches the state again rather
        than trust it. Where another process searched the state (``filed``: the key it is
        filed under in ``shared``, the table the processes share), what it shared is taken
        (``heard``)."""
        if shared is not None and filed is not None:
            return self.heard(key, shared.summary(filed))
        found = self.below.get(key)
        # None: reached, not yet searched to its end (on the path to here), cut as before.
        return found is None or _UNSEEN not in found[1]

    def summary(self, key: str) -> Summary | None:
        """What this process knows whole of the runs below ``key``'s state, searched to its
        end here or heard from another process; None where it knows nothing whole."""
        found = self.below.get(key)
        if found is None or _UNSEEN in found[1]:
            return None
        return found[0], found[1], self.alone.get(key)

    def heard(self, key: str, summary: Summary | None) -> bool:
        """Another process searched ``key``'s state to its end and shared ``summary`` (None:
        none known whole, or not heard yet): kept as though this process had searched the
        state; whether what was touched below it is known whole now."""
        if summary is None:
            return False
        instant, below, alone = summary
        self.below[key] = (instant, self._interned.setdefault(below, below))
        if alone is not None:
            self.alone[key] = alone
        return True

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
        touched no more than the vouch allows, and nothing at this instant below touched what
        it writes: none)."""
        moves, held.moves = held.moves, []
        vouched = held.vouch
        if not moves or (
            vouched is not None and vouched.allows(held.touched) and vouched.untouched(held.below)
        ):
            self.spared += len(moves)
            self.states += bool(moves)
            return []
        held.vouch = None
        return moves

    def searched(self, key: str, held: Held, parent: Held | None) -> None:
        """``held``'s state is searched to its end: the move its actor is on takes what it
        touched, a solo state keeps it for a run that comes back, and the state's parent
        (``parent``) takes what was touched from it at the parent's instant."""
        if held.feeds is not None:
            held.feeds.touched = held.feeds.touched | held.touched
        if held.solo:
            self.alone[key] = held.touched
        below = held.below | _rows_of(held.touched)
        below = self._interned.setdefault(below, below)
        self.below[key] = (held.instant, below)
        if parent is not None and parent.instant == held.instant:
            parent.below = parent.below | below
