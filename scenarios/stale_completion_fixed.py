"""A timed-out attempt completes by its own token, late: the runtime refuses it.

order-42's booking holds a room. The hotel's API takes 30 s, and the reserve step gives each
attempt 40 s and retries once, 50 s later. Each attempt completes by its own token
(``completes_by_token()``): it reports the hold it got through ``complete_attempt``, as a
Temporal activity reports through its task token. Without a fault, attempt 1 completes at
t=30 and the room is confirmed. When attempt 1 hangs at the hotel (a stall), w2 gives up on it
at its timeout (t=40) and retries at t=90; attempt 2 gets hold-2 and completes at t=120. The
attempt given up on never stopped: at t=110 it gets hold-1 and completes by its token. The
runtime refuses it (its token's lease is the one the retry's claim replaced, and the step is
at attempt 2), and the record of the reserve step stays the hold the workflow confirms.
stale-completion is the same story on a runtime that takes a completion by the execution and
the step alone, whichever attempt sent it (the Temporal Java SDK's test server, whose
activity task tokens did not carry the attempt, so that a previous attempt could complete the
next one: temporalio/sdk-java#84, fixed in temporalio/sdk-java#1524).
"""

from __future__ import annotations

import yieldstar_sim as ys


def reserve(world, order):
    world.elapse(30)  # the hotel's API: a choice point where the attempt may stall
    hold = f"hold-{world.attempt}"
    world.effect("room.held", order=order, hold=hold, idempotency_key=hold)
    return hold


RESERVE = ys.define_step(
    "reserve",
    reserve,
    lambda s: s.retry(2).backoff(50, 1, 50).timeout(40).completes_by_token(),
)


@ys.workflow("book")
def book(step, params):
    order = params["order"]
    hold = yield from step.run("reserve", RESERVE, step.world, order)
    yield from step.run(
        "confirm",
        lambda: step.world.effect(
            "room.confirmed", order=order, hold=hold, idempotency_key=f"confirm-{order}"
        ),
    )
    return hold


scenario = ys.Scenario(
    name="stale-completion-fixed",
    workflows=[book],
    steps=[RESERVE],
    triggers=[ys.Trigger("book", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("stall", op="elapse", step_key="reserve", seconds=80)],
    invariants=[ys.at_most_once("room.confirmed", by="order")],
    # The attempt given up on works on beside its retry; what it does at the hotel is its
    # own hold, kept apart by its key.
    overlap_safe=["reserve"],
)
