"""The sans-IO workflow driver: replays a workflow against its recorded steps.

``drive`` is a generator. It yields *commands* — runtime calls (``PutStep``, ``RecordWake``,
``CallStart``), a clock read (``ReadClock``) and step bodies to run (``RunBody``) — and receives
their results; it returns the delivery's ``WorkflowRunOutcome``. It never touches a database,
a clock or a process itself, so the same driver runs in the engine, in a worker process whose
runtime calls cross a pipe, and in the simulator, where every runtime call is a choice point.

An error raised by a runtime call (thrown into ``drive`` at the yield) is never shown to workflow
code: the workflow generator is closed and the error leaves ``drive``, so the delivery rejects.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from yieldstar_sim.core.authoring import (
    STEP_REQUESTS,
    CallStep,
    ChildStep,
    ContinueAsNewStep,
    DelayStep,
    GroupStep,
    MemberRequest,
    RunStep,
    StartedExecution,
    StartStep,
    StepRunner,
    TargetStep,
    WaitForEventStep,
    Workflow,
    World,
)
from yieldstar_sim.core.codec import DurableValue, InvalidValue, durable_value_codec
from yieldstar_sim.core.commands import (
    BodyResult,
    CallStart,
    Command,
    CompleteAttempt,
    ConsumeEvent,
    PutStep,
    ReadClock,
    RecordWake,
    RequestCancel,
    RunBody,
    RuntimeCall,
    StartChild,
    WaitFor,
)
from yieldstar_sim.core.driver_events import Ended as _Ended
from yieldstar_sim.core.driver_events import continue_as_new, wait_for_event
from yieldstar_sim.core.driver_flow import Diverged as _Diverged
from yieldstar_sim.core.driver_flow import Replay as _Replay
from yieldstar_sim.core.driver_flow import Suspend as _Suspend
from yieldstar_sim.core.driver_flow import Throw as _Throw
from yieldstar_sim.core.driver_groups import perform_group
from yieldstar_sim.core.driver_outcomes import completed, failed, raised, recorded_outcome
from yieldstar_sim.core.identity import changed, stamped
from yieldstar_sim.core.ids import check_execution_id, check_name
from yieldstar_sim.core.interrupts import raised_by_code
from yieldstar_sim.core.model import (
    STEP_NOT_RUN,
    ChildAccepted,
    ChildFailedError,
    ChildRequest,
    ChildResult,
    Delivery,
    ErrorInfo,
    ExecutionRecord,
    ExecutionStatus,
    Failed,
    InvalidIDError,
    Lease,
    ProfileError,
    RequestId,
    StartAccepted,
    StartRejected,
    StartRequest,
    StartResult,
    StepDeclarationError,
    StepError,
    StepRecord,
    Suspended,
    WorkflowCancelledError,
    WorkflowDefinitionError,
    WorkflowRunOutcome,
    WorkflowStartError,
    WorkflowStartErrorCode,
)
from yieldstar_sim.core.profiles import MEMORY, DriverProfile
from yieldstar_sim.core.steps import Permanent

DriverGenerator: TypeAlias = Generator[Command, Any, WorkflowRunOutcome]

# The commands live in yieldstar_sim.core.commands; the driver's importers find them here too.
__all__ = [
    "BodyResult",
    "CallStart",
    "Command",
    "CompleteAttempt",
    "ConsumeEvent",
    "DriverGenerator",
    "PutStep",
    "ReadClock",
    "RecordWake",
    "RequestCancel",
    "RunBody",
    "RuntimeCall",
    "StartChild",
    "WaitFor",
    "drive",
]


# --------------------------------------------------------------------------- the driver


@dataclass
class _Context:
    """One delivery: the execution, its lease, its replay, and the rules in force."""

    record: ExecutionRecord
    lease: Lease
    replay: _Replay
    runner: StepRunner
    profile: DriverProfile
    cancel_pending: bool = False
    cancel_reason: str = ""
    cancel_recorded: bool = False
    """Whether a cancellation request is recorded: only then does a ``WorkflowCancelledError``
    that leaves workflow code end the delivery ``cancelled`` (RFC 003)."""
    deadline: float | None = None
    step_ended: Callable[[object], None] | None = None
    performed: set[int] = field(default_factory=set)
    """The ids of the requests workflow code yielded to the driver (its verbs' own requests,
    which the runner keeps alive for the delivery): a verb it iterated itself is not here."""

    @property
    def execution_id(self) -> str:
        return self.record.execution_id


def drive(
    workflow: Workflow | None,
    delivery: Delivery,
    world: World,
    profile: DriverProfile = MEMORY,
    *,
    step_ended: Callable[[object], None] | None = None,
) -> DriverGenerator:
    """Replay ``workflow`` for ``delivery`` and run its first unrecorded step.

    Yields commands; returns the ``WorkflowRunOutcome`` for the dispatcher to acknowledge.
    ``profile`` applies an engine's native rules (see ``yieldstar_sim.core.profiles``).
    ``step_ended(request)`` is told each step of workflow code that returned a value to it
    (replayed or run), before the code goes on: the simulator's restore uses these moments,
    where the delivery stands as one that finds those steps recorded would stand.
    """
    record = delivery.execution
    if record.terminal:
        return recorded_outcome(record.status, record.result, record.error)
    if workflow is None:
        return Failed(
            ErrorInfo(
                "UnknownWorkflowError",
                f"no workflow named {record.workflow_id!r} is registered with this engine",
            )
        )
    runner = StepRunner(record.execution_id, world)
    replay = _Replay(record.execution_id, delivery.steps)
    ctx = _Context(record, delivery.lease, replay, runner, profile, step_ended=step_ended)
    ctx.cancel_recorded = record.cancel_requested
    delivered = replay.cancel_delivered()
    if record.cancel_requested and not delivered:
        ctx.cancel_pending, ctx.cancel_reason = True, f"{record.execution_id} was cancelled"
    if workflow.max_duration is not None:
        ctx.deadline = record.created_at + workflow.max_duration
        now = yield ReadClock()
        if now >= ctx.deadline and not delivered:
            if not record.cancel_requested:
                yield RequestCancel(record.execution_id)  # and what it owns
            ctx.cancel_pending = ctx.cancel_recorded = True
            ctx.cancel_reason = (
                f"{record.execution_id} ran past its max duration of {workflow.max_duration:g}s"
            )
    try:
        try:
            user = workflow.fn(runner, record.params)
        except BaseException as error:
            if not raised_by_code(error):
                raise  # the toolkit's own way out (a wall-clock limit), or Ctrl-C
            return raised(
                error, runner, ctx.performed, cancel_recorded=ctx.cancel_recorded,
                code=f"workflow {record.workflow_id!r}",
            )  # fmt: skip
        if not inspect.isgenerator(user):
            return completed(record.execution_id, user, runner, ctx.performed)
        return (yield from _drive_generator(user, ctx))
    finally:
        runner._release()


def _drive_generator(user: Generator[Any, Any, Any], ctx: _Context) -> DriverGenerator:
    send: Any = None
    # Taken out as thrown, so that no local names the error when it comes back out (its
    # traceback holds this frame: a reference cycle, see ``invoker.step_delivery``).
    throw: list[BaseException] = []
    try:
        while True:
            try:
                request = user.throw(throw.pop()) if throw else user.send(send)
            except StopIteration as stop:
                return completed(ctx.execution_id, stop.value, ctx.runner, ctx.performed)
            except BaseException as error:
                if not raised_by_code(error):
                    raise  # the toolkit's own way out (a wall-clock limit), or Ctrl-C
                return raised(
                    error, ctx.runner, ctx.performed, cancel_recorded=ctx.cancel_recorded,
                    code=f"the code of {ctx.execution_id}",
                )  # fmt: skip
            ctx.performed.add(id(request))
            send = None
            try:
                steps = _perform(request, ctx)
                if isinstance(steps, _Recorded):
                    send = steps.value
                else:
                    send = yield from stamped(steps, request)
                if ctx.step_ended is not None:
                    ctx.step_ended(request)
            except _Suspend:
                if ctx.deadline is not None and not ctx.cancel_pending:
                    yield RecordWake(ctx.lease, ctx.deadline)  # the max duration wakes it too
                return Suspended()
            except _Throw as thrown:
                throw.append(thrown.error)
            except _Diverged as diverged:
                return failed(diverged.error)
            except _Ended as ended:
                return ended.outcome
    finally:
        _abandon(user)


def _abandon(user: Generator[Any, Any, Any]) -> None:
    """Stop workflow code where it waits; code that refuses to stop (it ignores GeneratorExit,
    or raises as it is stopped) is not run further."""
    try:
        user.close()
    except BaseException as error:
        if not raised_by_code(error):
            raise


class _Recorded:
    """A completed ``step.run`` that replays: its recorded value, with nothing to yield."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _perform(request: object, ctx: _Context) -> Generator[Command, Any, Any] | _Recorded:
    """The commands of one step request; a request that is no step is thrown back at once.
    A plain function returning the step's generator (one frame less on every command), or,
    for the commonest request of all, a completed ``step.run`` replayed, its value at once:
    a redelivery goes past each recorded step, and a long workflow has many."""
    replay = ctx.replay
    if inspect.isgenerator(request):
        verb = ctx.runner.verb_of(request)
        step = f"{verb}{ctx.runner.called_at(request)}" if verb else "a step generator"
        name = verb.partition("(")[0] if verb else "step.run"
        raise _Throw(
            WorkflowDefinitionError(
                f"workflow {replay.execution_id!r} yielded {step} instead of running it: write "
                f"`yield from {name}(...)`, not `yield {name}(...)`",
                code=STEP_NOT_RUN,
            )
        )
    if not isinstance(request, STEP_REQUESTS):
        raise _Throw(
            WorkflowDefinitionError(
                f"workflow {replay.execution_id!r} yielded {request!r} "
                f"({type(request).__name__}); workflow code may only `yield from` step verbs "
                "such as step.run, step.delay and step.start"
            )
        )
    if isinstance(request, GroupStep):
        return perform_group(request, ctx, lambda step, seen: _step(step, seen, ctx))
    if isinstance(request, ContinueAsNewStep):
        cancelled = ctx.cancel_reason if ctx.cancel_pending else None
        return continue_as_new(request, ctx.record, ctx.runner, ctx.performed, cancelled=cancelled)
    recorded = replay.reach(request.key)
    if (
        type(request) is RunStep
        and recorded is not None
        and recorded.status == "completed"
        and request.error is None
        and changed(request, recorded, len(replay.reached) - 1) is None
        and ctx.profile.check_policy(request.key, request.policy) is None
    ):
        return _Recorded(recorded.value)  # what ``_step`` and ``_run`` return, checked alike
    return _step(request, recorded, ctx)


