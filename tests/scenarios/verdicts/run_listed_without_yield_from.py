"""step.run iterated by the code (`list(...)`) instead of run with `yield from`: the code goes
on with the request in a list, the body never runs, and the workflow fails naming the verb."""

import yieldstar_sim as ys


@ys.workflow("ship")
def ship(step, params):
    label = list(step.run("book", lambda: step.world.effect("courier.booked") or "label"))
    yield from step.delay("settle", 1.0)
    return {"label": str(label)}


scenario = ys.Scenario(
    name="run-listed-without-yield-from",
    workflows=[ship],
    triggers=[ys.Trigger("ship", execution_id="order-42")],
)
