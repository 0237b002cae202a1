"""An API client loses the start response and retries with a fresh request ID: two orders run.

The shop's API server (the client `api`) starts charge-order for order 42 with the request ID
order-42. The runtime admits it, but the response is lost on the way back, so the API server
retries, as it should. Its retry policy, though, mints a fresh request ID for the retry
(order-42~retry-2): to the runtime that is a new request, and it admits a second charge-order.
Two couriers come for one parcel. `client-retry-same-request-id` is the fix.
"""

from __future__ import annotations

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order

api = ys.Client("api", ys.ClientRetry(attempts=3, backoff=1.0, reuse_request_id=False))

scenario = ys.Scenario(
    name="client-retry-new-request-id",
    workflows=[charge_order, ship_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42", client=api)],
    faults=[ys.Fault("lose_response", worker="api", op="trigger")],
    invariants=[ys.at_most_once("courier.booked", by="order")],
)
