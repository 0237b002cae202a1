"""The schedules that reach the states of an exhaustive search's state graph, kept as the tree
they are: a depth-first search's runs share their beginnings, so each move is kept once with
the move before it, and a schedule is read back by walking to the root.

Kept as a list of whole schedules, they grew with the states times the depth: 36,810 states
a thousand moves deep held 36 million moves, took 3.4 s to build and pickled to 190 MB, which
a process of a search on a cluster then shipped back (decisions.md, "The exhaustive search on
a Dask cluster"). As a tree they hold at most one entry a move the search took.

>>> from yieldstar_sim.simulation.moves import new_move
>>> first = (new_move("w1", None, None, None), 0, ["w1", "w2"], None, None)
>>> second = (new_move("w2", None, None, None), 1, ["w2"], None, first)
>>> paths = Paths.of([first, second])
>>> [[move.actor for move in path] for path in paths]
[['w1'], ['w1', 'w2']]
>>> paths.moves
2
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    from yieldstar_sim.simulation.moves import Move
    from yieldstar_sim.simulation.trail import Trail


class Paths(Sequence["tuple[Move, ...]"]):
    """Schedules, each a tuple of moves, stored as a tree of moves (each with the index of
    the move before it, -1 for none); schedule ``i`` ends at move ``ends[i]``."""

    __slots__ = ("_ends", "_moves", "_parents")
    __hash__ = None  # type: ignore[assignment]  # a list's, by value

    def __init__(self) -> None:
        self._moves: list[Move] = []
        self._parents = array("q")
        self._ends = array("q")

    @classmethod
    def of(cls, trails: Iterable[Trail]) -> Paths:
        """The schedules of ``trails`` (runs' paths, which share the steps they have in
        common: ``simulation.trail``), each shared step kept once."""
        paths = cls()
        moves, parents = paths._moves, paths._parents
        # By identity: the trails are alive while this runs, so no id is reused.
        index: dict[int, int] = {}
        for trail in trails:
            fresh = []
            step = trail
            while step is not None and id(step) not in index:
                fresh.append(step)
                step = step[4]
            at = -1 if step is None else index[id(step)]
            for new in reversed(fresh):
                moves.append(new[0])
                parents.append(at)
                at = index[id(new)] = len(moves) - 1
            paths._ends.append(at)
        return paths

    @property
    def moves(self) -> int:
        """How many moves are kept (each shared beginning once)."""
        return len(self._moves)

    def extend(self, other: Paths) -> None:
        """Add ``other``'s schedules after these (another process's, numbered after)."""
        shift = len(self._moves)
        self._moves += other._moves
        self._parents.extend(-1 if at < 0 else at + shift for at in other._parents)
        self._ends.extend(-1 if at < 0 else at + shift for at in other._ends)

    def _path(self, end: int) -> tuple[Move, ...]:
        moves, parents = self._moves, self._parents
        found = []
        while end >= 0:
            found.append(moves[end])
            end = parents[end]
        return tuple(reversed(found))

    @overload
    def __getitem__(self, index: int) -> tuple[Move, ...]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[Move, ...]]: ...

    def __getitem__(self, index: int | slice) -> tuple[Move, ...] | Sequence[tuple[Move, ...]]:
        if isinstance(index, slice):
            return [self._path(end) for end in self._ends[index]]
        return self._path(self._ends[index])

    def __len__(self) -> int:
        return len(self._ends)

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return f"Paths({len(self)} schedules, {self.moves} moves)"
