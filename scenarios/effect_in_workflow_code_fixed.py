"""The email from a step: recorded once, replayed from its record, sent once.

The same story as effect-in-workflow-code, with the email inside step.run: the delivery after
the hour's delay replays the recorded step instead of sending again. A step is at least once
before its record commits (a crash between the email and its record runs the body again), so
the mail service deduplicates by the order's key, and one email goes out under every single
fault.
"""

from __future__ import annotations

import yieldstar_sim as ys


@ys.workflow("confirm-order")
def confirm_order(step, params):
    order = params["order"]
    yield from step.run(
        "email",
        lambda: step.world.effect("email.sent", order=order, idempotency_key=f"confirm-{order}"),
    )
    yield from step.delay("cool-off", 3600)
    yield from step.run("close", lambda: "closed")
    return "closed"


scenario = ys.Scenario(
    name="effect-in-workflow-code-fixed",
    workflows=[confirm_order],
    triggers=[ys.Trigger("confirm-order", {"order": 42}, execution_id="order-42")],
    invariants=[ys.at_most_once("email.sent", by="order")],
    max_time=7200.0,
)
