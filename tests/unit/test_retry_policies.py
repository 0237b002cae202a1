"""Retry policies: one test per rule of the steps guide ("Retry Policy", "Local Overrides").

Every test runs on the engine's virtual clock: a step body reports each attempt to the ledger
(``step.world.effect``), whose provenance gives the attempt number and the virtual time it ran at.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.authoring import Workflow, World
from yieldstar_sim.core.model import ExecutionRecord, ExecutionStatus, Failed, StepRecord, Suspended
from yieldstar_sim.core.steps import RetryPolicy, StepBuilder, StepDefinition
from yieldstar_sim.engine import Effect, ExecutionEvent, Registry
from yieldstar_sim.errors import InjectedFailure, StepDeclarationError

if TYPE_CHECKING:
    from collections.abc import Callable

# --------------------------------------------------------------------------- helpers

#: A lease that outlasts every step body below, so that the tests about timeouts exercise the
#: policy alone, without lease renewals (heartbeats) in between.
LONG_LEASE = 3600.0

WORKFLOW = "send-welcome-flow"


def make_engine(*workflows: Workflow, runtime: str = "memory", **options: Any) -> ys.Engine:
    """An engine whose leases outlast every body here (override with ``lease_seconds=``)."""
    options.setdefault("lease_seconds", LONG_LEASE)
    return ys.Engine(list(workflows), runtime=runtime, **options)  # type: ignore[arg-type]


def one_step(definition: StepDefinition | Callable[..., Any]) -> Workflow:
    """A workflow that runs one step ``"welcome"`` with ``step.world`` as the body's argument.

    It returns ``{"value": ...}``, or, when the step fails for good, what the ``StepError`` said.
    """

    @ys.workflow(WORKFLOW)
    def send_welcome_flow(step: ys.StepRunner, params: object) -> Any:
        try:
            value = yield from step.run("welcome", definition, step.world)
        except ys.StepError as error:
            return {
                "step": error.step_key,
                "error": error.error.name,
                "message": error.error.message,
                "attempts": error.attempts,
            }
        return {"value": value}

    return send_welcome_flow


class Body:
    """A step body ``body(world)`` that records an ``"attempt"`` effect on every call.

    Call number n takes ``elapse[n-1]`` seconds of virtual time (the last entry repeats), then
    fails with ``ConnectionError`` while n <= ``failures``, else returns ``"sent"``. After the
    elapse it records ``"attempt.finished"``: a timed-out attempt never gets there.
    """

    def __init__(self, failures: float = math.inf, elapse: tuple[float, ...] = (0.0,)) -> None:
        self.failures = failures
        self.elapse = elapse
        self.calls = 0

    def __call__(self, world: World) -> str:
        self.calls += 1
        world.effect("attempt")
        seconds = self.elapse[min(self.calls, len(self.elapse)) - 1]
        if seconds:
            world.elapse(seconds)
        world.effect("attempt.finished")
        if self.calls <= self.failures:
            raise ConnectionError("courier API down")
        return "sent"


def attempts(engine: ys.Engine) -> list[tuple[int, float]]:
    """(attempt number, virtual time) of every attempt the bodies made, from the ledger."""
    return [(effect.attempt, effect.at) for effect in engine.ledger.named("attempt")]


def run_once(
    definition: StepDefinition | Callable[..., Any], **options: Any
) -> tuple[ys.Engine, str, Any]:
    """Trigger the one-step workflow, run it until idle; return engine, execution ID, result."""
    engine = make_engine(one_step(definition), **options)
    execution_id = engine.trigger(WORKFLOW, execution_id="order-42")
    engine.run_until_idle()
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert record.status == ExecutionStatus.COMPLETED, record
    return engine, execution_id, record.result


def step_record(engine: ys.Engine, execution_id: str) -> StepRecord:
    (record,) = engine.runtime.steps(execution_id)
    return record


def delays(policy: RetryPolicy, count: int) -> list[float]:
    """The delays before attempts 2 .. count + 1."""
    return [policy.delay_after(attempt) for attempt in range(1, count + 1)]


def guide_example(body: Callable[..., Any]) -> StepDefinition:
    """The guide's declaration: retry(5), backoff(1 s, 2, 1 min), timeout(30 s)."""
    return ys.define_step(
        "send-welcome", body, lambda step: step.retry(5).backoff(1, 2, 60).timeout(30)
    )


