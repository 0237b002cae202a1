"""Workers as kernel actors: each claims due work, drives the same sans-IO driver the engine
uses, and makes every runtime call through a choice point (``points.call``).

A worker that crashes (``WorkerCrashed``) restarts after the scenario's restart delay with no
memory; its lease expires and another worker (or it) replays the execution from its recorded
steps. Step bodies run between choice points and act on the simulated world through a
``SimPort``; what they did lands in time, each elapse a choice point (``attempts.play_body``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.authoring import DelayStep, RunStep, StartStep
from yieldstar_sim.core.commands import OrderCompletions
from yieldstar_sim.core.driver import (
    BodyResult,
    CallStart,
    Command,
    ReadClock,
    RequestCancel,
    RunBody,
    StartChild,
    drive,
)
from yieldstar_sim.core.model import (
    ChildAccepted,
    Delivery,
    InfrastructureError,
    Lease,
    StartAccepted,
    StepTimeoutError,
    WorkflowDefinitionError,
)
from yieldstar_sim.core.ops import Op
from yieldstar_sim.engine.body_world import BodyWorld, WorldError, without_frames
from yieldstar_sim.engine.calls import runtime_call
from yieldstar_sim.engine.invoker import step_delivery
from yieldstar_sim.engine.recovery import dead_letter
from yieldstar_sim.engine.world import WorkerCrashRequested
from yieldstar_sim.runtime.memory_rows import read_step
from yieldstar_sim.simulation.attempt_tokens import own_completion
from yieldstar_sim.simulation.attempts import (
    AttemptStopped,
    Played,
    detachable,
    new_played,
    play_body,
    playback,
)
from yieldstar_sim.simulation.completions import completion_order
from yieldstar_sim.simulation.draws import draw
from yieldstar_sim.simulation.faults import new_point_info
from yieldstar_sim.simulation.kernel import Wait
from yieldstar_sim.simulation.narration import (
    body_data,
    body_words,
    command_data,
    narration,
    outcome_data,
    outcome_words,
)
from yieldstar_sim.simulation.points import WorkerCrashed, call
from yieldstar_sim.simulation.port import DrawAsked, Ran, SimPort, Undecided, new_ran
from yieldstar_sim.simulation.trace_payloads import ReasonData, ReleaseData, TraceKind

if TYPE_CHECKING:
    from collections.abc import Callable, Generator
    from contextlib import AbstractContextManager

    from yieldstar_sim.core.model import StepRecord, WorkflowRunOutcome
    from yieldstar_sim.simulation.attempts import BodyOp, Playback
    from yieldstar_sim.simulation.kernel import Actor
    from yieldstar_sim.simulation.state import RunState
    from yieldstar_sim.simulation.world_ops import Redo


def worker(state: RunState, name: str, delivery: Delivery | None = None) -> Actor:
    """The actor of worker ``name``: works until the run ends, restarting after each crash;
    with ``delivery``, it starts by driving that delivery (a worker made again mid-delivery)."""
    now = state.clock.now
    while True:
        try:
            yield from _work(state, name, delivery)
            return
        except WorkerCrashed as crashed:
            delivery = None
            if crashed.execution_id is None:
                state.event(now(), TraceKind.CRASH, f"{name} crashed", worker=name)
            else:  # the workflow's own code crashed it: the trace names the execution and step
                state.event(
                    now(), TraceKind.CRASH, f"{name} crashed: {crashed}", worker=name,
                    execution_id=crashed.execution_id, step_key=crashed.step_key,
                    token=crashed.token,
                )  # fmt: skip
            yield Wait(now() + state.scenario.restart_delay)
            state.event(now(), TraceKind.RESTART, f"{name} restarted with no memory", worker=name)


def _work(state: RunState, name: str, delivery: Delivery | None) -> Actor:
    lease_seconds = state.scenario.lease_seconds
    runtime = state.runtime
    while True:
        if delivery is None:
            # Back at the claim, a worker holds nothing of its past (a restored run makes it
            # again from here: ``RunState.reset``).
            state.reset(name, partial(worker, state, name))
            try:
                delivery = yield from call(
                    state,
                    new_point_info(name, Op.CLAIM),
                    lambda: runtime.claim(name, lease_seconds=lease_seconds),
                )
            except InfrastructureError:
                delivery = None  # the worker saw no delivery; a committed claim just expires
            if delivery is None:
                # Back to the claim, offered only while something is due (a blocking point),
                # as every idle worker is: one that waited for a nudge instead would be woken
                # by whichever move changed the queue first, and an acknowledgement would
                # not commute with a failed claim.
                continue
            state.reset(name, partial(worker, state, name, delivery))
        set_aside = dead_letter(delivery, state.scenario.max_recovery_attempts)
        if set_aside is not None:
            # Recovered too often: acknowledged dead-lettered, its workflow code never run.
            yield from _acknowledge(state, name, delivery.lease, set_aside)
            delivery = None
            continue
        # A stalled attempt detaches: the rest of its delivery becomes an actor apart, made
        # again from where the delivery last stood as a new one would (``_Midway``).
        restart = _Restart(partial(_deliver, state, name, delivery))
        yield from detachable(state, _deliver(state, name, delivery, restart), restart)
        delivery = None


def _deliver(
    state: RunState, name: str, delivery: Delivery, restart: _Restart | None = None
) -> Actor:
    lease = delivery.lease
    record = delivery.execution
    registry = state.registry()
    port = SimPort(state)
    world = BodyWorld(port, name, lease, in_workflow_code=state.scenario.world_in_workflow_code)
    workflow = registry.get(record.workflow_id)
    step_ended = None
    if (
        restart is not None
        and state.journal is not None
        # Recording (an actor made again too: it goes on recorded): a delivery begun in a run
        # that is never saved is made again from its claim by the restore that ends it.
        and state.journal.recording
        and workflow is not None
        and workflow.max_duration is None  # its first clock read would be made again later
        and not record.cancel_requested
        and not state.scenario.world_in_workflow_code  # reads in workflow code are answers
    ):
        step_ended = _Midway(state, name, delivery, restart, registry).step_ended
    driver = drive(workflow, delivery, world, registry.profile, step_ended=step_ended)
    guard: AbstractContextManager[None] | None = None
    deadline = state.deadline
    if deadline.seconds is not None:  # no limit, no guard: it costs at every step
        # One guard for the delivery, entered at each step: it keeps no state between them.
        code = f"the workflow code of {record.execution_id} ({record.workflow_id}, {name})"
        guard = deadline.user_code(code)
    try:
        outcome = yield from step_delivery(
            driver,
            _Delivering(state, name, lease, world, port).perform,
            errors=InfrastructureError,
            guard=guard,
        )
    except InfrastructureError as rejection:
        # A world error the body let go is in the journal too (what ``state.ask`` raised),
        # and its traceback holds this run's frames: a reference cycle per rejected delivery.
        without_frames(rejection)
        state.event(
            state.clock.now(), TraceKind.REJECT,
            f"delivery of {record.execution_id} rejected: {rejection}",
            worker=name, execution_id=record.execution_id, token=lease.token,
            data=ReasonData(str(rejection)),
        )  # fmt: skip
        yield from _release(state, name, lease)
        return
    yield from _acknowledge(state, name, lease, outcome)


def _acknowledge(state: RunState, name: str, lease: Lease, outcome: WorkflowRunOutcome) -> Actor:
    """Trace a delivery's outcome and acknowledge it under its lease."""
    execution_id = lease.execution_id
    ended = outcome_data(outcome)
    state.event(
        state.clock.now(), TraceKind.OUTCOME, f"{execution_id}: {outcome_words(ended)}",
        worker=name, execution_id=execution_id, token=lease.token, data=ended,
    )  # fmt: skip
    try:
        yield from call(
            state,
            new_point_info(name, Op.ACKNOWLEDGE, execution_id),
            lambda: state.runtime.acknowledge(lease, outcome),
            token=lease.token,
        )
    except InfrastructureError:
        return  # the outcome is lost with the lease; the execution is delivered again
    state.nudge()


