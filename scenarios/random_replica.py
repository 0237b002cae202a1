"""A cart saved to one replica and read back from another: a random draw that some seeds hide.

save-cart writes order 42's cart to a replica it picks at random (``step.world.choice``), and
charge reads the cart back from a replica it picks at random again, as a client behind a load
balancer without sticky sessions does; the replicas do not copy each other. When the two
draws differ, charge finds no cart and charges for nothing. Each draw is a choice point: a
plain run takes whatever its seed draws (seed 0 draws replica-a, then replica-b, and fails;
seed 4 draws replica-b twice and holds: written with ``step.world.random()``, the bug would
show or hide with the seed), and the exhaustive search tries every option of every draw and
finds it with no fault at all. random-replica-fixed reads the cart from the replica save-cart
returned: its recorded result, the same on every replay.
"""

from __future__ import annotations

import yieldstar_sim as ys

REPLICAS = ("replica-a", "replica-b")


def save_cart(step, order):
    replica = step.world.choice(REPLICAS)  # a choice point: either replica
    step.world.write(f"{replica}/cart-{order}", ["lamp", "rug"])
    return replica


def charge(step, order):
    replica = step.world.choice(REPLICAS)  # the bug: a replica drawn again
    cart = step.world.read(f"{replica}/cart-{order}", [])
    step.world.effect(
        "card.charged", order=order, items=len(cart), idempotency_key=f"charge-{order}"
    )


@ys.workflow("checkout")
def checkout(step, params):
    order = params["order"]
    yield from step.run("save-cart", lambda: save_cart(step, order))
    yield from step.run("charge", lambda: charge(step, order))
    return "charged"


def the_charge_covers_the_cart(run):
    """Every charge is for the two items the cart was saved with."""
    for effect in run.effects_named("card.charged"):
        if effect.data["items"] != 2:
            return (
                f"order {effect.data['order']} was charged for {effect.data['items']} items of 2"
                f" by {effect.execution_id}"
            )
    return None


scenario = ys.Scenario(
    name="random-replica",
    workflows=[checkout],
    triggers=[ys.Trigger("checkout", {"order": 42}, execution_id="order-42")],
    invariants=[the_charge_covers_the_cart],
)
