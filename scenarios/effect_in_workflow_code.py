"""An effect in workflow code, outside any step: it repeats on every replay, with no fault.

confirm-order emails the customer straight from workflow code (the scenario allows step.world
there, to show what it does), then sleeps an hour with a durable delay before it closes the
order. The delay ends the delivery; when the order is delivered again an hour later, workflow
code replays from the top, and the email goes out again: no crash needed. Every replay of every
delivery repeats it. The fix, effect-in-workflow-code-fixed, sends the email from a step, whose
recorded result the replay gets back instead.
"""

from __future__ import annotations

import yieldstar_sim as ys


@ys.workflow("confirm-order")
def confirm_order(step, params):
    step.world.effect("email.sent", order=params["order"])  # the hazard: not in a step
    yield from step.delay("cool-off", 3600)
    yield from step.run("close", lambda: "closed")
    return "closed"


scenario = ys.Scenario(
    name="effect-in-workflow-code",
    workflows=[confirm_order],
    triggers=[ys.Trigger("confirm-order", {"order": 42}, execution_id="order-42")],
    invariants=[ys.at_most_once("email.sent", by="order")],
    world_in_workflow_code=True,
    max_time=7200.0,
)
