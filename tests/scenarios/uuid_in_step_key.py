"""A step key made of uuid4(): every run of the scenario takes another path.

The order workflow names its payment step after a fresh uuid4() (an idempotency key, its
author thought), charges the card, and waits a minute for the fraud check. The next delivery
replays workflow code, draws another uuid, asks for a step the record does not have, and the
driver stops the order with a NondeterminismError. Worse for a test: the uuid is not the seed's,
so two runs of the same schedule differ, and the explorer says "the scenario is not
deterministic", with the first event where two runs part, instead of blaming a runtime. The
fix (uuid_in_step_key_fixed.py) derives the key from the order number.
"""

from __future__ import annotations

import uuid

import yieldstar_sim as ys


def charge(world, order):
    world.effect("card.charged", order=order, idempotency_key=f"charge-{order}")
    return f"ch-{order}"


@ys.workflow("order")
def order(step, params):
    key = f"charge-{uuid.uuid4().hex[:8]}"  # the hazard: not the same on a replay
    receipt = yield from step.run(key, charge, step.world, params["order"])
    yield from step.delay("fraud-check", 60)
    return receipt


scenario = ys.Scenario(
    name="uuid-in-step-key",
    workflows=[order],
    triggers=[ys.Trigger("order", {"order": 7}, execution_id="order-7")],
    invariants=[ys.at_most_once("card.charged", by="order")],
)
