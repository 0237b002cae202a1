"""The same execution runs a step body again after a crash: the effect repeats (no key)."""

import yieldstar_sim as ys


@ys.workflow("ship")
def ship(step, params):
    yield from step.run("book", lambda: step.world.effect("courier.booked", order=42))


scenario = ys.Scenario(
    name="replayed-effect",
    workflows=[ship],
    triggers=[ys.Trigger("ship", execution_id="order-42")],
    faults=[ys.Fault("crash", op="put_step", step_key="book")],
    invariants=[ys.at_most_once("courier.booked", by="order")],
)
