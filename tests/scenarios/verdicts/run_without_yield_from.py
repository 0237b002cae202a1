"""step.run called without `yield from`: the body never runs and the workflow fails."""

import yieldstar_sim as ys


@ys.workflow("ship")
def ship(step, params):
    step.run("book", lambda: step.world.effect("courier.booked", order=42))
    return "done"


scenario = ys.Scenario(
    name="run-without-yield-from",
    workflows=[ship],
    triggers=[ys.Trigger("ship", execution_id="order-42")],
)
