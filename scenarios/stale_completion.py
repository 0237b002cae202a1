"""A timed-out attempt completes the step after its retry began: recorded history changes.

The story of stale-completion-fixed, on a runtime that takes an attempt's completion
by the execution and the step alone, not by the attempt and the lease it started under: the
Temporal Java SDK's test server, whose activity task tokens named the workflow and the
activity but not the attempt, so that "previous activity retry can complete next one"
(temporalio/sdk-java#84, fixed in temporalio/sdk-java#1524). Attempt 1 of the reserve step
hangs at the hotel; w2 gives up on it at its timeout (t=40) and retries at t=90. At t=110 the
attempt given up on completes with hold-1, and the runtime records it; at t=120 attempt 2
completes with hold-2 and the record changes again. The built-in "recorded history never
changes" names the record, its first value and the write that changed it; one fault (a stall
of attempt 1 at the hotel) finds it.
"""

from __future__ import annotations

from pathlib import Path

import yieldstar_sim as ys

fixed = ys.load_scenario(Path(__file__).with_name("stale_completion_fixed.py"))

scenario = ys.Scenario(
    name="stale-completion",
    workflows=fixed.workflows,
    steps=fixed.steps,
    triggers=fixed.triggers,
    faults=fixed.faults,
    invariants=fixed.invariants,
    overlap_safe=fixed.overlap_safe,
    runtime="yieldstar_sim.examples.flawed_runtimes:CompletesAnyAttemptRuntime",
)
