"""A step key made of uuid4(), fixed: the key comes from the order, the same on every replay.

The story of uuid_in_step_key.py with the payment step keyed by the order number: a replay asks
for the step the record has, gets its recorded receipt, and two runs of one schedule give one
trace. Exploring it with one fault at every choice point finds no violation.
"""

from __future__ import annotations

from pathlib import Path

import yieldstar_sim as ys

hazard = ys.load_scenario(Path(__file__).with_name("uuid_in_step_key.py"))


def charge(world, order):
    world.effect("card.charged", order=order, idempotency_key=f"charge-{order}")
    return f"ch-{order}"


@ys.workflow("order")
def order(step, params):
    key = f"charge-{params['order']}"  # the fix: a key the replay computes again
    receipt = yield from step.run(key, charge, step.world, params["order"])
    yield from step.delay("fraud-check", 60)
    return receipt


scenario = ys.Scenario(
    name="uuid-in-step-key-fixed",
    workflows=[order],
    triggers=hazard.triggers,
    invariants=hazard.invariants,
)
