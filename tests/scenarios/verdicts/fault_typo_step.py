"""A fault with a misspelled step key: it matches no choice point."""

import yieldstar_sim as ys

base = ys.load_scenario("durable-start")
scenario = ys.Scenario(
    name="fault-typo-step",
    workflows=base.workflows,
    triggers=base.triggers,
    faults=[ys.Fault("crash", op="put_step", step_key="shipp")],
)
