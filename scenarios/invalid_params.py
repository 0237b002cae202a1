"""Invalid start parameters: INVALID_START_PARAMETERS, and nothing admitted.

charge-order asks to start ship-order with a parameter that has no single JSON form (NaN). The
runtime refuses it before it admits anything; step.start records the rejection and throws
WorkflowStartError with INVALID_START_PARAMETERS, which this workflow catches to flag the order
for a person. A replay restores the same error without asking the runtime again.
"""

from __future__ import annotations

import math

import yieldstar_sim as ys
from yieldstar_sim.examples import ship_order


@ys.workflow("charge-order")
def charge_order(step, params):
    order = params["order"]
    yield from step.run("charge", lambda: step.world.effect("card.charged", order=order))
    try:
        yield from step.start("ship", "ship-order", {"order": order, "weight": math.nan})
    except ys.WorkflowStartError as error:
        code = str(error.code)
        yield from step.run(
            "flag", lambda: step.world.effect("order.flagged", order=order, code=code)
        )
        return {"rejected": code}
    return {"shipped": True}


def nothing_admitted_for_an_invalid_start(run):
    """No ship-order exists: an invalid start admits nothing."""
    started = [r.execution_id for r in run.executions if r.workflow_id == "ship-order"]
    return f"an invalid start admitted {started}" if started else None


scenario = ys.Scenario(
    name="invalid-params",
    workflows=[charge_order, ship_order],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
    invariants=[nothing_admitted_for_an_invalid_start],
)
