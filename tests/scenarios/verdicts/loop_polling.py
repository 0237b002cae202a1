"""A workflow that polls forever, a step and a delay a round: each delivery replays every step
recorded before it, so each round costs more. At the default bound of 10,000 choice points it
ran for a minute under load and was cut by the wall clock, "in the workflow code"."""

import yieldstar_sim as ys


@ys.workflow("poll")
def poll(step, params):
    i = 0
    while True:
        yield from step.run(f"check-{i}", lambda: "pending")
        yield from step.delay(f"wait-{i}", 0.1)
        i += 1


scenario = ys.Scenario(
    name="loop-polling",
    workflows=[poll],
    triggers=[ys.Trigger("poll", execution_id="poll-1")],
)
