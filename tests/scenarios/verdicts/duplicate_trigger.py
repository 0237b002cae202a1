"""Two triggers with one caller-chosen execution ID: the second is refused, the run goes on."""

import yieldstar_sim as ys


@ys.workflow("ship")
def ship(step, params):
    yield from step.run("book", lambda: step.world.effect("courier.booked", order=params["order"]))


scenario = ys.Scenario(
    name="duplicate-trigger",
    workflows=[ship],
    triggers=[
        ys.Trigger("ship", {"order": 42}, execution_id="order-42"),
        ys.Trigger("ship", {"order": 42}, execution_id="order-42", at=5),
    ],
    invariants=[ys.at_most_once("courier.booked", by="order")],
)