# --------------------------------------------------------------------------- defaults


def test_a_step_runs_once_by_default_with_a_one_minute_timeout_per_attempt() -> None:
    default = RetryPolicy(attempts=1, initial=1.0, factor=2.0, cap=30.0, timeout=60.0)
    assert RetryPolicy() == default
    assert ys.define_step("send-welcome", Body()).policy == default

    for definition in (Body(), ys.define_step("send-welcome", Body())):
        engine, _, result = run_once(definition)
        assert attempts(engine) == [(1, 0.0)]
        assert result == {
            "step": "welcome",
            "error": "ConnectionError",
            "message": "courier API down",
            "attempts": 1,
        }


@pytest.mark.parametrize("declared", [False, True], ids=["plain-body", "define_step"])
def test_the_default_timeout_lets_an_attempt_take_59_seconds(declared: bool) -> None:
    body = Body(failures=0, elapse=(59.0,))
    engine, execution_id, result = run_once(
        ys.define_step("send-welcome", body) if declared else body
    )
    assert result == {"value": "sent"}
    assert body.calls == 1
    assert engine.clock.now() == 59.0
    assert step_record(engine, execution_id).status == "completed"


@pytest.mark.parametrize("declared", [False, True], ids=["plain-body", "define_step"])
def test_the_default_timeout_stops_an_attempt_after_60_seconds(declared: bool) -> None:
    body = Body(failures=0, elapse=(61.0,))
    engine, execution_id, result = run_once(
        ys.define_step("send-welcome", body) if declared else body
    )
    assert result["error"] == "StepTimeoutError"
    assert "60s timeout" in result["message"]
    assert result["attempts"] == 1
    assert engine.ledger.named("attempt.finished") == []  # the body stopped at its elapse
    assert engine.clock.now() == 60.0  # the attempt was cut at its limit
    assert step_record(engine, execution_id).status == "failed"


@pytest.mark.parametrize(("seconds", "step_status"), [(59.0, "completed"), (61.0, "failed")])
def test_a_long_body_ends_within_its_default_timeout_under_the_default_lease(
    seconds: float, step_status: str
) -> None:
    """The default lease (30 s) is shorter than the default step timeout (60 s): a working
    worker heartbeats, so a body may take up to its timeout and still record its result (or,
    past it, its timeout) once, without being delivered again."""
    body = Body(failures=0, elapse=(seconds,))
    engine = ys.Engine([one_step(body)], runtime="memory")  # default lease_seconds
    execution_id = engine.trigger(WORKFLOW, execution_id="order-42")
    engine.run_until_idle(max_deliveries=10)
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert record.status == ExecutionStatus.COMPLETED, (
        f"still {record.status} after {body.calls} runs"
    )
    assert step_record(engine, execution_id).status == step_status
    assert body.calls == 1


# --------------------------------------------------------------------------- normalisation


@pytest.mark.parametrize("value", [0, -3])
def test_retry_values_below_one_become_one(value: int) -> None:
    definition = ys.define_step("send-welcome", Body(), lambda step: step.retry(value))
    assert definition.error is None
    assert definition.policy.attempts == 1

    engine, _, result = run_once(definition)
    assert attempts(engine) == [(1, 0.0)]
    assert result["attempts"] == 1


def test_enabled_retries_without_backoff_start_at_1s_double_and_cap_at_30s() -> None:
    definition = ys.define_step("send-welcome", Body(), lambda step: step.retry(8))
    policy = definition.policy
    assert (policy.initial, policy.factor, policy.cap) == (1.0, 2.0, 30.0)
    assert delays(policy, 7) == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]

    engine, _, result = run_once(definition)
    assert attempts(engine) == [
        (1, 0.0), (2, 1.0), (3, 3.0), (4, 7.0), (5, 15.0), (6, 31.0), (7, 61.0), (8, 91.0),
    ]  # fmt: skip
    assert result["attempts"] == 8