def _step(
    request: MemberRequest | DelayStep | WaitForEventStep,
    recorded: StepRecord | None,
    ctx: _Context,
) -> Generator[Command, Any, Any]:
    if (diverged := changed(request, recorded, len(ctx.replay.reached) - 1)) is not None:
        raise _Diverged(diverged)  # the same key, asking for another target than recorded
    if ctx.cancel_pending and (recorded is None or recorded.status == "pending"):
        # RFC 009: the cancellation is thrown at the current step, and recorded there as that
        # step's failure, so that every replay throws it at the same point.
        ctx.cancel_pending = False
        info = ErrorInfo("WorkflowCancelledError", ctx.cancel_reason)
        attempt = 1 if recorded is None else recorded.attempt
        yield PutStep(ctx.lease, request.key, "failed",
                      {"error": info.to_value(), "cancelled": True}, attempt)  # fmt: skip
        raise _Throw(WorkflowCancelledError(ctx.cancel_reason))
    if recorded is not None and recorded.status == "failed":
        raise _Throw(_restore_failure(request.key, _object(recorded.value), recorded.attempt))
    if recorded is None and isinstance(request, TargetStep):
        # A bad workflow name is the workflow code's mistake: throw it there, where it can be
        # read and handled, rather than let the runtime refuse the call.
        try:
            check_name(request.workflow_id, f"step {request.key!r}: the workflow ID")
        except ValueError as error:
            raise _Throw(error) from None
    match request:
        case RunStep():
            return (yield from _run(request, recorded, ctx))
        case DelayStep():
            return (yield from _delay(request, recorded, ctx.lease))
        case StartStep():
            return (yield from _start(request, recorded, ctx.execution_id, ctx.lease))
        case CallStep():
            return (yield from _call(request, recorded, ctx))
        case ChildStep():
            return (yield from _child(request, recorded, ctx))
        case WaitForEventStep():
            return (yield from wait_for_event(request, recorded, ctx.lease))
    raise AssertionError(request)  # pragma: no cover


