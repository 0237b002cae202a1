"""RFC 002's frozen worker: it loses its lease, a second worker replays, the first is fenced.

The worker delivering order-42 starts ship-order, then freezes for 40 s before it records the
ship step. Its 30 s lease expires; the other worker claims order-42 and replays it: the charge
step is recorded, and the replayed start returns the ship-order that exists. When the frozen
worker wakes up, its write of the ship step is refused (its fencing token is stale), and the
execution keeps the second worker's outcome. One courier.
"""

from __future__ import annotations

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order

scenario = ys.Scenario(
    name="frozen-worker",
    workflows=[charge_order, ship_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("freeze", op="put_step", step_key="ship", seconds=40)],
    invariants=[ys.at_most_once("courier.booked", by="order")],
)
