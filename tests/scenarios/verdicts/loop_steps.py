"""A workflow that records steps forever: max_points cuts the run, which is incomplete."""

import yieldstar_sim as ys


@ys.workflow("forever")
def forever(step, params):
    i = 0
    while True:
        yield from step.run(f"s{i}", lambda: None)
        i += 1


scenario = ys.Scenario(
    name="loop-steps",
    workflows=[forever],
    triggers=[ys.Trigger("forever", execution_id="loop-1")],
    max_points=300,
)
