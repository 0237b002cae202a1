"""Real concurrency on DuckDB: threads with their own cursors racing one database.

DuckDB's optimistic concurrency turns races into conflicts; these tests check that the adapter
turns every conflict into the right answer (docs/decisions.md, "DuckDB concurrency"). Outcomes,
not interleavings, are asserted, so the tests are deterministic in what they check.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import duckdb
import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.events import EventAccepted
from yieldstar_sim.core.model import Delivery, StartAccepted, StartResult
from yieldstar_sim.errors import LeaseLostError
from yieldstar_sim.runtime.duckdb_runtime import QUERIES

pytestmark = pytest.mark.duckdb

T = TypeVar("T")
LEASE = 30.0


def race(calls: list[Callable[[], T]]) -> list[T]:
    """Run every call on its own thread, all released at once; re-raise the first error."""
    barrier = threading.Barrier(len(calls))
    results: list[T | None] = [None] * len(calls)
    errors: list[BaseException] = []

    def run(index: int, call: Callable[[], T]) -> None:
        try:
            barrier.wait()
            results[index] = call()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=item) for item in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results  # type: ignore[return-value]


def ship(caller: str, step_key: str = "ship") -> ys.StartRequest:
    return ys.StartRequest(ys.RequestId(caller, step_key), "ship-order", {"order": 42})


def test_eight_threads_racing_one_start_request_admit_exactly_one_target() -> None:
    runtime = ys.DuckDBRuntime()
    for round_ in range(40):
        _race_one_start_request(runtime, round_)
    assert len(runtime.start_requests()) == 40


def _race_one_start_request(runtime: ys.DuckDBRuntime, round_: int) -> None:
    caller = runtime.trigger("charge-order", {"order": round_}, execution_id=f"order-{round_}")
    request = ship(caller)
    results = race([lambda: runtime.start(request)] * 8)
    ids = {result.execution_id for result in results if isinstance(result, StartAccepted)}
    assert len(ids) == 1, f"round {round_}: the callers got {results}"
    targets = [
        r.execution_id
        for r in runtime.executions()
        if r.parent is not None and r.parent.execution_id == caller
    ]
    assert targets == list(ids), f"round {round_}: admitted {targets}"


def test_eight_threads_racing_different_requests_get_different_targets() -> None:
    runtime = ys.DuckDBRuntime()
    caller = runtime.trigger("charge-order", execution_id="order-42")
    for round_ in range(10):
        requests = [ship(caller, f"ship-{round_}-{i}") for i in range(8)]
        results = race([lambda request=request: runtime.start(request) for request in requests])
        ids = [result.execution_id for result in results if isinstance(result, StartAccepted)]
        assert len(set(ids)) == 8, f"round {round_}: {ids}"
    assert len(runtime.executions()) == 81


def test_a_start_that_loses_the_race_at_commit_returns_the_winners_target() -> None:
    """The interleaving the RFC's all-or-nothing rule is about, forced with a failure point.

    A's INSERT is done but not committed when B runs its whole start and commits; A's COMMIT
    then conflicts, and A must answer with B's target rather than an error or a second one.
    """
    runtime = ys.DuckDBRuntime()
    caller = runtime.trigger("charge-order", execution_id="order-42")
    request = ship(caller)
    inner: list[StartResult] = []

    def b_runs_while_a_is_inside_its_transaction() -> None:
        thread = threading.Thread(target=lambda: inner.append(runtime.start(request)))
        thread.start()
        thread.join()

    runtime.failpoints.arm("start.before_commit", action=b_runs_while_a_is_inside_its_transaction)
    outer = runtime.start(request)
    assert inner == [outer]
    assert isinstance(outer, StartAccepted)
    assert [r.target_execution_id for r in runtime.start_requests()] == [outer.execution_id]
    assert outer.execution_id == "@ship-order:order-42/ship"
    # A's uncommitted INSERT used up a sequence number: seqs are never reused, gaps are fine.
    target = runtime.execution(outer.execution_id)
    assert target is not None
    assert target.seq == 3


def test_racing_claims_never_produce_two_lease_holders() -> None:
    for round_ in range(30):
        _race_claims(round_)


def _race_claims(round_: int) -> None:
    clock = ys.ManualClock()
    runtime = ys.DuckDBRuntime(clock=clock)
    runtime.trigger("charge-order", execution_id="order-42")
    deliveries = race(
        [lambda owner=f"w{i}": runtime.claim(owner, lease_seconds=LEASE) for i in range(8)]
    )
    holders = [d for d in deliveries if d is not None]
    assert len(holders) == 1, f"round {round_}: {len(holders)} holders"
    record = runtime.execution("order-42")
    assert record is not None
    assert record.lease == holders[0].lease
    # After expiry, the next race is won once more, with the next token.
    clock.advance(LEASE)
    again = [
        d
        for d in race(
            [lambda owner=f"v{i}": runtime.claim(owner, lease_seconds=LEASE) for i in range(8)]
        )
        if d is not None
    ]
    assert [delivery.lease.token for delivery in again] == [2]
    runtime.close()


FENCED = {
    "renew": {"expires_at": 99.0},
    "put_step": {"entry": '{"a":1,"k":"late","s":"completed","t":29,"v":null}\n', "wake_at": None},
    "record_wake": {"at": 99.0},
    "acknowledge": {
        "status": "completed",
        "result": "1",
        "error": None,
        "terminal": True,
        "revision": None,
    },
    "release": {"due_at": 99.0},
    "acknowledge_terminal": {"status": "completed", "result": "1", "error": None, "revision": None},
}
#: The acknowledgements again as the adapter runs them when it knows the leased row: a
#: compare-and-swap on the revision it counted (read here from the row).
SWAPPED = {"acknowledge", "acknowledge_terminal"}


@pytest.mark.parametrize("wake", [False, True], ids=["no wake", "a wake recorded"])
@pytest.mark.parametrize(
    "write", [*sorted(FENCED), *(f"{name} (compare-and-swap)" for name in sorted(SWAPPED))]
)
@pytest.mark.parametrize("first", ["stale write first", "claim first"])
def test_a_stale_fenced_write_conflicts_with_a_concurrent_claim(
    write: str, first: str, wake: bool
) -> None:
    """The per-column conflict case of the DuckDB notes, on the adapter's own SQL.

    The stale holder's snapshot still shows its lease (token 1, valid at t=29); the claimer's
    shows it expired (t=30). Whichever statement runs second in an open transaction must
    conflict, never commit beside the other; a stale write must not land after the claim.
    """
    clock = ys.ManualClock()
    runtime = ys.DuckDBRuntime(clock=clock)
    runtime.trigger("charge-order", execution_id="order-42")
    delivery = runtime.claim("w1", lease_seconds=LEASE)
    assert delivery is not None
    if wake:
        # A wake already recorded makes `due_at = due_at` a same-value write, which DuckDB does
        # not count as a conflict: only the revision bump then separates the two writers.
        runtime.record_wake(delivery.lease, 60.0)
    stale, claimer = runtime._connection.cursor(), runtime._connection.cursor()
    write, swapped = write.removesuffix(" (compare-and-swap)"), write.endswith(")")
    stale_params = {
        **FENCED[write],
        "execution_id": "order-42",
        "incarnation": 1,
        "owner": "w1",
        "token": 1,
        "now": 29.0,
    }
    if swapped:
        [(stale_params["revision"],)] = stale.execute(
            "SELECT revision FROM executions WHERE execution_id = 'order-42'"
        ).fetchall()
    claim_params = {"owner": "w2", "expires_at": 60.0, "execution_id": None, "now": 30.0}
    order = [(stale, write, stale_params), (claimer, "claim", claim_params)]
    if first == "claim first":
        order.reverse()
    (c1, q1, p1), (c2, q2, p2) = order
    c1.execute("BEGIN TRANSACTION")
    assert c1.execute(QUERIES[q1], p1).fetchall(), f"{q1} should pass its own checks"
    c2.execute("BEGIN TRANSACTION")
    with pytest.raises(duckdb.TransactionException, match=r"[Cc]onflict"):
        c2.execute(QUERIES[q2], p2)
    c2.execute("ROLLBACK")
    c1.execute("COMMIT")


def test_stale_step_writes_never_land_after_a_concurrent_claim() -> None:
    """Through the adapter, with real threads: a holder writing steps while its lease expires
    and another worker claims. Every step the stale holder got through must be in what the
    new holder's claim handed it; every other write must have been refused."""
    for round_ in range(25):
        _race_stale_writes_against_a_claim(round_)


