"""``trail.faults_of``: the faults a run's steps placed, in order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.simulation.faults import Fault
from yieldstar_sim.simulation.moves import new_move
from yieldstar_sim.simulation.trail import faults_of, unwound

if TYPE_CHECKING:
    from yieldstar_sim.simulation.trail import Step, Trail


def _grown(trail: Trail, *actors: str, fault: Fault | None = None) -> Trail:
    for actor in actors:
        index = 0 if trail is None else trail[1] + 1
        step: Step = (new_move(actor, None, None, None), index, [actor], fault, trail)
        trail = step
    return trail


def test_the_faults_of_steps_are_those_they_placed_in_order() -> None:
    crash = Fault("crash", at=1)
    trail = _grown(_grown(_grown(None, "w1"), "w2", fault=crash), "w1")
    assert faults_of(unwound(trail)) == [crash]
    assert faults_of([]) == []