def test_the_default_cap_holds_however_many_attempts() -> None:
    """The cap holds however many attempts: a delay too large for a float stays at the cap."""
    policy = ys.define_step("send-welcome", Body(), lambda step: step.retry(2000)).policy
    assert policy.delay_after(1024) == 30.0
    assert policy.delay_after(1025) == 30.0


def test_the_guides_example_allows_five_executions_with_delays_of_1_2_4_8_seconds() -> None:
    body = Body()
    definition = guide_example(body)
    assert definition.error is None
    assert definition.policy == RetryPolicy(
        attempts=5, initial=1.0, factor=2.0, cap=60.0, timeout=30.0
    )

    engine, execution_id, result = run_once(definition)

    # Five executions in total, measured on the virtual clock.
    assert attempts(engine) == [(1, 0.0), (2, 1.0), (3, 3.0), (4, 7.0), (5, 15.0)]
    times = [at for _, at in attempts(engine)]
    assert [later - earlier for earlier, later in itertools.pairwise(times)] == [1.0, 2.0, 4.0, 8.0]
    assert body.calls == 5
    # The workflow then sees a StepError for the whole step.
    assert result == {
        "step": "welcome",
        "error": "ConnectionError",
        "message": "courier API down",
        "attempts": 5,
    }
    record = step_record(engine, execution_id)
    assert record.status == "failed"
    assert record.attempt == 5
    assert record.value == {
        "error": {"name": "ConnectionError", "message": "courier API down"},
        "permanent": False,
    }


# --------------------------------------------------------------------------- timeouts


@pytest.mark.parametrize(
    ("seconds", "error"), [(20.0, "ConnectionError"), (31.0, "StepTimeoutError")]
)
def test_timeout_bounds_each_attempt_not_all_attempts_together(seconds: float, error: str) -> None:
    body = Body(elapse=(seconds,))
    definition = ys.define_step(
        "send-welcome", body, lambda step: step.retry(3).backoff(1, 1, 0).timeout(30)
    )
    engine, _, result = run_once(definition)

    assert result["attempts"] == 3
    assert result["error"] == error  # 3 x 20 s = 60 s in all, yet no attempt timed out
    per_attempt = min(seconds, 30.0)
    assert attempts(engine) == [(1, 0.0), (2, per_attempt + 1), (3, 2 * per_attempt + 2)]
    assert engine.clock.now() == 3 * per_attempt + 2
    finished = 3 if seconds <= 30 else 0
    assert len(engine.ledger.named("attempt.finished")) == finished


def test_an_attempt_that_times_out_is_retried_and_the_next_one_can_succeed() -> None:
    body = Body(failures=0, elapse=(40.0, 10.0))
    definition = ys.define_step(
        "send-welcome", body, lambda step: step.retry(2).backoff(1, 2, 30).timeout(30)
    )
    engine, execution_id, result = run_once(definition)

    assert result == {"value": "sent"}
    # Attempt 1 was cut at t=30, its retry waited 1 s, attempt 2 took 10 s.
    assert attempts(engine) == [(1, 0.0), (2, 31.0)]
    assert [effect.attempt for effect in engine.ledger.named("attempt.finished")] == [2]
    assert engine.clock.now() == 41.0
    record = step_record(engine, execution_id)
    assert (record.status, record.attempt, record.value) == ("completed", 2, "sent")


def test_timeout_zero_removes_the_per_attempt_limit() -> None:
    body = Body(failures=0, elapse=(3 * 3600.0,))
    definition = ys.define_step("send-welcome", body, lambda step: step.timeout(0))
    assert definition.error is None
    assert definition.policy.timeout is None

    engine, _, result = run_once(definition, lease_seconds=4 * 3600.0)
    assert result == {"value": "sent"}
    assert engine.clock.now() == 3 * 3600.0


