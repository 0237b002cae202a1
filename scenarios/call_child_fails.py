"""A call whose child fails: the caller gets the child's error and compensates (RFC 008).

order-42 charges the card with step.call: it starts charge-card and waits for its outcome. The
card is declined (a permanent error: no retry can help), charge-card fails, its end wakes
order-42, and step.call raises ChildFailedError carrying charge-card's ID and error. order-42
releases the reserved stock and ends with a clear result.
"""

from __future__ import annotations

import yieldstar_sim as ys


def decline():
    raise ys.Permanent(ValueError("card declined"))


@ys.workflow("charge-card")
def charge_card(step, params):
    charged = yield from step.run("charge", decline)
    return charged


@ys.workflow("order")
def order(step, params):
    number = params["order"]
    yield from step.run("reserve", lambda: step.world.effect("stock.reserved", order=number))
    try:
        yield from step.call("charge", "charge-card", {"order": number})
    except ys.ChildFailedError as error:
        yield from step.run(
            "release",
            lambda: step.world.effect(
                "stock.released", order=number, idempotency_key=f"release-{number}"
            ),
        )
        return {"declined": error.execution_id, "why": error.error.message}
    return {"charged": True}


scenario = ys.Scenario(
    name="call-child-fails",
    workflows=[order, charge_card],
    triggers=[ys.Trigger("order", {"order": 42}, execution_id="order-42")],
    invariants=[ys.at_most_once("stock.released", by="order")],
    expected=[ys.expect("charge-card", error="StepError", message="card declined")],
)
