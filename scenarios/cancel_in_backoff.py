"""Cancel in backoff: workflow code that catches every error swallows its own cancellation.

order-7 charges the card; the payment service is busy twice, so the charge step waits out its
retry backoff (1 s, then 2 s). The shop cancels order-7 at t=2, while it waits. The next
delivery throws the WorkflowCancelledError at the charge step, as it should, but the workflow
wraps the charge in `except Exception` to fall back to an invoice, and that catches the
cancellation too: the order is invoiced and shipped, and order-7 ends completed. "a cancelled
live execution ends cancelled" says so, naming the step that caught it. The fix
(cancel-in-backoff-fixed) catches ys.StepError, the error a step that failed raises.
"""

from __future__ import annotations

import yieldstar_sim as ys


def charge(world, order, failures):
    if world.attempt <= failures:
        raise ConnectionError(f"payment service busy (attempt {world.attempt})")
    world.effect("card.charged", order=order, idempotency_key=f"charge-{order}")
    return f"ch-{order}"


CHARGE = ys.define_step("charge", charge, lambda s: s.retry(3).backoff(1, 2, 10))


def ship(world, order, paid_by):
    world.effect("order.shipped", order=order, paid_by=paid_by, idempotency_key=f"ship-{order}")
    return f"parcel-{order}"


@ys.workflow("order")
def order(step, params):
    number = params["order"]
    try:
        paid_by = yield from step.run("charge", CHARGE, step.world, number, 2)
    except Exception:  # the bug: a cancellation is an Exception too
        paid_by = "invoice"
    parcel = yield from step.run("ship", ship, step.world, number, paid_by)
    return {"paid_by": paid_by, "parcel": parcel}


scenario = ys.Scenario(
    name="cancel-in-backoff",
    workflows=[order],
    steps=[CHARGE],
    triggers=[ys.Trigger("order", {"order": 7}, execution_id="order-7")],
    cancels=[ys.Cancel("order-7", at=2)],
)
