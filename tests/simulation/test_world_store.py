"""The outside world's key-value store: step bodies read and write durable values, every run
starts empty, the trace says who read and wrote what, and invariants read the end state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation.trace import Trace
from yieldstar_sim.simulation.trace_payloads import StoreReadData, StoreWriteData, TraceKind

if TYPE_CHECKING:
    from yieldstar_sim.core.authoring import Workflow


@ys.workflow("count-visit")
def count_visit(step: ys.StepRunner, params: Any) -> Any:
    seen = yield from step.run("read", lambda: step.world.read("visits", 0))
    yield from step.run("write", lambda: step.world.write("visits", seen + 1))
    return seen + 1


def scenario(*workflows: Workflow, **more: Any) -> ys.Scenario:
    return ys.Scenario(
        name="store",
        workflows=list(workflows),
        triggers=[ys.Trigger(workflows[0].name, {}, execution_id="visit-1")],
        workers=1,
        **more,
    )


def test_a_step_body_reads_what_an_earlier_step_wrote_and_invariants_read_the_end_state() -> None:
    run = ys.simulate(scenario(count_visit), runtime="memory")
    assert run.ok, run.explain()
    assert run.world == {"visits": 1}


def test_every_run_starts_with_an_empty_store() -> None:
    first = ys.simulate(scenario(count_visit), runtime="memory")
    again = ys.simulate(scenario(count_visit), runtime="memory")
    assert first.world == again.world == {"visits": 1}


def test_reads_and_writes_are_traced_with_their_provenance() -> None:
    run = ys.simulate(scenario(count_visit), runtime="memory")
    (read,) = run.trace.of_kind(TraceKind.STORE_READ)
    (write,) = run.trace.of_kind(TraceKind.STORE_WRITE)
    assert (read.execution_id, read.step_key, read.worker) == ("visit-1", "read", "w1")
    assert read.data == StoreReadData("visits", None, False, 1)
    assert (write.execution_id, write.step_key, write.token) == ("visit-1", "write", 1)
    assert write.data == StoreWriteData("visits", 1, None, 1)
    again = Trace.from_jsonl(run.trace.to_jsonl())
    assert again.events == run.trace.events


def test_a_value_read_is_a_copy_until_it_is_written() -> None:
    @ys.workflow("mutate")
    def mutate(step: ys.StepRunner, params: Any) -> Any:
        def body() -> None:
            step.world.write("list", [1])
            step.world.read("list").append(2)

        yield from step.run("mutate", body)

    assert ys.simulate(scenario(mutate), runtime="memory").world == {"list": [1]}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda w: w.write("k", object()), "step.world.write('k', ...) takes a durable JSON value"),
        (lambda w: w.write("", 1), "step.world.write takes a non-empty string key, not ''"),
        (lambda w: w.read(3), "step.world.read takes a non-empty string key, not 3"),
    ],
)
def test_a_value_or_key_the_store_cannot_keep_fails_the_step_with_the_reason(
    call: Any, message: str
) -> None:
    @ys.workflow("bad")
    def bad(step: ys.StepRunner, params: Any) -> Any:
        yield from step.run("bad", lambda: call(step.world))  # one attempt by default

    run = ys.simulate(
        scenario(bad, expected=[ys.expect(workflow_id="bad", status="failed")]), runtime="memory"
    )
    (record,) = run.executions
    assert record.error is not None
    assert message in record.error.message


def test_the_store_outside_a_step_body_is_refused() -> None:
    @ys.workflow("outside")
    def outside(step: ys.StepRunner, params: Any) -> Any:
        step.world.read("k")
        yield from step.run("never", lambda: None)

    run = ys.simulate(
        scenario(outside, expected=[ys.expect(workflow_id="outside")]), runtime="memory"
    )
    (record,) = run.executions
    assert record.error is not None
    assert "step.world.read was called outside a step body" in record.error.message


@pytest.mark.parametrize("invoker", ["in-process", "worker"])
def test_the_engine_world_has_the_same_store(invoker: str) -> None:
    engine = ys.Engine([count_visit], runtime="memory", invoker=invoker)
    try:
        engine.trigger("count-visit", {}, execution_id="visit-1")
        engine.run_until_idle()
        assert engine.world.store.values() == {"visits": 1}
    finally:
        close = getattr(engine, "close", None)
        if callable(close):
            close()


def test_the_stepper_records_show_the_store_as_of_each_event() -> None:
    from yieldstar_sim.views.records import RecordBook

    run = ys.simulate(scenario(count_visit), runtime="memory")
    book = RecordBook.of_run(run)
    (write,) = run.trace.of_kind(TraceKind.STORE_WRITE)
    before = book.at(write.seq - 1)
    after = book.at(write.seq)
    assert "world" not in [table.name for table in before.tables]
    world = after.table("world")
    assert world is not None
    (row,) = world.rows
    assert row.cells == ("visits", "1", "visit-1 / write (attempt 1)", "0")


def test_an_invariant_that_changes_run_world_does_not_change_what_the_next_one_reads() -> None:
    def takes_it(run: Any) -> None:
        run.world.pop("visits")  # a user's invariant with a side effect

    def counts(run: Any) -> str | None:
        return None if run.world.get("visits") == 1 else f"visits read {run.world}"

    run = ys.simulate(scenario(count_visit, invariants=[takes_it, counts]), runtime="memory")
    assert run.ok, run.explain()
    assert run.world == {"visits": 1}
