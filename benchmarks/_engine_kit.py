"""The engine benchmark's workload and instruments (bench_engine reports what they measure).

* the workload: ``ten_steps``, ``STEPS`` trivial ``step.run`` steps, on the four engines
  (``CASES``), each run checked after the clock stops;
* the probe: wraps the runtime methods of one engine (and, on a worker engine, its answer to
  the child) to count and time runtime calls, clock reads and pipe round trips by kind;
* the pipe floor: a bare echo child over a ``multiprocessing`` pipe, and pickling alone.
"""

from __future__ import annotations

import multiprocessing
import pickle
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from multiprocessing.reduction import ForkingPickler
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from _harness import gc_paused

import yieldstar_sim as ys
from yieldstar_sim.core.clock import ManualClock
from yieldstar_sim.core.model import Completed
from yieldstar_sim.engine.calls import RUNTIME_CALLS_BY_OP
from yieldstar_sim.engine.worker import WorkerProcessInvoker

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Sequence
    from multiprocessing.connection import Connection

    from yieldstar_sim.core.authoring import StepRequest, StepRunner
    from yieldstar_sim.core.model import WorkflowRunOutcome
    from yieldstar_sim.engine.dispatcher import DispatchResult
    from yieldstar_sim.engine.invoker import ExecutionEvent

InvokerName: TypeAlias = Literal["in-process", "worker"]
AdapterName: TypeAlias = Literal["memory", "duckdb"]
Case: TypeAlias = tuple[InvokerName, AdapterName]

CASES: tuple[Case, ...] = (
    ("in-process", "memory"),
    ("worker", "memory"),
    ("in-process", "duckdb"),
    ("worker", "duckdb"),
)
ADAPTERS: tuple[AdapterName, ...] = ("memory", "duckdb")
STEPS = 10
"""``step.run`` steps per execution."""
RESULT = sum(range(STEPS))
"""What every execution returns."""
RUNTIME_METHODS = (
    "trigger",
    "start",
    "execution",
    "executions",
    "steps",
    "start_requests",
    "due",
    "next_wake_at",
    "claim",
    "renew",
    "put_step",
    "record_wake",
    "acknowledge",
    "release",
    "prune",
)
"""The runtime methods the probe wraps (``Runtime`` protocol)."""
WIRE_CALLS = frozenset({"clock", *RUNTIME_CALLS_BY_OP})
"""The message kinds of the worker's child that are runtime calls (and clock reads)."""
DRIVER_CALLS = ("put_step", "record_wake", "start")
"""Runtime calls the driver makes (they cross the pipe on a worker engine)."""


# --------------------------------------------------------------------------- the workflow


def echo(k: int) -> int:
    """A trivial step body."""
    return k


@ys.workflow("ten-steps")
def ten_steps(step: StepRunner, params: object) -> Generator[StepRequest, Any, int]:
    """``STEPS`` trivial steps; completes in one delivery."""
    total = 0
    for k in range(STEPS):
        value = yield from step.run(f"step-{k}", echo, k)
        total += int(value)
    return total


def new_engine(case: Case, clock: ManualClock | None = None) -> ys.Engine:
    invoker, adapter = case
    return ys.Engine([ten_steps], runtime=adapter, invoker=invoker, clock=clock)


def check(engine: ys.Engine, results: Sequence[DispatchResult], expected: int) -> None:
    """Refuse a run that did not deliver and acknowledge every execution to completion."""
    good = [
        r
        for r in results
        if r.acknowledged and isinstance(r.outcome, Completed) and r.outcome.result == RESULT
    ]
    if len(results) != expected or len(good) != expected:
        raise RuntimeError(
            f"benchmark run: {len(good)} of {len(results)} deliveries completed and "
            f"acknowledged, expected {expected}: {results[:1]!r}"
        )
    invoker = engine.invoker
    if isinstance(invoker, WorkerProcessInvoker) and invoker.children_started != 1:
        raise RuntimeError(f"benchmark run: {invoker.children_started} child processes started")


def trigger(engine: ys.Engine, n: int) -> float:
    """Admit ``n`` executions; return the mean seconds per trigger."""
    start = time.perf_counter()
    for _ in range(n):
        engine.trigger(ten_steps.name)
    return (time.perf_counter() - start) / n


def timed_run(engine: ys.Engine) -> tuple[float, list[DispatchResult]]:
    """``run_until_idle`` with the garbage collector paused; seconds and results."""
    with gc_paused():
        start = time.perf_counter()
        results = engine.run_until_idle()
        elapsed = time.perf_counter() - start
    return elapsed, results


