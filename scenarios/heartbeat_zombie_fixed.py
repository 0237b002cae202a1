"""Failed heartbeats, fixed: the worker stops the attempt at its first failed renewal, and the
dock turns away a crew that lost its lease.

The same truck and the same fault as heartbeat-zombie: w2's renewal at t=20 fails. This time
the workers stop an attempt after one failed renewal (``stop_after_failed_renewals=1``, the
default): the body sees it at that heartbeat and does no more, w2 gives the delivery back
while its lease still holds, and after the redelivery delay (t=25) the step runs again from
its start and dispatches the truck once, at t=85.

A heartbeat cannot stop an attempt that hangs in the middle of its work (a stall): it resumes
after its lease lapsed and works on beside the retry before it reaches its next heartbeat. So
each crate goes through the dock's fence: the crew shows the delivery's fencing token
(``step.world.token``, which only grows), the dock keeps the newest it has seen and turns an
older crew away. A stalled crew that resumes after its successor loaded a crate loads
nothing more. The two attempts may still overlap in time, harmlessly, so the step is declared
``overlap_safe``, and what the overlap could break is checked instead: the crates in the truck
come from one crew at a time (their crews' tokens never go back). The explorer verifies it
under every interleaving and any one fault, a stall included.
"""

from __future__ import annotations

import yieldstar_sim as ys


class TurnedAway(Exception):
    """The dock saw a newer crew: this attempt lost its lease, and loads nothing more."""


def load_truck(step, order):
    crew = step.world.token  # the delivery's fencing token
    for crate in range(3):
        step.world.elapse(20)  # a crate's work
        # The dock's fence, read and written at one instant: nothing comes in between.
        newest = step.world.read(f"dock-{order}.crew", 0)
        if newest > crew:
            raise TurnedAway(f"crew {crew} turned away: crew {newest} loads truck {order}")
        step.world.write(f"dock-{order}.crew", crew)
        # The dock takes each crate once: a retry that loads it again changes nothing.
        step.world.effect(
            "crate.loaded", order=order, crate=crate, idempotency_key=f"crate-{order}-{crate}"
        )
        step.heartbeat()  # a choice point: the renewal may fail, and the body learns it here
    step.world.effect("truck.dispatched", order=order, idempotency_key=f"truck-{order}")


# No per-attempt timeout: loading takes as long as it takes; the heartbeats say it is alive.
LOAD = ys.define_step("load", load_truck, lambda s: s.timeout(0))


@ys.workflow("ship")
def ship(step, params):
    yield from step.run("load", LOAD, step, params["order"])
    return "dispatched"


def one_crew_at_a_time(run):
    """The crates loaded into each truck come from one crew at a time: in the order they were
    loaded, their crews' fencing tokens never go back."""
    newest: dict[object, int] = {}
    for effect in sorted(run.effects, key=lambda effect: effect.at):
        if effect.name != "crate.loaded" or effect.token is None:
            continue
        truck = effect.data["order"]
        if effect.token < newest.get(truck, 0):
            return (
                f"crew {effect.token} loaded crate {effect.data['crate']} into truck {truck} "
                f"at t={effect.at:g}, after crew {newest[truck]} had begun loading it"
            )
        newest[truck] = effect.token
    return None


scenario = ys.Scenario(
    name="heartbeat-zombie-fixed",
    workflows=[ship],
    steps=[LOAD],
    triggers=[ys.Trigger("ship", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("infra_error", op="renew", step_key="load")],
    invariants=[ys.at_most_once("truck.dispatched", by="order"), one_crew_at_a_time],
    stop_after_failed_renewals=1,  # the fix: a failed renewal stops the attempt
    overlap_safe=["load"],  # a stall can still overlap two attempts; the dock's fence holds
)