# --------------------------------------------------------------------------- backoff edge cases


def test_a_zero_backoff_maximum_removes_the_cap() -> None:
    definition = ys.define_step("send-welcome", Body(), lambda step: step.retry(8).backoff(1, 2, 0))
    assert definition.error is None
    assert definition.policy.cap is None
    assert delays(definition.policy, 10) == [2.0**n for n in range(10)]

    engine, _, _ = run_once(definition)
    assert attempts(engine) == [
        (1, 0.0), (2, 1.0), (3, 3.0), (4, 7.0), (5, 15.0), (6, 31.0), (7, 63.0), (8, 127.0),
    ]  # fmt: skip


def test_a_zero_initial_delay_requests_no_deliberate_delay() -> None:
    definition = ys.define_step(
        "send-welcome", Body(), lambda step: step.retry(3).backoff(0, 2, 30)
    )
    assert definition.error is None
    assert delays(definition.policy, 3) == [0.0, 0.0, 0.0]

    engine, _, result = run_once(definition)
    assert attempts(engine) == [(1, 0.0), (2, 0.0), (3, 0.0)]
    assert result["attempts"] == 3


@pytest.mark.parametrize("factor", [0.5, 0, -2, math.inf, -math.inf, math.nan])
def test_factors_below_one_or_not_finite_become_one(factor: float) -> None:
    definition = ys.define_step(
        "send-welcome", Body(), lambda step: step.retry(4).backoff(3, factor, 30)
    )
    assert definition.error is None
    assert definition.policy.factor == 1.0
    assert delays(definition.policy, 3) == [3.0, 3.0, 3.0]

    engine, _, _ = run_once(definition)
    assert attempts(engine) == [(1, 0.0), (2, 3.0), (3, 6.0), (4, 9.0)]


# --------------------------------------------------------------------------- declaration errors

INVALID_DECLARATIONS = [
    pytest.param(lambda step: step.retry(3).backoff(-1, 2, 30), "initial delay", id="initial"),
    pytest.param(lambda step: step.retry(3).backoff(1, 2, -1), "cap", id="cap"),
    pytest.param(lambda step: step.retry(3).timeout(-1), "timeout", id="timeout"),
]


@pytest.mark.parametrize(("configure", "what"), INVALID_DECLARATIONS)
def test_negative_initial_delay_cap_or_timeout_is_a_declaration_error(
    configure: Callable[[StepBuilder], object], what: str
) -> None:
    body = Body(failures=0)
    definition = ys.define_step("send-welcome", body, configure)

    assert isinstance(definition.error, StepDeclarationError)
    assert what in str(definition.error)
    assert "-1" in str(definition.error)

    # Registration refuses it, before any worker starts.
    with pytest.raises(StepDeclarationError, match=r"step 'send-welcome': .*" + what):
        ys.Engine([one_step(definition)], steps=[definition], runtime="memory")
    with pytest.raises(StepDeclarationError, match="send-welcome"):
        Registry([], [definition])

    # A workflow that calls it anyway fails the step without running the body.
    @ys.workflow(WORKFLOW)
    def uncaught(step: ys.StepRunner, params: object) -> Any:
        return (yield from step.run("welcome", definition, step.world))

    engine = make_engine(uncaught)
    execution_id = engine.trigger(WORKFLOW, execution_id="order-42")
    engine.run_until_idle()
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert record.status == ExecutionStatus.FAILED
    assert record.error is not None
    assert record.error.name == "StepDeclarationError"
    assert what in record.error.message
    assert body.calls == 0
    assert engine.ledger.effects == []
    assert engine.runtime.steps(execution_id) == []


def test_the_first_declaration_error_is_kept() -> None:
    definition = ys.define_step(
        "send-welcome", Body(), lambda step: step.backoff(-1, 2, 30).timeout(-5).backoff(1, 2, -2)
    )
    assert isinstance(definition.error, StepDeclarationError)
    assert "initial delay" in str(definition.error)
    assert "timeout" not in str(definition.error)


