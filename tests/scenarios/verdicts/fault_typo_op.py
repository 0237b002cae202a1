"""A fault with a misspelled op."""

import yieldstar_sim as ys

base = ys.load_scenario("durable-start")
scenario = ys.Scenario(
    name="fault-typo-op",
    workflows=base.workflows,
    triggers=base.triggers,
    faults=[ys.Fault("crash", op="putstep", step_key="ship")],
)
