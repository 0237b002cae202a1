"""Fan-out checkpointed in completion order: a recovery meets another order and swaps results.

checkout-42 charges the card and books a courier at once (``step.all``), then emails the
customer the receipt and the label. The engine modelled here numbers the gathered steps in the
order they complete and, on replay, hands the n-th gathered step the n-th checkpoint: IDs drawn
from completion order, not stable IDs at the call site (``group_ids="completion-order"``, a bug
engines have shipped). Without a fault nothing shows.

The explorer finds it with one fault: the courier completes first and is checkpointed, then the
worker crashes before it records the charge. The recovery replays the group in call order:
charge-card takes the courier's checkpoint (its "receipt" is the label), book-courier finds
none and books again (the courier service deduplicates it by its key), and the email names the
label as the receipt. fan-out-order-fixed is the same workflow on this driver, whose
replay finds each member's checkpoint by its step key.
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
    name="fan-out-order",
    workflows=[checkout],
    triggers=[ys.Trigger("checkout", {"order": 42}, execution_id="checkout-42")],
    invariants=[email_names_the_label_and_receipt],
    profile=ys.DriverProfile("completion-order-ids", group_ids="completion-order"),
)
