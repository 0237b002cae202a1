"""The outside world in time and in failure (issue 54, items 3 and 4): a body's store writes
land when its work reaches them, as effects do, and its reads read the store there; the outside
world can fail a read, a write, an effect or a transaction's commit (``world_error``, each call a
solo point of its own); a transaction lands its writes together, or none of them. Every search
places the new fault."""

from __future__ import annotations

import contextlib
import random
from typing import TYPE_CHECKING, Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.execution import Execution
from yieldstar_sim.simulation.faults import FAULT_KINDS, WORLD_OPS, FaultKind, applies_at
from yieldstar_sim.simulation.trace_payloads import TraceKind, TransactionData

if TYPE_CHECKING:
    from yieldstar_sim.simulation.result import SimulationRun


def story(*bodies: Any, workers: int = 1, **options: Any) -> ys.Scenario:
    """One execution per body, ``job-1``, ``job-2`` ..., each a workflow of one step ``work``
    whose body is ``body(step)`` and whose result is the step's."""
    workflows, triggers = [], []
    for number, body in enumerate(bodies, start=1):

        def code(step: ys.StepRunner, params: Any, body: Any = body) -> Any:
            return (yield from step.run("work", body, step))

        workflows.append(ys.workflow(f"job{number}")(code))
        triggers.append(ys.Trigger(f"job{number}", {}, execution_id=f"job-{number}"))
    return ys.Scenario(
        name="world", workflows=workflows, triggers=triggers, workers=workers, **options
    )


def run(scenario: ys.Scenario, *faults: ys.Fault, seed: int = 0) -> SimulationRun:
    return ys.simulate(scenario, seed=seed, runtime="memory", faults=list(faults))


def result(run: SimulationRun, execution_id: str = "job-1") -> Any:
    record = run.runtime.execution(execution_id)
    assert record is not None
    return record.result


def events(run: SimulationRun, kind: TraceKind) -> list[Any]:
    return [event for event in run.trace if event.kind == kind]


# --------------------------------------------------------------------------- item 4: in time


def slow_write(step: ys.StepRunner) -> None:
    step.world.elapse(50)
    step.world.write("status", "done")


def early_probe(step: ys.StepRunner) -> Any:
    step.world.elapse(5)
    return step.world.read("status", "pending")


def test_a_write_after_work_lands_when_the_work_reaches_it_not_when_the_body_starts() -> None:
    result_run = run(story(slow_write, early_probe, workers=2))
    assert result_run.ok, result_run.explain()
    assert result(result_run, "job-2") == "pending"  # at t=5 nothing was written yet
    (write,) = events(result_run, TraceKind.STORE_WRITE)
    assert write.t == 50.0
    (read,) = events(result_run, TraceKind.STORE_READ)
    assert read.t == 5.0


def test_a_read_after_work_reads_the_store_where_the_work_reaches_it() -> None:
    def late_probe(step: ys.StepRunner) -> Any:
        step.world.elapse(60)  # the write lands at t=50, while this body works
        return step.world.read("status", "pending")

    result_run = run(story(slow_write, late_probe, workers=2))
    assert result(result_run, "job-2") == "done"


def test_a_body_reads_its_own_writes_before_they_land() -> None:
    def own(step: ys.StepRunner) -> Any:
        step.world.write("count", 1)
        step.world.elapse(10)
        count = step.world.read("count", 0)
        step.world.write("count", count + 1)
        return step.world.read("count", 0)

    result_run = run(story(own))
    assert result(result_run) == 2
    assert result_run.world == {"count": 2}


def test_what_a_body_did_before_a_read_that_changed_lands_once() -> None:
    def counted(step: ys.StepRunner) -> Any:
        step.world.effect("started", job=1)
        step.world.elapse(60)
        return step.world.read("status", "pending")

    result_run = run(story(slow_write, counted, workers=2))
    assert result(result_run, "job-2") == "done"  # run again from the read, with its value
    assert [effect.name for effect in result_run.effects] == ["started"]


# --------------------------------------------------------------------------- item 3: faults


def test_world_error_applies_at_the_worlds_calls_alone_and_nothing_else_does() -> None:
    assert {Op.STORE_READ, Op.STORE_WRITE, Op.EFFECT, Op.COMMIT} == WORLD_OPS
    for op in WORLD_OPS:
        assert [k for k in FAULT_KINDS if applies_at(k, op, exploring=True)] == ["world_error"]
    assert not applies_at(FaultKind.WORLD_ERROR, Op.PUT_STEP)
    with pytest.raises(ValueError, match="a world_error cannot be placed at put_step: it"):
        ys.Fault("world_error", op="put_step")