def test_a_declaration_error_seen_by_the_workflow_names_the_step() -> None:
    """The guide: a step failure "is wrapped with the step name"; a workflow that calls a broken
    declaration fails naming the step key and the declaration's error, without running it."""
    definition = ys.define_step("send-welcome", Body(), lambda step: step.timeout(-1))

    @ys.workflow(WORKFLOW)
    def uncaught(step: ys.StepRunner, params: object) -> Any:
        return (yield from step.run("welcome", definition, step.world))

    engine = make_engine(uncaught)
    execution_id = engine.trigger(WORKFLOW, execution_id="order-42")
    engine.run_until_idle()
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert record.error is not None
    assert "welcome" in record.error.message  # the declaration's name or the step key


# --------------------------------------------------------------------------- Permanent


def test_permanent_stops_further_attempts() -> None:
    calls: list[int] = []

    def declined(world: World) -> str:
        calls.append(1)
        world.effect("attempt")
        raise ys.Permanent(ValueError("card declined"))

    engine, execution_id, result = run_once(guide_example(declined))

    assert attempts(engine) == [(1, 0.0)]
    assert len(calls) == 1
    assert result == {
        "step": "welcome",
        "error": "ValueError",  # the inner error's class, not "Permanent"
        "message": "card declined",
        "attempts": 1,
    }
    record = step_record(engine, execution_id)
    assert (record.status, record.attempt) == ("failed", 1)
    assert record.value == {
        "error": {"name": "ValueError", "message": "card declined"},
        "permanent": True,
    }


def test_an_uncaught_step_error_fails_the_workflow_with_the_step_name() -> None:
    @ys.workflow(WORKFLOW)
    def uncaught(step: ys.StepRunner, params: object) -> Any:
        return (yield from step.run("welcome", guide_example(Body()), step.world))

    engine = make_engine(uncaught)
    execution_id = engine.trigger(WORKFLOW, execution_id="order-42")
    results = engine.run_until_idle()
    outcome = results[-1].outcome
    assert isinstance(outcome, Failed)
    assert isinstance(outcome.exception, ys.StepError)
    assert outcome.error.name == "StepError"
    assert "step 'welcome' failed after 5 attempts" in outcome.error.message
    assert "ConnectionError: courier API down" in outcome.error.message
    record = engine.runtime.execution(execution_id)
    assert record is not None
    assert record.status == ExecutionStatus.FAILED


# --------------------------------------------------------------------------- derive


def test_derive_keeps_name_body_and_inherited_policy_and_applies_edits() -> None:
    body = Body()
    send_welcome = guide_example(body)
    single_attempt = send_welcome.derive(lambda step: step.retry(1))

    assert single_attempt.name == send_welcome.name == "send-welcome"
    assert single_attempt.body is send_welcome.body is body
    assert single_attempt.policy == replace(send_welcome.policy, attempts=1)
    assert single_attempt.error is None


def test_derive_does_not_change_the_original() -> None:
    send_welcome = guide_example(Body())
    before = send_welcome.policy
    send_welcome.derive(lambda step: step.retry(1).backoff(0, 1, 0).timeout(0))
    assert send_welcome.policy == before
    assert send_welcome.policy.attempts == 5

    # End to end: the derived variant and the registered step each keep their own policy.
    body = Body()
    registered = guide_example(body)
    derived = registered.derive(lambda step: step.retry(1))

    @ys.workflow(WORKFLOW)
    def both(step: ys.StepRunner, params: object) -> Any:
        for key, definition in (("once", derived), ("five-times", registered)):
            with contextlib.suppress(ys.StepError):
                yield from step.run(key, definition, step.world)

    engine = make_engine(both)
    engine.trigger(WORKFLOW, execution_id="order-42")
    engine.run_until_idle()
    per_step = [(effect.step_key, effect.attempt) for effect in engine.ledger.named("attempt")]
    assert per_step == [("once", 1)] + [("five-times", n) for n in range(1, 6)]


