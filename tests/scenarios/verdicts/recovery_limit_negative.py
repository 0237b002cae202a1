"""A recovery limit that is not a whole number from 1: max_recovery_attempts=-2."""

import yieldstar_sim as ys

base = ys.load_scenario("durable-start")
scenario = ys.Scenario(
    name="recovery-limit-negative",
    workflows=base.workflows,
    triggers=base.triggers,
    max_recovery_attempts=-2,
)