class _Restart:
    """How the delivery a worker drives is made again: from its start, or from where it last
    stood as a new delivery would (``_Midway``); what ``detachable`` makes a stalled rest of it
    from."""

    __slots__ = ("again", "make")

    def __init__(self, make: Callable[[], Actor]) -> None:
        self.make = make
        self.again: Callable[[_Restart], Actor] | None = None
        """Once a ``_Midway`` set it: the delivery made again from there, told this restart
        (passed in, not held by a closure, which would be a reference cycle for every
        delivery a search restores)."""

    def __call__(self) -> Actor:
        return self.make() if self.again is None else self.again(self)


#: The steps whose record replays with no command: a delivery that finds them recorded goes
#: past them without a choice point or an answer.
_REPLAYED_QUIETLY = (RunStep, DelayStep, StartStep)


@dataclass(slots=True)
class _Midway:
    """Tells the journal where a delivery stands as a new delivery of the same execution,
    finding the steps recorded so far, would stand: after a step that returned its recorded
    value, with every step before it replayed without a command. Making the worker again
    from there replays those steps in the driver (no bodies, no choice points), where its log
    since the delivery began would run every step's body and call again: a long delivery made
    again cost as much as running it (docs/decisions.md, "A worker is made again from its
    last quiet step")."""

    state: RunState
    name: str
    delivery: Delivery
    restart: _Restart
    registry: object
    ended: int = 0
    clean: bool = True

    def step_ended(self, request: object) -> None:
        state = self.state
        self.ended += 1
        if type(request) not in _REPLAYED_QUIETLY:
            self.clean = False
        journal = state.journal
        if not self.clean or journal is None or not journal.recording or journal.feeding:
            return  # not recorded: a run on from a saved state, never saved, or made again
        rows_view = getattr(state.runtime, "rows_view", None)
        if rows_view is None:
            self.clean = False  # records it cannot read cheaply: no step to start again from
            return
        rows = rows_view()
        row = rows.get(self.delivery.execution.execution_id)
        recorded = None if row is None else row.steps.get(getattr(request, "key", None))
        if (
            recorded is None
            or recorded.status != "completed"
            or state.kernel.running != self.name  # a stalled rest, an actor apart
            or state.registry() is not self.registry  # a deploy: made again, it would differ
        ):
            self.clean = False
            return
        if len(row.steps) != self.ended:
            # Steps recorded past this one (a delivery replaying its record), or one that
            # ended with a failure thrown into the code: a new delivery would not stand here.
            return
        steps = tuple(row.steps.values())
        again = partial(_midway_delivery, self.delivery, steps)
        state.reset(self.name, partial(_worker_midway, state, self.name, again))
        self.restart.again = partial(_deliver_midway, state, self.name, again)