def _race_stale_writes_against_a_claim(round_: int) -> None:
    clock = ys.ManualClock(29.0)
    runtime = ys.DuckDBRuntime(clock=clock)
    runtime.trigger("charge-order", execution_id="order-42")
    first = runtime.claim("w1", lease_seconds=1.5)  # expires at t=30.5
    assert first is not None
    written: list[str] = []
    refused: list[str] = []
    claimed: list[Delivery] = []
    go = threading.Barrier(3)

    def holder() -> None:
        go.wait()
        for i in range(400):
            try:
                runtime.put_step(first.lease, f"s-{i}", status="completed", value=i)
            except LeaseLostError:
                refused.append(f"s-{i}")
                return
            written.append(f"s-{i}")

    def time_passes() -> None:
        go.wait()
        for _ in range(20):
            clock.advance(0.1)

    def claimer() -> None:
        go.wait()
        while not claimed:
            delivery = runtime.claim("w2", lease_seconds=LEASE)
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
    recorded = {step.step_key for step in runtime.steps("order-42")}
    assert recorded == handed_over, (
        f"round {round_}: stale writes landed after the claim: {sorted(recorded - handed_over)}"
    )
    assert set(written) == handed_over
    runtime.close()


def test_a_file_database_keeps_its_records_across_connections(tmp_path: Path) -> None:
    path = tmp_path / "run.duckdb"
    runtime = ys.DuckDBRuntime(path)
    caller = runtime.trigger("charge-order", {"order": 42}, execution_id="order-42")
    target = runtime.start(ship(caller))
    runtime.close()
    reopened = ys.DuckDBRuntime(path)
    assert reopened.start(ship(caller)) == target
    assert [r.execution_id for r in reopened.executions()] == [
        "order-42",
        "@ship-order:order-42/ship",
    ]
    assert reopened.trigger("ship-order") == "@ship-order-3"  # the sequence survives too
    reopened.close()


