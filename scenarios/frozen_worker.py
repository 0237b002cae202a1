"""RFC 002's frozen worker: it loses its lease, a second worker replays, the first is fenced.

The worker delivering order-42 starts ship-order, then freezes for 40 s before it records the
ship step. Its 30 s lease expires; the other worker claims order-42 and replays it: the charge
step is recorded, and the replayed start returns the ship-order that exists. When the frozen
worker wakes up, its write of the ship step is refused (its fencing token is stale), and the
execution keeps the second worker's outcome. One courier.
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
    name="frozen-worker",
    workflows=[charge_order, ship_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("freeze", op="put_step", step_key="ship", seconds=40)],
    invariants=[ys.at_most_once("courier.booked", by="order")],
)