def _run(
    request: RunStep, recorded: StepRecord | None, ctx: _Context
) -> Generator[Command, Any, Any]:
    key, lease, execution_id = request.key, ctx.lease, ctx.execution_id
    if request.error is not None:
        raise _Throw(
            StepDeclarationError(f"step {key!r} was declared with an error: {request.error}")
        )
    refusal = ctx.profile.check_policy(key, request.policy)
    if refusal is not None:
        raise _Throw(ProfileError(refusal))
    attempt = 1
    if recorded is not None:
        if recorded.status == "completed":
            return recorded.value
        state = _object(recorded.value)
        attempt = recorded.attempt + 1
        yield from _wait_until(float(state["wake_at"]), lease)  # type: ignore[arg-type]
    by_token = request.policy.completes_by_token
    result: BodyResult = yield RunBody(
        execution_id, key, attempt, request.body, request.args, request.kwargs,
        request.policy.timeout, by_token,
    )  # fmt: skip
    if result.error is None:
        encoding = durable_value_codec.round_trip(result.value, path=f"step {key!r} result")
        if isinstance(encoding, InvalidValue):
            raise _Throw(
                WorkflowDefinitionError(
                    f"{encoding.message}; a step body must return plain data (None, bool, "
                    "number, str, list, dict with str keys)"
                )
            )
        value = encoding[1]
        # An attempt with a token of its own completes through it (core.attempts).
        if by_token:
            yield CompleteAttempt(lease, key, attempt, value)
        else:
            yield PutStep(lease, key, "completed", value, attempt)
        return value
    error = result.error
    permanent = isinstance(error, Permanent)
    cause = error.error if isinstance(error, Permanent) else error
    info = ErrorInfo.from_exception(cause)
    if permanent or attempt >= request.policy.attempts:
        failure: DurableValue = {"error": info.to_value(), "permanent": permanent}
        yield PutStep(lease, key, "failed", failure, attempt)
        step_error = StepError(key, info, attempts=attempt)
        step_error.__cause__ = cause
        raise _Throw(step_error)
    now = yield ReadClock()
    wake_at = now + ctx.profile.round_delay(request.policy.delay_after(attempt))
    retry: DurableValue = {"error": info.to_value(), "wake_at": wake_at}
    yield PutStep(lease, key, "pending", retry, attempt, wake_at)
    raise _Suspend


