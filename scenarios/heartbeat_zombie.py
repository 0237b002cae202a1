"""A zombie from failed heartbeats: the worker ignores its failed renewal and loads the truck
beside the retry.

w2 loads order 42's truck: three crates of 20 s each, with a heartbeat after each
(``step.heartbeat()``), which renews the 30 s lease just in time. Its first renewal, at t=20,
fails (an infrastructure error). These workers ignore what their renewals answer
(``stop_after_failed_renewals=None``, as a worker that sends its heartbeats and never reads
the answer does), so w2 goes on loading: the lease lapses at t=30 and w1 claims order 42 and
starts loading too. w2's next renewals are refused (the lease is w1's now), and it ignores
those as well: two crews load one truck from t=30 to t=60, when w2 dispatches it, and w1
dispatches it again at t=90 (the dispatch service deduplicates by the order's key, so the
truck leaves once). The built-in invariant that two attempts of one step never run at once
reports it. heartbeat-zombie-fixed stops the attempt at its first failed renewal.
"""

from __future__ import annotations

import yieldstar_sim as ys


def load_truck(step, order):
    for _crate in range(3):
        step.world.elapse(20)  # a crate's work
        step.heartbeat()  # a choice point: the renewal may fail
    step.world.effect("truck.dispatched", order=order, idempotency_key=f"truck-{order}")


# No per-attempt timeout: loading takes as long as it takes; the heartbeats say it is alive.
LOAD = ys.define_step("load", load_truck, lambda s: s.timeout(0))


@ys.workflow("ship")
def ship(step, params):
    yield from step.run("load", LOAD, step, params["order"])
    return "dispatched"


scenario = ys.Scenario(
    name="heartbeat-zombie",
    workflows=[ship],
    steps=[LOAD],
    triggers=[ys.Trigger("ship", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("infra_error", op="renew", step_key="load")],
    invariants=[ys.at_most_once("truck.dispatched", by="order")],
    stop_after_failed_renewals=None,  # the bug: a failed renewal changes nothing
)
