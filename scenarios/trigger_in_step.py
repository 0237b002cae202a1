"""RFC 003's Problem: a non-durable trigger inside step.run, and a crash between the two writes.

charge-order charges the card, then starts ship-order by calling trigger inside an ordinary
step. Worker w1 runs the ship step: trigger admits a ship-order, which books a courier, but w1
crashes before it records the step. w1's lease expires, the order is delivered again, the ship
step has no saved result, so it runs again, and trigger, which cannot know it was called
before, admits a second ship-order. Two couriers turn up for one parcel.
"""

from __future__ import annotations

import yieldstar_sim as ys
from yieldstar_sim.examples import ship_order


@ys.workflow("charge-order")
def charge_order(step, params):
    order = params["order"]
    yield from step.run("charge", lambda: step.world.effect("card.charged", order=order))
    shipment = yield from step.run(
        "ship", lambda: step.world.trigger("ship-order", {"order": order})
    )
    return {"shipment": shipment}


scenario = ys.Scenario(
    name="trigger-in-step",
    workflows=[charge_order, ship_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("crash", op="put_step", execution_id="order-42", step_key="ship")],
    invariants=[ys.at_most_once("courier.booked", by="order")],
)
