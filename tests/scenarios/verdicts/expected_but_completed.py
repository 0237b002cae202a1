"""An expectation that does not come true: the scenario allows a failure, the run completes."""

import yieldstar_sim as ys


@ys.workflow("ship")
def ship(step, params):
    yield from step.run("book", lambda: "booked")


scenario = ys.Scenario(
    name="expected-but-completed",
    workflows=[ship],
    triggers=[ys.Trigger("ship", execution_id="order-42")],
    expected=[ys.expect("ship", error="StepError")],
)
