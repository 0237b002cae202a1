"""Two concurrent starts of one request: a frozen worker and its replacement both call start.

The worker delivering order-42 freezes for 40 s just before its start call. Its lease expires
at t=30 and the other worker replays the order and starts ship-order. At t=40 the frozen worker
wakes up and makes its start call with the same request ID (order-42, ship): start is not
fenced, so it is answered, with the same ship-order, and nothing new starts. Its next write is
refused. One target, one courier.
"""

from __future__ import annotations

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order

scenario = ys.Scenario(
    name="concurrent-starts",
    workflows=[charge_order, ship_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("freeze", op="start", step_key="ship", seconds=40)],
    invariants=[ys.at_most_once("courier.booked", by="order")],
)
