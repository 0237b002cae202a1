"""A body that takes 20 s of virtual time and then acts: the trace stays in time order."""

import yieldstar_sim as ys


def slow_booking(step):
    step.world.elapse(20)
    step.world.effect("courier.booked", order=42, idempotency_key="order-42")


@ys.workflow("ship")
def ship(step, params):
    yield from step.run("book", lambda: slow_booking(step))


scenario = ys.Scenario(
    name="elapse-effect",
    workflows=[ship],
    triggers=[ys.Trigger("ship", execution_id="order-42")],
    faults=[ys.Fault("crash", op="put_step", step_key="book")],
    invariants=[ys.at_most_once("courier.booked", by="order")],
)
