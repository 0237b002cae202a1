"""Joining a child by its business ID never takes ownership (the steps guide, Child Ownership).

order-42 creates the child fulfillment-42 and waits for it. A second workflow, recheck-42,
started a little later, asks for the same child ID: it joins the existing run, its own input is
ignored, and it does not become the owner. When the shop cancels recheck-42 at t=20, only its
wait ends: fulfillment-42 goes on for its owner, and both... one of them sees the receipt.

The explorer finds the hazard in this design with one fault: ownership goes to whoever creates
the child first. If order-42's worker crashes before its start_child, recheck-42 creates
fulfillment-42 at t=5 and owns it; its cancellation at t=20 cancels the child, and order-42,
replayed at t=30, joins a cancelled run and fails ("executions end as expected" says so).
"""

from __future__ import annotations

import yieldstar_sim as ys


@ys.workflow("fulfil")
def fulfil(step, params):
    yield from step.delay("pick-and-pack", 60)
    receipt = yield from step.run(
        "ship",
        lambda: step.world.effect(
            "order.shipped", order=params["order"], idempotency_key=step.execution_id
        ),
    )
    return {"receipt": f"r-{params['order']}", "by": params["by"], "booked": receipt}


@ys.workflow("order")
def order(step, params):
    receipt = yield from step.child(
        "fulfil",
        fulfil,
        f"fulfillment-{params['order']}",
        {"order": params["order"], "by": "order"},
    )
    return receipt


@ys.workflow("recheck")
def recheck(step, params):
    receipt = yield from step.child(
        "fulfil",
        fulfil,
        f"fulfillment-{params['order']}",
        {"order": params["order"], "by": "recheck"},
    )
    return receipt


scenario = ys.Scenario(
    name="join-child",
    workflows=[order, recheck, fulfil],
    triggers=[
        ys.Trigger("order", {"order": 42}, execution_id="order-42"),
        ys.Trigger("recheck", {"order": 42}, execution_id="recheck-42", at=5),
    ],
    cancels=[ys.Cancel("recheck-42", at=20)],
    invariants=[ys.at_most_once("order.shipped", by="order")],
)
