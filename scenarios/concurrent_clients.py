"""Two clients start one order at once: the runtime admits one execution and answers the other.

The shop's web front end (`web`) and its mobile API (`mobile`) both start charge-order for
order 42 with the business ID order-42, at the same instant: a double click that reached two
servers. Which one goes first is the scheduler's choice. The runtime admits one execution and
answers the other with its business-ID policy: refused with EXECUTION_EXISTS here (the
default), or the existing execution with `on_existing_id="return_existing"`. Both answers are
in the trace. One order, one courier.
"""

from __future__ import annotations

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order

web, mobile = ys.Client("web"), ys.Client("mobile")

scenario = ys.Scenario(
    name="concurrent-clients",
    workflows=[charge_order, ship_order],
    triggers=[
        ys.Trigger("charge-order", {"order": 42}, execution_id="order-42", client=web),
        ys.Trigger("charge-order", {"order": 42}, execution_id="order-42", client=mobile),
    ],
    invariants=[ys.at_most_once("courier.booked", by="order")],
)
