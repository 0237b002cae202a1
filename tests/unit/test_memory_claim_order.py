"""The memory runtime's claim order, kept as a heap (a claim looked at every live execution, a
third of an exploration's time at 1,000 orders), is the order a scan of every live execution
gives: the earliest claimable first, then triggered ones before those an execution admitted,
each by ID (not in admission order); so is its next wake, and the executions a terminal
outcome wakes; after any calls, and after a snapshot is restored."""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

import yieldstar_sim as ys
from yieldstar_sim.core.model import Completed, Lease, LeaseLostError, Suspended
from yieldstar_sim.runtime.memory_rows import Row

OWNERS = ("w1", "w2", "w3")

# A script of calls: (the call, which execution or lease it takes, how many seconds).
calls = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "trigger",
                "claim",
                "claim",
                "release",
                "wake",
                "wait",
                "suspend",
                "complete",
                "renew",
                "advance",
                "save",
                "restore",
            ]
        ),
        st.integers(min_value=0, max_value=7),
        st.integers(min_value=0, max_value=40),
    ),
    max_size=60,
)


def scanned(runtime: ys.MemoryRuntime) -> list[Row]:
    """Every live execution with a time it becomes claimable, in claim order, by a scan."""
    live = [row for row in runtime.rows_view().values() if not row.status.terminal]
    ready = [row for row in live if row.ready_at() is not None]
    return sorted(
        ready,
        key=lambda row: (row.ready_at(), row.parent_execution_id is not None, row.execution_id),
    )


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(calls)
def test_the_claim_order_is_the_order_a_scan_gives(script: list[tuple[str, int, int]]) -> None:
    clock = ys.ManualClock()
    runtime = ys.MemoryRuntime(clock=clock)
    leases: dict[str, Lease] = {}
    saved = None
    for number, (call, which, seconds) in enumerate(script):
        ids = [row.execution_id for row in runtime.rows_view().values()]
        target = ids[which % len(ids)] if ids else None
        held = list(leases.values())
        lease = held[which % len(held)] if held else None
        try:
            if call == "trigger":
                runtime.trigger("order", execution_id=f"order-{number}")
            elif call == "claim":
                order = scanned(runtime)
                due = [row for row in order if row.ready_at() <= clock.now()]  # type: ignore[operator]
                expected = due[0].execution_id if due else None
                delivery = runtime.claim(OWNERS[which % 3], lease_seconds=seconds + 1)
                assert (None if delivery is None else delivery.lease.execution_id) == expected
                if delivery is not None:
                    leases[delivery.lease.execution_id] = delivery.lease
            elif call == "release" and lease is not None:
                runtime.release(lease, delay=float(seconds))
            elif call == "wake" and lease is not None:
                runtime.record_wake(lease, clock.now() + seconds)
            elif call == "wait" and lease is not None and target is not None:
                runtime.wait_for(lease, target)
            elif call == "suspend" and lease is not None:
                runtime.acknowledge(lease, Suspended())
            elif call == "complete" and lease is not None:
                waiters = {
                    row.execution_id
                    for row in runtime.rows_view().values()
                    if row.waiting_on == lease.execution_id
                    and not row.status.terminal
                    and row.execution_id != lease.execution_id  # its own end wakes nothing
                }
                runtime.acknowledge(lease, Completed(None))
                rows = runtime.rows_view()
                for waiter in waiters:  # a terminal outcome wakes every execution waiting on it
                    assert rows[waiter].due_at is not None
                    assert rows[waiter].due_at <= clock.now()
            elif call == "renew" and lease is not None:
                leases[lease.execution_id] = runtime.renew(lease, lease_seconds=seconds + 1)
            elif call == "advance":
                clock.advance(float(seconds))
            elif call == "save":
                saved = runtime.snapshot()
            elif call == "restore" and saved is not None:
                runtime.restore(saved)
                leases.clear()  # the leases held since are the restored state's no more
        except LeaseLostError:
            leases.pop(lease.execution_id if lease is not None else "", None)
        order = scanned(runtime)
        assert runtime.next_wake_at() == (order[0].ready_at() if order else None)
        assert runtime.due() == [
            row.execution_id
            for row in order
            if row.ready_at() <= clock.now()  # type: ignore[operator]
        ]


def test_a_terminal_outcome_wakes_whoever_still_waits_on_it_and_no_one_else() -> None:
    clock = ys.ManualClock()
    runtime = ys.MemoryRuntime(clock=clock)
    target = runtime.trigger("fulfil", execution_id="fulfil-1")
    waiting = [runtime.trigger("order", execution_id=f"order-{n}") for n in range(1, 51)]
    first = runtime.claim("w1", lease_seconds=300)
    assert first is not None
    assert first.lease.execution_id == target
    for execution_id in sorted(waiting):  # due at one instant: claimed by ID
        delivery = runtime.claim("w2", lease_seconds=30)
        assert delivery is not None
        assert delivery.lease.execution_id == execution_id
        runtime.wait_for(delivery.lease, target)
        if execution_id == "order-50":
            runtime.record_wake(delivery.lease, 1.0)  # it also sleeps until t=1
        runtime.acknowledge(delivery.lease, Suspended())
    clock.advance(1)
    # order-50 is claimed again at its wake, and waits on nothing after that delivery.
    again = runtime.claim("w3", lease_seconds=30)
    assert again is not None
    assert again.lease.execution_id == "order-50"
    runtime.acknowledge(again.lease, Suspended())
    assert runtime.due() == []
    clock.advance(9)
    runtime.acknowledge(first.lease, Completed(None))
    woken = waiting[:-1]
    assert runtime.due() == sorted(woken)  # every waiter still waiting, by ID
    assert all(runtime.rows_view()[w].due_at == 10.0 for w in woken)
    assert runtime.rows_view()["order-50"].due_at is None
    assert runtime.next_wake_at() == 10.0
