"""A timed-out attempt that keeps running beside its retry, and charges the card a second time.

The charge step allows two attempts of 20 s each. w2's first attempt hangs for 40 s as it
starts its work (a stall). At its timeout (t=20) w2 gives up on it and records the timeout;
after a second's backoff the retry charges the card and completes the order at t=26. The
attempt w2 gave up on never stopped: at t=45 it resumes and charges again. No fenced write
stops it (it makes none: its worker dropped its result), so only an idempotency key would.
"""

from __future__ import annotations

import yieldstar_sim as ys


def charge(world, order):
    world.elapse(5)  # a choice point: the attempt may stall here
    world.effect("card.charged", order=order)


CHARGE = ys.define_step("charge", charge, lambda s: s.retry(2).backoff(1, 1, 1).timeout(20))


@ys.workflow("checkout")
def checkout(step, params):
    yield from step.run("charge", CHARGE, step.world, params["order"])
    return "charged"


scenario = ys.Scenario(
    name="timed-out-attempt",
    workflows=[checkout],
    steps=[CHARGE],
    triggers=[ys.Trigger("checkout", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("stall", op="elapse", step_key="charge", seconds=40)],
    invariants=[ys.at_most_once("card.charged", by="order")],
)
