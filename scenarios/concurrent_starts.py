"""Two concurrent starts of one request: a frozen worker and its replacement both call start.

The worker delivering order-42 freezes for 40 s just before its start call. Its lease expires
at t=30 and the other worker replays the order and starts ship-order. At t=40 the frozen worker
wakes up and makes its start call with the same request ID (order-42, ship): start is not
fenced, so it is answered, with the same ship-order, and nothing new starts. Its next write is
refused. One target, one courier.
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
    name="concurrent-starts",
    workflows=[charge_order, ship_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("freeze", op="start", step_key="ship", seconds=40)],
    invariants=[ys.at_most_once("courier.booked", by="order")],
)
