"""The RFC 003 conformance demo: a start whose response is lost, replayed after redelivery.

Until the simulator drives workflows, this plays the shop story of RFC 003 by hand against a
real runtime: worker w1 charges order 42 and starts ship-order, the start commits but its
response is lost, w1's delivery is released, and worker w2 replays the order. The replayed start
returns the first ship-order instead of admitting a second one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from yieldstar_sim.model import (
    Completed,
    InjectedFailure,
    RequestId,
    StartAccepted,
    StartRequest,
)

if TYPE_CHECKING:
    from yieldstar_sim.clock import ManualClock
    from yieldstar_sim.runtime.protocol import Runtime

LEASE_SECONDS = 30.0
REDELIVERY_DELAY = 5.0


@dataclass
class DemoResult:
    """What the demo did, in words, and whether RFC 003's promise held."""

    lines: list[str] = field(default_factory=list)
    ship_orders: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Exactly one ship-order was admitted for request (order-42, ship)."""
        return len(self.ship_orders) == 1

    def say(self, clock: ManualClock, text: str) -> None:
        self.lines.append(f"t={clock.now():>5.1f}  {text}")


def lost_response_demo(runtime: Runtime, clock: ManualClock) -> DemoResult:
    """Play the lost-response story on ``runtime`` (whose clock is ``clock``)."""
    result = DemoResult()
    order = runtime.trigger("charge-order", {"order": 42}, execution_id="order-42")
    result.say(clock, f"trigger admits {order} (charge-order); it is due now")
    request = StartRequest(RequestId(order, "ship"), "ship-order", {"order": 42})

    first = runtime.claim("w1", lease_seconds=LEASE_SECONDS, execution_id=order)
    assert first is not None
    result.say(clock, f"w1 claims {order} with fencing token {first.lease.token}")
    runtime.put_step(first.lease, "charge", status="completed", value={"charged": 42})
    result.say(clock, "w1 records step 'charge'")
    clock.advance(1)
    runtime.failpoints.arm("start.after_commit")
    try:
        runtime.start(request)
    except InjectedFailure:
        result.say(clock, "w1 calls start(order-42, ship): it commits, but the response is lost")
    runtime.release(first.lease, delay=REDELIVERY_DELAY)
    result.say(clock, f"w1's delivery rejects; lease released, redelivery in {REDELIVERY_DELAY:g}s")

    clock.advance(REDELIVERY_DELAY)
    second = runtime.claim("w2", lease_seconds=LEASE_SECONDS, execution_id=order)
    assert second is not None
    recorded = [step.step_key for step in second.steps]
    result.say(clock, f"w2 claims {order} (token {second.lease.token}); recorded steps: {recorded}")
    answer = runtime.start(request)
    assert isinstance(answer, StartAccepted)
    result.say(clock, f"w2 replays start(order-42, ship) and gets {answer.execution_id} again")
    runtime.put_step(
        second.lease, "ship", status="completed", value={"executionId": answer.execution_id}
    )
    runtime.acknowledge(second.lease, Completed({"shipment": answer.execution_id}))
    result.say(clock, f"w2 records step 'ship' and acknowledges {order}: completed")

    result.ship_orders = [
        record.execution_id for record in runtime.executions() if record.workflow_id == "ship-order"
    ]
    for target in result.ship_orders:
        record = runtime.execution(target)
        assert record is not None
        link = record.parent
        parent = "none" if link is None else f"{link.execution_id} / step {link.step_key!r}"
        result.say(clock, f"{target} ({record.workflow_id}) has the parent link {parent}")
    return result
