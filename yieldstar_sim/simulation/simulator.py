"""The simulator: workers and the dispatcher as kernel actors, every runtime call a choice point.

Each worker claims due work, drives the same sans-IO driver the engine uses, and performs each
runtime call only after passing a choice point, where the fault plan may crash it, freeze it,
lose the call's response, fail the call or end its child process. Step bodies run between
choice points and act on the simulated world, whose ledger crashes never roll back.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.clock import ManualClock
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
from yieldstar_sim.core.frozen import maker
from yieldstar_sim.core.model import (
    ChildAccepted,
    Delivery,
    DeliveryRejectedError,
    ExecutionAdmissionError,
    ExecutionNotFoundError,
    ExecutionStateError,
    InfrastructureError,
    InjectedFailure,
    Lease,
    LeaseLostError,
    StartAccepted,
    StepTimeoutError,
)
from yieldstar_sim.engine.calls import runtime_call
from yieldstar_sim.engine.invoker import Registry, step_delivery
from yieldstar_sim.engine.world import (
    BodyWorld,
    Ledger,
    WorldStore,
)
from yieldstar_sim.runtime.factory import RuntimeChoice, open_runtime, resolve_runtime
from yieldstar_sim.simulation.attempts import WorkerClocks, detachable, play_body, skew
from yieldstar_sim.simulation.clients import client_actor, client_requests
from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT, Deadline, RunTimedOut
from yieldstar_sim.simulation.faults import Fault, FaultKind, FaultPlan, PointInfo, new_point_info
from yieldstar_sim.simulation.kernel import Kernel, Park, Point, Wait
from yieldstar_sim.simulation.narration import (
    body_data,
    body_words,
    call_text,
    command_data,
    narration,
    outcome_data,
    outcome_words,
    result_data,
)
from yieldstar_sim.simulation.port import SimPort
from yieldstar_sim.simulation.scenario import Cancel, Prune, ScenarioError
from yieldstar_sim.simulation.trace import (
    Admission,
    CancelData,
    DeployData,
    ErrorData,
    FaultData,
    FreezeData,
    Payload,
    PruneData,
    ReasonData,
    ReleaseData,
    Trace,
    TraceEvent,
    TraceKind,
    TriggerData,
)

if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from pathlib import Path

    from yieldstar_sim.runtime.protocol import Runtime
    from yieldstar_sim.simulation.scenario import Scenario

Actor = Generator[Wait | Park | Point, Any, None]

#: Each choice point is asked for with a Point (``core.frozen``).
_new_point = Point if TYPE_CHECKING else maker(Point)  # calls type-checked as Point(...)


class WorkerCrashed(BaseException):
    """The simulated crash of a worker: a BaseException, so workflow code cannot catch it (and
    it is never thrown into workflow code: the worker simply stops driving it)."""


class ResponseLost(InfrastructureError):
    """The runtime call committed but its response never reached the worker."""


def make_runtime(
    kind: RuntimeChoice,
    clock: ManualClock,
    db: str | Path | None = None,
    options: Mapping[str, Any] | None = None,
) -> Runtime:
    """A fresh runtime of ``kind`` (``"memory"``, ``"duckdb"``, a factory called with
    ``clock=``, or ``"package.module:factory"``) on ``clock``, made with the keyword
    ``options`` (a scenario's ``runtime_options``)."""
    return open_runtime(kind, clock, db, options)


class Simulator:
    """One simulation run of a scenario: build it, ``run()`` it, read its parts."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int = 0,
        runtime: RuntimeChoice = "duckdb",
        db: str | Path | None = None,
        schedule: Sequence[str] = (),
        faults: Sequence[Fault] = (),
        scenario_faults: bool = True,
        chooser: Callable[[int, list[str]], str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        self.scenario = scenario
        self.seed = seed
        self.runtime_choice = runtime
        """What the run was asked to run on (a name or a factory): a re-run uses it again."""
        self.runtime_kind = resolve_runtime(runtime)[0]
        self.clock = ManualClock()
        self.runtime = make_runtime(runtime, self.clock, db, scenario.runtime_options)
        self.plan = FaultPlan([*(scenario.faults if scenario_faults else ()), *faults])
        self.kernel = Kernel(
            self.clock,
            random.Random(seed),
            schedule=schedule,
            faults=self.plan,
            next_wake=self.runtime.next_wake_at,
            chooser=chooser,
        )
        self.trace = Trace()
        self.ledger = Ledger()
        self.clocks = WorkerClocks(self.clock.now)
        """Each worker's own clock: true time, less what a skew fault set it back by."""
        self.lease_ends: dict[tuple[str, int], float] = {}
        """Where each lease (by execution and fencing token) ends after its heartbeats."""
        self.store = WorldStore()
        """The world's key-value store, empty at the start of every run."""
        self._world_random: random.Random | None = None
        profile = scenario.profile
        self._registries = [(0.0, Registry(scenario.workflows, scenario.steps, profile))] + [
            (deploy.at, Registry(deploy.workflows, scenario.steps, profile))
            for deploy in scenario.deploys
        ]
        self.finished = False
        self.deadline = Deadline(timeout)
        self.stopped = "quiescent"
        """Why the run ended: ``quiescent`` (it finished), ``max_time``, ``max_points`` or
        ``timeout`` (the wall-clock limit)."""
        self.admissions: list[Admission] = []
        """Every admission seen, once per incarnation, from the runtime's records."""
        self._admitted: set[tuple[str, int]] = set()

    @property
    def world_random(self) -> random.Random:
        """The world's own random numbers: a stream apart from the scheduler's, so that reading
        one never changes which worker goes next."""
        # Made on first use: seeding a generator from a string is a noticeable part of a short
        # run, and most runs read no random number.
        if self._world_random is None:
            self._world_random = random.Random(f"world-{self.seed}")
        return self._world_random

    # ------------------------------------------------------------------ running

    def registry(self) -> Registry:
        """The workflow versions deployed now."""
        now = self.clock.now()
        return [registry for at, registry in self._registries if at <= now][-1]

    def run(self) -> None:
        """Run the scenario until nothing is left to do, or its time or point budget ends."""
        scenario = self.scenario
        self.kernel.spawn("~client", self._client())
        for name in scenario.worker_names:
            self.kernel.spawn(name, self._worker(name))
        for name, requests in client_requests(scenario).items():
            self.kernel.spawn(name, client_actor(self, name, requests))
        with self.deadline:
            try:
                stopped = self.kernel.run(
                    until=scenario.max_time,
                    max_points=scenario.max_points,
                    # No limit, nothing to ask before each point.
                    stop=None if self.deadline.seconds is None else lambda: self.deadline.expired,
                )
                self.stopped = {"until": "max_time", "stopped": "timeout"}.get(stopped, stopped)
            except RunTimedOut:
                self.stopped = "timeout"
            finally:
                try:
                    self.kernel.close()
                except RunTimedOut:
                    self.stopped = "timeout"  # workflow code that spins as it is abandoned
                self.finished = True

    def incomplete_reason(self) -> str | None:
        """Why the run did not finish, in words (None when it did)."""
        scenario = self.scenario
        now = self.clock.now()
        if self.stopped == "max_time":
            return (
                f"cut at max_time={scenario.max_time:g}s of virtual time with work still due "
                f"(after {self.kernel.points} choice points)"
            )
        if self.stopped == "max_points":
            return f"cut after max_points={scenario.max_points} choice points at t={now:g}"
        if self.stopped == "timeout":
            where = self.deadline.where or f"the simulator at choice point {self.kernel.points}"
            return f"timed out after {self.deadline.seconds:g}s of wall-clock time in {where}"
        return None

    def observe_admission(
        self,
        execution_id: str,
        how: str,
        by: tuple[str, str] | None,
        event: TraceEvent | None = None,
    ) -> None:
        """Note an admission by the runtime's record of it (its incarnation), so that a reply
        that answers for an execution admitted earlier is never counted as a second one."""
        record = self.runtime.execution(execution_id)
        if record is None:
            return  # pruned already; the final records cannot show it either
        key = (execution_id, record.seq)
        if key in self._admitted:
            return
        self._admitted.add(key)
        self.admissions.append(
            Admission(
                execution_id, record.seq, record.workflow_id, how, by,
                record.created_at, None if event is None else event.seq,
            )
        )  # fmt: skip

    def _client(self) -> Actor:
        """Makes the scenario's direct triggers and announces deploys, at their times (the
        triggers and cancels a ``ys.Client`` makes are its own actor's: ``clients.py``)."""
        scenario = self.scenario
        timeline: list[tuple[float, int, Any]] = [
            (t.at, 0, t) for t in scenario.triggers if t.client is None
        ]
        timeline += [(d.at, 1, d) for d in scenario.deploys if d.at > 0]
        timeline += [(c.at, 2, c) for c in scenario.cancels if c.client is None]
        timeline += [(p.at, 3, p) for p in scenario.prunes]
        for at, _, item in sorted(timeline, key=lambda entry: entry[:2]):
            if at > self.clock.now():
                yield Wait(at)
            if isinstance(item, Cancel):
                try:
                    cancelled = self.runtime.cancel(item.execution_id)
                except ExecutionNotFoundError as missing:
                    # A scenario's own cancel has no client to answer: a misspelled ID is the
                    # scenario's mistake, named as such (it read "ExecutionNotFoundError: ...").
                    known = ", ".join(r.execution_id for r in self.runtime.executions())
                    raise ScenarioError(
                        f"scenario {scenario.name!r}: ys.Cancel({item.execution_id!r}) at "
                        f"t={at:g} names no execution of the run (at that time: "
                        f"{known or 'none'})"
                    ) from missing
                reached = ", ".join(cancelled) or "nothing live"
                text = f"cancel {item.execution_id}: requested for {reached}"
                self.trace.add(
                    self.clock.now(), TraceKind.CANCEL, text, execution_id=item.execution_id,
                    data=CancelData(tuple(cancelled)),
                )  # fmt: skip
            elif isinstance(item, Prune):
                self._prune(item.execution_id)
            elif hasattr(item, "workflow_id"):
                try:
                    execution_id = self.runtime.trigger(
                        item.workflow_id, item.params, execution_id=item.execution_id
                    )
                except ExecutionAdmissionError as refused:
                    # The runtime's answer to a caller-chosen ID that exists: an event of the
                    # run, not the end of it.
                    self.trace.add(
                        self.clock.now(), TraceKind.TRIGGER,
                        f"trigger of {item.workflow_id} as {item.execution_id} refused: "
                        f"{refused.code}: {refused}",
                        data=TriggerData(
                            item.workflow_id, item.execution_id, str(refused.code)
                        ),
                    )  # fmt: skip
                    continue
                event = self.trace.add(
                    self.clock.now(), TraceKind.TRIGGER,
                    f"trigger admits {execution_id} ({item.workflow_id})",
                    execution_id=execution_id, data=TriggerData(item.workflow_id),
                )  # fmt: skip
                self.observe_admission(execution_id, "trigger", None, event)
            else:
                names = tuple(w.name for w in item.workflows)
                self.trace.add(
                    self.clock.now(), TraceKind.DEPLOY, f"deploy new code for {', '.join(names)}",
                    data=DeployData(names),
                )  # fmt: skip
            self.kernel.nudge()

    def _prune(self, execution_id: str) -> None:
        try:
            self.runtime.prune(execution_id)
        except (ExecutionNotFoundError, ExecutionStateError) as refused:
            text, data = f"prune {execution_id} refused: {refused}", PruneData(str(refused))
        else:
            text = f"prune {execution_id}: its steps, wake and start requests are gone"
            data = PruneData(None)
        self.trace.add(
            self.clock.now(), TraceKind.PRUNE, text, execution_id=execution_id, data=data
        )

    def _worker(self, name: str) -> Actor:
        while True:
            try:
                yield from self._work(name)
                return
            except WorkerCrashed:
                self.trace.add(self.clock.now(), TraceKind.CRASH, f"{name} crashed", worker=name)
                yield Wait(self.clock.now() + self.scenario.restart_delay)
                self.trace.add(
                    self.clock.now(),
                    TraceKind.RESTART,
                    f"{name} restarted with no memory",
                    worker=name,
                )

    def _work(self, name: str) -> Actor:
        lease_seconds = self.scenario.lease_seconds
        while True:
            try:
                delivery = yield from self._call(
                    new_point_info(name, "claim"),
                    lambda: self.runtime.claim(name, lease_seconds=lease_seconds),
                )
            except InfrastructureError:
                delivery = None  # the worker saw no delivery; a committed claim just expires
            if delivery is None:
                yield Park()
                continue
            # A stalled attempt detaches: the rest of its delivery becomes an actor apart.
            yield from detachable(self, self._deliver(name, delivery), WorkerCrashed)

    def _deliver(self, name: str, delivery: Delivery) -> Actor:
        lease = delivery.lease
        record = delivery.execution
        workflow = self.registry().get(record.workflow_id)
        port = SimPort(self)
        world = BodyWorld(port, name, lease, in_workflow_code=self.scenario.world_in_workflow_code)
        driver = drive(workflow, delivery, world, self.registry().profile)
        guard: Callable[[], AbstractContextManager[None]] | None = None
        if self.deadline.seconds is not None:  # no limit, no guard: it costs at every step
            code = f"the workflow code of {record.execution_id} ({record.workflow_id}, {name})"
            guard = partial(self.deadline.user_code, code)
        try:
            outcome = yield from step_delivery(
                driver,
                lambda command: self._perform(name, lease, command, world, port),
                errors=InfrastructureError,
                guard=guard,
            )
        except InfrastructureError as rejection:
            self.trace.add(
                self.clock.now(), TraceKind.REJECT,
                f"delivery of {record.execution_id} rejected: {rejection}",
                worker=name, execution_id=record.execution_id, token=lease.token,
                data=ReasonData(str(rejection)),
            )  # fmt: skip
            yield from self._release(name, lease)
            return
        ended = outcome_data(outcome)
        self.trace.add(
            self.clock.now(), TraceKind.OUTCOME, f"{record.execution_id}: {outcome_words(ended)}",
            worker=name, execution_id=record.execution_id, token=lease.token, data=ended,
        )  # fmt: skip
        try:
            yield from self._call(
                new_point_info(name, "acknowledge", record.execution_id),
                lambda: self.runtime.acknowledge(lease, outcome),
                token=lease.token,
            )
        except InfrastructureError:
            return  # the outcome is lost with the lease; the execution is delivered again
        self.kernel.nudge()

    def _release(self, name: str, lease: Lease) -> Actor:
        delay = self.scenario.redelivery_delay
        try:
            yield from self._call(
                new_point_info(name, "release", lease.execution_id),
                lambda: self.runtime.release(lease, delay=delay),
                token=lease.token,
                data=lambda _: ReleaseData(delay),
            )
        except InfrastructureError:
            return
        self.kernel.nudge()

    def _perform(
        self, name: str, lease: Lease, command: Command, world: BodyWorld, port: SimPort
    ) -> Generator[Any, Any, Any]:
        runtime = self.runtime
        if isinstance(command, RunBody):
            port.elapsed, port.admitted, port.ops = 0.0, False, []
            try:
                if self.deadline.seconds is None:
                    result = world.run(command)
                else:
                    with self.deadline.user_code(
                        f"step {command.step_key} of {command.execution_id} (attempt "
                        f"{command.attempt}, {name})"
                    ):
                        result = world.run(command)
            finally:
                ops, port.ops = port.ops, None
            if port.admitted:
                self.kernel.nudge()
            # What the body did lands in time, each elapse a choice point (a heartbeat, and
            # where a stall, crash, freeze or skew may fall).
            kept = yield from play_body(
                self, name, lease, step_key=command.step_key, attempt=command.attempt, ops=ops,
                crashed=WorkerCrashed, timeout=command.timeout,
            )  # fmt: skip
            if not kept:
                result = BodyResult(
                    error=StepTimeoutError(
                        f"step {command.step_key!r} attempt {command.attempt} ran past its "
                        f"{command.timeout:g}s timeout (stalled); its worker gave up on it"
                    )
                )
            ran = body_data(command.attempt, port.elapsed, result)
            self.trace.add(
                self.clock.now(), TraceKind.BODY,
                f"ran step {command.step_key} (attempt {command.attempt}): {body_words(ran)}",
                worker=name, execution_id=command.execution_id, step_key=command.step_key,
                token=lease.token, data=ran,
            )  # fmt: skip
            return result
        if isinstance(command, ReadClock):
            # Durable timers keep true time, skew or not: deliveries take no virtual time, so
            # a timer judged by a clock behind would be redelivered at one instant forever.
            return self.clock.now()
        call = runtime_call(command)
        result = yield from self._call(
            new_point_info(name, call.op, lease.execution_id, call.step_key(command)),
            lambda: call.perform(runtime, command),
            token=lease.token,
            done=narration(command),
            data=lambda result: command_data(command, result),
        )
        if isinstance(command, StartChild):
            if isinstance(result, ChildAccepted):
                child = command.request
                self.observe_admission(
                    result.execution_id, "spawn" if child.detached else "child",
                    (lease.execution_id, child.request_id.step_key), self.trace.events[-1],
                )  # fmt: skip
            self.kernel.nudge()
        elif isinstance(command, RequestCancel):
            self.kernel.nudge()
        elif isinstance(command, CallStart) and isinstance(result, StartAccepted):
            self.observe_admission(
                result.execution_id, "start",
                (lease.execution_id, command.request.request_id.step_key), self.trace.events[-1],
            )  # fmt: skip
            self.kernel.nudge()
        return result

    def pass_point(
        self, info: PointInfo, *, token: int | None = None
    ) -> Generator[Point, Any, tuple[Fault | None, dict[str, Any]]]:
        """Pass the choice point ``info`` (a worker's call, a body's elapse, a client's attempt)
        and trace the fault the plan injects there, if any; return the fault and where it
        struck, the keywords of every event that follows from it."""
        fault: Fault | None = yield _new_point(info.label, info)
        where: dict[str, Any] = {
            "worker": info.worker, "op": info.op, "execution_id": info.execution_id,
            "step_key": info.step_key, "token": token, "point": self.kernel.points - 1,
        }  # fmt: skip
        if fault is not None:
            self.trace.add(
                self.clock.now(), TraceKind.FAULT, f"{fault.action()} {info.label}",
                data=FaultData(str(FaultKind(fault.kind)), fault.seconds), **where,
            )  # fmt: skip
        return fault, where

    def _call(
        self,
        info: PointInfo,
        perform: Callable[[], Any],
        *,
        token: int | None = None,
        done: str | None = None,
        data: Callable[[Any], Payload] | None = None,
    ) -> Generator[Any, Any, Any]:
        """Pass a choice point, apply its fault, and make the runtime call; ``data`` makes the
        call event's payload from the result (by default, from the result alone)."""
        fault, where = yield from self.pass_point(info, token=token)
        kind = FaultKind(fault.kind) if fault is not None else None
        if kind is None:
            pass  # most points: no fault to apply before the call
        elif kind == FaultKind.FREEZE:
            assert fault is not None
            assert fault.seconds is not None
            self.trace.add(
                self.clock.now(),
                TraceKind.FREEZE,
                f"{info.worker} freezes for {fault.seconds:g}s",
                data=FreezeData(fault.seconds),
                **where,
            )
            yield Wait(self.clock.now() + fault.seconds)
            self.trace.add(
                self.clock.now(), TraceKind.RESUME, f"{info.worker} wakes up and goes on", **where
            )
        elif kind == FaultKind.CRASH:
            raise WorkerCrashed
        elif kind == FaultKind.INFRA_ERROR:
            error = InjectedFailure(f"infrastructure error at {info.label}")
            self.trace.add(
                self.clock.now(), TraceKind.ERROR, f"{info.op} failed: {error}",
                data=ErrorData(str(error)), **where,
            )  # fmt: skip
            raise error
        elif kind == FaultKind.CHILD_EXIT:
            rejected = DeliveryRejectedError(f"the worker process of {info.worker} exited")
            self.trace.add(
                self.clock.now(), TraceKind.ERROR, f"{info.op} not made: {rejected}",
                data=ErrorData(str(rejected), made=False), **where,
            )  # fmt: skip
            raise rejected
        elif kind == FaultKind.SKEW:
            assert fault is not None
            assert fault.seconds is not None
            skew(self, info.worker, fault.seconds, where)
        try:
            result = perform()
        except LeaseLostError as refused:
            self.trace.add(
                self.clock.now(), TraceKind.REFUSED, f"{info.op} refused: {refused}",
                data=ReasonData(str(refused)), **where,
            )  # fmt: skip
            if kind == FaultKind.CRASH_AFTER:
                raise WorkerCrashed from refused
            raise
        except InfrastructureError as failed:
            self.trace.add(
                self.clock.now(), TraceKind.ERROR, f"{info.op} failed: {failed}",
                data=ErrorData(str(failed)), **where,
            )  # fmt: skip
            if kind == FaultKind.CRASH_AFTER:
                raise WorkerCrashed from failed
            raise
        if info.op == "claim" and result is not None:
            where.update(execution_id=result.lease.execution_id, token=result.lease.token)
        self.trace.add(
            self.clock.now(), TraceKind.CALL, call_text(info, result, done),
            data=(data or result_data)(result),
            **where,
        )  # fmt: skip
        if kind is None:
            return result
        if kind == FaultKind.CRASH_AFTER:
            raise WorkerCrashed
        if kind == FaultKind.LOSE_RESPONSE:
            self.trace.add(
                self.clock.now(), TraceKind.ERROR, f"the response of {info.op} is lost",
                data=ErrorData(None), **where,
            )  # fmt: skip
            raise ResponseLost(f"the response of {info.label} was lost")
        return result
