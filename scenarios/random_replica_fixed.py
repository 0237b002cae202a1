"""The replica draw, fixed: the cart is read back from the replica it was saved to.

As random-replica, save-cart writes order 42's cart to a replica drawn at random, but it
returns the replica, and charge reads the cart from that one: the draw is made once, inside a
step, and its recorded result is what the workflow goes on with (a replay of save-cart's step
returns the same replica, never a new draw). The exhaustive search tries both replicas and
verifies the charge covers the cart under every interleaving and any single fault.
"""

from __future__ import annotations

import yieldstar_sim as ys

REPLICAS = ("replica-a", "replica-b")


def save_cart(step, order):
    replica = step.world.choice(REPLICAS)  # a choice point: either replica
    step.world.write(f"{replica}/cart-{order}", ["lamp", "rug"])
    return replica


def charge(step, order, replica):
    cart = step.world.read(f"{replica}/cart-{order}", [])  # the replica the cart is on
    step.world.effect(
        "card.charged", order=order, items=len(cart), idempotency_key=f"charge-{order}"
    )


@ys.workflow("checkout")
def checkout(step, params):
    order = params["order"]
    replica = yield from step.run("save-cart", lambda: save_cart(step, order))
    yield from step.run("charge", lambda: charge(step, order, replica))
    return "charged"


def the_charge_covers_the_cart(run):
    """Every charge is for the two items the cart was saved with."""
    for effect in run.effects_named("card.charged"):
        if effect.data["items"] != 2:
            return f"order {effect.data['order']} was charged for {effect.data['items']} items of 2"
    return None


scenario = ys.Scenario(
    name="random-replica-fixed",
    workflows=[checkout],
    triggers=[ys.Trigger("checkout", {"order": 42}, execution_id="order-42")],
    invariants=[the_charge_covers_the_cart],
)