def test_a_failed_write_raises_world_error_in_the_body_and_nothing_of_it_lands() -> None:
    def careful(step: ys.StepRunner) -> Any:
        step.world.effect("before", job=1)
        try:
            step.world.write("status", "done")
        except ys.WorldError as failed:
            return f"failed: {failed}"
        return "wrote"

    result_run = run(story(careful), ys.Fault("world_error", op="store_write"))
    assert str(result(result_run)).startswith("failed: the outside world failed step.world.write")
    assert result_run.world == {}
    assert [effect.name for effect in result_run.effects] == ["before"]  # landed once
    (error,) = events(result_run, TraceKind.ERROR)
    assert error.op == Op.STORE_WRITE
    assert error.data.reason.endswith("status")


def test_a_world_error_the_body_lets_go_rejects_the_delivery_and_it_runs_again() -> None:
    def plain(step: ys.StepRunner) -> Any:
        step.world.effect("charged", order=1, idempotency_key="order-1")
        step.world.write("status", "charged")
        return "ok"

    result_run = run(story(plain), ys.Fault("world_error", op="store_write"))
    assert result_run.ok, result_run.explain()
    assert result(result_run) == "ok"
    assert [event.kind for event in result_run.trace if event.kind == TraceKind.REJECT]
    # The effect before the failed write landed on the first delivery and again on the
    # second: the service's idempotency key makes them one.
    assert [effect.name for effect in result_run.effects] == ["charged", "charged"]


@pytest.mark.parametrize("op", ["store_read", "effect"])
def test_a_read_or_an_effect_can_fail_too(op: str) -> None:
    def both(step: ys.StepRunner) -> Any:
        try:
            step.world.read("status")
            step.world.effect("done", job=1)
        except ys.WorldError:
            return "failed"
        return "ok"

    assert result(run(story(both), ys.Fault("world_error", op=op))) == "failed"


# --------------------------------------------------------------------------- transactions


def elect(step: ys.StepRunner) -> Any:
    with step.world.transaction():
        step.world.write("leader", "n1")
        step.world.write("term", 1)
        assert step.world.read("leader") == "n1"  # its own write, before the commit
    return step.world.read("leader")


def test_a_transactions_writes_land_together_at_its_end() -> None:
    result_run = run(story(elect))
    assert result_run.ok, result_run.explain()
    assert result_run.world == {"leader": "n1", "term": 1}
    (done,) = events(result_run, TraceKind.TRANSACTION)
    assert done.data == TransactionData(("leader", "term"), True, None, 1)
    writes = events(result_run, TraceKind.STORE_WRITE)
    assert [w.seq for w in writes] == [done.seq - 2, done.seq - 1]


def test_an_error_out_of_the_block_rolls_every_write_back() -> None:
    def fails(step: ys.StepRunner) -> Any:
        try:
            with step.world.transaction():
                step.world.write("leader", "n1")
                raise ValueError("lost the vote")
        except ValueError:
            return step.world.read("leader", "nobody")

    result_run = run(story(fails))
    assert result(result_run) == "nobody"
    assert result_run.world == {}
    (rolled,) = events(result_run, TraceKind.TRANSACTION)
    assert rolled.data.committed is False
    assert rolled.data.reason == "ValueError: lost the vote"


def test_a_failed_commit_lands_nothing_and_the_body_sees_it_at_the_blocks_end() -> None:
    def believes(step: ys.StepRunner) -> Any:
        try:
            with step.world.transaction():
                step.world.write("leader", "n1")
        except ys.WorldError:
            return "not leading"
        return "leading"

    result_run = run(story(believes), ys.Fault("world_error", op="commit"))
    assert result(result_run) == "not leading"
    assert result_run.world == {}


def test_a_failed_read_aborts_the_transaction_and_its_commit_refuses() -> None:
    def swallows(step: ys.StepRunner) -> Any:
        try:
            with step.world.transaction():
                step.world.write("leader", "n1")
                # Swallowed inside the block: the transaction is aborted anyway.
                with contextlib.suppress(ys.WorldError):
                    step.world.read("term")
        except ys.WorldError as failed:
            return str(failed)
        return "committed"

    result_run = run(story(swallows), ys.Fault("world_error", op="store_read"))
    assert "was aborted by an earlier error" in str(result(result_run))
    assert result_run.world == {}


def test_transactions_do_not_nest_and_belong_in_step_bodies() -> None:
    def nested(step: ys.StepRunner) -> Any:
        with step.world.transaction(), step.world.transaction():
            pass

    failed = run(story(nested))
    assert not failed.ok
    assert "transactions do not nest" in failed.violations[0].message

    @ys.workflow("coded")
    def coded(step: ys.StepRunner, params: Any) -> Any:
        with step.world.transaction():
            yield from step.run("x", lambda: None)

    outside = ys.simulate(
        ys.Scenario(name="coded", workflows=[coded], triggers=[ys.Trigger("coded", {})],
                    world_in_workflow_code=True),
        runtime="memory",
    )  # fmt: skip
    assert "belongs in a step body" in outside.violations[0].message


