"""A fault naming a worker the scenario does not have."""

import yieldstar_sim as ys

base = ys.load_scenario("durable-start")
scenario = ys.Scenario(
    name="fault-typo-worker",
    workflows=base.workflows,
    triggers=base.triggers,
    faults=[ys.Fault("crash", worker="w9", op="put_step")],
)
