"""RFC 003's shop, as workflows: charge-order starts ship-order, which books a courier.

The bundled scenarios and the demo share them; a scenario file imports them and adds its story
(its triggers, faults and invariants).

>>> charge_order.name, ship_order.name
('charge-order', 'ship-order')
"""

from __future__ import annotations

from typing import Any

from yieldstar_sim.core.authoring import StepRunner, workflow


@workflow("ship-order")
def ship_order(step: StepRunner, params: Any) -> Any:
    """Books a courier for the order."""
    # The courier service deduplicates bookings by key, as the steps guide advises: a booking
    # step that runs again (a crash before its result is recorded) books the same courier.
    booking = yield from step.run(
        "book-courier",
        lambda: step.world.effect(
            "courier.booked", order=params["order"], idempotency_key=step.execution_id
        ),
    )
    return booking


@workflow("charge-order")
def charge_order(step: StepRunner, params: Any) -> Any:
    """Charges the card, then hands the delivery to ship-order with a durable start."""
    order = params["order"]
    yield from step.run("charge", lambda: step.world.effect("card.charged", order=order))
    target = yield from step.start("ship", "ship-order", {"order": order})
    return {"shipment": target.execution_id}
