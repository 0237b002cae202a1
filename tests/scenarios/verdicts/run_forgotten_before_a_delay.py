"""step.run without `yield from`, then a delay the code does run: the step named is charge."""

import yieldstar_sim as ys


@ys.workflow("charge-order")
def charge_order(step, params):
    step.run("charge", lambda: step.world.effect("card.charged", order=42))
    yield from step.delay("settle", 60)
    return "done"


scenario = ys.Scenario(
    name="run-forgotten-before-a-delay",
    workflows=[charge_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
)