def _delay(
    request: DelayStep, recorded: StepRecord | None, lease: Lease
) -> Generator[Command, Any, None]:
    if recorded is not None:
        if recorded.status == "completed":
            return None
        until = float(_object(recorded.value)["until"])  # type: ignore[arg-type]
        yield from _wait_until(until, lease)
        yield PutStep(lease, request.key, "completed", {"until": until})
        return None
    seconds = request.seconds
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise _Throw(TypeError(f"step.delay({request.key!r}): seconds must be a number"))
    if not math.isfinite(seconds) or seconds < 0:
        raise _Throw(ValueError(f"step.delay({request.key!r}): {seconds!r} is not a delay"))
    now = yield ReadClock()
    until = now + seconds
    if seconds == 0:
        yield PutStep(lease, request.key, "completed", {"until": until})
        return None
    yield PutStep(lease, request.key, "pending", {"until": until}, 1, until)
    raise _Suspend


def _wait_until(at: float, lease: Lease) -> Generator[Command, Any, None]:
    """Suspend unless ``at`` has come; the claim that woke us consumed the wake, so re-arm it."""
    now = yield ReadClock()
    if now < at:
        yield RecordWake(lease, at)
        raise _Suspend


def _start(
    request: StartStep, recorded: StepRecord | None, execution_id: str, lease: Lease
) -> Generator[Command, Any, StartedExecution]:
    key = request.key
    if recorded is not None:
        return StartedExecution(str(_object(recorded.value)["executionId"]))
    start = StartRequest(RequestId(execution_id, key), request.workflow_id, request.params,
                         request.detached)  # fmt: skip
    result: StartResult = yield CallStart(start)
    if isinstance(result, StartAccepted):
        yield PutStep(lease, key, "completed", {"executionId": result.execution_id})
        return StartedExecution(result.execution_id)
    raise (yield from _refused(lease, key, result))


