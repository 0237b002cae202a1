"""A deploy changes a recorded child's params: the replay is stopped, not silently continued.

Version 1 of order creates its packing child pack-42 with the items of the order and waits for
it. At t=10, while pack-42 is still waiting for stock, the shop deploys version 2, whose order
computes the child's params another way (gift wrapping added). When pack-42 finishes at t=60,
order-42 is delivered again under version 2: its pack step is recorded, so nothing would run
it again and the old child's result would be returned as if the new params had been asked for.
Replay compares what each recorded step asked for (kind, target workflow, child ID, a digest of
the params) and stops the order with a NondeterminismError naming the params, as Temporal fails
a workflow whose commands no longer match its history. Had the worker crashed before it
recorded the pack step, the replayed start_child would be refused with START_REQUEST_MISMATCH
instead (the child's request is recorded with its params): the scenario declares both ends.
"""

from __future__ import annotations

import yieldstar_sim as ys


@ys.workflow("pack")
def pack(step, params):
    yield from step.delay("wait-for-stock", 60)
    yield from step.run(
        "pack",
        lambda: step.world.effect(
            "parcel.packed", order=params["order"], idempotency_key=step.execution_id
        ),
    )
    return f"parcel with {len(params['items'])} item(s)"


@ys.workflow("order")
def order_v1(step, params):
    number = params["order"]
    child = {"order": number, "items": params["items"]}
    parcel = yield from step.child("pack", pack, f"pack-{number}", child)
    return {"parcel": parcel}


@ys.workflow("order")
def order_v2(step, params):
    number = params["order"]
    child = {"order": number, "items": params["items"], "gift_wrap": True}  # the change
    parcel = yield from step.child("pack", pack, f"pack-{number}", child)
    return {"parcel": parcel}


scenario = ys.Scenario(
    name="deploy-changes-params",
    workflows=[order_v1, pack],
    deploys=[ys.Deploy(10.0, [order_v2, pack])],
    triggers=[ys.Trigger("order", {"order": 42, "items": ["mug"]}, execution_id="order-42")],
    expected=[
        ys.expect("order", error="NondeterminismError"),
        ys.expect("order", code="START_REQUEST_MISMATCH"),  # the child's start not recorded
    ],
)
