"""step.delay called without `yield from`: the workflow fails at that step."""

import yieldstar_sim as ys


@ys.workflow("settle")
def settle(step, params):
    yield from step.run("charge", lambda: "charged")
    step.delay("settle", 60)
    return "done"


scenario = ys.Scenario(
    name="delay-without-yield-from",
    workflows=[settle],
    triggers=[ys.Trigger("settle", execution_id="order-42")],
)
