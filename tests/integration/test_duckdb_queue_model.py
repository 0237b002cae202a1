"""The DuckDB adapter follows its queue (``duckdb_queue.QueueModel``): a runtime that is its
database's one writer answers a claim that would find nothing, and ``next_wake_at``, without a
statement, from what its own writes set; a claim that finds something still reads and takes its
row with SQL. Such a runtime also answers a read from one made since the last write (the row an
insert answered, the snapshot ``executions`` read). A write it does not follow, a second
thread, or a connection handed out for queries of your own makes it read every time."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.model import Completed, ContinuedAsNew, Suspended
from yieldstar_sim.errors import InjectedFailure
from yieldstar_sim.runtime._sql_calls import SqlCalls
from yieldstar_sim.simulation.scenario_files import bundled_scenarios

pytestmark = pytest.mark.duckdb
LEASE = 30.0


def _statements(runtime: ys.DuckDBRuntime, call: object) -> int:
    before = runtime.statements
    assert callable(call)
    call()
    return runtime.statements - before


def _leased() -> tuple[ys.DuckDBRuntime, ys.Delivery]:
    """A runtime whose one execution, order-42, w1 holds, and its delivery."""
    runtime = ys.DuckDBRuntime()
    runtime.trigger("charge-order", execution_id="order-42")
    delivery = runtime.claim("w1", lease_seconds=LEASE)
    assert delivery is not None
    return runtime, delivery


def _sleeping(delay: float) -> ys.DuckDBRuntime:
    """A runtime whose one execution, order-42, was claimed and released for ``delay``."""
    runtime, delivery = _leased()
    runtime.release(delivery.lease, delay=delay)
    return runtime


def test_an_empty_runtime_answers_claims_and_the_next_wake_without_a_statement() -> None:
    runtime = ys.DuckDBRuntime()
    assert _statements(runtime, lambda: runtime.claim("w1", lease_seconds=LEASE)) == 0
    assert _statements(runtime, runtime.next_wake_at) == 0
    assert runtime.next_wake_at() is None
    runtime.close()


def test_a_claim_that_finds_something_reads_it_and_then_the_others_idle_for_free() -> None:
    runtime = ys.DuckDBRuntime()
    runtime.trigger("charge-order", execution_id="order-42")
    assert _statements(runtime, lambda: runtime.claim("w1", lease_seconds=LEASE)) == 2
    assert _statements(runtime, lambda: runtime.claim("w2", lease_seconds=LEASE)) == 0
    assert runtime.next_wake_at() == LEASE  # the lease's expiry
    runtime.close()


def test_step_writes_under_a_lease_leave_idle_claims_free() -> None:
    runtime, delivery = _leased()
    runtime.put_step(delivery.lease, "charge", status="completed", value=1)
    runtime.record_wake(delivery.lease, 5.0)  # leased: the lease's expiry still decides
    assert _statements(runtime, lambda: runtime.claim("w2", lease_seconds=LEASE)) == 0
    assert runtime.next_wake_at() == LEASE
    runtime.close()


def test_a_released_execution_is_claimable_when_its_delay_is_over() -> None:
    clock = ys.ManualClock()
    runtime = ys.DuckDBRuntime(clock=clock)
    runtime.trigger("charge-order", execution_id="order-42")
    delivery = runtime.claim("w1", lease_seconds=LEASE)
    assert delivery is not None
    runtime.release(delivery.lease, delay=10.0)
    assert _statements(runtime, lambda: runtime.claim("w1", lease_seconds=LEASE)) == 0
    assert runtime.next_wake_at() == 10.0
    clock.advance(10.0)
    again = runtime.claim("w2", lease_seconds=LEASE)
    assert again is not None
    assert again.lease.token == 2
    runtime.close()


def test_a_suspension_is_claimable_at_its_wake_and_a_finished_run_never() -> None:
    clock = ys.ManualClock()
    runtime = ys.DuckDBRuntime(clock=clock)
    runtime.trigger("charge-order", execution_id="order-42")
    delivery = runtime.claim("w1", lease_seconds=LEASE)
    assert delivery is not None
    runtime.put_step(delivery.lease, "nap", status="pending", wake_at=7.0)
    runtime.acknowledge(delivery.lease, Suspended())
    assert runtime.next_wake_at() == 7.0
    assert _statements(runtime, lambda: runtime.claim("w1", lease_seconds=LEASE)) == 0
    clock.advance(7.0)
    again = runtime.claim("w1", lease_seconds=LEASE)
    assert again is not None
    runtime.acknowledge(again.lease, Completed(None))
    assert _statements(runtime, runtime.next_wake_at) == 0
    assert runtime.next_wake_at() is None
    runtime.close()


def test_a_terminal_acknowledgement_wakes_its_waiters_in_the_model_too() -> None:
    runtime = ys.DuckDBRuntime()
    runtime.trigger("charge-order", execution_id="order-42")
    runtime.trigger("ship-order", execution_id="ship-1")
    caller = runtime.claim("w1", lease_seconds=LEASE, execution_id="order-42")
    assert caller is not None
    runtime.wait_for(caller.lease, "ship-1")
    runtime.acknowledge(caller.lease, Suspended())  # no wake of its own: waits for ship-1
    target = runtime.claim("w2", lease_seconds=LEASE)
    assert target is not None
    assert target.execution.execution_id == "ship-1"
    assert runtime.claim("w3", lease_seconds=LEASE) is None
    runtime.acknowledge(target.lease, Completed(None))
    woken = runtime.claim("w3", lease_seconds=LEASE)
    assert woken is not None
    assert woken.execution.execution_id == "order-42"
    runtime.close()


def test_a_cancellation_makes_a_sleeping_execution_claimable_now() -> None:
    runtime = _sleeping(1000.0)
    assert runtime.claim("w1", lease_seconds=LEASE) is None
    runtime.cancel("order-42")
    again = runtime.claim("w1", lease_seconds=LEASE)
    assert again is not None
    assert again.execution.cancel_requested
    runtime.close()


def test_a_named_claim_of_an_execution_that_is_not_claimable_needs_no_statement() -> None:
    runtime = ys.DuckDBRuntime()
    runtime.trigger("charge-order", execution_id="order-42")
    assert (
        _statements(
            runtime, lambda: runtime.claim("w1", lease_seconds=LEASE, execution_id="order-7")
        )
        == 0
    )
    delivery = runtime.claim("w1", lease_seconds=LEASE)  # order-42 is still claimable
    assert delivery is not None
    assert delivery.execution.execution_id == "order-42"
    runtime.close()


def test_a_start_counts_once_committed_and_not_when_its_commit_failed() -> None:
    runtime = ys.DuckDBRuntime()
    runtime.trigger("charge-order", execution_id="order-42")
    caller = runtime.claim("w1", lease_seconds=LEASE)
    assert caller is not None
    request = ys.StartRequest(ys.RequestId("order-42", "ship"), "ship-order", {"order": 42})
    runtime.failpoints.arm("start.before_commit")
    with pytest.raises(InjectedFailure):
        runtime.start(request)
    assert _statements(runtime, lambda: runtime.claim("w2", lease_seconds=LEASE)) == 0
    runtime.start(request)
    target = runtime.claim("w2", lease_seconds=LEASE)
    assert target is not None
    assert target.execution.workflow_id == "ship-order"
    runtime.close()


def test_an_event_makes_a_sleeping_run_claimable_now_and_the_model_follows_it() -> None:
    runtime, delivery = _leased()
    runtime.put_step(delivery.lease, "approval", status="pending", wake_at=1000.0)
    runtime.acknowledge(delivery.lease, Suspended())
    assert runtime.next_wake_at() == 1000.0
    runtime.send_event(ys.EventRequest("approve", 1, execution_id="order-42"))
    assert _statements(runtime, runtime.next_wake_at) == 0
    assert runtime.next_wake_at() == 0.0
    again = runtime.claim("w1", lease_seconds=LEASE)
    assert again is not None
    assert runtime.wait_for_event(again.lease, "approval", "approve") is not None
    assert _statements(runtime, lambda: runtime.claim("w2", lease_seconds=LEASE)) == 0
    runtime.close()


def test_a_send_that_rolls_back_leaves_the_model_as_it_was() -> None:
    runtime = _sleeping(1000.0)
    runtime.failpoints.arm("send_event.before_commit")
    with pytest.raises(InjectedFailure):
        runtime.send_event(ys.EventRequest("approve", 1, execution_id="order-42"))
    assert _statements(runtime, lambda: runtime.claim("w1", lease_seconds=LEASE)) == 0
    assert runtime.next_wake_at() == 1000.0
    runtime.close()


def test_a_run_that_continues_as_new_leaves_the_queue_and_its_next_run_is_claimable_now() -> None:
    clock = ys.ManualClock()
    runtime = ys.DuckDBRuntime(clock=clock)
    runtime.trigger("charge-order", execution_id="order-42")
    runtime.trigger("ship-order", execution_id="ship-1")
    waiter = runtime.claim("w1", lease_seconds=LEASE, execution_id="ship-1")
    assert waiter is not None
    runtime.wait_for(waiter.lease, "order-42")
    runtime.release(waiter.lease, delay=1000.0)
    clock.advance(5.0)
    delivery = runtime.claim("w1", lease_seconds=LEASE, execution_id="order-42")
    assert delivery is not None
    runtime.acknowledge(delivery.lease, ContinuedAsNew({"run": 2}))
    assert _statements(runtime, runtime.next_wake_at) == 0
    assert runtime.next_wake_at() == 5.0  # the next run, and the waiter woken with it
    claimed = [runtime.claim(f"w{n}", lease_seconds=LEASE) for n in (2, 3)]
    assert {d.execution.execution_id for d in claimed if d is not None} == {
        "@charge-order:order-42/~2",
        "ship-1",
    }
    assert _statements(runtime, lambda: runtime.claim("w4", lease_seconds=LEASE)) == 0
    runtime.close()


def test_a_runtime_whose_connection_was_handed_out_reads_the_queue_every_time() -> None:
    runtime = _sleeping(100.0)
    assert runtime.claim("w1", lease_seconds=LEASE) is None
    # A write of your own, which the runtime does not see: the queue is read again.
    runtime.sql("UPDATE executions SET due_at = 0 WHERE execution_id = 'order-42'")
    again = runtime.claim("w2", lease_seconds=LEASE)
    assert again is not None
    assert again.execution.execution_id == "order-42"
    runtime.close()


def test_a_second_thread_makes_the_runtime_read_the_queue_every_time() -> None:
    runtime = ys.DuckDBRuntime()
    assert runtime.claim("w1", lease_seconds=LEASE) is None
    thread = threading.Thread(target=lambda: runtime.trigger("charge-order"))
    thread.start()
    thread.join()
    assert _statements(runtime, lambda: runtime.claim("w1", lease_seconds=LEASE)) == 2
    assert _statements(runtime, lambda: runtime.claim("w2", lease_seconds=LEASE)) == 1
    runtime.close()


def test_an_admitted_execution_is_read_back_without_a_statement_until_the_next_write() -> None:
    runtime = ys.DuckDBRuntime()
    runtime.trigger("charge-order", {"order": 42}, execution_id="order-42")
    record = runtime.execution("order-42")
    assert _statements(runtime, lambda: runtime.execution("order-42")) == 0
    assert record is not None
    assert record.params == {"order": 42}
    delivery = runtime.claim("w1", lease_seconds=LEASE)
    assert delivery is not None
    started = runtime.start(
        ys.StartRequest(ys.RequestId("order-42", "ship"), "ship-order", {"order": 42})
    )
    target = runtime.execution(started.execution_id)  # type: ignore[union-attr]
    assert target is not None
    assert target.parent is not None
    assert _statements(runtime, lambda: runtime.execution("order-42")) == 1  # not the last one
    runtime.put_step(delivery.lease, "ship", status="completed", value=None)
    assert _statements(runtime, lambda: runtime.execution(target.execution_id)) == 1
    runtime.close()


def test_a_run_end_reads_executions_requests_and_steps_in_one_statement() -> None:
    runtime = ys.DuckDBRuntime()
    runtime.trigger("charge-order", {"order": 42}, execution_id="order-42")
    delivery = runtime.claim("w1", lease_seconds=LEASE)
    assert delivery is not None
    runtime.start(ys.StartRequest(ys.RequestId("order-42", "ship"), "ship-order", None))
    runtime.put_step(delivery.lease, "ship", status="completed", value=None)

    def run_end() -> None:
        records = runtime.executions()
        assert [r.execution_id for r in records] == ["order-42", "@ship-order:order-42/ship"]
        targets = [r.target_execution_id for r in runtime.start_requests()]
        assert targets == ["@ship-order:order-42/ship"]
        assert [s.step_key for s in runtime.steps("order-42")] == ["ship"]
        assert runtime.steps("nobody") == []

    assert _statements(runtime, run_end) == 1
    runtime.acknowledge(delivery.lease, Completed(None))  # a write: read again
    assert _statements(runtime, runtime.start_requests) == 1
    runtime.close()


def test_a_file_database_reads_the_queue_every_time(tmp_path: Any) -> None:
    runtime = ys.DuckDBRuntime(tmp_path / "run.duckdb")  # other runtime objects may write it
    assert _statements(runtime, lambda: runtime.claim("w1", lease_seconds=LEASE)) == 1
    runtime.trigger("charge-order", execution_id="order-42")
    assert _statements(runtime, lambda: runtime.execution("order-42")) == 1
    runtime.executions()
    assert _statements(runtime, runtime.start_requests) == 1
    runtime.close()


class CheckedRuntime(ys.DuckDBRuntime):
    """A DuckDB runtime that asks the database, before every claim and next wake, what its
    queue model answers, and at every read it answers from a read kept since, what the read's
    own statement answers now; it fails on any difference."""

    checks = 0

    def _check(self) -> None:
        if self._queue is not None:
            CheckedRuntime.checks += 1
            assert self._queue.next_ready() == SqlCalls.next_wake_at(self), self.executions()

    def execution(self, execution_id: str) -> ys.ExecutionRecord | None:
        kept = super().execution(execution_id)
        assert kept == SqlCalls.execution(self, execution_id)
        return kept

    def start_requests(self) -> list[ys.StartRequestRecord]:
        kept = super().start_requests()
        assert kept == SqlCalls.start_requests(self)
        return kept

    def steps(self, execution_id: str) -> list[ys.StepRecord]:
        kept = super().steps(execution_id)
        assert kept == SqlCalls.steps(self, execution_id)
        return kept

    def claim(
        self, owner: str, *, lease_seconds: float, execution_id: str | None = None
    ) -> ys.Delivery | None:
        self._check()
        return super().claim(owner, lease_seconds=lease_seconds, execution_id=execution_id)

    def next_wake_at(self) -> float | None:
        self._check()
        return super().next_wake_at()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_the_model_answers_what_the_database_does_in_every_bundled_scenario(name: str) -> None:
    scenario = ys.load_scenario(name)
    CheckedRuntime.checks = 0
    checked = ys.simulate(scenario, 0, runtime=CheckedRuntime)
    plain = ys.simulate(scenario, 0, runtime="duckdb")
    assert checked.trace_digest() == plain.trace_digest()
    assert CheckedRuntime.checks > 0
    assert checked.runtime._queue is not None  # type: ignore[attr-defined]
    ys.explore(scenario, runtime=CheckedRuntime, confirm=None, budget=25)
