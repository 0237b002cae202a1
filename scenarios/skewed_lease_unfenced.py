"""The skewed lease with an unfenced charge: a worker behind its clock charges a second time.

The same skew as skewed-lease: w2's clock falls 60 s behind as it starts a 40 s charge under
a 30 s lease, so it does not heartbeat; at t=30 the lease expires by true time and w1 charges
order 42 again. At t=40 w2, believing its lease valid, charges too. Fencing refuses its write
of the step, but the charge is outside the runtime and has no idempotency key: the card is
charged twice. Fencing protects the records; effects need a key the outside service checks.
"""

from __future__ import annotations

import yieldstar_sim as ys


def charge(step, order):
    step.world.elapse(40)  # the worker decides here, by its clock, whether to heartbeat
    step.world.effect("card.charged", order=order)


@ys.workflow("checkout")
def checkout(step, params):
    yield from step.run("charge", lambda: charge(step, params["order"]))
    return "charged"


scenario = ys.Scenario(
    name="skewed-lease-unfenced",
    workflows=[checkout],
    triggers=[ys.Trigger("checkout", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("skew", op="elapse", step_key="charge", seconds=60)],
    invariants=[ys.at_most_once("card.charged", by="order")],
)