@pytest.mark.parametrize("invoker", ["in-process", "worker"])
def test_the_engine_commits_a_transaction_and_rolls_one_back(invoker: str) -> None:
    @ys.workflow("elect")
    def elected(step: ys.StepRunner, params: Any) -> Any:
        def body() -> Any:
            with step.world.transaction():
                step.world.write("leader", "n1")
            try:
                with step.world.transaction():
                    step.world.write("term", 2)
                    raise ValueError("no quorum")
            except ValueError:
                pass
            return step.world.read("term", 1)

        return (yield from step.run("elect", body))

    with ys.Engine([elected], runtime=ys.MemoryRuntime(), invoker=invoker) as engine:
        engine.trigger("elect", {}, execution_id="e-1")
        engine.run_until_idle(workers=("w1",))
        record = engine.runtime.execution("e-1")
        assert record is not None
        assert record.result == 1
        assert engine.world.store.values() == {"leader": "n1"}


# --------------------------------------------------------------------------- the searches


def leader_acts(step: ys.StepRunner) -> Any:
    leading = False
    try:
        with step.world.transaction():
            step.world.write("leader", "n1")
            leading = True  # believed before the commit
    except ys.WorldError:
        pass
    if leading:
        step.world.effect("leader.acted", node="n1")


def acted_only_as_leader(run: Any) -> str | None:
    acted = [e for e in run.effects if e.name == "leader.acted"]
    if acted and run.world.get("leader") != "n1":
        return "n1 acted as leader, but the store never named it"
    return None


@pytest.mark.parametrize("strategy", ["systematic", "exhaustive"])
def test_every_search_places_a_world_error_at_each_call_to_the_world(strategy: str) -> None:
    scenario = story(leader_acts, invariants=[acted_only_as_leader])
    assert run(scenario).ok
    report = ys.explore(scenario, strategy=strategy, max_faults=1, confirm=None)
    assert report.verdict == "violated"
    (found,) = {v.invariant for v in report.violations}
    assert found == "acted_only_as_leader"
    faults = report.counterexample.faults if report.counterexample is not None else []
    assert [str(fault.kind) for fault in faults] == ["world_error"]
    assert [fault.label for fault in faults] == ["w1 commit job-1/work leader"]


def test_the_systematic_grid_has_a_row_for_each_call_to_the_world() -> None:
    def three(step: ys.StepRunner) -> None:
        step.world.read("a")
        step.world.write("b", 1)
        step.world.effect("c", n=1)

    report = ys.explore(story(three), max_faults=1, kinds=["world_error"], confirm=None)
    assert report.ok
    assert report.schedules_run == 4  # the seed's run, and a world_error at each call


# --------------------------------------------------------------------------- restoring


def _outcome(execution: Execution) -> tuple[Any, ...]:
    state = execution.state
    return (
        state.trace.to_jsonl(), list(state.ledger.effects), state.runtime.executions(),
        dict(state.store.canonical), execution.choices, execution.key(),
    )  # fmt: skip


@pytest.mark.parametrize("seed", range(6))
def test_a_run_restored_mid_body_goes_on_as_it_went_through_world_errors_and_rereads(
    seed: int,
) -> None:
    # Random moves, a world_error among them at random: each restore, at every point, must
    # end as the run did (bodies run again from their calls, reads read again).
    def racer(step: ys.StepRunner) -> Any:
        seen = step.world.read("counter", 0)
        step.world.elapse(10)
        with step.world.transaction():
            now = step.world.read("counter", 0)
            step.world.write("counter", now + 1)
        step.world.effect("counted", seen=seen, now=now)
        return now

    scenario = story(racer, racer, slow_write, workers=2)
    execution = Execution(scenario, runtime="memory", saving=True)
    rng = random.Random(seed)
    saved: dict[int, Any] = {}
    schedule = []
    while not execution.done():
        saved[execution.points] = execution.save()
        moves = execution.moves([FaultKind.WORLD_ERROR])
        faulted = [move for move in moves if move.fault is not None]
        move = rng.choice(faulted) if faulted and rng.random() < 0.1 else rng.choice(moves)
        schedule.append(move)
        execution.take(move)
    expected = _outcome(execution)
    for index in sorted(saved, reverse=True):
        execution.restore(saved[index])
        for move in schedule[index:]:
            execution.take(move)
        assert _outcome(execution) == expected, f"restored at point {index}"
    execution.close()


def test_a_body_that_does_something_else_when_it_runs_again_fails_with_the_reason() -> None:
    runs: list[int] = []

    def fickle(step: ys.StepRunner) -> None:
        runs.append(1)  # state kept between runs of the body: the mistake
        if len(runs) == 1:
            step.world.write("a", 1)
        step.world.write("b", 2)

    scenario = story(fickle, expected=[ys.expect("job1", error="WorkflowDefinitionError")])
    result_run = run(scenario, ys.Fault("world_error", op="store_write", occurrence=2))
    (record,) = result_run.executions
    assert record.error is not None
    assert "did not do the same when it ran again" in record.error.message
