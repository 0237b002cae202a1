"""step.start called without `yield from`: its result is a generator, not the target."""

import yieldstar_sim as ys


@ys.workflow("ship-order")
def ship_order(step, params):
    yield from step.run("book", lambda: "booked")


@ys.workflow("charge-order")
def charge_order(step, params):
    yield from step.run("charge", lambda: "charged")
    target = step.start("ship", "ship-order", {"order": 42})
    return {"shipment": target.execution_id}


scenario = ys.Scenario(
    name="start-without-yield-from",
    workflows=[charge_order, ship_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
)
