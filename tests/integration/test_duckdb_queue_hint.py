"""The DuckDB adapter keeps the queue's next ready time between writes: an idle worker's claim
and ``next_wake_at`` answer from it without a statement, and every write, the clock reaching
that time, or a connection handed out for queries of your own makes the runtime read the
queue again, so no claim ever misses a claimable execution."""

from __future__ import annotations

import pytest

import yieldstar_sim as ys

pytestmark = pytest.mark.duckdb
LEASE = 30.0


def _statements(runtime: ys.DuckDBRuntime, call: object) -> int:
    before = runtime.statements
    assert callable(call)
    call()
    return runtime.statements - before


def test_a_claim_after_a_claim_that_found_nothing_issues_no_statement() -> None:
    runtime = ys.DuckDBRuntime()
    assert _statements(runtime, lambda: runtime.claim("w1", lease_seconds=LEASE)) == 1
    assert _statements(runtime, lambda: runtime.claim("w2", lease_seconds=LEASE)) == 0
    assert _statements(runtime, runtime.next_wake_at) == 0
    assert runtime.next_wake_at() is None
    runtime.close()


def test_a_write_makes_the_next_claim_read_the_queue_again() -> None:
    runtime = ys.DuckDBRuntime()
    assert runtime.claim("w1", lease_seconds=LEASE) is None
    runtime.trigger("charge-order", execution_id="order-42")
    delivery = runtime.claim("w2", lease_seconds=LEASE)
    assert delivery is not None
    assert delivery.execution.execution_id == "order-42"
    runtime.close()


def test_the_clock_reaching_the_next_ready_time_makes_the_claim_read_again() -> None:
    clock = ys.ManualClock()
    runtime = ys.DuckDBRuntime(clock=clock)
    runtime.trigger("charge-order", execution_id="order-42")
    delivery = runtime.claim("w1", lease_seconds=LEASE)
    assert delivery is not None
    runtime.release(delivery.lease, delay=10.0)
    assert runtime.claim("w1", lease_seconds=LEASE) is None  # reads: due at 10
    assert runtime.next_wake_at() == 10.0
    clock.advance(5.0)
    assert _statements(runtime, lambda: runtime.claim("w2", lease_seconds=LEASE)) == 0
    clock.advance(5.0)
    again = runtime.claim("w2", lease_seconds=LEASE)
    assert again is not None
    assert again.lease.token == 2
    runtime.close()


def test_a_named_claim_never_teaches_the_queue_its_own_row() -> None:
    runtime = ys.DuckDBRuntime()
    runtime.trigger("charge-order", execution_id="order-42")
    assert runtime.claim("w1", lease_seconds=LEASE, execution_id="order-7") is None
    delivery = runtime.claim("w1", lease_seconds=LEASE)  # order-42 is still claimable
    assert delivery is not None
    assert delivery.execution.execution_id == "order-42"
    runtime.close()


def test_a_runtime_whose_connection_was_handed_out_reads_the_queue_every_time() -> None:
    clock = ys.ManualClock()
    runtime = ys.DuckDBRuntime(clock=clock)
    runtime.trigger("charge-order", execution_id="order-42")
    delivery = runtime.claim("w1", lease_seconds=LEASE)
    assert delivery is not None
    runtime.release(delivery.lease, delay=100.0)
    assert runtime.claim("w1", lease_seconds=LEASE) is None
    # A write of your own, which the runtime does not see: the queue is read again.
    runtime.sql("UPDATE executions SET due_at = 0 WHERE execution_id = 'order-42'")
    again = runtime.claim("w2", lease_seconds=LEASE)
    assert again is not None
    assert again.execution.execution_id == "order-42"
    runtime.close()
