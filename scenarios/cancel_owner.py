"""A parent is cancelled while its owned child and its detached child run (RFC 009).

order-42 spawns a detached survey (it outlives its parent) and creates the owned child pack-42
(step.child: creating it takes cancellation ownership), then waits for the parcel. At t=10 the
shop cancels order-42. The cancellation reaches what order-42 owns: pack-42 is cancelled at its
current step, order-42 at its own (the wait for pack-42). The detached survey is not: it sends
its survey at t=50.
"""

from __future__ import annotations

import yieldstar_sim as ys


@ys.workflow("pack")
def pack(step, params):
    yield from step.delay("wait-for-stock", params["seconds"])
    yield from step.run(
        "pack",
        lambda: step.world.effect(
            "parcel.packed", order=params["order"], idempotency_key=step.execution_id
        ),
    )
    return "packed"


@ys.workflow("survey")
def survey(step, params):
    yield from step.delay("wait-a-bit", 50)
    yield from step.run(
        "send",
        lambda: step.world.effect(
            "survey.sent", order=params["order"], idempotency_key=step.execution_id
        ),
    )
    return "sent"


@ys.workflow("order")
def order(step, params):
    number = params["order"]
    survey_id = yield from step.spawn("survey", survey, f"survey-{number}", {"order": number})
    packed = yield from step.child(
        "pack", pack, f"pack-{number}", {"order": number, "seconds": 100}
    )
    return {"packed": packed, "survey": survey_id}


scenario = ys.Scenario(
    name="cancel-owner",
    workflows=[order, pack, survey],
    triggers=[ys.Trigger("order", {"order": 42}, execution_id="order-42")],
    cancels=[ys.Cancel("order-42", at=10)],
    invariants=[ys.at_most_once("survey.sent", by="order")],
)
