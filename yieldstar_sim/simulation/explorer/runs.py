"""What a search keeps of each run (``Outcome``, small enough to cross a process boundary), and
the two ways the plan strategies drive an ``Execution``: ``subtree`` and ``sweep``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from yieldstar_sim.simulation.moves import Move, plain_move

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import TypeAlias

    from yieldstar_sim.simulation.execution import Execution
    from yieldstar_sim.simulation.faults import Fault
    from yieldstar_sim.simulation.result import SimulationRun

    Call: TypeAlias = tuple[str, str | None, str | None]
    """A choice point's call: its op, execution and step."""


@dataclass(frozen=True, slots=True)
class Sweep:
    """The runs of one parent and one fault kind: the parent's schedule, and each point of it
    to branch at with the move taken there instead (the parent's, struck by the fault)."""

    parent: tuple[Move, ...]
    branches: tuple[tuple[int, Move], ...]
    labels: tuple[str, ...]
    kind: str
    expand: bool


@dataclass(slots=True)
class Outcome:
    """What one run gave: its verdict's parts and its schedule (which replays it). With
    ``expanded``, ``recorded`` holds each choice point's label, call (its op first) and state
    key from ``expanded`` on (where the next level of a systematic search may place a fault)."""

    index: int
    seed: int
    verdict: str
    """``ok``, ``violated`` or ``incomplete``, as for a run."""
    violations: tuple[tuple[str, str], ...]
    faults: tuple[Fault, ...]
    schedule: tuple[Move, ...]
    incomplete: str | None = None
    unfair: str | None = None
    """For a cut run: why only an unfair scheduler kept it going (``SimulationRun.unfair``)."""
    warnings: tuple[str, ...] = ()
    length: int = 0
    """How many trace events the run left (the shortest-first search ranks by it)."""
    expanded: int | None = None
    recorded: tuple[tuple[str, Call, str], ...] = ()
    branched: int = 0
    """The draws and completion orders whose every option was tried on the way to this run."""


def outcome_of(run: SimulationRun, **extra: object) -> Outcome:
    """A finished run's ``Outcome`` (``extra``: the fields a search fills in)."""
    return Outcome(
        index=0, seed=run.seed, verdict=run.verdict,
        violations=tuple((v.invariant, v.message) for v in run.violations),
        faults=tuple(run.faults), schedule=tuple(run.schedule),
        incomplete=run.incomplete, unfair=run.unfair, warnings=tuple(run.warnings),
        length=len(run.trace),
        **extra,  # type: ignore[arg-type]
    )  # fmt: skip


class _Branches(Exception):
    """An unrecorded run met a choice it must branch at: it cannot save its state there."""


def subtree(
    execution: Execution,
    *,
    expand_from: int | None = None,
    branch: bool = True,
) -> list[Outcome]:
    """Run ``execution`` to its end taking the seed's moves, then (``branch``) every other
    option of each draw and completion order it passed, depth first: each run's outcome, in
    order, recording its choice points from ``expand_from`` on (``Outcome.recorded``). An
    unrecorded run (``Execution.unrecorded``) raises ``_Branches`` where it must branch."""
    outcomes: list[Outcome] = []
    branches: list[tuple[object, str, list[int], int]] = []
    recorded: list[tuple[str, Call, str]] = []
    branched = 0
    while True:
        while not execution.done():
            if expand_from is None and branch:
                # The seed's moves to the next draw or completion order, spelled out: most
                # runs meet none, and every point of every run passes here.
                found = execution.take_defaults(until_options=True)
                if found is None:
                    break
                move = found
            else:
                move = execution.default_move()
                if expand_from is not None and execution.points >= expand_from:
                    point = execution.point(move.actor)
                    call = (str(point.info.op), point.info.execution_id, point.info.step_key)
                    recorded.append((point.label, call, execution.verdict_key()))
            count = 0 if move.choice is None else len(execution.point(move.actor).options)
            if branch and count > 1:
                if not execution.recording:
                    raise _Branches
                others = [option for option in range(count) if option != move.choice]
                branches.append((execution.save(), move.actor, others, len(recorded)))
                branched += 1
            execution.take(move)
        kept = {} if expand_from is None else {"expanded": expand_from, "recorded": (*recorded,)}
        outcomes.append(outcome_of(execution.result(), branched=branched, **kept))
        while branches and not branches[-1][2]:
            branches.pop()
        if not branches:
            return outcomes
        saved, actor, others, recorded_points = branches[-1]
        execution.restore(saved)  # type: ignore[arg-type]
        del recorded[recorded_points:]
        execution.take(plain_move(actor, others.pop(0)))


def sweep(
    execution: Execution,
    parent: Sequence[Move],
    branches: Sequence[tuple[int, Move]],
    *,
    expand: bool = False,
) -> Iterator[list[Outcome]]:
    """Follow ``parent``'s moves from ``execution``'s start; at each branch's point (in
    increasing order) take its move instead, run the subtree from there, and come back to the
    parent's path (docs/decisions.md, "A sweep follows its parent once"). Yields each branch's
    outcomes as it ends (fewer when the parent's run ended before a branch's point). The seed's
    random numbers are drawn at every point as the parent's run drew them, so that a branch
    goes on as a plain run of the seed with its move would."""
    pending = list(branches)
    for index, move in enumerate(parent):
        if not pending or execution.done():
            return
        execution.seeded_move()
        while pending and pending[0][0] == index:
            _, branch = pending.pop(0)
            saved = execution.save()
            expand_from = index + 1 if expand else None
            try:
                # Unrecorded where nothing will be saved on the way (most runs: no draw).
                with execution.unrecorded():
                    execution.take(branch)
                    outcomes = subtree(execution, expand_from=expand_from)
            except _Branches:
                execution.restore(saved)
                execution.take(branch)
                outcomes = subtree(execution, expand_from=expand_from)
            execution.restore(saved)
            yield outcomes
        execution.take(move)