# --------------------------------------------------------------------------- the probe


class CountingClock(ManualClock):
    """A virtual clock that counts its reads: inside runtime calls, in the invoker's
    ``deliver`` outside runtime calls (the driver's ``ReadClock``, step bodies' world), and
    elsewhere (the dispatcher)."""

    __slots__ = ("depth", "in_deliver", "reads_deliver", "reads_dispatcher", "reads_runtime")

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        """How deep in runtime calls the caller is (the probe keeps it)."""
        self.in_deliver = 0
        """Whether the caller is in the invoker's ``deliver`` (the probe keeps it)."""
        self.reads_runtime = 0
        self.reads_deliver = 0
        self.reads_dispatcher = 0

    def now(self) -> float:
        if self.depth:
            self.reads_runtime += 1
        elif self.in_deliver:
            self.reads_deliver += 1
        else:
            self.reads_dispatcher += 1
        return super().now()


class Probe:
    """Counts and times the runtime calls of one engine, and (worker) its pipe round trips.

    It replaces methods on the engine's own runtime and invoker objects (instance attributes
    shadow the class's methods); nothing in the package changes.
    """

    def __init__(self, engine: ys.Engine, clock: CountingClock) -> None:
        self.clock = clock
        self.calls: Counter[str] = Counter()
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.pipe: Counter[str] = Counter()
        self.samples: dict[str, tuple[tuple[Any, ...], tuple[str, Any]]] = {}
        self.events: list[ExecutionEvent] = []
        self.outcomes: list[WorkflowRunOutcome] = []
        self.deliver_seconds = 0.0
        runtime = engine.runtime
        for name in RUNTIME_METHODS:
            setattr(runtime, name, self._wrap(name, getattr(runtime, name)))
        invoker = engine.invoker
        deliver = invoker.deliver
        clock = self.clock

        def probed_deliver(event: ExecutionEvent) -> WorkflowRunOutcome:
            if not self.events:
                self.events.append(event)
            clock.in_deliver += 1
            start = time.perf_counter()
            try:
                outcome = deliver(event)
            finally:
                self.deliver_seconds += time.perf_counter() - start
                clock.in_deliver -= 1
            if not self.outcomes:
                self.outcomes.append(outcome)
            return outcome

        # setattr: mypy refuses assigning to a method
        setattr(invoker, "deliver", probed_deliver)  # noqa: B010
        # The worker invoker answers each child request in ``_answer``; if a later version
        # renames it, the pipe counts fall back to the driver's calls (see ``pipe_calls``).
        answer = getattr(invoker, "_answer", None)
        if isinstance(invoker, WorkerProcessInvoker) and answer is not None:

            def probed_answer(message: tuple[Any, ...], *rest: Any) -> tuple[str, Any]:
                kind = str(message[0])
                if kind in WIRE_CALLS:  # runtime calls (and clock reads) on the wire
                    kind = f"call {kind}"
                self.pipe[kind] += 1
                reply: tuple[str, Any] = answer(message, *rest)
                if kind not in self.samples:
                    self.samples[kind] = (message, reply)
                return reply

            setattr(invoker, "_answer", probed_answer)  # noqa: B010

    def _wrap(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        clock, calls, seconds = self.clock, self.calls, self.seconds

        def probed(*args: Any, **kwargs: Any) -> Any:
            if clock.depth:  # a runtime call made by a runtime call: not counted apart
                return method(*args, **kwargs)
            clock.depth += 1
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                seconds[name] += time.perf_counter() - start
                calls[name] += 1
                clock.depth -= 1

        return probed

    def reset(self) -> None:
        self.calls.clear()
        self.seconds.clear()
        self.pipe.clear()
        self.deliver_seconds = 0.0
        self.clock.reads_runtime = self.clock.reads_deliver = self.clock.reads_dispatcher = 0


@dataclass
class Probed:
    """What the probe saw on one engine, summed over its repetitions."""

    case: Case
    n: int
    deliveries: int = 0
    calls: Counter[str] = field(default_factory=Counter)
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    pipe: Counter[str] = field(default_factory=Counter)
    reads_runtime: int = 0
    reads_deliver: int = 0
    reads_dispatcher: int = 0
    deliver_seconds: float = 0.0
    per_delivery: list[float] = field(default_factory=list)
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)

    def per(self, count: float) -> float:
        return count / self.deliveries

    @property
    def runtime_calls(self) -> float:
        """Runtime calls per delivery, driver clock reads included."""
        return self.per(self.calls.total() + self.reads_deliver)

    @property
    def pipe_calls(self) -> float:
        """Runtime calls (and driver clock reads) that crossed the pipe per delivery: counted
        on the pipe, or (if the pipe could not be probed) the driver's calls."""
        if self.pipe:
            return self.per(sum(v for k, v in self.pipe.items() if k.startswith("call ")))
        return self.per(sum(self.calls[name] for name in DRIVER_CALLS) + self.reads_deliver)