def _worker_midway(state: RunState, name: str, again: Callable[[], Delivery]) -> Actor:
    """Worker ``name`` made again from where ``_Midway`` last saw its delivery stand (a
    function, not a closure: a saved state's factories are pickled to be shipped)."""
    return worker(state, name, again())


def _deliver_midway(
    state: RunState, name: str, again: Callable[[], Delivery], restart: _Restart
) -> Actor:
    """The delivery made again from where ``_Midway`` last saw it stand."""
    return _deliver(state, name, again(), restart)


def _midway_delivery(delivery: Delivery, steps: tuple[StepRecord, ...]) -> Delivery:
    """``delivery`` as a claim now would hand it over: the steps recorded since, each read as
    a claim reads it (its value in new containers)."""
    return Delivery(delivery.lease, delivery.execution, tuple(map(read_step, steps)))


def _release(state: RunState, name: str, lease: Lease) -> Actor:
    delay = state.scenario.redelivery_delay
    try:
        yield from call(
            state,
            new_point_info(name, Op.RELEASE, lease.execution_id),
            lambda: state.runtime.release(lease, delay=delay),
            token=lease.token,
            data=lambda _: ReleaseData(delay),
        )
    except InfrastructureError:
        return
    state.nudge()


@dataclass(frozen=True, slots=True)
class _Delivering:
    """One delivery being driven: what each of its runtime calls and bodies needs."""

    state: RunState
    name: str
    lease: Lease
    world: BodyWorld
    port: SimPort

    def perform(self, command: Command) -> Generator[Any, Any, Any]:
        """Carry out one command of the driver: a body, a clock read or a runtime call."""
        state, lease = self.state, self.lease
        if isinstance(command, RunBody):
            return (yield from self._run_body(command))
        if isinstance(command, OrderCompletions):
            return (yield from completion_order(state, self.name, command))
        if isinstance(command, ReadClock):
            # Durable timers keep true time, skew or not: deliveries take no virtual time, so
            # a timer judged by a clock behind would be redelivered at one instant forever.
            return state.clock.now()
        runtime = state.runtime
        kind = runtime_call(command)
        result = yield from call(
            state,
            new_point_info(self.name, kind.op, lease.execution_id, kind.step_key(command)),
            lambda: kind.perform(runtime, command),
            token=lease.token,
            done=narration(command),
            data=lambda result: command_data(command, result),
        )
        if isinstance(command, StartChild):
            if isinstance(result, ChildAccepted):
                child = command.request
                state.tell(
                    state.observe_last_admission, result.execution_id,
                    "spawn" if child.detached else "child",
                    (lease.execution_id, child.request_id.step_key),
                )  # fmt: skip
            state.nudge()
        elif isinstance(command, RequestCancel):
            state.nudge()
        elif isinstance(command, CallStart) and isinstance(result, StartAccepted):
            state.tell(
                state.observe_last_admission, result.execution_id, "start",
                (lease.execution_id, command.request.request_id.step_key),
            )  # fmt: skip
            state.nudge()
        return result

    def _body(
        self, command: RunBody, decided: tuple[int, ...], redo: Redo | None
    ) -> Ran | DrawAsked:
        """Run a step body at once (``redo``: again, from a call where its playback stopped):
        what it came to (``port.Ran``); or, when it reached a draw past those ``decided``,
        the draw's options, with what the run did taken back."""
        state, port = self.state, self.port
        port.begin(decided, redo, state.clocks.now(self.name) if redo is None else 0.0)
        # What a run stopped at a draw did at once, taken back: the random numbers it read
        # (its calls to the world and its elapses had not landed).
        mark = state.body_mark()
        deadline = state.deadline
        try:
            if deadline.seconds is None:
                result = self.world.run(command)
            else:
                with deadline.user_code(
                    f"step {command.step_key} of {command.execution_id} (attempt "
                    f"{command.attempt}, {self.name})"
                ):
                    result = self.world.run(command)
        except Undecided as undecided:
            state.roll_back(mark)
            return DrawAsked(undecided.options)
        except WorkerCrashRequested:
            # Never seen: the worker dies where the body's work reaches its crash.
            result = BodyResult()
        finally:
            ops, port.ops = port.ops, None
        assert ops is not None
        return new_ran(result, ops, port.elapsed, port.admitted, tuple(port.tape), port.clock)

    def _run_body(self, command: RunBody) -> Generator[Any, Any, BodyResult]:
        """Run a step body at once, then land what it did in time, each elapse and heartbeat
        a choice point (where a stall, crash, freeze or skew may fall, or a renewal fail) and
        each call to the outside world a solo point (where it may fail); a body that draws
        runs again once each draw is decided (``draws.py``), and one whose call to the world
        failed or found another value, from that call (``world_ops.py``)."""
        state, name, lease, port = self.state, self.name, self.lease, self.port
        decided: tuple[int, ...] = ()
        redo: Redo | None = None
        played: Playback | None = None
        start, passed, started = 0, False, state.clock.now()
        earlier: list[BodyOp] = []
        while True:
            # The body runs once per draw and per call it runs again from: a run restored
            # past it is told what it did (``state.ask``).
            try:
                ran = state.ask(self._body, command, decided, redo)
            except WorldError as failed:
                # The body let the world's error go: the delivery is rejected (as for any
                # infrastructure error), and the attempt ends here.
                assert played is not None, "a world error comes from a call that failed"
                ended = Played("done", played.work, played.worked_until)
                state.tell(self._trace_body, command, ended, started, BodyResult(error=failed))
                raise
            if isinstance(ran, DrawAsked):
                index = yield from draw(
                    state, name, execution_id=command.execution_id, step_key=command.step_key,
                    attempt=command.attempt, options=ran.options,
                )  # fmt: skip
                decided = (*decided, index)
                continue
            if redo is not None and redo.misfit(ran.ops, start, earlier):
                assert played is not None
                outcome = Played("done", played.work, played.worked_until)
                ran = replace(ran, result=BodyResult(error=_not_the_same(command)))
                break
            if ran.admitted:
                state.nudge()
            port.elapsed = ran.elapsed
            if not ran.ops and played is None:
                # Nothing to land (most bodies of a search): landed at once, as a playback of
                # nothing would be, without making one.
                started = state.clock.now()
                outcome = new_played("done", 0.0, started)
                break
            if played is None:
                started = state.clock.now()
                played = playback(
                    state, name, lease, attempt=command.attempt, timeout=command.timeout
                )
            played.tape, played.clock = ran.tape, ran.clock
            earlier = ran.ops
            outcome = yield from play_body(
                state, name, lease, step_key=command.step_key, attempt=command.attempt,
                ops=ran.ops, played=played, start=start, passed=passed,
                completion=own_completion(command, ran.result),
            )  # fmt: skip
            if outcome.how != "redo":
                break
            assert outcome.redo is not None
            redo, start = outcome.redo, outcome.at
            # A read that found another value passed its point: its run again lands it at
            # once; a call that failed is gone from what the run again does.
            passed = not redo.fails
        result = ran.result
        if outcome.how == "timed_out":
            result = BodyResult(
                error=StepTimeoutError(
                    f"step {command.step_key!r} attempt {command.attempt} ran past its "
                    f"{command.timeout:g}s timeout (stalled); its worker gave up on it"
                )
            )
        # Told, its payload made inside: an actor made again builds nothing of it.
        state.tell(self._trace_body, command, outcome, started, result)
        if outcome.how == "stopped":
            raise AttemptStopped(
                f"{name} stopped attempt {command.attempt} of step {command.step_key}: "
                f"{outcome.reason}"
            )
        return result

    def _trace_body(
        self, command: RunBody, played: Played, started: float, result: BodyResult
    ) -> None:
        """Trace what the body of ``command`` did, landed as ``played`` from ``started``."""
        state = self.state
        now = state.clock.now()
        elapsed = self.port.elapsed
        ran_data = body_data(command.attempt, elapsed, result)
        if played.how == "stopped":
            # What the body computed after the heartbeat that stopped it is not its result.
            elapsed = played.work
            ran_data = replace(ran_data, elapsed=elapsed, returned=None, raised=None, stopped=True)
        # The attempt's span, where the event's time and the work do not tell it (the
        # invariant that two attempts of one step never overlap reads it).
        ended = played.ended if played.how == "timed_out" else played.worked_until
        if started != now - elapsed or (ended is not None and ended != now):
            ran_data = replace(
                ran_data,
                started=None if started == now - elapsed else started,
                ended=None if ended is None or ended == now else ended,
            )
        state.trace.add(
            now, TraceKind.BODY,
            f"ran step {command.step_key} (attempt {command.attempt}): {body_words(ran_data)}",
            worker=self.name, execution_id=command.execution_id, step_key=command.step_key,
            token=self.lease.token, data=ran_data,
        )  # fmt: skip


def _not_the_same(command: RunBody) -> WorkflowDefinitionError:
    """The error of a body that, run again from a call to the outside world, did not make the
    same calls before it: what it did cannot be landed from there."""
    return WorkflowDefinitionError(
        f"step {command.step_key}'s body did not do the same when it ran again from a call to "
        "the outside world (handed back every value it had been given): a body must do the "
        "same given the same values; keep state that outlives a run of it out of it"
    )
