"""The zombie attempt, fixed: the charge carries the order's idempotency key.

The same stall as zombie-attempt: w2's attempt at order 42 hangs for 50 s while w2 takes order
43, the lease expires, w1 charges and completes the order, and at t=55 the stalled attempt
resumes and charges again. This time the payment service deduplicates by the key
``charge-42``: two calls, one charge. The stale attempt's writes are still refused by fencing
(token 1). A step that may outlive its lease needs an effect that is safe to repeat, and the
scenario says the charge is one (``overlap_safe``): its two attempts run at once, which the
built-in invariant that a step's attempts never overlap would otherwise report.
"""

from __future__ import annotations

import yieldstar_sim as ys


def charge(step, order, work):
    step.world.elapse(work)
    step.world.effect("card.charged", order=order, idempotency_key=f"charge-{order}")


@ys.workflow("checkout")
def checkout(step, params):
    yield from step.run("charge", lambda: charge(step, params["order"], params["work"]))
    return "charged"


scenario = ys.Scenario(
    name="zombie-attempt-fixed",
    workflows=[checkout],
    triggers=[
        ys.Trigger("checkout", {"order": 42, "work": 5}, execution_id="order-42"),
        ys.Trigger("checkout", {"order": 43, "work": 30}, execution_id="order-43", at=10),
    ],
    faults=[ys.Fault("stall", op="elapse", execution_id="order-42", seconds=50)],
    invariants=[ys.at_most_once("card.charged", by="order")],
    overlap_safe=["charge"],  # the charge is deduplicated: two attempts at once charge once
)
