"""How many steps a workflow takes is counted outside a step: every run takes another shape.

Each time its code runs, the shape workflow takes one to three steps, counted by a module-level
counter that the seed does not reach. A schedule made by one run names moves that another run of
the same schedule never offers: the explorer's check that runs it twice says the scenario is not
deterministic (at the choice point where the schedule no longer fits), and the violation's
graph, which needs the run made again, is said not drawn rather than ending the command.
(Searched with no violation to stop at, a run restored by replaying its journal takes another
path too, and the search itself stops, saying so.)
"""

from __future__ import annotations

import itertools

import yieldstar_sim as ys

RUNS = itertools.count()


@ys.workflow("shape")
def shape(step, params):
    for i in range(1 + next(RUNS) % 3):  # the hazard: outside a step, another count each time
        yield from step.run(f"s{i}", lambda i=i: step.world.effect("did", i=i))
    return "done"


scenario = ys.Scenario(
    name="steps-counted-per-process",
    workflows=[shape],
    triggers=[
        ys.Trigger("shape", {}, execution_id="a"),
        ys.Trigger("shape", {}, execution_id="b"),
    ],
    workers=2,
    invariants=[ys.at_most_once("did", by="i")],
)
