"""A failure other than the declared one: the scenario expects a StepError, a ValueError ends it."""

import yieldstar_sim as ys


@ys.workflow("ship")
def ship(step, params):
    yield from step.run("book", lambda: "booked")
    raise ValueError("no courier today")


scenario = ys.Scenario(
    name="expected-other-failure",
    workflows=[ship],
    triggers=[ys.Trigger("ship", execution_id="order-42")],
    expected=[ys.expect("ship", error="StepError")],
)
