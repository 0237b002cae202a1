"""Orphan after cancel: a frozen worker creates an owned child after its owner was cancelled.

The worker delivering order-42 freezes for 40 s just before start_child of the owned child
pack-42. At t=10 the shop cancels order-42; its cancellation reaches what it owns, but pack-42
does not exist yet. At t=30 the frozen worker's lease expires and the other worker delivers the
cancellation: order-42 ends cancelled. At t=40 the frozen worker wakes and makes its start_child
call, which is not fenced. This scenario switches the runtimes' orphan guard off
(``runtime_options={"orphan_guard": False}``), so the call creates pack-42: owned by an owner
that has already ended, never asked to cancel, it waits for stock and packs the parcel of a
cancelled order. The invariant "owned targets follow their owner" names it;
orphan-after-cancel-fixed is the same story with the guard on.
"""

from __future__ import annotations

import yieldstar_sim as ys


@ys.workflow("pack")
def pack(step, params):
    yield from step.delay("wait-for-stock", 20)
    yield from step.run(
        "pack",
        lambda: step.world.effect(
            "parcel.packed", order=params["order"], idempotency_key=step.execution_id
        ),
    )
    return "packed"


@ys.workflow("order")
def order(step, params):
    number = params["order"]
    packed = yield from step.child("pack", pack, f"pack-{number}", {"order": number})
    return {"packed": packed}


def no_parcel_for_a_cancelled_order(run):
    """A cancelled order's parcel is never packed: its owned packing run is cancelled with it."""
    cancelled = {
        r.params["order"] for r in run.executions if r.workflow_id == "order" and r.terminal
        and str(r.status) == "cancelled"
    }  # fmt: skip
    return [
        f"order {effect.data['order']} was cancelled, but {effect.execution_id} packed its parcel "
        f"at t={effect.at:g}"
        for effect in run.effects_named("parcel.packed")
        if effect.data["order"] in cancelled
    ]


scenario = ys.Scenario(
    name="orphan-after-cancel",
    workflows=[order, pack],
    triggers=[ys.Trigger("order", {"order": 42}, execution_id="order-42")],
    cancels=[ys.Cancel("order-42", at=10)],
    faults=[ys.Fault("freeze", op="start_child", step_key="pack", seconds=40)],
    runtime_options={"orphan_guard": False},
    invariants=[no_parcel_for_a_cancelled_order],
)
