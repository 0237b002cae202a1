"""Runs at review size for the views' tests: RFC 003's Problem and its fix copied to many
orders, a crash striking one of them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order

if TYPE_CHECKING:
    from collections.abc import Generator


@ys.workflow("charge-order")
def charge_in_step(step: ys.StepRunner, params: Any) -> Generator[Any, Any, Any]:
    """RFC 003's Problem: the shipment is triggered inside a step, without a request ID."""
    order = params["order"]
    yield from step.run("charge", lambda: step.world.effect("card.charged", order=order))
    shipment = yield from step.run(
        "ship", lambda: step.world.trigger("ship-order", {"order": order})
    )
    return {"shipment": shipment}


def trigger_in_step(count: int, *, crashed: int) -> ys.Scenario:
    """The trigger-in-step pattern copied to ``count`` orders on 3 workers; the worker of order
    ``crashed`` crashes before it records the ship step, so that order sends two couriers."""
    return ys.Scenario(
        name=f"trigger-in-step-{count}",
        workflows=[charge_in_step, ship_order],
        triggers=[
            ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}")
            for n in range(1, count + 1)
        ],
        faults=[ys.Fault("crash", op="put_step", execution_id=f"order-{crashed}", step_key="ship")],
        invariants=[ys.at_most_once("courier.booked", by="order")],
        workers=3,
    )


def durable_start(count: int, *, crashed: int) -> ys.Scenario:
    """The fix at the same size: the crash makes order ``crashed`` replay its start."""
    return ys.Scenario(
        name=f"durable-start-{count}",
        workflows=[charge_order, ship_order],
        triggers=[
            ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}")
            for n in range(1, count + 1)
        ],
        faults=[ys.Fault("crash", op="put_step", execution_id=f"order-{crashed}", step_key="ship")],
        invariants=[ys.at_most_once("courier.booked", by="order")],
        workers=3,
    )
