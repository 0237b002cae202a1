"""What a state key costs a run: one schedule of a scenario run on an ``Execution`` plain, and
with the state's key read at its choice points as the searches read it, incrementally
(``StateKeys``, what every search uses) or read whole (``WholeReads``: every record, step and
request read and every actor's term made again at every point, as on a runtime that reports no
changes). Shared by ``bench_explorer.py``'s key section (``_explorer_scaling.py``), its count
in machine instructions (``_key_instructions.py``) and ``--only exhaustive``
(``_exhaustive.py``).

A schedule is the seed's run of the scenario (no fault), or that run with one fault (a crash
after the call at its middle choice point) or two (at a third, then at two thirds of the run
the first one gave), placed as the systematic search places them: the seed's moves up to the
fault's point, the fault's move there, the seed's after it. The modes:

- ``plain``: no key read;
- ``after``: a key at every point after the last fault, as a systematic search reads them in
  a run it may place a further fault in (``runs.subtree``'s ``expand_from``);
- ``every``: a key at every point, as the systematic search's first run and the exhaustive
  search read them;
- ``whole``: a key at every point, read whole.

Each is the run as a search makes it (``Execution``: ``take`` the move at each point, then
``result``), without saving states (``saving=False``): the key alone.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from yieldstar_sim.simulation import FaultKind
from yieldstar_sim.simulation.execution import Execution
from yieldstar_sim.simulation.statekeys import WholeReads

if TYPE_CHECKING:
    import yieldstar_sim as ys
    from yieldstar_sim.simulation.moves import Move

MODES = ("plain", "after", "every", "whole")


class _Whole(Execution):
    """An execution whose keys are read whole."""

    state_keys = WholeReads


@dataclass(frozen=True)
class Schedule:
    """The moves a schedule takes up to and including its last fault (the seed's moves after
    it), and the point after that fault."""

    moves: tuple[Move, ...]
    faults: int

    @property
    def after(self) -> int:
        """The first point a systematic search would read keys at (after the last fault)."""
        return len(self.moves)


def _seed_moves(scenario: ys.Scenario, prefix: tuple[Move, ...] = ()) -> tuple[Move, ...]:
    """The moves of the run that takes ``prefix``, then the seed's."""
    execution = Execution(scenario, runtime="memory", scenario_faults=False, timeout=None)
    try:
        for move in prefix:
            execution.seeded_move()
            execution.take(move)
        while not execution.done():
            execution.take(execution.default_move())
        return execution.schedule
    finally:
        execution.close()


def _struck(scenario: ys.Scenario, moves: tuple[Move, ...], at: int) -> tuple[Move, ...]:
    """``moves`` up to the first point from ``at`` on where a crash after the call fits, with
    the crash there."""
    execution = Execution(scenario, runtime="memory", scenario_faults=False, timeout=None)
    try:
        for index, move in enumerate(moves):
            crash = replace(move, fault=FaultKind.CRASH_AFTER)
            if index >= at and execution.fits(crash):
                return (*moves[:index], crash)
            execution.seeded_move()
            execution.take(move)
    finally:
        execution.close()
    raise ValueError(f"no point from {at} on takes a crash after its call")


def schedule(scenario: ys.Scenario, faults: int) -> Schedule:
    """The seed's run with no fault, one or two (see the module's docstring)."""
    if faults == 0:
        return Schedule((), 0)
    seed = _seed_moves(scenario)
    if faults == 1:
        return Schedule(_struck(scenario, seed, len(seed) // 2), 1)
    first = _struck(scenario, seed, len(seed) // 3)
    after = _seed_moves(scenario, first)
    return Schedule(_struck(scenario, after, len(after) * 2 // 3), 2)


def keyed_run(scenario: ys.Scenario, plan: Schedule, mode: str) -> tuple[float, int, int]:
    """Seconds of one run of ``plan`` read ``mode`` way (``MODES``), its keys read and its
    choice points."""
    made = _Whole if mode == "whole" else Execution
    gc.collect()  # the whole read's garbage is not collected in another mode's time
    started = time.perf_counter()
    execution = made(scenario, runtime="memory", scenario_faults=False, timeout=None)
    first = {"plain": None, "after": plan.after}.get(mode, 0)
    keys = 0
    for move in plan.moves:
        if first is not None and execution.points >= first:
            execution.key()
            keys += 1
        execution.seeded_move()
        execution.take(move)
    while not execution.done():
        if first is not None and execution.points >= first:
            execution.key()
            keys += 1
        execution.take(execution.default_move())
    run = execution.result()
    seconds = time.perf_counter() - started
    run.runtime.close()
    return seconds, keys, run.points
