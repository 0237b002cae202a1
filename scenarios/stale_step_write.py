"""A superseded delivery overwrites a completed step's record: recorded history changed.

The story of stale-step-write-fixed, on a runtime that checks a step write against the
execution and not against the write's fencing token (modelled on Cadence's history that a
write after a database timeout wrote twice, two versions of one node: cadence-workflow/cadence
#4316). w2 charges order-42 at t=0 and freezes before it records the charge; w1 takes over at
t=30, charges (deduplicated), records the charge with its receipt, confirmed at t=30, and packs
the parcel with it. At t=40 w2 wakes and its stale write lands: the charge step, completed,
now holds w2's receipt, confirmed at t=0, and the next delivery would replay a charge the
parcel never saw. The built-in "recorded history never changes" names the record, its first
value and the write that changed it; one fault (a freeze before the charge's record) finds it.
"""

from __future__ import annotations

from pathlib import Path

import yieldstar_sim as ys

fixed = ys.load_scenario(Path(__file__).with_name("stale_step_write_fixed.py"))

scenario = ys.Scenario(
    name="stale-step-write",
    workflows=fixed.workflows,
    triggers=fixed.triggers,
    faults=fixed.faults,
    invariants=fixed.invariants,
    overlap_safe=fixed.overlap_safe,
    runtime="yieldstar_sim.examples.flawed_runtimes:StaleStepWritesRuntime",
)
