"""step.start of a workflow name one letter off the scenario's: the name meant, not `expect`."""

import yieldstar_sim as ys


@ys.workflow("ship-order")
def ship_order(step, params):
    yield from step.run("book", lambda: "booked")


@ys.workflow("charge-order")
def charge_order(step, params):
    target = yield from step.start("ship", "shipp-order", {"order": 42})
    return target.execution_id


scenario = ys.Scenario(
    name="start-typo",
    workflows=[charge_order, ship_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
)
