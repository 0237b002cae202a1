"""A superseded delivery's step write, fenced: the recorded charge stays the one replayed.

order-42's payment takes two steps: charge the card (the provider's receipt says when it
confirmed the charge) and pack the parcel (30 s of work). w2 charges at t=0 and freezes for
40 s before it records the charge; its 30 s lease expires, w1 claims order-42 at t=30,
charges again (the provider deduplicates by the order's key and confirms again) and records
the charge with its receipt, then packs. At t=40 w2 wakes and writes its charge record under
its stale token: the runtime refuses it (RFC 002's fencing), the record keeps w1's receipt,
and every later delivery replays the receipt the parcel was packed with. stale-step-write is
the same story on a runtime that lets the stale write land.
"""

from __future__ import annotations

import yieldstar_sim as ys


def charge(step, order):
    step.world.effect("card.charged", order=order, idempotency_key=f"order-{order}")
    return {"receipt": f"rc-{order}", "confirmed_at": step.world.now()}


def pack(step, order):
    step.world.elapse(30)
    step.world.effect("parcel.packed", order=order, idempotency_key=f"pack-{order}")


@ys.workflow("pay")
def pay(step, params):
    order = params["order"]
    receipt = yield from step.run("charge", lambda: charge(step, order))
    yield from step.run("pack", lambda: pack(step, order))
    return receipt


scenario = ys.Scenario(
    name="stale-step-write-fixed",
    workflows=[pay],
    triggers=[ys.Trigger("pay", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("freeze", worker="w2", op="put_step", step_key="charge", seconds=40)],
    invariants=[ys.at_most_once("card.charged", by="order")],
    # A stall can make two packing attempts overlap; the warehouse deduplicates by the key.
    overlap_safe=["pack"],
)