def test_derive_does_not_reapply_defaults() -> None:
    uncapped = ys.define_step(
        "send-welcome", Body(), lambda step: step.retry(5).backoff(0, 3, 0).timeout(0)
    )
    derived = uncapped.derive(lambda step: step.retry(2))
    # Defaults would bring back initial 1 s, factor 2, a 30 s cap and a 60 s timeout.
    assert derived.policy == RetryPolicy(
        attempts=2, initial=0.0, factor=3.0, cap=None, timeout=None
    )
    assert uncapped.derive(lambda step: None).policy == uncapped.policy


def test_derive_keeps_the_first_declaration_error() -> None:
    broken = ys.define_step("send-welcome", Body(), lambda step: step.timeout(-1))
    first = broken.error
    assert first is not None

    assert broken.derive(lambda step: step.retry(3)).error is first
    worse = broken.derive(lambda step: step.backoff(-1, 2, 30))
    assert worse.error is first
    assert "timeout" in str(worse.error)
    with pytest.raises(StepDeclarationError, match="timeout"):
        Registry([], [worse])

    # An error a variant introduces stays in the variant.
    good = guide_example(Body())
    variant = good.derive(lambda step: step.backoff(1, 2, -1))
    assert isinstance(variant.error, StepDeclarationError)
    assert good.error is None


# --------------------------------------------------------------------------- crash during backoff


def deliver_early_by_crash(engine: ys.Engine) -> None:
    """Attempt 2's delivery commits its retry record, then loses the response: it is released
    and redelivered after the (short) redelivery delay, before the retry is due."""
    engine.runtime.failpoints.arm("put_step.after_commit")
    result = engine.dispatch()
    assert result is not None
    assert isinstance(result.rejection, InjectedFailure)


def deliver_early_by_release(engine: ys.Engine) -> None:
    """Attempt 2's delivery runs by hand, then its lease is released with no delay instead of
    acknowledged: the execution is due again at once."""
    delivery = engine.runtime.claim("w1", lease_seconds=30)
    assert delivery is not None
    outcome = engine.invoker.deliver(ExecutionEvent(delivery, "w1"))
    assert isinstance(outcome, Suspended)
    engine.runtime.release(delivery.lease, delay=0)


def deliver_early_by_lease_expiry(engine: ys.Engine) -> None:
    """Attempt 2's acknowledgement fails; the lease (1 s here) runs out before the retry."""
    engine.runtime.failpoints.arm("acknowledge.before_commit")
    with pytest.raises(InjectedFailure):
        engine.dispatch()


EARLY_DELIVERIES = [
    pytest.param(deliver_early_by_crash, {"redelivery_delay": 0.5}, 1.5, id="crash"),
    pytest.param(deliver_early_by_release, {}, 1.0, id="release"),
    pytest.param(deliver_early_by_lease_expiry, {"lease_seconds": 1.0}, 2.0, id="lease-expiry"),
]


