"""A deploy changes the ship step mid-run: the replay is refused with START_REQUEST_MISMATCH.

Version 1 of charge-order starts ship-order. The worker crashes right after that start, before
it records the ship step; ship-order runs and finishes. At t=10 the shop deploys version 2,
whose ship step starts ship-express. When order-42 is delivered again, its replayed start sends
the same request ID with a different workflow: returning the old ship-order would hide the
change, starting ship-express would bring back the second courier, so the runtime refuses
(also after ship-order finished), and step.start throws WorkflowStartError into the workflow.
The order fails with START_REQUEST_MISMATCH, and one courier came.
"""

from __future__ import annotations

import yieldstar_sim as ys
from yieldstar_sim.examples import ship_order


@ys.workflow("ship-express")
def ship_express(step, params):
    booking = yield from step.run(
        "book-express",
        lambda: step.world.effect(
            "courier.booked", order=params["order"], idempotency_key=step.execution_id
        ),
    )
    return booking


@ys.workflow("charge-order")
def charge_order_v1(step, params):
    order = params["order"]
    yield from step.run("charge", lambda: step.world.effect("card.charged", order=order))
    target = yield from step.start("ship", "ship-order", {"order": order})
    return {"shipment": target.execution_id}


@ys.workflow("charge-order")
def charge_order_v2(step, params):
    order = params["order"]
    yield from step.run("charge", lambda: step.world.effect("card.charged", order=order))
    target = yield from step.start("ship", "ship-express", {"order": order})
    return {"shipment": target.execution_id}


scenario = ys.Scenario(
    name="deploy-mismatch",
    workflows=[charge_order_v1, ship_order, ship_express],
    deploys=[ys.Deploy(10.0, [charge_order_v2, ship_order, ship_express])],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("crash_after", op="start", step_key="ship")],
    invariants=[ys.at_most_once("courier.booked", by="order")],
    expected=[ys.expect("charge-order", code="START_REQUEST_MISMATCH")],
)
