"""The exhaustive search's path: a move (which actor goes at a choice point, with which fault)
and a node (a choice point on the current path, with the moves left to take from it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from yieldstar_sim.simulation.checkpoint import Checkpoint
    from yieldstar_sim.simulation.explorer.footprints import Footprint
    from yieldstar_sim.simulation.explorer.statekeys import Histories, StateKeys
    from yieldstar_sim.simulation.faults import FaultKind


@dataclass(frozen=True, slots=True)
class Move:
    """One transition: ``actor`` goes at a choice point, with ``fault`` injected (or none)."""

    actor: str
    fault: FaultKind | None = None


@dataclass
class Node:
    """A choice point on the current path."""

    key: str
    ready: tuple[str, ...]
    labels: dict[str, str]
    sleep: dict[str, tuple[str, Footprint]]
    """Asleep actors: their normalised point label and the footprint of their transition."""
    pending: list[Move]
    faults_used: int
    current: Move | None = None
    current_fp: Footprint | None = None
    done: list[tuple[Move, Footprint]] = field(default_factory=list)
    options: int = 0
    """How many transitions the naive search would try here."""
    explored: int = 0
    subtotal: float = 0.0
    histories: tuple[int, Histories] | None = None
    """The actors' histories on arrival here, with the trace's length then: a later run whose
    prefix ends here takes them up instead of feeding the keys every event of its prefix."""
    twins: dict[Move, Move] = field(default_factory=dict)
    """Pending moves of a worker interchangeable here with an earlier one (``symmetry``):
    each with the move of that earlier worker it mirrors."""
    children: dict[Move, str] = field(default_factory=dict)
    """The key of the choice point each move taken from here arrived at."""
    keys: tuple[int, StateKeys] | None = None
    """The keys whole on arrival here, with the trace's length then (a search that restores
    states: a run restored here goes on with a copy of them)."""
    saved: Checkpoint | None = None
    """The run's state here, while a move is left to take from it (a search that restores
    states instead of replaying the path to them)."""


def turned(moves: list[Move], key: str, part: int) -> list[Move]:
    """``moves`` in the order the process searching as ``part`` takes them: the first
    process's own order, the others' turned by an amount each state and part give, so that
    processes sharing their visited states spread over the tree instead of racing down one
    path."""
    if part == 0 or len(moves) < 2:
        return moves
    turn = (int(key[:8], 16) + part) % len(moves)
    return moves[turn:] + moves[:turn]


def path_of(
    stack: list[Node], pairs: dict[Move, tuple[str, str | None]]
) -> tuple[tuple[str, str | None], ...]:
    """The moves taken along ``stack``, each as (actor, fault kind), one pair per move made
    once in ``pairs`` and shared by every path that takes it: a search keeps a path per run,
    hundreds of thousands of them tens of moves long at 3 orders x 3 workers."""
    path = []
    for node in stack:
        move = node.current
        if move is not None:
            pair = pairs.get(move)
            if pair is None:
                pair = pairs[move] = (move.actor, None if move.fault is None else str(move.fault))
            path.append(pair)
    return tuple(path)


def blinded(label: str, actor: str) -> str:
    """``label`` with ``actor``'s name blinded (a sleep set's entry, as keys blind workers)."""
    return label.replace(actor, "~")


def label_of(labels: dict[str, str]) -> str:
    """A state's label in the state graph: each ready actor's label, by name."""
    return " | ".join(labels[name] for name in sorted(labels)) or "(no one ready)"
