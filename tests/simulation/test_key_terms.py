"""The explorer's keys as sums of terms (``explorer/terms.py``): following the memory runtime's
writes gives the sum a whole read gives, and reads again only the rows written since."""

from __future__ import annotations

from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.model import ChildAccepted, ChildRequest
from yieldstar_sim.runtime.memory_rows import Row
from yieldstar_sim.simulation.terms import Executions, kind, term


def _runtime(count: int) -> tuple[ys.MemoryRuntime, list[str]]:
    runtime = ys.MemoryRuntime()
    ids = [runtime.trigger("order", {"n": n}, execution_id=f"order-{n}") for n in range(count)]
    return runtime, ids


def _follower(runtime: ys.MemoryRuntime) -> Any:
    executions = Executions()
    view, writes = runtime.rows_view(), runtime.row_writes()
    return lambda: executions.follow(view, writes)


def _whole(runtime: ys.MemoryRuntime) -> int:
    return Executions().read_whole(runtime)


def test_following_the_writes_gives_the_whole_read_s_sum_after_every_kind_of_write() -> None:
    runtime, ids = _runtime(6)
    follow = _follower(runtime)
    seen = {follow()}
    assert follow() == _whole(runtime)

    def moved(what: str) -> None:
        total = follow()
        assert total == _whole(runtime), what
        assert total not in seen, what
        seen.add(total)

    delivery = runtime.claim("w1", lease_seconds=30.0, execution_id=ids[0])
    assert delivery is not None
    moved("a claim (the lease)")
    runtime.put_step(delivery.lease, "reserve", status="completed", value={"seat": 4})
    moved("a step")
    runtime.put_step(delivery.lease, "charge", status="completed", value=12)
    runtime.put_step(delivery.lease, "reserve", status="completed", value={"seat": 5})
    moved("two steps, one of them rewritten")
    runtime.acknowledge(delivery.lease, ys.Completed("shipped"))
    moved("an outcome")
    runtime.prune(ids[0])
    moved("a prune of the first row (every other row's place moves)")
    runtime.trigger("order", {"n": 99}, execution_id="order-99")
    moved("an admission")
    assert runtime.cancel(ids[3]) == [ids[3]]
    moved("a cancel")


def test_a_write_to_one_row_of_many_reads_that_row_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    runtime, ids = _runtime(40)
    follow = _follower(runtime)
    follow()
    read: list[str] = []
    head = Row.head

    def counted(row: Row) -> tuple[object, ...]:
        read.append(row.execution_id)
        return head(row)

    monkeypatch.setattr(Row, "head", counted)
    delivery = runtime.claim("w1", lease_seconds=30.0, execution_id=ids[17])
    assert delivery is not None
    runtime.put_step(delivery.lease, "reserve", status="completed", value=1)
    follow()
    assert read == [ids[17]]  # two writes to one row since the last key: read once
    read.clear()
    assert follow() == _whole(runtime)  # (reads every row, through record_head)
    follow()
    assert read == []  # nothing written since


def test_admission_order_is_not_part_of_the_sum() -> None:
    """Claims take rows by ready time, rank and ID, not in admission order: two runtimes
    holding the same rows admitted in another order are one state, and claim alike."""
    first, second = ys.MemoryRuntime(), ys.MemoryRuntime()
    for runtime, order in ((first, ("b", "a")), (second, ("a", "b"))):
        for name in order:
            runtime.trigger("order", {}, execution_id=name)
    assert _whole(first) == _whole(second)
    claimed = [runtime.claim("w1", lease_seconds=30.0) for runtime in (first, second)]
    assert [d.lease.execution_id for d in claimed if d is not None] == ["a", "a"]


def _kid_of_a_pruned_caller(*, started: bool) -> ys.MemoryRuntime:
    """``kid-1`` admitted by ``a`` through ``step.child`` (``started``) or by a trigger, ``a``
    then completed and pruned, and ``m`` triggered: due at one instant, alike but for that."""
    runtime = ys.MemoryRuntime()
    caller = runtime.trigger("charge-order", None, execution_id="a")
    if started:
        request = ChildRequest(ys.RequestId(caller, "kid"), "ship-order", "kid-1", {"n": 1})
        assert isinstance(runtime.start_child(request), ChildAccepted)
    delivery = runtime.claim("w1", lease_seconds=30.0, execution_id=caller)
    assert delivery is not None
    runtime.acknowledge(delivery.lease, ys.Completed(None))
    runtime.prune(caller)
    if not started:
        runtime.trigger("ship-order", {"n": 1}, execution_id="kid-1")
    runtime.trigger("charge-order", None, execution_id="m")
    return runtime


def test_whether_an_execution_admitted_a_row_is_part_of_its_term() -> None:
    """A business-ID child of a pruned caller and the same ID triggered leave the same heads
    and no start-request record (it went with its caller), yet claims take them in another
    order (triggered rows first): the record's term reads the rank, so they are two states."""
    started, triggered = (_kid_of_a_pruned_caller(started=s) for s in (True, False))
    assert started.start_requests() == triggered.start_requests() == []
    assert [r.head() for r in started.rows_view().values()] == [
        r.head() for r in triggered.rows_view().values()
    ]
    assert _whole(started) != _whole(triggered)
    assert _follower(started)() == _whole(started)
    assert _follower(triggered)() == _whole(triggered)
    claims = [
        [d.lease.execution_id for d in iter(lambda r=r: r.claim("w1", lease_seconds=30.0), None)]
        for r in (started, triggered)
    ]
    assert claims == [["m", "kid-1"], ["kid-1", "m"]]


def test_terms_of_two_kinds_of_part_differ_for_one_text() -> None:
    assert term(kind("step"), "x") != term(kind("record"), "x")
    assert term(kind("step"), "x") == term(kind("step"), "x")


def test_the_log_of_writes_starts_with_its_first_reader() -> None:
    """A runtime nobody follows keeps no log (it would hold every pruned row); the first
    reader's log starts with every row there is, so it misses nothing written before."""
    runtime, ids = _runtime(3)
    delivery = runtime.claim("w1", lease_seconds=30.0, execution_id=ids[0])
    assert delivery is not None
    runtime.acknowledge(delivery.lease, ys.Completed("done"))
    runtime.prune(ids[0])
    assert runtime._writes is None
    writes = runtime.row_writes()
    assert [row.execution_id for row in writes] == ids[1:]
    assert runtime.row_writes() is writes  # one live log for every reader
