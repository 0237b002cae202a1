"""Fan-out replayed by step key: whatever order the members completed in, each gets its own.

The checkout of fan-out-order on this driver: ``step.all`` charges the card and
books a courier at once, each checkpointed as it completes. A replay finds each member's
checkpoint by its step key (stable IDs at the call site), so a recovery that meets the members
in another order still gives charge-card its receipt and book-courier its label, and runs only
the member not yet recorded. The exhaustive search verifies it under one fault, in both orders
of completion.
"""

from __future__ import annotations

import yieldstar_sim as ys


def book_courier(step, order):
    step.world.effect("courier.booked", order=order, idempotency_key=f"courier-{order}")
    return f"label-{order}"


def charge_card(step, order):
    step.world.effect("card.charged", order=order, idempotency_key=f"charge-{order}")
    return f"receipt-{order}"


@ys.workflow("checkout")
def checkout(step, params):
    order = params["order"]
    receipt, label = yield from step.all(
        [
            step.run("charge-card", charge_card, step, order),
            step.run("book-courier", book_courier, step, order),
        ]
    )
    yield from step.run(
        "email",
        lambda: step.world.effect(
            "customer.emailed", order=order, label=label, receipt=receipt,
            idempotency_key=f"email-{order}",
        ),
    )  # fmt: skip
    return {"label": label, "receipt": receipt}


def email_names_the_label_and_receipt(run):
    """The customer is emailed the courier's label and the card's receipt, each its own."""
    for effect in run.effects:
        if effect.name != "customer.emailed":
            continue
        order, label, receipt = (effect.data[k] for k in ("order", "label", "receipt"))
        if (label, receipt) != (f"label-{order}", f"receipt-{order}"):
            return f"order {order}: the email names label {label!r} and receipt {receipt!r}"
    return None


scenario = ys.Scenario(
    name="fan-out-order-fixed",
    workflows=[checkout],
    triggers=[ys.Trigger("checkout", {"order": 42}, execution_id="checkout-42")],
    invariants=[email_names_the_label_and_receipt],
)