def pickled(obj: object) -> int:
    """Bytes ``Connection.send`` writes for ``obj`` (without its 4-byte length header)."""
    return len(ForkingPickler.dumps(obj))


def measure_probe(probed: Probed) -> None:
    """One probed repetition: ``engine.dispatch()`` once per execution, all calls counted."""
    clock = CountingClock()
    engine = new_engine(probed.case, clock)
    try:
        probe = Probe(engine, clock)
        engine.trigger(ten_steps.name)
        check(engine, engine.run_until_idle(), 1)
        trigger(engine, probed.n)
        probe.reset()
        results: list[DispatchResult] = []
        with gc_paused():
            start = time.perf_counter()
            for _ in range(probed.n):
                result = engine.dispatch()
                if result is not None:
                    results.append(result)
            elapsed = time.perf_counter() - start
        check(engine, results, probed.n)
    finally:
        engine.close()
    probed.deliveries += probed.n
    probed.calls.update(probe.calls)
    for name, seconds in probe.seconds.items():
        probed.seconds[name] += seconds
    probed.pipe.update(probe.pipe)
    probed.reads_runtime += clock.reads_runtime
    probed.reads_deliver += clock.reads_deliver
    probed.reads_dispatcher += clock.reads_dispatcher
    probed.deliver_seconds += probe.deliver_seconds
    probed.per_delivery.append(elapsed / probed.n)
    if not probed.sizes and probe.events and probe.outcomes:
        probed.sizes["deliver/outcome"] = (
            pickled(("deliver", probe.events[0])),
            pickled(("outcome", probe.outcomes[0])),
        )
        for kind, (message, reply) in probe.samples.items():
            probed.sizes[kind] = (pickled(message), pickled(reply))


# --------------------------------------------------------------------------- the pipe floor


def echo_child(connection: Connection) -> None:
    """Answer every message with ``("ok", None)`` until ``None`` or the pipe closes."""
    while True:
        try:
            message = connection.recv()
        except EOFError:
            return
        if message is None:
            return
        connection.send(("ok", None))


def sample_call() -> tuple[Any, ...]:
    """A runtime call as the worker's child sends it: a plain tuple, without the lease."""
    return ("put", "step-3", "completed", 3, 1, None)


@dataclass
class Floor:
    """Seconds per round trip of the bare pipe, and of pickling alone."""

    minimal: list[float] = field(default_factory=list)
    call: list[float] = field(default_factory=list)
    pickling: list[float] = field(default_factory=list)


def round_trips(connection: Connection, message: object, count: int) -> float:
    with gc_paused():
        start = time.perf_counter()
        for _ in range(count):
            connection.send(message)
            connection.recv()
        return (time.perf_counter() - start) / count


def pickling(message: object, count: int) -> float:
    """Seconds to pickle and unpickle one message and one answer, as a round trip does."""
    dumps, loads, reply = ForkingPickler.dumps, pickle.loads, ("ok", None)
    with gc_paused():
        start = time.perf_counter()
        for _ in range(count):
            loads(dumps(message))
            loads(dumps(reply))
        return (time.perf_counter() - start) / count


def measure_floor(floor: Floor, count: int) -> None:
    """One repetition on a fresh echo child, started like the worker's (fork if available)."""
    methods = multiprocessing.get_all_start_methods()
    context: Any = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    parent, child = context.Pipe()
    process = context.Process(target=echo_child, args=(child,), daemon=True)
    process.start()
    child.close()
    try:
        message = sample_call()
        round_trips(parent, ("ping",), max(10, count // 10))  # warm-up
        floor.minimal.append(round_trips(parent, ("ping",), count))
        floor.call.append(round_trips(parent, message, count))
        floor.pickling.append(pickling(message, count))
        parent.send(None)
    finally:
        parent.close()
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
            process.join()
