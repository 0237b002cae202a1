"""The simulator: workers and the dispatcher as kernel actors, every runtime call a choice point.

Each worker claims due work, drives the same sans-IO driver the engine uses, and performs each
runtime call only after passing a choice point, where the fault plan may crash it, freeze it,
lose the call's response, fail the call or end its child process. Step bodies run between
choice points and act on the simulated world, whose ledger crashes never roll back.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.clock import ManualClock
from yieldstar_sim.core.codec import EncodedValue, durable_value_codec
from yieldstar_sim.core.driver import (
    BodyResult,
    CallStart,
    Command,
    PutStep,
    ReadClock,
    RecordWake,
    RequestCancel,
    RunBody,
    StartChild,
    WaitFor,
    drive,
)
from yieldstar_sim.core.model import (
    ChildAccepted,
    Delivery,
    DeliveryRejectedError,
    ExecutionAdmissionError,
    ExecutionNotFoundError,
    ExecutionRecord,
    ExecutionStateError,
    Failed,
    InfrastructureError,
    InjectedFailure,
    Lease,
    LeaseLostError,
    StartAccepted,
    StartRejected,
    StepTimeoutError,
    WorkflowRunOutcome,
)
from yieldstar_sim.engine.calls import runtime_call
from yieldstar_sim.engine.invoker import Registry, step_delivery
from yieldstar_sim.engine.world import (
    TRIGGERED,
    WORKFLOW_CODE,
    BodyContext,
    BodyWorld,
    Ledger,
    WorldStore,
)
from yieldstar_sim.runtime.factory import RuntimeChoice, open_runtime, resolve_runtime
from yieldstar_sim.simulation.attempts import BodyOp, WorkerClocks, detachable, play_body, skew
from yieldstar_sim.simulation.clients import client_actor, client_requests
from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT, Deadline, RunTimedOut
from yieldstar_sim.simulation.faults import Fault, FaultKind, FaultPlan, PointInfo
from yieldstar_sim.simulation.kernel import Kernel, Park, Point, Wait
from yieldstar_sim.simulation.scenario import Cancel, Prune
from yieldstar_sim.simulation.trace import (
    NO_DATA,
    Admission,
    BodyData,
    CancelData,
    ClaimData,
    EffectData,
    FaultData,
    OutcomeData,
    Payload,
    PutStepData,
    RecordWakeData,
    ReleaseData,
    StartChildData,
    StartData,
    StatusData,
    StoreReadData,
    StoreWriteData,
    Trace,
    TraceEvent,
    TraceKind,
    TriggerData,
    WorldReadData,
)

if TYPE_CHECKING:
    from pathlib import Path

    from yieldstar_sim.core.codec import DurableObject
    from yieldstar_sim.runtime.protocol import Runtime
    from yieldstar_sim.simulation.scenario import Scenario

Actor = Generator[Wait | Park | Point, Any, None]


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


TRACE_VALUE_LIMIT = 4096
"""Bytes of canonical JSON above which a value is kept out of the trace: the trace holds its
digest and size, the runtime's records hold the value."""


_INT_BOUND = 2**63


def _size_bound(value: object, budget: int) -> int | None:
    """An upper bound on the bytes of ``value``'s canonical JSON, or None when it passes
    ``budget`` or holds a type this does not know (then only encoding it can tell).

    Encoding a value to learn that it is small cost about a tenth of a whole memory run;
    most trace values are far below the limit, and a string's canonical form is at most 6
    bytes a character (``\\u00XX``) plus its quotes."""
    kind = type(value)
    if kind is str:
        return 6 * len(value) + 2  # type: ignore[arg-type]
    if value is None or kind is bool or kind is float:
        return 25  # the longest ECMAScript number, ``-1.2345678901234567e-308``
    if kind is int:
        return 25 if -_INT_BOUND < value < _INT_BOUND else None  # type: ignore[operator]
    if kind is dict:
        total = 2
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str:
                return None
            inner = _size_bound(item, budget - total)
            if inner is None:
                return None
            total += 6 * len(key) + 4 + inner
            if total > budget:
                return None
        return total
    if kind is list or kind is tuple:
        total = 2
        for item in value:  # type: ignore[attr-defined]
            inner = _size_bound(item, budget - total)
            if inner is None:
                return None
            total += inner + 1
            if total > budget:
                return None
        return total
    return None


