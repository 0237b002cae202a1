"""An invariant that watches an effect this run does not make, and nothing like it: a refund
that only a failure would issue."""

import yieldstar_sim as ys

base = ys.load_scenario("durable-start")
scenario = ys.Scenario(
    name="invariant-unwatched",
    workflows=base.workflows,
    triggers=base.triggers,
    invariants=[ys.at_most_once("refund.issued", by="order")],
)
