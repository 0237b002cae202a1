"""A task archived because its worker died: it ends failed, though no attempt of it failed.

The story of expired-lease-requeued, on the recoverer hibiken/asynq#1015 reports: with
MaxRetries(0), a worker killed mid-task makes its task "archived" once the lease expires,
because the expiry is counted as a failed attempt. The worker sending order-42's email
crashes at t=20; at the first claim after its lease expires (t=50) the runtime archives
order-42, and the trace shows only that claim, "nothing due", and the runtime's report of what
it did: ``the runtime archived order-42``. The built-in "executions end as expected" names that
action as the cause (by the runtime, which archived it at t=50 ...), not the step send, which
never failed; one fault (a crash or a freeze in the delivery) finds it.
"""

from __future__ import annotations

from pathlib import Path

import yieldstar_sim as ys

fixed = ys.load_scenario(Path(__file__).with_name("expired_lease_requeued.py"))

scenario = ys.Scenario(
    name="expired-lease-archived",
    workflows=fixed.workflows,
    triggers=fixed.triggers,
    faults=fixed.faults,
    invariants=fixed.invariants,
    overlap_safe=fixed.overlap_safe,
    runtime="yieldstar_sim.examples.flawed_runtimes:ArchivesExpiredLeasesRuntime",
)
