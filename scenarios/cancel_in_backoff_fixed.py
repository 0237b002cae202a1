"""Cancel in backoff, fixed: the fallback catches a failed step, and the cancellation ends the run.

The story of cancel-in-backoff with the fallback written as `except ys.StepError`: when the
card cannot be charged after its last attempt the order is invoiced, but the cancellation the
shop requests at t=2, while the charge waits out its backoff, is not a step's failure. It leaves
the workflow code at the charge step, order-7 ends cancelled and nothing is shipped. Exploring
it with one fault at every choice point finds no violation.
"""

from __future__ import annotations

from pathlib import Path

import yieldstar_sim as ys

hazard = ys.load_scenario(Path(__file__).with_name("cancel_in_backoff.py"))
CHARGE = hazard.steps[0]


@ys.workflow("order")
def order(step, params):
    number = params["order"]
    try:
        paid_by = yield from step.run("charge", CHARGE, step.world, number, 2)
    except ys.StepError:  # a failed charge falls back; a cancellation goes through
        paid_by = "invoice"
    parcel = yield from step.run("ship", ship, step.world, number, paid_by)
    return {"paid_by": paid_by, "parcel": parcel}


def ship(world, order, paid_by):
    world.effect("order.shipped", order=order, paid_by=paid_by, idempotency_key=f"ship-{order}")
    return f"parcel-{order}"


scenario = ys.Scenario(
    name="cancel-in-backoff-fixed",
    workflows=[order],
    steps=hazard.steps,
    triggers=hazard.triggers,
    cancels=hazard.cancels,
)
