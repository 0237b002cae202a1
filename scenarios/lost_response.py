"""A start whose response is lost: the worker lives, the delivery rejects and is retried.

The start of ship-order commits, but its response never reaches the worker: the client raises.
Workflow code never sees that error; the delivery rejects, the lease is released, and after the
redelivery delay the order is delivered again. Its replayed start returns the committed
ship-order. One courier.
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
    name="lost-response",
    workflows=[charge_order, ship_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("lose_response", op="start", step_key="ship")],
    invariants=[ys.at_most_once("courier.booked", by="order")],
)
