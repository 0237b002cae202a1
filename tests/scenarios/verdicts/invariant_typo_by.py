"""An invariant that counts an effect by a field its effects do not carry (a misspelled field)."""

import yieldstar_sim as ys

base = ys.load_scenario("durable-start")
scenario = ys.Scenario(
    name="invariant-typo-by",
    workflows=base.workflows,
    triggers=base.triggers,
    invariants=[ys.at_most_once("courier.booked", by="ordr")],
)