def _call(
    request: CallStep, recorded: StepRecord | None, ctx: _Context
) -> Generator[Command, Any, Any]:
    key = request.key
    if recorded is not None:
        return (yield from _replay_target(key, recorded, ctx, "result", child=False))
    start = StartRequest(RequestId(ctx.execution_id, key), request.workflow_id, request.params)
    result: StartResult = yield CallStart(start)
    if not isinstance(result, StartAccepted):
        raise (yield from _refused(ctx.lease, key, result))
    yield PutStep(ctx.lease, key, "pending", {"executionId": result.execution_id})
    return (yield from _await(key, result.execution_id, ctx, {}))


def _child(
    request: ChildStep, recorded: StepRecord | None, ctx: _Context
) -> Generator[Command, Any, Any]:
    key = request.key
    if recorded is not None:
        answer = "executionId" if request.spawn else "result"
        return (yield from _replay_target(key, recorded, ctx, answer, child=True))
    refusal = None if request.spawn else ctx.profile.check_child(key)
    if refusal is not None:
        raise _Throw(ProfileError(refusal))
    try:
        check_execution_id(request.child_id, what=f"step {key!r}: the child ID")
    except InvalidIDError as error:
        raise _Throw(error) from None
    if (request.child_id, request.workflow_id) == (ctx.execution_id, ctx.record.workflow_id):
        raise _Throw(
            InvalidIDError(
                f"step {key!r}: the child ID {request.child_id!r} is this execution's own "
                f"ID, for the same workflow {request.workflow_id!r}"
            )
        )
    child = ChildRequest(
        RequestId(ctx.execution_id, key), request.workflow_id, request.child_id,
        request.params, detached=request.spawn,
    )  # fmt: skip
    result: ChildResult = yield StartChild(child)
    if not isinstance(result, ChildAccepted):
        raise (yield from _refused(ctx.lease, key, result))
    target, joined = result.execution_id, not result.created
    if request.spawn:
        yield from _wait_for_spawn_acknowledgement(key, target, ctx)
        yield PutStep(ctx.lease, key, "completed", {"executionId": target, "joined": joined})
        return target
    yield PutStep(ctx.lease, key, "pending", {"executionId": target, "joined": joined})
    return (yield from _await(key, target, ctx, {"joined": joined}))