# ------------------------------------------------------------- several runtime objects, one file


def test_opening_an_existing_database_does_not_write_its_catalog(tmp_path: Path) -> None:
    path = tmp_path / "run.duckdb"
    ys.DuckDBRuntime(path).trigger("charge-order", {"order": 42}, execution_id="order-42")
    other = duckdb.connect(str(path))
    other.execute("BEGIN TRANSACTION")
    # An open transaction holding the schema's view: a second CREATE OR REPLACE would conflict.
    other.execute("CREATE OR REPLACE VIEW steps AS SELECT * FROM step_log")
    again = ys.DuckDBRuntime(path)
    assert [r.execution_id for r in again.executions()] == ["order-42"]
    other.execute("ROLLBACK")


def test_runtime_objects_opened_at_once_on_one_file_all_work(tmp_path: Path) -> None:
    path = tmp_path / "run.duckdb"
    runtimes = race([lambda: ys.DuckDBRuntime(path) for _ in range(8)])
    for index, runtime in enumerate(runtimes):
        runtime.trigger("charge-order", {"order": index}, execution_id=f"order-{index}")
    assert len(runtimes[0].executions()) == 8
    for runtime in runtimes:
        runtime.close()


def test_eight_runtime_objects_racing_one_start_request_on_one_file(tmp_path: Path) -> None:
    path = tmp_path / "run.duckdb"
    first = ys.DuckDBRuntime(path)
    first.trigger("charge-order", {"order": 42}, execution_id="order-42")

    def open_and_start() -> StartResult:
        return ys.DuckDBRuntime(path).start(ship("order-42"))

    results = race([open_and_start for _ in range(8)])
    targets = {result.execution_id for result in results if isinstance(result, StartAccepted)}
    assert len(targets) == 1, results
    assert [r.target_execution_id for r in first.start_requests()] == [targets.pop()]
    assert [r.workflow_id for r in first.executions()].count("ship-order") == 1


def test_an_event_send_that_loses_a_race_at_commit_is_sent_again_and_kept_once() -> None:
    runtime = ys.DuckDBRuntime()
    runtime.trigger("charge-order", execution_id="order-42")
    runtime.failpoints.arm(
        "send_event.before_commit", error=duckdb.TransactionException("Conflict on update")
    )
    accepted = runtime.send_event(ys.EventRequest("approve", 1, execution_id="order-42"))
    assert isinstance(accepted, EventAccepted)
    assert [e.event_id for e in runtime.events()] == [accepted.event_id]
    hits = runtime.failpoints.hits
    assert (hits["send_event.before_commit"], hits["send_event.after_commit"]) == (2, 1)
