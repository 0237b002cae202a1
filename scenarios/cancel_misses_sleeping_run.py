"""Cancel misses a sleeping run: an engine's cancel looks only at runs due now.

The story of cancel-in-backoff-fixed, on a runtime that models an engine's flawed cancel: it
looks for the executions to cancel in its run queue, where a run waiting out a retry backoff
is not. The shop cancels order-7 at t=2 while its charge waits out the backoff; the runtime
answers that the request reached nothing live, the charge's third attempt goes through at
t=3, and the order ships. "a cancelled live execution ends cancelled" says so, and that the
runtime's answer is why. The scenario names its runtime (Scenario(runtime=...)), so run,
explore, replay and the pytest plugin use it with no --runtime, and the explorer does not
confirm on DuckDB, whose correct cancel would differ on purpose.
"""

from __future__ import annotations

from pathlib import Path

import yieldstar_sim as ys

fixed = ys.load_scenario(Path(__file__).with_name("cancel_in_backoff_fixed.py"))

scenario = ys.Scenario(
    name="cancel-misses-sleeping-run",
    workflows=fixed.workflows,
    steps=fixed.steps,
    triggers=fixed.triggers,
    cancels=fixed.cancels,
    runtime="yieldstar_sim.examples.flawed_runtimes:CancelSkipsBackoffRuntime",
)
