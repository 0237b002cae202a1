"""A trigger whose params hold a datetime: the runtime refuses it on every run, so nothing ran;
it came back ok, exit 0."""

from datetime import datetime

import yieldstar_sim as ys


@ys.workflow("charge")
def charge(step, params):
    yield from step.run("pay", lambda: step.world.effect("card.charged", order=params["order"]))


scenario = ys.Scenario(
    name="trigger-params-not-plain",
    workflows=[charge],
    triggers=[
        ys.Trigger("charge", {"order": 1, "when": datetime(2024, 1, 1)}, execution_id="charge-1")
    ],
    invariants=[ys.at_most_once("card.charged")],
)
