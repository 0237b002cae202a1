"""A start whose response is lost: the worker lives, the delivery rejects and is retried.

The start of ship-order commits, but its response never reaches the worker: the client raises.
Workflow code never sees that error; the delivery rejects, the lease is released, and after the
redelivery delay the order is delivered again. Its replayed start returns the committed
ship-order. One courier.
"""

from __future__ import annotations

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order

scenario = ys.Scenario(
    name="lost-response",
    workflows=[charge_order, ship_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("lose_response", op="start", step_key="ship")],
    invariants=[ys.at_most_once("courier.booked", by="order")],
)
