"""An expired lease sends the task back to the queue: the worker died, the task did not fail.

order-42's confirmation is one step that sends an email (20 s of work, the mail service
deduplicates by the order's key). The worker sending it crashes before it records the step
(at t=20); its lease, renewed for the work, expires at t=50. This runtime's recoverer
(hibiken/asynq's, fixed: a worker's death is not the task's failure) sends the task back to
the queue and says so in the trace (``the runtime requeued order-42``: an adapter reports what
it decides on its own through ``take_actions``); the other worker claims it, sends the email
again (deduplicated) and the order is confirmed. expired-lease-archived is the recoverer
before the fix.
"""

from __future__ import annotations

import yieldstar_sim as ys


def send(step, order):
    step.world.elapse(20)
    step.world.effect("email.sent", order=order, idempotency_key=f"confirm-{order}")


@ys.workflow("confirm")
def confirm(step, params):
    yield from step.run("send", lambda: send(step, params["order"]))
    return "confirmed"


scenario = ys.Scenario(
    name="expired-lease-requeued",
    workflows=[confirm],
    triggers=[ys.Trigger("confirm", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("crash", op="put_step", step_key="send")],
    invariants=[ys.at_most_once("email.sent", by="order")],
    # A stall can make two sending attempts overlap; the mail service deduplicates by the key.
    overlap_safe=["send"],
    runtime="yieldstar_sim.examples.flawed_runtimes:RequeuesExpiredLeasesRuntime",
)
