"""The DuckDB adapter knows the rows it leased: an acknowledgement is one compare-and-swap on the
row's revision and answers the row its claim read, with what its own fenced writes and the
acknowledgement set; any other write in between makes the swap write nothing, and the adapter
then writes and reads the record in a transaction, as before. Either way the answer is the
record the database holds."""

from __future__ import annotations

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.model import Completed, Delivery, Suspended
from yieldstar_sim.errors import LeaseLostError

pytestmark = pytest.mark.duckdb
LEASE = 30.0


def _claimed(clock: ys.ManualClock | None = None) -> tuple[ys.DuckDBRuntime, Delivery]:
    runtime = ys.DuckDBRuntime(clock=clock)
    runtime.trigger("charge-order", {"order": 42}, execution_id="order-42")
    delivery = runtime.claim("w1", lease_seconds=LEASE)
    assert delivery is not None
    return runtime, delivery


def test_an_acknowledgement_after_fenced_writes_is_one_statement_and_the_stored_record() -> None:
    clock = ys.ManualClock()
    runtime, delivery = _claimed(clock)
    lease = delivery.lease
    clock.advance(1.0)
    runtime.put_step(lease, "charge", status="completed", value=1)
    runtime.put_step(lease, "nap", status="pending", wake_at=20.0)
    runtime.record_wake(lease, 15.0)
    lease = runtime.renew(lease, lease_seconds=LEASE)
    runtime.wait_for(lease, "order-42")  # waits on itself: only its waiting_on changes
    before = runtime.statements
    record = runtime.acknowledge(lease, Suspended())
    assert runtime.statements - before == 1
    assert record == runtime.execution("order-42")
    assert record.due_at == 15.0
    assert record.waiting_on == "order-42"
    assert record.lease is None
    runtime.close()


def test_a_terminal_acknowledgement_answers_the_stored_record_in_one_statement() -> None:
    runtime, delivery = _claimed()
    runtime.put_step(delivery.lease, "charge", status="completed", value=1)
    before = runtime.statements
    record = runtime.acknowledge(delivery.lease, Completed({"paid": True}))
    assert runtime.statements - before == 1
    assert record == runtime.execution("order-42")
    assert record.finished_at == 0.0
    runtime.close()


def test_a_cancellation_in_between_makes_the_acknowledgement_read_its_record() -> None:
    runtime, delivery = _claimed()
    runtime.cancel("order-42")  # another call writes the leased row: its revision moves on
    before = runtime.statements
    record = runtime.acknowledge(delivery.lease, Suspended())
    # The swap wrote nothing; then BEGIN, the write, the read, COMMIT.
    assert runtime.statements - before == 5
    assert record.cancel_requested
    assert record == runtime.execution("order-42")
    runtime.close()


def test_a_write_of_your_own_in_between_makes_the_acknowledgement_read_its_record() -> None:
    runtime, delivery = _claimed()
    runtime.sql(
        "UPDATE executions SET due_at = 99, revision = revision + 1 WHERE execution_id = 'order-42'"
    )
    record = runtime.acknowledge(delivery.lease, Suspended())
    assert record.due_at == 99.0
    assert record == runtime.execution("order-42")
    runtime.close()


def test_a_stale_lease_is_refused_whether_or_not_the_row_is_known() -> None:
    clock = ys.ManualClock()
    runtime, first = _claimed(clock)
    clock.advance(LEASE)
    second = runtime.claim("w2", lease_seconds=LEASE)  # the first lease expired: taken over
    assert second is not None
    with pytest.raises(LeaseLostError):
        runtime.acknowledge(first.lease, Completed(1))
    record = runtime.acknowledge(second.lease, Completed(2))
    assert record == runtime.execution("order-42")
    assert record.result == 2
    runtime.close()


def test_an_expired_lease_whose_row_is_known_is_refused() -> None:
    clock = ys.ManualClock()
    runtime, delivery = _claimed(clock)
    clock.advance(LEASE)  # expired, and nobody claimed it since: the known row is still right
    with pytest.raises(LeaseLostError):
        runtime.acknowledge(delivery.lease, Completed(1))
    record = runtime.execution("order-42")
    assert record is not None
    assert record.status == "pending"
    runtime.close()
