"""RFC 003's fix: step.start, under the same crash between the two writes.

charge-order starts ship-order with step.start. Worker w1 crashes right after the start
commits, before it records the ship step. When the order is delivered again, the replayed start
sends the same request ID (order-42, ship), and the runtime returns the ship-order it already
admitted. One courier.
"""

from __future__ import annotations

import yieldstar_sim as ys


@ys.workflow("ship-order")
def ship_order(step, params):
    # The courier service deduplicates bookings by key, as the steps guide advises: a booking
    # step that runs again (a crash before its result is recorded) books the same courier.
    booking = yield from step.run(
        "book-courier",
        lambda: step.world.effect(
            "courier.booked", order=params["order"], idempotency_key=step.execution_id
        ),
    )
    return booking


@ys.workflow("charge-order")
def charge_order(step, params):
    order = params["order"]
    yield from step.run("charge", lambda: step.world.effect("card.charged", order=order))
    target = yield from step.start("ship", "ship-order", {"order": order})
    return {"shipment": target.execution_id}


scenario = ys.Scenario(
    name="durable-start",
    workflows=[charge_order, ship_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("crash", op="put_step", execution_id="order-42", step_key="ship")],
    invariants=[ys.at_most_once("courier.booked", by="order")],
)
