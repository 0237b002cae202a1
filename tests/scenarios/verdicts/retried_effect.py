"""A step's attempt acts and then runs past its timeout: the retry acts again."""

import yieldstar_sim as ys


def book(step):
    step.world.effect("courier.booked", order=42)
    step.world.elapse(10)


booking = ys.define_step("book", book, lambda s: s.retry(2).timeout(5))


@ys.workflow("ship")
def ship(step, params):
    yield from step.run("book", booking, step)


scenario = ys.Scenario(
    name="retried-effect",
    workflows=[ship],
    steps=[booking],
    triggers=[ys.Trigger("ship", execution_id="order-42")],
    invariants=[ys.at_most_once("courier.booked", by="order")],
    expected=[ys.expect("ship", error="StepError")],
)
