"""A child the code starts, left out of `workflows=`: the fix is to add it there."""

import yieldstar_sim as ys


@ys.workflow("ship-order")
def ship_order(step, params):
    yield from step.run("book", lambda: "booked")


@ys.workflow("charge-order")
def charge_order(step, params):
    target = yield from step.start("ship", "ship-order", {"order": 42})
    return target.execution_id


scenario = ys.Scenario(
    name="child-not-in-workflows",
    workflows=[charge_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
)
