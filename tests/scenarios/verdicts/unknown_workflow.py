"""A trigger of a workflow nobody registered (a typo): a scenario error before anything runs."""

import yieldstar_sim as ys


@ys.workflow("ship-order")
def ship_order(step, params):
    yield from step.run("book", lambda: "booked")


scenario = ys.Scenario(
    name="unknown-workflow",
    workflows=[ship_order],
    triggers=[ys.Trigger("shipp-order", {"order": 42}, execution_id="order-42")],
)