@pytest.mark.parametrize("runtime", ["memory", pytest.param("duckdb", marks=pytest.mark.duckdb)])
@pytest.mark.parametrize(("deliver_early", "options", "early_at"), EARLY_DELIVERIES)
def test_an_early_redelivery_during_a_backoff_resumes_at_the_right_attempt(
    runtime: str,
    deliver_early: Callable[[ys.Engine], None],
    options: dict[str, float],
    early_at: float,
) -> None:
    body = Body(failures=2)
    engine = make_engine(one_step(guide_example(body)), runtime=runtime, **options)
    execution_id = engine.trigger(WORKFLOW, execution_id="order-42")

    def retry_record() -> tuple[str, int, float]:
        record = step_record(engine, execution_id)
        assert isinstance(record.value, dict)
        return record.status, record.attempt, record.value["wake_at"]  # type: ignore[return-value]

    def due_at() -> float | None:
        record = engine.runtime.execution(execution_id)
        assert record is not None
        return record.due_at

    # t=0: attempt 1 fails; its retry is due at t=1.
    assert isinstance(engine.dispatch().outcome, Suspended)  # type: ignore[union-attr]
    assert retry_record() == ("pending", 1, 1.0)
    engine.clock.set(1.0)

    # t=1: attempt 2 fails; its retry is due at t=3, but the execution is delivered early.
    deliver_early(engine)
    assert attempts(engine) == [(1, 0.0), (2, 1.0)]
    assert retry_record() == ("pending", 2, 3.0)
    assert engine.runtime.next_wake_at() == early_at
    engine.clock.set(early_at)

    # The early replay runs nothing and re-arms the retry's wake.
    early = engine.dispatch()
    assert early is not None
    assert isinstance(early.outcome, Suspended)
    assert attempts(engine) == [(1, 0.0), (2, 1.0)]
    assert retry_record() == ("pending", 2, 3.0)
    assert due_at() == 3.0
    assert engine.dispatch() is None  # nothing more before t=3

    # t=3: attempt 3 runs, as attempt number 3, and succeeds.
    engine.run_until_idle()
    assert attempts(engine) == [(1, 0.0), (2, 1.0), (3, 3.0)]
    assert body.calls == 3
    record = step_record(engine, execution_id)
    assert (record.status, record.attempt, record.value) == ("completed", 3, "sent")
    execution = engine.runtime.execution(execution_id)
    assert execution is not None
    assert execution.status == ExecutionStatus.COMPLETED
    assert execution.result == {"value": "sent"}


# --------------------------------------------------------------------------- DuckDB


def retry_story(runtime: str) -> tuple[list[StepRecord], list[Effect], ExecutionRecord]:
    """The guide's example twice over: one step that always fails, one that succeeds third time,
    with an early redelivery during a backoff."""
    welcome, reminder = guide_example(Body()), guide_example(Body(failures=2))

    @ys.workflow(WORKFLOW)
    def story(step: ys.StepRunner, params: object) -> Any:
        try:
            yield from step.run("welcome", welcome, step.world)
        except ys.StepError as error:
            failed = {"error": error.error.name, "attempts": error.attempts}
        sent = yield from step.run("reminder", reminder, step.world)
        return {"welcome": failed, "reminder": sent}

    engine = make_engine(story, runtime=runtime, redelivery_delay=0.5)
    execution_id = engine.trigger(WORKFLOW, execution_id="order-42")
    engine.runtime.failpoints.arm("put_step.after_commit")  # attempt 1's retry record
    engine.run_until_idle()
    execution = engine.runtime.execution(execution_id)
    assert execution is not None
    steps = engine.runtime.steps(execution_id)
    engine.close()
    return steps, engine.ledger.effects, execution


@pytest.mark.duckdb
def test_the_retry_story_on_duckdb_gives_the_same_step_records_and_ledger() -> None:
    memory_steps, memory_effects, memory_execution = retry_story("memory")
    duckdb_steps, duckdb_effects, duckdb_execution = retry_story("duckdb")

    assert memory_execution.status == ExecutionStatus.COMPLETED
    assert memory_execution.result == {
        "welcome": {"error": "ConnectionError", "attempts": 5},
        "reminder": "sent",
    }
    assert [(s.step_key, s.status, s.attempt) for s in memory_steps] == [
        ("welcome", "failed", 5),
        ("reminder", "completed", 3),
    ]
    welcome_times = [
        e.at for e in memory_effects if e.name == "attempt" and e.step_key == "welcome"
    ]
    assert welcome_times == [0.0, 1.0, 3.0, 7.0, 15.0]  # the early redelivery at 0.5 ran nothing

    assert duckdb_steps == memory_steps
    assert duckdb_effects == memory_effects
    assert (duckdb_execution.status, duckdb_execution.result, duckdb_execution.finished_at) == (
        memory_execution.status,
        memory_execution.result,
        memory_execution.finished_at,
    )
