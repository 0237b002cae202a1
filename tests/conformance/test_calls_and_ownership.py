"""Calls (RFC 008), cancellation and ownership (RFC 009), children by business ID, spawn, ID
validation, pruning's hazard and driver profiles (the workflow steps guide) on both runtime
adapters, through the engine."""

from __future__ import annotations

from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.authoring import Workflow
from yieldstar_sim.core.model import ExecutionRecord, ExecutionStatus, ParentLink, Suspended
from yieldstar_sim.core.profiles import PROFILES
from yieldstar_sim.errors import ExecutionNotFoundError


@pytest.fixture(params=["memory", "duckdb"])
def runtime(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def engine_for(runtime: str, *workflows: Workflow, **options: Any) -> ys.Engine:
    return ys.Engine(list(workflows), runtime=runtime, **options)  # type: ignore[arg-type]


def record(engine: ys.Engine, execution_id: str) -> ExecutionRecord:
    found = engine.runtime.execution(execution_id)
    assert found is not None, f"{execution_id} does not exist"
    return found


# --------------------------------------------------------------------------- workflows


@ys.workflow("add")
def add(step: ys.StepRunner, params: Any) -> Any:
    yield from step.delay("think", params.get("think", 0))
    total = yield from step.run("sum", lambda: params["a"] + params["b"])
    return total


@ys.workflow("decline")
def decline(step: ys.StepRunner, params: Any) -> Any:
    def fail() -> None:
        raise ys.Permanent(ValueError("card declined"))

    yield from step.run("charge", fail)


@ys.workflow("caller")
def caller(step: ys.StepRunner, params: Any) -> Any:
    try:
        total = yield from step.call("add", params["workflow"], params["args"])
    except ys.ChildFailedError as error:
        return {"failed": error.execution_id, "status": error.status, "error": error.error.name}
    return {"total": total}


@ys.workflow("long")
def long(step: ys.StepRunner, params: Any) -> Any:
    yield from step.delay("wait", 1000)
    yield from step.run("done", lambda: step.world.effect("long.done", who=step.execution_id))
    return "done"


@ys.workflow("owner")
def owner(step: ys.StepRunner, params: Any) -> Any:
    yield from step.spawn("detached", "long", f"detached-of-{step.execution_id}")
    yield from step.start("started", "long")
    result = yield from step.child("owned", "long", f"owned-of-{step.execution_id}")
    return result


@ys.workflow("catcher")
def catcher(step: ys.StepRunner, params: Any) -> Any:
    try:
        yield from step.delay("wait", 1000)
    except ys.WorkflowCancelledError:
        yield from step.run("cleanup", lambda: step.world.effect("cleaned"))
        return "cleaned up"
    return "not cancelled"


@ys.workflow("bounded", max_duration=50)
def bounded(step: ys.StepRunner, params: Any) -> Any:
    result = yield from step.child("owned", "long", "bounded-child")
    return result


@ys.workflow("fulfil")
def fulfil(step: ys.StepRunner, params: Any) -> Any:
    yield from step.delay("work", 60)
    return {"by": params["by"]}


@ys.workflow("parent")
def parent(step: ys.StepRunner, params: Any) -> Any:
    receipt = yield from step.child("fulfil", "fulfil", params["child"], {"by": step.execution_id})
    return receipt


@ys.workflow("spawner")
def spawner(step: ys.StepRunner, params: Any) -> Any:
    survey = yield from step.spawn("survey", "long", params["child"])
    return {"survey": survey}


@ys.workflow("bad-ids")
def bad_ids(step: ys.StepRunner, params: Any) -> Any:
    verb = step.spawn if params.get("verb") == "spawn" else step.child
    try:
        yield from verb("child", params["workflow"], params["child"])
    except ys.InvalidIDError as error:
        return {"refused": str(error)}
    return "admitted"


@ys.workflow("by-object")
def by_object(step: ys.StepRunner, params: Any) -> Any:
    started = yield from step.start("started", long)
    total = yield from step.call("called", add, {"a": 1, "b": 2})
    return {"started": started.execution_id, "total": total}


VERBS = {
    "start": lambda step, workflow, params: step.start("verb", workflow, params),
    "call": lambda step, workflow, params: step.call("verb", workflow, params),
    "child": lambda step, workflow, params: step.child("verb", workflow, "kid", params),
    "spawn": lambda step, workflow, params: step.spawn("verb", workflow, "kid", params),
}


@ys.workflow("misuse")
def misuse(step: ys.StepRunner, params: Any) -> Any:
    workflow = params["workflow"]
    args = {"f": lambda: 1} if params.get("lambda") else None
    try:
        yield from VERBS[params["verb"]](step, workflow, args)
    except ys.WorkflowStartError as error:
        return {"rejected": str(error.code)}
    return "admitted"


@pytest.fixture(params=["in-process", "worker"])
def invoker(request: pytest.FixtureRequest) -> str:
    return str(request.param)


ALL = [add, decline, caller, long, owner, catcher, bounded, fulfil, parent, spawner, bad_ids]


# --------------------------------------------------------------------------- step.call


def test_a_call_returns_the_targets_result_and_its_end_wakes_the_caller(runtime: str) -> None:
    engine = engine_for(runtime, *ALL)
    engine.trigger("caller", {"workflow": "add", "args": {"a": 40, "b": 2, "think": 30}},
                   execution_id="c")  # fmt: skip
    first = engine.dispatch()
    assert first is not None
    assert first.outcome == Suspended()
    waiting = record(engine, "c")
    target = waiting.waiting_on
    assert target is not None
    assert waiting.due_at is None, "a caller waiting for its target must not poll"
    engine.run_until_idle()
    assert record(engine, "c").result == {"total": 42}
    assert record(engine, target).parent == ParentLink("c", "add", detached=False)
    assert [r.execution_id for r in engine.runtime.executions()] == ["c", target]
    steps = {s.step_key: s for s in engine.runtime.steps("c")}
    assert steps["add"].value["result"] == 42
    assert steps["add"].value["executionId"] == target


def test_a_call_whose_child_fails_raises_its_id_and_error(runtime: str) -> None:
    engine = engine_for(runtime, *ALL)
    engine.trigger("caller", {"workflow": "decline", "args": None}, execution_id="c")
    engine.run_until_idle()
    result = record(engine, "c").result
    assert isinstance(result, dict)
    assert result["status"] == "failed"
    assert result["error"] == "StepError"
    assert record(engine, str(result["failed"])).status == ExecutionStatus.FAILED


# --------------------------------------------------------------------------- cancellation


def test_cancelling_reaches_owned_targets_and_not_detached_ones(runtime: str) -> None:
    engine = engine_for(runtime, *ALL)
    engine.trigger("owner", execution_id="o")
    engine.run_until_idle(until=0)
    started = next(r.execution_id for r in engine.runtime.executions() if r.origin == "start")
    cancelled = engine.cancel("o")
    assert cancelled == sorted(["o", "owned-of-o", started])
    engine.run_until_idle()
    statuses = {r.execution_id: str(r.status) for r in engine.runtime.executions()}
    assert statuses == {
        "o": "cancelled",
        "owned-of-o": "cancelled",
        started: "cancelled",
        "detached-of-o": "completed",
    }
    assert engine.ledger.count("long.done") == 1
    assert engine.cancel("o") == [], "cancelling a terminal execution changes nothing"
    with pytest.raises(ExecutionNotFoundError):
        engine.cancel("nobody")


def test_the_cancellation_is_thrown_at_the_current_step_and_can_be_handled(runtime: str) -> None:
    engine = engine_for(runtime, *ALL)
    engine.trigger("catcher", execution_id="k")
    engine.run_until_idle(until=0)
    engine.cancel("k")
    engine.run_until_idle()
    assert record(engine, "k").status == ExecutionStatus.COMPLETED
    assert record(engine, "k").result == "cleaned up"
    wait = next(s for s in engine.runtime.steps("k") if s.step_key == "wait")
    assert wait.status == "failed"
    assert wait.value["error"]["name"] == "WorkflowCancelledError"  # type: ignore[index,call-overload]


def test_a_max_duration_cancels_the_workflow_and_what_it_owns(runtime: str) -> None:
    engine = engine_for(runtime, *ALL)
    engine.trigger("bounded", execution_id="b")
    engine.run_until_idle()
    assert record(engine, "b").status == ExecutionStatus.CANCELLED
    assert record(engine, "bounded-child").status == ExecutionStatus.CANCELLED
    assert record(engine, "b").finished_at == 50.0


# --------------------------------------------------------------------------- children and spawn


def test_joining_never_acquires_ownership(runtime: str) -> None:
    """The guide: if the ID exists, Child joins the existing run and ignores the new input;
    ending the joining parent ends only its wait."""
    engine = engine_for(runtime, *ALL)
    engine.trigger("parent", {"child": "fulfil-42"}, execution_id="first")
    engine.run_until_idle(until=0)
    engine.trigger("parent", {"child": "fulfil-42"}, execution_id="second")
    engine.run_until_idle(until=5)
    joined = {s.step_key: s.value for s in engine.runtime.steps("second")}["fulfil"]
    assert (joined["executionId"], joined["joined"]) == ("fulfil-42", True)
    assert record(engine, "fulfil-42").parent == ParentLink("first", "fulfil", detached=False)
    assert record(engine, "fulfil-42").params == {"by": "first"}, "a join ignores its input"
    assert engine.cancel("second") == ["second"], "the joiner owns nothing"
    engine.run_until_idle()
    assert record(engine, "second").status == ExecutionStatus.CANCELLED
    assert record(engine, "fulfil-42").status == ExecutionStatus.COMPLETED
    assert record(engine, "first").result == {"by": "first"}


def test_creating_a_child_is_stable_across_replay(runtime: str) -> None:
    """A crash after the child is created but before the step is recorded: the replay gets
    'created' again, never 'joined' its own child."""
    engine = engine_for(runtime, *ALL)
    engine.trigger("parent", {"child": "fulfil-7"}, execution_id="p")
    engine.runtime.failpoints.arm("start_child.after_commit")
    first = engine.dispatch(execution_id="p")
    assert first is not None
    assert first.rejection is not None
    engine.clock.advance(5)
    engine.dispatch(execution_id="p")
    created = {s.step_key: s.value for s in engine.runtime.steps("p")}["fulfil"]
    assert (created["executionId"], created["joined"]) == ("fulfil-7", False)
    assert engine.cancel("p") == ["fulfil-7", "p"], "the creator owns its child"


def test_spawn_returns_at_once_and_the_run_outlives_its_parent(runtime: str) -> None:
    engine = engine_for(runtime, *ALL)
    engine.trigger("spawner", {"child": "survey-1"}, execution_id="s")
    engine.dispatch(execution_id="s")
    assert record(engine, "s").status == ExecutionStatus.COMPLETED
    assert record(engine, "s").result == {"survey": "survey-1"}
    assert record(engine, "survey-1").status == ExecutionStatus.PENDING
    assert record(engine, "survey-1").parent == ParentLink("s", "survey", detached=True)
    engine.trigger("spawner", {"child": "survey-1"}, execution_id="t")
    engine.dispatch(execution_id="t")
    assert record(engine, "t").result == {"survey": "survey-1"}, "an existing ID is success"
    engine.run_until_idle()
    assert engine.ledger.count("long.done") == 1


def test_after_pruning_a_spawn_with_the_same_id_is_a_new_run(runtime: str) -> None:
    engine = engine_for(runtime, *ALL)
    engine.trigger("spawner", {"child": "survey-2"}, execution_id="s")
    engine.run_until_idle()
    first_seq = record(engine, "survey-2").seq
    engine.runtime.prune("survey-2")
    engine.trigger("spawner", {"child": "survey-2"}, execution_id="u")
    engine.run_until_idle()
    assert record(engine, "survey-2").seq != first_seq, "protection expired with the record"
    assert engine.ledger.count("long.done") == 2


INVALID_IDS = {
    "empty": ("", "long", "must not be empty"),
    "newline": ("bad\nid", "long", "ASCII control character"),
    "tab": ("tab\tid", "long", "ASCII control character"),
    "its own ID": ("self", "bad-ids", "this execution's own ID"),
    "@-prefixed": ("@long-7", "long", "starts with '@', which is reserved"),
}


@pytest.mark.parametrize("case", sorted(INVALID_IDS))
@pytest.mark.parametrize("verb", ["child", "spawn"])
def test_invalid_child_ids_are_refused_before_anything_is_admitted(
    runtime: str, invoker: str, verb: str, case: str
) -> None:
    """The steps guide: both calls reject empty IDs, IDs with ASCII control characters and the
    parent's own ID for the same workflow name (and, here, the generated IDs' `@` prefix)."""
    with engine_for(runtime, *ALL, invoker=invoker) as engine:
        child, workflow, message = INVALID_IDS[case]
        params = {"child": child, "workflow": workflow, "verb": verb}
        engine.trigger("bad-ids", params, execution_id="self")
        engine.run_until_idle()
        result = record(engine, "self").result
        assert isinstance(result, dict), f"{verb} admitted {child!r}"
        assert result["refused"].startswith("step 'child': ")
        assert message in str(result["refused"])
        assert [r.execution_id for r in engine.runtime.executions()] == ["self"]


@pytest.mark.parametrize("verb", ["child", "spawn"])
def test_the_parents_own_id_for_another_workflow_is_not_an_id_error(
    runtime: str, verb: str
) -> None:
    engine = engine_for(runtime, *ALL)
    params = {"child": "self", "workflow": "long", "verb": verb}
    engine.trigger("bad-ids", params, execution_id="self")
    engine.run_until_idle()
    record_ = record(engine, "self")
    assert record_.status == ExecutionStatus.FAILED
    assert record_.error is not None
    assert record_.error.code == "START_REQUEST_MISMATCH"


def test_start_and_call_take_the_workflow_itself_as_well_as_its_name(
    runtime: str, invoker: str
) -> None:
    with engine_for(runtime, *ALL, by_object, invoker=invoker) as engine:
        engine.trigger("by-object", execution_id="b")
        engine.run_until_idle()
        done = record(engine, "b")
        assert done.status == ExecutionStatus.COMPLETED, done.error
        assert isinstance(done.result, dict)
        assert done.result["total"] == 3
        assert record(engine, done.result["started"]).workflow_id == "long"


@pytest.mark.parametrize("verb", sorted(VERBS))
@pytest.mark.parametrize(
    ("workflow", "message"),
    [
        (42, "step 'verb': the workflow ID must be a non-empty string, not 42"),
        ("", "step 'verb': the workflow ID must be a non-empty string, not ''"),
        ("bad\nname", "step 'verb': the workflow ID 'bad\\nname' contains an ASCII control"),
    ],
)
def test_an_invalid_workflow_id_is_thrown_at_the_step_and_nothing_is_admitted(
    runtime: str, invoker: str, verb: str, workflow: object, message: str
) -> None:
    """The workflow code's mistake fails its execution, the same way on both invokers; it is
    never a runtime error that escapes the engine or a delivery retried for ever."""
    with engine_for(runtime, *ALL, misuse, invoker=invoker) as engine:
        engine.trigger("misuse", {"verb": verb, "workflow": workflow}, execution_id="m")
        engine.run_until_idle()
        failed = record(engine, "m")
        assert failed.status == ExecutionStatus.FAILED
        assert failed.error is not None
        assert failed.error.name == "ValueError"
        assert failed.error.message.startswith(message)
        assert failed.lease_token == 1, "the mistake was retried"
        assert [r.execution_id for r in engine.runtime.executions()] == ["m"]


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_parameters_that_are_not_durable_are_rejected_on_both_invokers(
    runtime: str, invoker: str, verb: str
) -> None:
    """A lambda cannot cross the worker's pipe; the worker answers with the runtime's check."""
    with engine_for(runtime, *ALL, misuse, invoker=invoker) as engine:
        engine.trigger("misuse", {"verb": verb, "workflow": "long", "lambda": True},
                       execution_id="m")  # fmt: skip
        engine.run_until_idle()
        assert record(engine, "m").result == {"rejected": "INVALID_START_PARAMETERS"}
        assert [r.execution_id for r in engine.runtime.executions()] == ["m"]


# --------------------------------------------------------------------------- driver profiles


def test_a_restate_like_profile_refuses_child_before_submission(runtime: str) -> None:
    engine = engine_for(runtime, *ALL, profile="restate")
    engine.trigger("parent", {"child": "fulfil-1"}, execution_id="p")
    engine.run_until_idle()
    failed = record(engine, "p")
    assert failed.status == ExecutionStatus.FAILED
    assert failed.error is not None
    assert failed.error.name == "ProfileError"
    assert "restate-like engines reject Child before submission" in failed.error.message
    assert [r.execution_id for r in engine.runtime.executions()] == ["p"]


def test_a_temporal_like_profile_refuses_zero_initial_backoff_with_retries() -> None:
    retrying = ys.define_step("send", lambda: None, lambda s: s.retry(3).backoff(0, 2, 10))
    with pytest.raises(ys.ProfileError, match="zero initial backoff"):
        ys.Engine([add], steps=[retrying], runtime="memory", profile="temporal")
    ys.Engine([add], steps=[retrying], runtime="memory", profile="memory")

    @ys.workflow("per-call")
    def per_call(step: ys.StepRunner, params: Any) -> Any:
        yield from step.run("send", retrying)

    engine = ys.Engine([per_call], runtime="memory", profile="temporal")
    engine.trigger("per-call", execution_id="x")
    engine.run_until_idle()
    assert record(engine, "x").error is not None
    assert record(engine, "x").error.name == "ProfileError"  # type: ignore[union-attr]


def test_a_temporal_like_profile_supports_child(runtime: str, invoker: str) -> None:
    """The steps guide: "Memory and Temporal support it; Restate rejects it"."""
    for profile in ("temporal", "memory"):
        with engine_for(runtime, *ALL, profile=profile, invoker=invoker) as engine:
            engine.trigger("parent", {"child": "fulfil-1"}, execution_id="p")
            engine.run_until_idle()
            done = record(engine, "p")
            assert done.status == ExecutionStatus.COMPLETED, (profile, done.error)
            assert done.result == {"by": "p"}
            assert record(engine, "fulfil-1").parent == ParentLink("p", "fulfil")


flaky_send = ys.define_step(
    "send",
    lambda world: 1 / 0 if world.attempt == 1 else "sent",
    lambda s: s.retry(2).backoff(1.00049, 2, 10),
)


@ys.workflow("sends")
def sends(step: ys.StepRunner, params: Any) -> Any:
    sent = yield from step.run("send", flaky_send, step.world)
    yield from step.run("log", lambda: step.world.effect("logged", attempt=step.world.attempt))
    return sent


@pytest.mark.parametrize(("profile", "delay"), [("restate", 1.0), ("memory", 1.00049)])
def test_a_restate_like_profile_schedules_retries_with_millisecond_precision(
    runtime: str, invoker: str, profile: str, delay: float
) -> None:
    """End to end: the recorded retry, its wake and the second attempt are at 1.0 s, not at
    the 1.00049 s the policy asks for."""
    with engine_for(runtime, sends, profile=profile, invoker=invoker) as engine:
        engine.trigger("sends", execution_id="s")
        engine.run_until_idle(until=0)
        waiting = next(step for step in engine.runtime.steps("s") if step.step_key == "send")
        assert (waiting.status, waiting.attempt) == ("pending", 1)
        assert waiting.value["wake_at"] == delay  # type: ignore[index,call-overload]
        assert record(engine, "s").due_at == delay
        engine.run_until_idle()
        done = record(engine, "s")
        assert (done.status, done.result) == (ExecutionStatus.COMPLETED, "sent")
        assert [effect.at for effect in engine.ledger.named("logged")] == [delay]


@ys.workflow("late-spawner", max_duration=50)
def late_spawner(step: ys.StepRunner, params: Any) -> Any:
    yield from step.run("work", lambda: step.world.elapse(params["work"]))  # in one body
    survey = yield from step.spawn("survey", "long", "survey-late")
    return {"survey": survey}


def test_a_temporal_like_spawn_waits_for_its_start_within_the_parents_budget(
    runtime: str, invoker: str
) -> None:
    """The steps guide: "On Temporal, Spawn waits for start acknowledgment within the parent's
    budget: an error from that wait does not prove no child started. Reconcile the same ID
    before replacing work." Elsewhere Spawn returns at once, whatever the budget."""
    for profile, work in (("memory", 60), ("temporal", 49)):
        with engine_for(runtime, *ALL, late_spawner, profile=profile, invoker=invoker) as engine:
            engine.trigger("late-spawner", {"work": work}, execution_id="late")
            engine.run_until_idle(until=100)
            assert record(engine, "late").result == {"survey": "survey-late"}, profile
    with engine_for(runtime, *ALL, late_spawner, profile="temporal", invoker=invoker) as engine:
        engine.trigger("late-spawner", {"work": 60}, execution_id="late")
        engine.run_until_idle(until=100)
        cancelled = record(engine, "late")
        assert (cancelled.status, cancelled.cancel_requested) == (
            ExecutionStatus.CANCELLED, True,
        )  # fmt: skip
        survey = next(step for step in engine.runtime.steps("late") if step.step_key == "survey")
        assert survey.status == "failed"
        error = survey.value["error"]  # type: ignore[index,call-overload]
        assert error["name"] == "WorkflowCancelledError"
        assert error["message"] == (
            "step 'survey': temporal-like engines wait for Spawn's start acknowledgement within "
            "the parent's budget, which ran out at t=50; 'survey-late' may have started: "
            "reconcile the same ID before replacing work"
        )
        started = record(engine, "survey-late")  # the error did not prove that nothing started
        assert started.parent == ParentLink("late", "survey", detached=True)
        assert started.status != ExecutionStatus.CANCELLED, "a detached run was cancelled"
        engine.trigger("spawner", {"child": "survey-late"}, execution_id="reconcile")
        engine.run_until_idle()
        assert record(engine, "reconcile").result == {"survey": "survey-late"}
        joined = engine.runtime.steps("reconcile")[0]
        assert (joined.value["executionId"], joined.value["joined"]) == ("survey-late", True)
        assert record(engine, "survey-late").status == ExecutionStatus.COMPLETED


def test_a_restate_like_profile_rounds_retry_delays_to_milliseconds() -> None:
    profile = PROFILES["restate"]
    assert profile.round_delay(1.00049) == pytest.approx(1.0)
    assert profile.round_delay(0.0006) == pytest.approx(0.001)
    assert PROFILES["memory"].round_delay(1.00049) == 1.00049
    with pytest.raises(ValueError, match="unknown driver profile 'flink'"):
        ys.Engine([add], runtime="memory", profile="flink")
