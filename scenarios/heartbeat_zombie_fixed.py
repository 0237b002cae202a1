"""Failed heartbeats, fixed: the worker stops the attempt at its first failed renewal.

The same truck and the same fault as heartbeat-zombie: w2's renewal at t=20 fails. This time
the workers stop an attempt after one failed renewal (``stop_after_failed_renewals=1``, the
default): the body sees it at that heartbeat and does no more, w2 gives the delivery back
while its lease still holds, and after the redelivery delay (t=25) the step runs again from
its start and dispatches the truck once, at t=85. No two attempts of the step ever run at
once. The explorer verifies it under every interleaving and any one fault but a stall: an
attempt that hangs in the middle of its work resumes and works on before it reaches a
heartbeat, which no policy can prevent (zombie-attempt-fixed: an effect safe to repeat).
"""

from __future__ import annotations

import yieldstar_sim as ys


def load_truck(step, order):
    for _crate in range(3):
        step.world.elapse(20)  # a crate's work
        step.heartbeat()  # a choice point: the renewal may fail, and the body learns it here
    step.world.effect("truck.dispatched", order=order, idempotency_key=f"truck-{order}")


# No per-attempt timeout: loading takes as long as it takes; the heartbeats say it is alive.
LOAD = ys.define_step("load", load_truck, lambda s: s.timeout(0))


@ys.workflow("ship")
def ship(step, params):
    yield from step.run("load", LOAD, step, params["order"])
    return "dispatched"


scenario = ys.Scenario(
    name="heartbeat-zombie-fixed",
    workflows=[ship],
    steps=[LOAD],
    triggers=[ys.Trigger("ship", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("infra_error", op="renew", step_key="load")],
    invariants=[ys.at_most_once("truck.dispatched", by="order")],
    stop_after_failed_renewals=1,  # the fix: a failed renewal stops the attempt
)
