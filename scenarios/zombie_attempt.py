"""A zombie attempt: a stalled charge resumes after its retry and charges the card again.

w2 starts charging order 42 (five seconds of work); this attempt hangs for 50 s (a stall: a
hung call, a long pause, still within the step's 60 s timeout), but w2 itself goes on and
takes order 43. Nobody renews order 42's
lease, so at t=30 it expires and w1 runs the charge again, records it and completes the order.
At t=55 the stalled attempt resumes, unaware of the time it lost: it charges the card (the
ledger shows two charges, tokens 2 and 1), then its fenced writes are refused. Fencing guards
the records, not the outside world: the charge has no idempotency key.
"""

from __future__ import annotations

import yieldstar_sim as ys


def charge(step, order, work):
    step.world.elapse(work)  # a choice point: the attempt may stall here
    step.world.effect("card.charged", order=order)


@ys.workflow("checkout")
def checkout(step, params):
    yield from step.run("charge", lambda: charge(step, params["order"], params["work"]))
    return "charged"


scenario = ys.Scenario(
    name="zombie-attempt",
    workflows=[checkout],
    triggers=[
        ys.Trigger("checkout", {"order": 42, "work": 5}, execution_id="order-42"),
        ys.Trigger("checkout", {"order": 43, "work": 30}, execution_id="order-43", at=10),
    ],
    faults=[ys.Fault("stall", op="elapse", execution_id="order-42", seconds=50)],
    invariants=[ys.at_most_once("card.charged", by="order")],
)
