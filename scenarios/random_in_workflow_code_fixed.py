"""The random number read in a step: recorded once, every replay takes the same path.

The same A/B test as random-in-workflow-code, with the draw inside step.run.
"""

from __future__ import annotations

import yieldstar_sim as ys


@ys.workflow("ab-test")
def ab_test(step, params):
    draw = yield from step.run("draw", step.world.random)
    variant = "a" if draw < 0.5 else "b"
    yield from step.run(f"show-{variant}", lambda: variant)
    yield from step.delay("wait", 60)
    return variant


scenario = ys.Scenario(
    name="random-in-workflow-code-fixed",
    workflows=[ab_test],
    triggers=[ys.Trigger("ab-test", execution_id="visit-1")],
)