def _large(value: object) -> tuple[str, int] | None:
    """``(digest, size)`` of a value too big for the trace, or ``None`` to keep it there."""
    bound = _size_bound(value, TRACE_VALUE_LIMIT)
    if bound is not None and bound <= TRACE_VALUE_LIMIT:
        return None  # small, durable or not: kept in the trace either way
    encoded = durable_value_codec.encode(value)
    if not isinstance(encoded, EncodedValue):
        return None  # not durable: the runtime refuses it, and says why
    raw = encoded.canonical.encode()
    if len(raw) <= TRACE_VALUE_LIMIT:
        return None
    return "sha256:" + hashlib.sha256(raw).hexdigest(), len(raw)


def _traced(value: object) -> tuple[object, str | None, int | None]:
    """A value as trace data: ``(value, None, None)``, or ``(None, digest, size)`` when it is
    large."""
    large = _large(value)
    if large is None:
        return value, None, None
    return None, *large


def _summary(value: object) -> str:
    large = _large(value)
    if large is not None:
        return f"<{large[1]} bytes, {large[0][:19]}>"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class _SimPort:
    """Carries out a step body's world operations inside the simulation."""

    def __init__(self, simulator: Simulator) -> None:
        self.simulator = simulator
        self.elapsed = 0.0
        self.admitted = False
        self.ops: list[BodyOp] | None = None
        """What the running step body did, to land in time (``attempts.play_body``)."""

    def effect(
        self,
        context: BodyContext,
        name: str,
        data: DurableObject,
        idempotency_key: str | None = None,
    ) -> None:
        if self.ops is not None:
            self.ops.append(lambda: self._land(context, name, data, idempotency_key, 0.0))
        else:
            self._land(context, name, data, idempotency_key, self.elapsed)

    def _land(
        self,
        context: BodyContext,
        name: str,
        data: DurableObject,
        idempotency_key: str | None,
        elapsed: float,
    ) -> None:
        sim = self.simulator
        now = sim.clock.now()
        at = now + elapsed
        token = sim.ledger.record(context, name, data, at=at, idempotency_key=idempotency_key).token
        text = f"effect {name} {_summary(data)}"
        in_workflow_code = context.step_key == WORKFLOW_CODE
        if in_workflow_code:
            text += " in workflow code, outside any step"
        behind = sim.clocks.behind.get(context.worker)
        if behind:
            text += f" ({context.worker}'s clock reads t={sim.clocks.now(context.worker):g})"
        if elapsed > 0:
            # Workflow code that let time pass runs atomically at ``now``; the trace stays in
            # time order, and the moment the effect happened is kept beside it.
            text += f" (at t={at:g}, {elapsed:g}s into the body)"
        details = EffectData(
            name, data, context.attempt, idempotency_key, in_workflow_code,
            at if elapsed > 0 else None,
        )  # fmt: skip
        sim.trace.add(
            now, TraceKind.EFFECT, text, worker=context.worker, execution_id=context.execution_id,
            step_key=context.step_key, token=token, data=details,
        )  # fmt: skip

    def trigger(self, context: BodyContext, workflow_id: str, params: object) -> str:
        execution_id = self.simulator.runtime.trigger(workflow_id, params)
        self.admitted = True
        self.effect(context, TRIGGERED, {"workflow_id": workflow_id, "execution_id": execution_id})
        self.simulator.observe_admission(
            execution_id, "body trigger", (context.execution_id, context.step_key)
        )
        return execution_id

    def elapse(self, context: BodyContext, seconds: float) -> None:
        self.elapsed += seconds
        if self.ops is not None:
            self.ops.append(float(seconds))  # a choice point when the body is played back

    def read(self, context: BodyContext, what: str) -> float:
        sim = self.simulator
        clock = sim.clocks.now(context.worker)  # a skewed worker reads its own clock
        value = sim.world_random.random() if what == "random" else clock + self.elapsed
        if self.ops is not None:
            self.ops.append(lambda: self._traced_read(context, what, value))
        else:
            self._traced_read(context, what, value)
        return value

    def _traced_read(self, context: BodyContext, what: str, value: float) -> None:
        sim = self.simulator
        where = (
            "workflow code, outside any step"
            if context.step_key == WORKFLOW_CODE
            else f"step {context.step_key}"
        )
        call = "random()" if what == "random" else "now()"
        sim.trace.add(
            sim.clock.now(), TraceKind.WORLD, f"{where} read step.world.{call}: {value:.6g}",
            worker=context.worker, execution_id=context.execution_id, step_key=context.step_key,
            token=context.lease.token if context.lease is not None else None,
            data=WorldReadData(what, value, context.step_key == WORKFLOW_CODE),
        )  # fmt: skip

    def get(self, context: BodyContext, key: str, default: object) -> Any:
        sim = self.simulator
        found = key in sim.store.canonical
        value = sim.store.read(key, default)
        shown = _summary(value) if found else f"nothing (default {_summary(default)})"
        sim.trace.add(
            sim.clock.now(), TraceKind.STORE_READ,
            f"step {context.step_key} read {key}: {shown}",
            worker=context.worker, execution_id=context.execution_id, step_key=context.step_key,
            token=context.lease.token if context.lease is not None else None,
            data=StoreReadData(key, sim.store.read(key) if found else None, found,
                               context.attempt),
        )  # fmt: skip
        return value

    def put(self, context: BodyContext, key: str, value: object) -> None:
        sim = self.simulator
        previous = sim.store.read(key)
        sim.store.write(key, value)
        sim.trace.add(
            sim.clock.now(), TraceKind.STORE_WRITE,
            f"step {context.step_key} wrote {key}: {_summary(value)}",
            worker=context.worker, execution_id=context.execution_id, step_key=context.step_key,
            token=context.lease.token if context.lease is not None else None,
            data=StoreWriteData(key, sim.store.read(key), previous, context.attempt),
        )  # fmt: skip


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
        # The world's own random numbers: a stream apart from the scheduler's, so that reading
        # one never changes which worker goes next.
        self.world_random = random.Random(f"world-{seed}")
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
                    stop=lambda: self.deadline.expired,
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
                cancelled = self.runtime.cancel(item.execution_id)
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
                names = ", ".join(w.name for w in item.workflows)
                self.trace.add(self.clock.now(), TraceKind.DEPLOY, f"deploy new code for {names}")
            self.kernel.nudge()

    def _prune(self, execution_id: str) -> None:
        try:
            self.runtime.prune(execution_id)
        except (ExecutionNotFoundError, ExecutionStateError) as refused:
            text = f"prune {execution_id} refused: {refused}"
        else:
            text = f"prune {execution_id}: its steps, wake and start requests are gone"
        self.trace.add(self.clock.now(), TraceKind.PRUNE, text, execution_id=execution_id)

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
                    PointInfo(name, "claim"),
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
        port = _SimPort(self)
        world = BodyWorld(port, name, lease, in_workflow_code=self.scenario.world_in_workflow_code)
        driver = drive(workflow, delivery, world, self.registry().profile)
        code = f"the workflow code of {record.execution_id} ({record.workflow_id}, {name})"
        try:
            outcome = yield from step_delivery(
                driver,
                lambda command: self._perform(name, lease, command, world, port),
                errors=InfrastructureError,
                guard=lambda: self.deadline.user_code(code),
            )
        except InfrastructureError as rejection:
            self.trace.add(
                self.clock.now(), TraceKind.REJECT,
                f"delivery of {record.execution_id} rejected: {rejection}",
                worker=name, execution_id=record.execution_id, token=lease.token,
            )  # fmt: skip
            yield from self._release(name, lease)
            return
        self.trace.add(
            self.clock.now(), TraceKind.OUTCOME, f"{record.execution_id}: {_outcome_text(outcome)}",
            worker=name, execution_id=record.execution_id, token=lease.token,
            data=OutcomeData(outcome.status),
        )  # fmt: skip
        try:
            yield from self._call(
                PointInfo(name, "acknowledge", record.execution_id),
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
                PointInfo(name, "release", lease.execution_id),
                lambda: self.runtime.release(lease, delay=delay),
                token=lease.token,
                data=lambda _: ReleaseData(delay),
            )
        except InfrastructureError:
            return
        self.kernel.nudge()

    def _perform(
        self, name: str, lease: Lease, command: Command, world: BodyWorld, port: _SimPort
    ) -> Generator[Any, Any, Any]:
        runtime = self.runtime
        if isinstance(command, RunBody):
            port.elapsed, port.admitted, port.ops = 0.0, False, []
            try:
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
            self.trace.add(
                self.clock.now(), TraceKind.BODY,
                f"ran step {command.step_key} (attempt {command.attempt}): {_body_text(result)}",
                worker=name, execution_id=command.execution_id, step_key=command.step_key,
                token=lease.token, data=BodyData(command.attempt, port.elapsed),
            )  # fmt: skip
            return result
        if isinstance(command, ReadClock):
            # Durable timers keep true time, skew or not: deliveries take no virtual time, so
            # a timer judged by a clock behind would be redelivered at one instant forever.
            return self.clock.now()
        call = runtime_call(command)
        result = yield from self._call(
            PointInfo(name, call.op, lease.execution_id, call.step_key(command)),
            lambda: call.perform(runtime, command),
            token=lease.token,
            done=_narration(command),
            data=lambda result: _command_data(command, result),
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
        fault: Fault | None = yield Point(info.label, info)
        index = self.kernel.points - 1
        where: dict[str, Any] = {
            "worker": info.worker, "op": info.op, "execution_id": info.execution_id,
            "step_key": info.step_key, "token": token, "point": index,
        }  # fmt: skip
        kind = FaultKind(fault.kind) if fault is not None else None
        if fault is not None:
            self.trace.add(
                self.clock.now(), TraceKind.FAULT, f"{fault.action()} {info.label}",
                data=FaultData(str(kind)), **where,
            )  # fmt: skip
        if kind == FaultKind.FREEZE:
            assert fault is not None
            assert fault.seconds is not None
            self.trace.add(
                self.clock.now(),
                TraceKind.FREEZE,
                f"{info.worker} freezes for {fault.seconds:g}s",
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
            self.trace.add(self.clock.now(), TraceKind.ERROR, f"{info.op} failed: {error}", **where)
            raise error
        elif kind == FaultKind.CHILD_EXIT:
            rejected = DeliveryRejectedError(f"the worker process of {info.worker} exited")
            self.trace.add(
                self.clock.now(), TraceKind.ERROR, f"{info.op} not made: {rejected}", **where
            )
            raise rejected
        elif kind == FaultKind.SKEW:
            assert fault is not None
            assert fault.seconds is not None
            skew(self, info.worker, fault.seconds, where)
        try:
            result = perform()
        except LeaseLostError as refused:
            self.trace.add(
                self.clock.now(), TraceKind.REFUSED, f"{info.op} refused: {refused}", **where
            )
            if kind == FaultKind.CRASH_AFTER:
                raise WorkerCrashed from refused
            raise
        except InfrastructureError as failed:
            self.trace.add(
                self.clock.now(), TraceKind.ERROR, f"{info.op} failed: {failed}", **where
            )
            if kind == FaultKind.CRASH_AFTER:
                raise WorkerCrashed from failed
            raise
        if info.op == "claim" and result is not None:
            where.update(execution_id=result.lease.execution_id, token=result.lease.token)
        self.trace.add(
            self.clock.now(), TraceKind.CALL, _call_text(info, result, done),
            data=(data or _result_data)(result),
            **where,
        )  # fmt: skip
        if kind == FaultKind.CRASH_AFTER:
            raise WorkerCrashed
        if kind == FaultKind.LOSE_RESPONSE:
            self.trace.add(
                self.clock.now(), TraceKind.ERROR, f"the response of {info.op} is lost", **where
            )
            raise ResponseLost(f"the response of {info.label} was lost")
        return result


def _narration(command: Command) -> str | None:
    """What the trace says a runtime call did (None: the result says it)."""
    if isinstance(command, PutStep):
        return f"recorded step {command.step_key}: {command.status} {_summary(command.value)}"
    if isinstance(command, RecordWake):
        return f"wake at t={command.at:g}"
    if isinstance(command, WaitFor):
        return f"waits for {command.execution_id}"
    if isinstance(command, RequestCancel):
        return f"cancel requested for {command.execution_id} and what it owns"
    return None


def _command_data(command: Command, result: Any) -> Payload:
    """A driver command's call event payload: the command's part and the result's."""
    if isinstance(command, PutStep):
        value, digest, size = _traced(command.value)
        return PutStepData(command.status, command.attempt, command.wake_at, value, digest, size)
    if isinstance(command, RecordWake):
        return RecordWakeData(command.at)
    rejected = str(result.code) if isinstance(result, StartRejected) else None
    if isinstance(command, StartChild):
        child = command.request
        accepted = result if isinstance(result, ChildAccepted) else None
        return StartChildData(
            child.workflow_id, child.child_id, child.detached,
            None if accepted is None else accepted.execution_id,
            None if accepted is None else accepted.created, rejected,
        )  # fmt: skip
    if isinstance(command, CallStart):
        request = command.request
        accepted_id = result.execution_id if isinstance(result, StartAccepted) else None
        return StartData(request.workflow_id, request.detached, accepted_id, rejected)
    return _result_data(result)


def _call_text(info: PointInfo, result: Any, done: str | None) -> str:
    if done is not None:
        return f"{info.op}: {done}"
    if info.op == "claim":
        if result is None:
            return "claim: nothing due"
        lease = result.lease
        expires = f"until t={lease.expires_at:g}"
        return f"claim: {lease.execution_id} leased with token {lease.token} {expires}"
    if info.op == "start_child":
        if isinstance(result, ChildAccepted):
            how = "created" if result.created else "joined"
            return (
                f"start_child ({info.execution_id}, {info.step_key}): {how} {result.execution_id}"
            )
        return f"start_child ({info.execution_id}, {info.step_key}): rejected {result.code}"
    if info.op == "start":
        if isinstance(result, StartAccepted):
            return f"start ({info.execution_id}, {info.step_key}): accepted {result.execution_id}"
        return f"start ({info.execution_id}, {info.step_key}): rejected {result.code}"
    if info.op == "acknowledge":
        return f"acknowledge: {result.execution_id} is {result.status}"
    if info.op == "release":
        return "release: lease given up; redelivery after the delay"
    return f"{info.op}: ok"


def _result_data(result: Any) -> Payload:
    """The structured part of a call's result, for invariants and views."""
    if isinstance(result, Delivery):
        return ClaimData(
            result.lease.execution_id, result.lease.expires_at, result.execution.workflow_id
        )
    if isinstance(result, ExecutionRecord):
        return StatusData(str(result.status))
    if isinstance(result, list):  # a cancellation: the executions it reached
        return CancelData(tuple(result))
    return NO_DATA


def _body_text(result: BodyResult) -> str:
    if result.error is None:
        return f"returned {_summary(result.value)}"
    return f"raised {type(result.error).__name__}: {result.error}"


def _outcome_text(outcome: WorkflowRunOutcome) -> str:
    if isinstance(outcome, Failed):
        return f"failed ({outcome.error.name}: {outcome.error.message})"
    if outcome.status == "completed":
        return f"completed with {_summary(getattr(outcome, 'result', None))}"
    return outcome.status
