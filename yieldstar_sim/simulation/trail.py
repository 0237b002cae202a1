"""A run's path: the moves it took, each linked to the path before it, so that a save, a
trail and the run itself share one path and a save costs nothing to take (``Execution.save``,
``Execution.trail``).

>>> from yieldstar_sim.simulation.moves import new_move
>>> first = (new_move("w1", None, None, None), 0, ["w1", "w2"], None, None)
>>> second = (new_move("w2", None, None, None), 1, ["w2"], None, first)
>>> [move.actor for move in schedule_of(second)]
['w1', 'w2']
>>> Choices(unwound(second))[1].among
('w2',)
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, TypeAlias, cast, overload

from yieldstar_sim.simulation.moves import new_choice

if TYPE_CHECKING:
    from yieldstar_sim.simulation.faults import Fault
    from yieldstar_sim.simulation.moves import Choice, Move

#: One move of a run's path, linked to the path before it: (the move, its choice point's
#: number, the actors then ready, the fault it placed, the step before). A tuple: one is made
#: at every choice point of every run.
Step: TypeAlias = "tuple[Move, int, list[str], Fault | None, Step | None]"


Trail: TypeAlias = "Step | None"
"""A run's path so far (None: no move yet): ``schedule_of`` reads its moves."""


def schedule_of(trail: Trail) -> tuple[Move, ...]:
    """The moves of a ``trail``."""
    return tuple(step[0] for step in unwound(trail))


def unwound(last: Trail) -> list[Step]:
    """The steps of a trail, first to last."""
    steps = []
    while last is not None:
        steps.append(last)
        last = last[4]
    steps.reverse()
    return steps


def faults_of(steps: Sequence[Step]) -> list[Fault]:
    """The faults the steps placed, in order."""
    # In one loop of C (a fault is never false): every finished run's are read.
    return list(filter(None, map(_fault_of, steps)))


#: A step's fault (None where it placed none).
_fault_of = itemgetter(3)


class Choices(Sequence["Choice"]):
    """A run's choices, made from its steps when first read (most runs' are never read)."""

    __slots__ = ("_made", "_steps")
    __hash__ = None  # type: ignore[assignment]  # a list's, by value

    def __init__(self, steps: list[Step]) -> None:
        self._steps, self._made = steps, cast("list[Choice] | None", None)

    def _all(self) -> list[Choice]:
        made = self._made
        if made is None:
            made = self._made = [new_choice(s[1], s[0].actor, tuple(s[2])) for s in self._steps]
        return made

    @overload
    def __getitem__(self, index: int) -> Choice: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Choice]: ...

    def __getitem__(self, index: int | slice) -> Choice | Sequence[Choice]:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._steps)

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return repr(self._all())
