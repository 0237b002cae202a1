"""A worker whose clock runs behind keeps acting on an expired lease; fencing refuses it.

w2 claims order 42 with a 30 s lease and starts a 40 s charge. Just then its clock falls 60 s
behind (a skew): by its own clock the lease has 90 s left, so it does not heartbeat. The
runtime judges by true time: the lease expires at t=30 and w1 claims order 42 and charges it
again. At t=40 w2 finishes its work believing its lease valid (its clock reads t=-20), charges
the card and tries to record the step: refused, its fencing token 1 is stale. The charge
carries the order's idempotency key, and the step retries an attempt that hangs past its
timeout, so the payment service charges once and the order completes: the scenario holds.
The two attempts do run at once (t=30 to t=40), so the scenario declares the charge safe to
overlap (``overlap_safe``). Its twin skewed-lease-unfenced leaves the key out and charges
twice.
"""

from __future__ import annotations

import yieldstar_sim as ys


def charge(world, order):
    world.elapse(40)  # the worker decides here, by its clock, whether to heartbeat
    world.effect("card.charged", order=order, idempotency_key=f"charge-{order}")


# Retries too: an attempt that hangs past its 60 s timeout is given up on and tried again.
CHARGE = ys.define_step("charge", charge, lambda s: s.retry(3).backoff(1, 1, 1))


@ys.workflow("checkout")
def checkout(step, params):
    yield from step.run("charge", CHARGE, step.world, params["order"])
    return "charged"


scenario = ys.Scenario(
    name="skewed-lease",
    workflows=[checkout],
    steps=[CHARGE],
    triggers=[ys.Trigger("checkout", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("skew", op="elapse", step_key="charge", seconds=60)],
    invariants=[ys.at_most_once("card.charged", by="order")],
    overlap_safe=["charge"],  # the charge is deduplicated: two attempts at once charge once
)
