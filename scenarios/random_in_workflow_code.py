"""Workflow code that reads a random number outside a step: a replay takes another path.

A/B-test picks a variant with step.world.random() in workflow code (the scenario allows step.world
there, to show what it does), records the variant's step, and waits a minute. The next delivery
replays workflow code, reads a new random number, asks for the other variant's step where the
first one is recorded, and the driver stops it with a NondeterminismError that says which step
was recorded and which was asked. The fix, random-in-workflow-code-fixed, reads the number
inside a step: every replay gets the recorded one.
"""

from __future__ import annotations

import yieldstar_sim as ys


@ys.workflow("ab-test")
def ab_test(step, params):
    variant = "a" if step.world.random() < 0.5 else "b"  # the hazard: not in a step
    yield from step.run(f"show-{variant}", lambda: variant)
    yield from step.delay("wait", 60)
    return variant


scenario = ys.Scenario(
    name="random-in-workflow-code",
    workflows=[ab_test],
    triggers=[ys.Trigger("ab-test", execution_id="visit-1")],
    world_in_workflow_code=True,
)
