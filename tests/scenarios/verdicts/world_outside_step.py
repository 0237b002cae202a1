"""step.world used in workflow code, outside a step body: the workflow fails."""

import yieldstar_sim as ys


@ys.workflow("ship")
def ship(step, params):
    step.world.effect("courier.booked", order=42)
    yield from step.run("record", lambda: "recorded")


scenario = ys.Scenario(
    name="world-outside-step",
    workflows=[ship],
    triggers=[ys.Trigger("ship", execution_id="order-42")],
)