def _wait_for_spawn_acknowledgement(
    key: str, target: str, ctx: _Context
) -> Generator[Command, Any, None]:
    """On an engine whose Spawn waits for the start's acknowledgement within the parent's
    budget (Temporal), an acknowledgement after the max duration fails the spawn with the
    parent's cancellation, although the target was started."""
    if not ctx.profile.spawn_waits_for_start or ctx.deadline is None:
        return
    now = yield ReadClock()
    reason = ctx.profile.check_spawn_acknowledged(key, target, now, ctx.deadline)
    if reason is None:
        return
    if not ctx.cancel_recorded:
        yield RequestCancel(ctx.execution_id)  # and what it owns, as a max duration does
        ctx.cancel_recorded = True
    info = ErrorInfo("WorkflowCancelledError", reason)
    yield PutStep(ctx.lease, key, "failed", {"error": info.to_value(), "cancelled": True})
    raise _Throw(WorkflowCancelledError(reason))


def _replay_target(
    key: str, recorded: StepRecord, ctx: _Context, answer: str, *, child: bool
) -> Generator[Command, Any, Any]:
    """A recorded call or child step: the ``answer`` of its record once completed, else wait
    for the target it recorded again (with whether a child step joined an existing run)."""
    value = _object(recorded.value)
    if recorded.status == "completed":
        return value[answer]
    extra: dict[str, DurableValue] = {"joined": bool(value.get("joined"))} if child else {}
    return (yield from _await(key, str(value["executionId"]), ctx, extra))


def _await(
    key: str, target: str, ctx: _Context, extra: dict[str, DurableValue]
) -> Generator[Command, Any, Any]:
    """Wait for ``target``'s outcome: registered with the runtime, whose terminal
    acknowledgement of the target wakes this execution; suspend until then."""
    record: ExecutionRecord | None = yield WaitFor(ctx.lease, target)
    while record is not None and record.status == ExecutionStatus.CONTINUED_AS_NEW:
        # A joined run that continued as new: its instance's next run is the one to wait for.
        record = yield WaitFor(ctx.lease, str(_object(record.result)["continuedAs"]))
    if record is not None and not record.terminal:
        raise _Suspend
    if record is not None and record.status == ExecutionStatus.COMPLETED:
        value: DurableValue = {"executionId": target, "result": record.result, **extra}
        yield PutStep(ctx.lease, key, "completed", value)
        return record.result
    if record is None:
        status, info = "pruned", ErrorInfo("ExecutionNotFoundError", f"{target} no longer exists")
    else:
        status = str(record.status)
        info = record.error or ErrorInfo("WorkflowCancelledError", f"{target} was cancelled")
    failure: DurableValue = {"error": info.to_value(), "executionId": target, "status": status,
                             **extra}  # fmt: skip
    yield PutStep(ctx.lease, key, "failed", failure)
    raise _Throw(ChildFailedError(target, status, info))


# --------------------------------------------------------------------------- outcomes


def _object(value: DurableValue) -> dict[str, DurableValue]:
    if not isinstance(value, dict):
        raise TypeError(f"a step record holds {value!r}, not an object")
    return value


def _restore_failure(key: str, value: dict[str, DurableValue], attempts: int) -> BaseException:
    """The error a recorded failure throws again on replay: the same class and content."""
    info = ErrorInfo.from_value(value["error"])
    if value.get("cancelled"):
        return WorkflowCancelledError(info.message)
    if "status" in value and "executionId" in value:
        return ChildFailedError(str(value["executionId"]), str(value["status"]), info)
    if info.name == "WorkflowStartError" and info.code is not None:
        return _start_error(info)
    return StepError(key, info, attempts=attempts)


def _refused(lease: Lease, key: str, result: StartRejected) -> Generator[Command, Any, _Throw]:
    """Record the start the runtime refused as step ``key``'s failure; answer the ``_Throw`` of
    it into the code (the caller raises it: a type checker follows a raise, not a generator's
    ``NoReturn``)."""
    info = ErrorInfo("WorkflowStartError", result.message, str(result.code))
    yield PutStep(lease, key, "failed", {"error": info.to_value()})
    return _Throw(_start_error(info))


def _start_error(info: ErrorInfo) -> WorkflowStartError:
    return WorkflowStartError(WorkflowStartErrorCode(info.code or ""), info.message)
