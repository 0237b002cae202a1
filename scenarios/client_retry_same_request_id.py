"""The fix for client-retry-new-request-id: the API client retries with the same request ID.

The API server starts charge-order for order 42 with the request ID order-42, and the response
is lost. It retries with the same request ID, as RFC 003 asks of every caller. This runtime
returns the existing execution for an ID it knows (`on_existing_id="return_existing"`, the
DBOS-style policy), so the retry gets order-42 back and nothing new is admitted; under the
default policy the retry is refused with EXECUTION_EXISTS, which tells the client its first
attempt committed. Either way: one order, one courier.
"""

from __future__ import annotations

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order

api = ys.Client("api", ys.ClientRetry(attempts=3, backoff=1.0, reuse_request_id=True))

scenario = ys.Scenario(
    name="client-retry-same-request-id",
    workflows=[charge_order, ship_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42", client=api)],
    faults=[ys.Fault("lose_response", worker="api", op="trigger")],
    invariants=[ys.at_most_once("courier.booked", by="order")],
    runtime_options={"on_existing_id": "return_existing"},
)
