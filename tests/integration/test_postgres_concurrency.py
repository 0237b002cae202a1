"""Real concurrency on PostgreSQL: threads and processes, each with its own connection, racing
one runtime's tables on a real server.

Every transaction is SERIALIZABLE; a race surfaces as a serialization failure, a deadlock or a
unique violation, and the adapter runs the call again (docs/decisions.md, "PostgreSQL isolation
and locking"). These tests check that every race ends in the right answer, and provoke a
serialization failure and a deadlock for real to see them retried. Outcomes, not
interleavings, are asserted.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
import pytest
from psycopg import errors

import yieldstar_sim as ys
from yieldstar_sim.core.events import EventAccepted
from yieldstar_sim.core.model import Delivery, StartAccepted, StartResult
from yieldstar_sim.errors import InfrastructureError, LeaseLostError
from yieldstar_sim.runtime.postgres import PostgresRuntime

pytestmark = pytest.mark.postgres

T = TypeVar("T")
LEASE = 30.0


def dsn() -> str:
    return os.environ["YIELDSTAR_PG_DSN"]


def runtime(**options: Any) -> PostgresRuntime:
    return PostgresRuntime(dsn(), **options)


def race(calls: list[Callable[[], T]]) -> list[T]:
    """Run every call on its own thread, all released at once; re-raise the first error."""
    barrier = threading.Barrier(len(calls))
    results: list[T | None] = [None] * len(calls)
    errors_seen: list[BaseException] = []

    def run(index: int, call: Callable[[], T]) -> None:
        try:
            barrier.wait()
            results[index] = call()
        except BaseException as error:
            errors_seen.append(error)

    threads = [threading.Thread(target=run, args=item) for item in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors_seen:
        raise errors_seen[0]
    return results  # type: ignore[return-value]


def ship(caller: str, step_key: str = "ship") -> ys.StartRequest:
    return ys.StartRequest(ys.RequestId(caller, step_key), "ship-order", {"order": 42})


def targets_of(rt: PostgresRuntime, caller: str) -> list[str]:
    return [
        r.execution_id
        for r in rt.executions()
        if r.parent is not None and r.parent.execution_id == caller
    ]


# ------------------------------------------------------------------------ threads, one runtime


def test_eight_threads_racing_one_start_request_admit_exactly_one_target() -> None:
    rt = runtime()
    try:
        for round_ in range(40):
            caller = rt.trigger("charge-order", {"order": round_}, execution_id=f"order-{round_}")
            results = race([lambda caller=caller: rt.start(ship(caller))] * 8)
            ids = {r.execution_id for r in results if isinstance(r, StartAccepted)}
            assert len(ids) == 1, f"round {round_}: the callers got {results}"
            assert targets_of(rt, caller) == list(ids), f"round {round_}"
        assert len(rt.start_requests()) == 40
    finally:
        rt.close()


def test_eight_threads_racing_different_requests_get_different_targets() -> None:
    rt = runtime()
    try:
        caller = rt.trigger("charge-order", execution_id="order-42")
        for round_ in range(10):
            requests = [ship(caller, f"ship-{round_}-{i}") for i in range(8)]
            results = race([lambda request=request: rt.start(request) for request in requests])
            ids = [r.execution_id for r in results if isinstance(r, StartAccepted)]
            assert len(set(ids)) == 8, f"round {round_}: {ids}"
        assert len(rt.executions()) == 81
    finally:
        rt.close()


def test_racing_claims_never_produce_two_lease_holders() -> None:
    clock = ys.ManualClock()
    rt = runtime(clock=clock)
    try:
        for round_ in range(20):
            execution_id = rt.trigger("charge-order", execution_id=f"order-{round_}")
            deliveries = race(
                [lambda owner=f"w{i}": rt.claim(owner, lease_seconds=LEASE) for i in range(8)]
            )
            holders = [d for d in deliveries if d is not None]
            assert len(holders) == 1, f"round {round_}: {len(holders)} holders"
            record = rt.execution(execution_id)
            assert record is not None
            assert record.lease == holders[0].lease
            rt.acknowledge(holders[0].lease, ys.Completed(round_))
    finally:
        rt.close()


def test_stale_step_writes_never_land_after_a_concurrent_claim() -> None:
    """A holder writing steps while its lease expires and another worker claims: every step
    the stale holder got through is in what the claim handed over; every other is refused."""
    for round_ in range(10):
        clock = ys.ManualClock(29.0)
        rt = runtime(clock=clock)
        try:
            _race_stale_writes_against_a_claim(rt, clock, round_)
        finally:
            rt.close()


def _race_stale_writes_against_a_claim(
    rt: PostgresRuntime, clock: ys.ManualClock, round_: int
) -> None:
    rt.trigger("charge-order", execution_id="order-42")
    first = rt.claim("w1", lease_seconds=1.5)  # expires at t=30.5
    assert first is not None
    written: list[str] = []
    claimed: list[Delivery] = []
    go = threading.Barrier(3)

    def holder() -> None:
        go.wait()
        for i in range(400):
            try:
                rt.put_step(first.lease, f"s-{i}", status="completed", value=i)
            except LeaseLostError:
                return
            written.append(f"s-{i}")

    def time_passes() -> None:
        go.wait()
        for _ in range(20):
            clock.advance(0.1)

    def claimer() -> None:
        go.wait()
        while not claimed:
            delivery = rt.claim("w2", lease_seconds=LEASE)
            if delivery is not None:
                claimed.append(delivery)
            elif clock.now() > 31.5:
                return

    threads = [threading.Thread(target=f) for f in (holder, time_passes, claimer)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert claimed, f"round {round_}: the lease expired but nobody could claim"
    handed_over = {step.step_key for step in claimed[0].steps}
    recorded = {step.step_key for step in rt.steps("order-42")}
    assert recorded == handed_over, (
        f"round {round_}: stale writes landed after the claim: {sorted(recorded - handed_over)}"
    )
    assert set(written) == handed_over


# ------------------------------------------------------------------------ several processes


def _start_in_a_process(
    dsn_: str, schema: str, callers: list[str], barrier: Any, results: Any
) -> None:
    """One worker process: its own runtime object (and connection) on the shared schema; the
    same start request per caller as every other process, all released at once per round."""
    rt = PostgresRuntime(dsn_, schema=schema)
    try:
        for caller in callers:
            barrier.wait()
            result = rt.start(ship(caller))
            assert isinstance(result, StartAccepted), result
            results.put((caller, result.execution_id))
    finally:
        rt.close()


def test_processes_racing_one_start_request_admit_exactly_one_target() -> None:
    """What DuckDB cannot do: four processes, each with its own runtime object on one named
    schema, race the same start request, round after round."""
    owner = runtime()
    try:
        callers = [
            owner.trigger("charge-order", {"order": i}, execution_id=f"order-{i}")
            for i in range(15)
        ]
        context = multiprocessing.get_context("spawn")
        processes_count = 4
        barrier = context.Barrier(processes_count)
        results = context.Queue()
        processes = [
            context.Process(
                target=_start_in_a_process,
                args=(dsn(), owner.schema, callers, barrier, results),
            )
            for _ in range(processes_count)
        ]
        for process in processes:
            process.start()
        answers = [results.get(timeout=120) for _ in range(processes_count * len(callers))]
        for process in processes:
            process.join(timeout=120)
        assert [process.exitcode for process in processes] == [0] * processes_count
        for caller in callers:
            got = {target for who, target in answers if who == caller}
            assert len(got) == 1, f"{caller}: the processes got {sorted(got)}"
            assert targets_of(owner, caller) == list(got)
        assert len(owner.start_requests()) == len(callers)
    finally:
        owner.close()


# ------------------------------------------------------------------------ races provoked for real


def test_a_cancel_that_commits_inside_a_start_fails_it_to_serialize_and_it_is_retried() -> None:
    """A write skew SERIALIZABLE exists for: the start has read its caller (not cancel-requested)
    and inserted a target; a cancel of the caller commits meanwhile, having looked for the
    caller's targets without seeing the new one. Committing both would leave an owned target
    that ignores its owner's cancellation. PostgreSQL refuses the start's COMMIT; the adapter
    runs the start again, which now sees the cancellation and passes it on."""
    rt = runtime()
    other = runtime(schema=rt.schema)
    try:
        caller = rt.trigger("charge-order", execution_id="order-42")
        cancelled: list[list[str]] = []
        rt.failpoints.arm(
            "start.before_commit", action=lambda: cancelled.append(other.cancel(caller))
        )
        result = rt.start(ship(caller))
        assert cancelled == [[caller]]
        assert isinstance(result, StartAccepted)
        assert rt.retries >= 1
        target = rt.execution(result.execution_id)
        assert target is not None
        assert target.cancel_requested, "the retried start must see the cancellation"
        assert targets_of(rt, caller) == [result.execution_id]
    finally:
        other.close()
        rt.close()


def test_a_deadlock_inside_a_start_is_retried() -> None:
    """A real deadlock: another transaction holds the start request's key (uncommitted), so the
    start's INSERT waits for it after taking its own target ID; that transaction then inserts a
    row with the start's target ID and waits for the start. The deadlock detector aborts the
    start (it has waited longest); the adapter runs it again once the other rolls back.

    A backend looks for a deadlock once, a second (``deadlock_timeout``) after it starts to
    wait: where the machine is so loaded that the start looked before the cycle closed, only
    the blocker finds it, and aborts itself. Then the start was never in a deadlock, and the
    story is told again (at most three times) until the start is the one aborted."""
    for _ in range(3):
        rt = runtime()
        try:
            told = _deadlock_a_start(rt)
            if told is None:
                continue  # the blocker was aborted, not the start
            caller, outcome = told
            assert rt.retries >= 1
            assert outcome == [StartAccepted("@ship-order:order-42/ship")]
            assert targets_of(rt, caller) == ["@ship-order:order-42/ship"]
            # The aborted try used up sequence number 2; the retry took 3.
            target = rt.execution("@ship-order:order-42/ship")
            assert target is not None
            assert target.seq == 3
            return
        finally:
            rt.close()
    raise AssertionError("three times the deadlock detector aborted the blocker, not the start")


def _deadlock_a_start(rt: PostgresRuntime) -> tuple[str, list[StartResult]] | None:
    """The story of the test above: the caller and what its start returned, or None where the
    detector aborted the blocker instead."""
    caller = rt.trigger("charge-order", execution_id="order-42")
    with (
        psycopg.connect(dsn(), autocommit=True) as blocker,
        psycopg.connect(dsn(), autocommit=True) as watcher,  # made before: no gap to close
    ):
        blocker.execute(f'SET search_path TO "{rt.schema}"')
        blocker.execute("BEGIN")
        blocker.execute(
            "INSERT INTO executions (execution_id, seq, workflow_id, origin, status, "
            "created_at, request_seq, parent_step_key) "
            "VALUES ('blocker', 1000, 'x', 'start', 'pending', 0, 1, 'ship')"
        )
        outcome: list[StartResult] = []
        starting = threading.Thread(target=lambda: outcome.append(rt.start(ship(caller))))
        starting.start()
        _wait_until_a_backend_waits_for_a_lock(watcher, blocker.info.backend_pid)
        try:
            blocker.execute(
                "INSERT INTO executions (execution_id, seq, workflow_id, origin, status, "
                "created_at) "
                "VALUES ('@ship-order:order-42/ship', 1001, 'x', 'trigger', 'pending', 0)"
            )
        except errors.DeadlockDetected:
            blocker.execute("ROLLBACK")
            starting.join()
            return None
        blocker.execute("ROLLBACK")
        starting.join()
    return caller, outcome


def _wait_until_a_backend_waits_for_a_lock(watcher: psycopg.Connection[Any], blocker: int) -> None:
    """Poll (no sleep) until some backend waits for a lock the blocker holds."""
    for _ in range(100_000):
        row = watcher.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
            (blocker,),
        ).fetchone()
        if row is not None and row[0]:
            return
    raise AssertionError("the start never waited for the blocking transaction")


def test_a_call_that_keeps_losing_races_gives_up_with_a_clear_error() -> None:
    rt = runtime(max_retries=3)
    try:
        caller = rt.trigger("charge-order", execution_id="order-42")
        rt.failpoints.arm(
            "start.before_commit",
            error=errors.SerializationFailure("could not serialize access"),
            times=3,
        )
        with pytest.raises(
            InfrastructureError,
            match=r"^start: gave up after 3 lost races in a row \(serialization failures or "
            r"deadlocks; the last: could not serialize access\)$",
        ):
            rt.start(ship(caller))
        assert rt.start_requests() == []
        assert isinstance(rt.start(ship(caller)), StartAccepted)
    finally:
        rt.close()


def test_an_event_send_that_keeps_losing_races_gives_up_as_every_call_does() -> None:
    rt = runtime(max_retries=3)
    try:
        rt.trigger("charge-order", execution_id="order-42")
        rt.failpoints.arm(
            "send_event.before_commit",
            error=errors.SerializationFailure("could not serialize access"),
            times=3,
        )
        approve = ys.EventRequest("approve", 1, execution_id="order-42")
        with pytest.raises(
            InfrastructureError,
            match=r"^send_event: gave up after 3 lost races in a row \(serialization failures "
            r"or deadlocks; the last: could not serialize access\)$",
        ):
            rt.send_event(approve)
        assert rt.events() == []
        assert rt.failpoints.hits["send_event.after_commit"] == 0
        assert isinstance(rt.send_event(approve), EventAccepted)
    finally:
        rt.close()
