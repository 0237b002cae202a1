"""An invariant that watches an effect no run makes (a misspelled name)."""

import yieldstar_sim as ys

base = ys.load_scenario("durable-start")
scenario = ys.Scenario(
    name="invariant-typo",
    workflows=base.workflows,
    triggers=base.triggers,
    invariants=[ys.at_most_once("courier.bookd", by="order")],
)
