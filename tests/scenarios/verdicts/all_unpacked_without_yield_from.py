"""step.all unpacked without `yield from`, as `asyncio.gather` would be awaited: the code
unpacks the verb's generator, the steps never run, and the workflow fails naming the verb."""

import yieldstar_sim as ys


@ys.workflow("checkout")
def checkout(step, params):
    receipt, label = step.all(
        [
            step.run("charge", lambda: step.world.effect("card.charged") or "receipt"),
            step.run("book", lambda: step.world.effect("courier.booked") or "label"),
        ]
    )
    return {"receipt": receipt, "label": label}


scenario = ys.Scenario(
    name="all-unpacked-without-yield-from",
    workflows=[checkout],
    triggers=[ys.Trigger("checkout", execution_id="checkout-42")],
)
