"""A move: what happens at one choice point of a run, as data.

At a choice point some actors wait (``kernel.Kernel.ready``); a move names the one that goes,
the fault that strikes it there (or none), and, where the point chooses among values (a step
body's draw, which of a ``step.all``'s bodies completes next), which one. A run is determined by
its scenario, its seed and the moves taken at its choice points: a *schedule* is that tuple of
moves, and a replay artifact stores it.

>>> Move("w1").describe(), Move("w2", FaultKind.FREEZE, 40.0).describe()
('w1', 'w2 with freeze 40s before')
>>> Move.from_json(Move("w1", choice=1).to_json())
Move(actor='w1', fault=None, seconds=None, choice=1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.frozen import maker
from yieldstar_sim.simulation.faults import TIMED_KINDS, FaultKind, fault_action


class ScheduleMismatch(Exception):
    """A move does not fit the choice point it was taken at: its actor waits at none, its
    option is not one of the point's, or its fault cannot strike there."""


@dataclass(frozen=True, slots=True)
class Move:
    """``actor`` goes at a choice point, struck by ``fault`` (a kind; ``seconds`` for a
    freeze, a stall or a skew) or by none, taking option ``choice`` where the point chooses
    among values (None elsewhere)."""

    actor: str
    fault: FaultKind | None = None
    seconds: float | None = None
    choice: int | None = None

    def describe(self) -> str:
        """The move in words: ``w1``, ``w1 with crash before``, ``w1 taking option 2``."""
        text = self.actor
        if self.fault is not None:
            text += f" with {fault_action(self.fault, self.seconds)}"
        if self.choice is not None:
            text += f" taking option {self.choice + 1}"
        return text

    def to_json(self) -> Any:
        """The move as plain data: the actor's name alone for a bare move (most of them)."""
        if self.fault is None and self.choice is None:
            return self.actor
        data: dict[str, Any] = {"actor": self.actor}
        if self.fault is not None:
            data["fault"] = str(self.fault)
            if self.seconds is not None:
                data["seconds"] = self.seconds
        if self.choice is not None:
            data["choice"] = self.choice
        return data

    @classmethod
    def from_json(cls, data: Any) -> Move:
        """Inverse of ``to_json``; refuses anything else with a message naming it."""
        if isinstance(data, str) and data:
            return plain_move(data)
        if not isinstance(data, dict) or not isinstance(data.get("actor"), str):
            raise ValueError(f"a move is an actor's name or an object with an actor, not {data!r}")
        unknown = set(data) - {"actor", "fault", "seconds", "choice"}
        if unknown:
            raise ValueError(f"a move has no field {sorted(unknown)[0]!r}")
        fault = data.get("fault")
        kind = None if fault is None else FaultKind(fault)
        seconds = data.get("seconds")
        if kind is not None and kind in TIMED_KINDS:
            if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
                raise ValueError(
                    f"a {kind} move takes a positive number of seconds, not {seconds!r}"
                )
            seconds = float(seconds)
        elif seconds is not None:
            raise ValueError(
                f"only a freeze, a stall, a skew or a delay_event takes seconds, not {data!r}"
            )
        choice = data.get("choice")
        if choice is not None and (
            isinstance(choice, bool) or not isinstance(choice, int) or choice < 0
        ):
            raise ValueError(f"a move's choice is a whole number >= 0, not {choice!r}")
        if kind is None:
            return plain_move(data["actor"], choice)
        return cls(data["actor"], kind, seconds, choice)


@dataclass(frozen=True, slots=True)
class Choice:
    """One choice point taken: number ``index``, where ``actor`` went, among ``among``."""

    index: int
    actor: str
    among: tuple[str, ...]


#: A move and a choice are built at every choice point of every run (``core.frozen``); type
#: checkers check the calls against the classes themselves.
new_move = Move if TYPE_CHECKING else maker(Move)
new_choice = Choice if TYPE_CHECKING else maker(Choice)

#: The moves with no fault, one object each per actor (and option): a search keeps the
#: schedules of every run it made, millions of moves at a hundred orders, which as objects of
#: their own cost hundreds of megabytes and every full collection of the garbage collector.
BARE: dict[str, Move] = {}
_CHOSEN: dict[tuple[str, int], Move] = {}
#: Names past which the caches start again (actors are named per worker and per stalled
#: attempt: a process that runs many scenarios meets many).
_KEPT = 50_000


def plain_move(actor: str, choice: int | None = None) -> Move:
    """``actor`` going with no fault (taking option ``choice``): the one shared object.

    >>> plain_move("w1") is plain_move("w1"), plain_move("w1", 1) == Move("w1", choice=1)
    (True, True)
    """
    if choice is None:
        move = BARE.get(actor)
        if move is None:
            if len(BARE) > _KEPT:
                BARE.clear()
            move = BARE[actor] = new_move(actor, None, None, None)
        return move
    chosen = _CHOSEN.get((actor, choice))
    if chosen is None:
        if len(_CHOSEN) > _KEPT:
            _CHOSEN.clear()
        chosen = _CHOSEN[actor, choice] = new_move(actor, None, None, choice)
    return chosen
