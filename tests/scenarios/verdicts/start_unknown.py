"""step.start of a workflow nobody registered: the started target fails."""

import yieldstar_sim as ys


@ys.workflow("charge-order")
def charge_order(step, params):
    target = yield from step.start("ship", "shipp-order", {"order": 42})
    return target.execution_id


scenario = ys.Scenario(
    name="start-unknown",
    workflows=[charge_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
)
