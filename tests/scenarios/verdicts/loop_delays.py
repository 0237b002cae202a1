"""A workflow that sleeps forever: max_time cuts the run, which is incomplete."""

import yieldstar_sim as ys


@ys.workflow("forever")
def forever(step, params):
    i = 0
    while True:
        yield from step.delay(f"nap-{i}", 600)
        i += 1


scenario = ys.Scenario(
    name="loop-delays",
    workflows=[forever],
    triggers=[ys.Trigger("forever", execution_id="loop-1")],
)
