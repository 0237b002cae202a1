"""RFC 003's fix: step.start, under the same crash between the two writes.

charge-order starts ship-order with step.start. The worker delivering order-42 crashes right
after the start commits, before it records the ship step. When the order is delivered again,
the replayed start sends the same request ID (order-42, ship), and the runtime returns the
ship-order it already admitted. One courier.
"""

from __future__ import annotations

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order

scenario = ys.Scenario(
    name="durable-start",
    workflows=[charge_order, ship_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("crash", op="put_step", execution_id="order-42", step_key="ship")],
    invariants=[ys.at_most_once("courier.booked", by="order")],
)
