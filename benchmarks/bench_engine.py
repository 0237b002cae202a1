"""Cost of one engine delivery, in process and in a worker process, on both runtime adapters.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_engine.py            # full run, well under 2 minutes
    .venv/bin/python benchmarks/bench_engine.py --quick    # smoke test, well under 20 s

The workload is one workflow of ``STEPS`` (10) ``step.run`` steps whose bodies return their
argument: every execution completes in one delivery. It runs on the four engines
``ys.Engine(..., invoker="in-process"|"worker", runtime="memory"|"duckdb")`` (DuckDB in memory).

What it measures:

* **time per delivery**: every repetition builds a fresh engine, delivers one execution as an
  untimed warm-up (this starts the worker's child process), triggers N executions (untimed;
  the mean trigger cost is shown apart), then times ``engine.run_until_idle()``
  (``time.perf_counter``, garbage collector paused in this process) and divides by N. The
  table shows the median over repetitions (7 by default), with the fastest and slowest. The
  four engines run in each repetition, in alternating order. The outcomes are checked
  (completed, acknowledged, one child process per worker engine) after the clock stops.
* **engine construction and child start-up**, outside the timed part: ``Engine(...)`` itself,
  and the warm-up delivery. The child start-up is the worker's warm-up delivery minus the
  in-process warm-up delivery on the same adapter (the child is forked lazily, at the first
  delivery).
* **runtime calls per delivery**, *counted*, not computed: a separate pass wraps every runtime
  method on the engine's runtime object (outermost calls only), gives the engine a clock that
  counts its reads, and calls ``engine.dispatch()`` once per execution, so the ``claim`` that
  finds nothing and the ``next_wake_at`` that end ``run_until_idle`` are not in the counts
  (they add 2 calls per *batch*). On a worker engine it also wraps the invoker's answer to the
  child, which counts the round trips over the pipe by message kind, and prints the pickled
  size of each message kind (``ForkingPickler``, as ``Connection.send`` pickles).
* **cost split**: the same pass times each wrapped runtime call and the invoker's ``deliver``:
  runtime calls (claim, put_step, acknowledge), the rest of ``deliver`` (in process: the
  driver, the step bodies and the codec; worker: the pipe, pickling, and the child's driver
  and bodies) and the dispatcher's own code. The wrappers cost a little; their total is shown
  next to the unwrapped median.
* **pipe floor**: a bare child process that echoes ``("ok", None)`` over a
  ``multiprocessing`` pipe, timed for a minimal message and for a put_step call tuple
  message like the worker's; and the in-process cost of pickling and unpickling one such
  round trip. This is what a runtime call across the pipe costs with no engine around it.
* **queue length**: ``MemoryRuntime.claim`` scans and sorts every live execution, so on the
  memory adapter the time per delivery depends on how many are queued. This section times
  both invokers on the memory adapter with a steady queue of q executions: batches of
  (trigger q, timed ``run_until_idle``, prune the q completed executions).

Per runtime call, on the memory adapter (``c`` = runtime calls per delivery, counted; ``p`` =
runtime calls that cross the pipe per delivery; ``T``, ``W`` = test and worker time per
delivery):

* in-process cost per runtime call ``T / c``; worker cost per runtime call ``W / c``;
* worker overhead per pipe call ``(W - T) / p`` (it includes the one deliver/outcome round
  trip per delivery, spread over the ``p`` calls);
* ratio worker / in-process per runtime call ``(W / c) / (T / c) = W / T``.

Target, reported as PASS/MISS (never asserted):

* the worker-process invoker's cost per runtime call under 3x the in-process invoker's on the
  memory adapter: for the main run (N executions), and again for each steady queue length,
  since the in-process baseline moves with it. Two stricter readings of the main run are
  printed for information (a call that crosses the pipe; against the bare ``put_step``).
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import pickle
import platform
import statistics
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from multiprocessing.reduction import ForkingPickler
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import duckdb
from _harness import ms, table, us, verdict

import yieldstar_sim as ys
from yieldstar_sim.core.clock import ManualClock
from yieldstar_sim.core.model import Completed
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
MAX_RATIO = 3.0
"""Target: worker cost per runtime call at most this many times the in-process cost."""
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
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        results = engine.run_until_idle()
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    return elapsed, results


# --------------------------------------------------------------------------- time per delivery


@dataclass
class Timing:
    """The repetitions of one engine: seconds per delivery and the untimed set-up costs."""

    case: Case
    n: int
    per_delivery: list[float] = field(default_factory=list)
    per_trigger: list[float] = field(default_factory=list)
    construct: list[float] = field(default_factory=list)
    first: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.per_delivery)


def measure_timing(timing: Timing) -> None:
    """One repetition: a fresh engine, a warm-up delivery, then N timed deliveries."""
    start = time.perf_counter()
    engine = new_engine(timing.case)
    try:
        built = time.perf_counter()
        engine.trigger(ten_steps.name)
        warm = engine.run_until_idle()
        warmed = time.perf_counter()
        check(engine, warm, 1)
        timing.per_trigger.append(trigger(engine, timing.n))
        elapsed, results = timed_run(engine)
        check(engine, results, timing.n)
    finally:
        engine.close()
    timing.construct.append(built - start)
    timing.first.append(warmed - built)
    timing.per_delivery.append(elapsed / timing.n)


@dataclass
class Queue:
    """Memory adapter, both invokers: seconds per delivery with a steady queue of ``q``."""

    q: int
    batches: int
    test: list[float] = field(default_factory=list)
    worker: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return statistics.median(self.worker) / statistics.median(self.test)


def measure_queue(queue: Queue, invoker: InvokerName) -> None:
    """One repetition: ``batches`` x (trigger q, timed run_until_idle, prune the q)."""
    engine = new_engine((invoker, "memory"))
    try:
        engine.trigger(ten_steps.name)
        warm = engine.run_until_idle()
        check(engine, warm, 1)
        engine.runtime.prune(warm[0].execution_id)
        elapsed = 0.0
        for _ in range(queue.batches):
            trigger(engine, queue.q)
            seconds, results = timed_run(engine)
            check(engine, results, queue.q)
            elapsed += seconds
            for result in results:
                engine.runtime.prune(result.execution_id)
    finally:
        engine.close()
    times = queue.test if invoker == "in-process" else queue.worker
    times.append(elapsed / (queue.q * queue.batches))


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
                if kind in ("put", "wake", "start", "clock"):  # runtime calls on the wire
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
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            for _ in range(probed.n):
                result = engine.dispatch()
                if result is not None:
                    results.append(result)
            elapsed = time.perf_counter() - start
        finally:
            gc.enable()
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
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(count):
            connection.send(message)
            connection.recv()
        return (time.perf_counter() - start) / count
    finally:
        gc.enable()


def pickling(message: object, count: int) -> float:
    """Seconds to pickle and unpickle one message and one answer, as a round trip does."""
    dumps, loads, reply = ForkingPickler.dumps, pickle.loads, ("ok", None)
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(count):
            loads(dumps(message))
            loads(dumps(reply))
        return (time.perf_counter() - start) / count
    finally:
        gc.enable()


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


# --------------------------------------------------------------------------- report


def num(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.2f}"


def show(rows: Sequence[Sequence[str]], right: Sequence[bool]) -> None:
    print("\n".join(table(rows, right, indent="  ")))


def print_timings(timings: dict[Case, Timing], probes: dict[Case, Probed]) -> None:
    print("Time per delivery (run_until_idle over N triggered executions, warm engine)")
    rows = [
        [
            "invoker",
            "adapter",
            "N",
            "us/delivery",
            "fastest",
            "slowest",
            "calls",
            "us/call",
            "trigger us",
        ]
    ]
    for case, timing in timings.items():
        calls = probes[case].runtime_calls
        rows.append(
            [
                case[0],
                case[1],
                str(timing.n),
                us(timing.median),
                us(min(timing.per_delivery)),
                us(max(timing.per_delivery)),
                num(calls),
                us(timing.median / calls),
                us(statistics.median(timing.per_trigger)),
            ]
        )
    show(rows, [False, False, True, True, True, True, True, True, True])
    reps = len(next(iter(timings.values())).per_delivery)
    print(
        f"\n  us/delivery: median of {reps} repetitions of N deliveries (fastest, slowest: the "
        "extreme\n  repetitions); calls: runtime calls per delivery, counted (below); us/call = "
        "us/delivery / calls;\n  trigger us: admission per execution, not in the delivery time."
    )
    print("\nSet-up, outside the timed part (medians)")
    rows = [["adapter", "engine ms", "first delivery ms", "worker first ms", "child start-up ms"]]
    for adapter in ADAPTERS:
        test, worker = timings[("in-process", adapter)], timings[("worker", adapter)]
        first_test, first_worker = statistics.median(test.first), statistics.median(worker.first)
        rows.append(
            [
                adapter,
                ms(statistics.median(test.construct + worker.construct)),
                ms(first_test),
                ms(first_worker),
                ms(first_worker - first_test),
            ]
        )
    show(rows, [False, True, True, True, True])
    print(
        "\n  engine: Engine(...) (no child yet); first delivery: trigger + run_until_idle of the "
        "warm-up\n  execution, in process; worker first: the same on a worker engine, which "
        "forks the child;\n  child start-up = worker first - first delivery."
    )


def print_counts(probes: dict[Case, Probed]) -> None:
    print("\nRuntime calls per delivery (counted by wrapping the engine's runtime, per dispatch)")
    names = sorted(
        {name for p in probes.values() for name in p.calls},
        key=RUNTIME_METHODS.index,
    )
    rows = [
        [
            "invoker",
            "adapter",
            *names,
            "driver clock reads",
            "total",
            "dispatcher clock reads",
            "runtime clock reads",
        ]
    ]
    for case, probed in probes.items():
        rows.append(
            [
                case[0],
                case[1],
                *(num(probed.per(probed.calls[name])) for name in names),
                num(probed.per(probed.reads_deliver)),
                num(probed.runtime_calls),
                num(probed.per(probed.reads_dispatcher)),
                num(probed.per(probed.reads_runtime)),
            ]
        )
    show(rows, [False, False, *([True] * (len(names) + 4))])
    print(
        "\n  driver clock reads: clock reads in the invoker's deliver outside runtime calls (the "
        "driver's\n  ReadClock, which crosses the pipe on a worker engine; none for this "
        "workflow); total = runtime\n  calls + driver clock reads. Not runtime calls, shown for "
        "completeness: dispatcher clock reads\n  (a ManualClock attribute read in the parent, "
        "same for both invokers) and reads inside runtime\n  calls. run_until_idle adds one "
        "claim that finds nothing and one next_wake_at per batch."
    )
    print("\nPipe round trips per delivery (worker engines; pickled bytes sent / answered)")
    rows = [["adapter", "kind", "per delivery", "bytes sent", "bytes back"]]
    for adapter in ADAPTERS:
        probed = probes[("worker", adapter)]
        kinds = {"deliver/outcome": float(probed.deliveries), **probed.pipe}
        for kind, count in kinds.items():
            sent, back = probed.sizes.get(kind, (0, 0))
            rows.append([adapter, kind, num(probed.per(count)), str(sent), str(back)])
    show(rows, [False, False, True, True, True])
    expected = 1 + STEPS + 1
    print(
        f"\n  From the workflow's shape: 1 claim + {STEPS} put_step + 1 acknowledge = {expected} "
        f"runtime calls, of\n  which the {STEPS} put_step cross the pipe (the dispatcher's claim "
        "and acknowledge run in the\n  parent), plus one deliver/outcome round trip: "
        f"{STEPS + 1} round trips per delivery."
    )
    differs = [
        label
        for (invoker, adapter), probed in probes.items()
        for label, ok in (
            (f"{invoker}/{adapter} calls", probed.runtime_calls == expected),
            (f"{invoker}/{adapter} pipe", invoker == "in-process" or probed.pipe_calls == STEPS),
        )
        if not ok
    ]
    print(
        "  Counted = shape: "
        + (f"DIFFERS ({', '.join(differs)})" if differs else "yes, on all four engines")
    )


def print_split(timings: dict[Case, Timing], probes: dict[Case, Probed]) -> None:
    print("\nCost split per delivery, us (probed pass; runtime calls timed by a wrapper)")
    rows = [
        [
            "invoker",
            "adapter",
            "claim",
            f"put_step x{STEPS}",
            "acknowledge",
            "runtime",
            "deliver rest",
            "dispatcher",
            "total",
            "unwrapped",
            "runtime %",
        ]
    ]
    for case, probed in probes.items():
        total = statistics.median(probed.per_delivery) * probed.deliveries
        total_seconds = sum(probed.per_delivery) * probed.n
        scale = total / total_seconds  # the split's sums, scaled to the median repetition
        runtime = sum(probed.seconds.values())
        inside = sum(probed.seconds[name] for name in DRIVER_CALLS)
        deliver_rest = probed.deliver_seconds - inside
        dispatcher = total_seconds - probed.deliver_seconds - (runtime - inside)
        rows.append(
            [
                case[0],
                case[1],
                us(probed.per(probed.seconds["claim"] * scale)),
                us(probed.per(probed.seconds["put_step"] * scale)),
                us(probed.per(probed.seconds["acknowledge"] * scale)),
                us(probed.per(runtime * scale)),
                us(probed.per(deliver_rest * scale)),
                us(probed.per(dispatcher * scale)),
                us(probed.per(total)),
                us(timings[case].median),
                f"{100 * runtime / total_seconds:.0f}%",
            ]
        )
    show(rows, [False, False, *([True] * 9)])
    print(
        "\n  runtime: all runtime calls; deliver rest: the invoker's deliver minus the runtime "
        "calls made\n  inside it (in process: driver, step bodies, codec; worker: pipe, "
        "pickling, the parent's loop\n  and the child's driver and bodies); dispatcher: the "
        "rest (dispatch loop, events, results).\n  total: median probed repetition (wrappers "
        "included); unwrapped: the timing table's median."
    )


def print_floor(floor: Floor, count: int) -> None:
    print(f"\nPipe floor: a bare echo child, {count} round trips per repetition (medians)")
    call = sample_call()
    rows = [
        ["round trip", "us", "bytes sent"],
        ["minimal ('ping',) -> ('ok', None)", us(statistics.median(floor.minimal)), "-"],
        [
            "('put', key, ...) -> ('ok', None)",
            us(statistics.median(floor.call)),
            str(pickled(call)),
        ],
        [
            "pickle + unpickle of that call and its answer",
            us(statistics.median(floor.pickling)),
            "-",
        ],
    ]
    show(rows, [False, True, True])


def print_queues(queues: Sequence[Queue], main_n: int) -> None:
    print(
        "\nQueue length, memory adapter: a steady queue of q executions (trigger q, "
        "run_until_idle,\nprune the q completed ones; medians)"
    )
    rows = [["q", "deliveries", "test us", "worker us", "(W - T) us", "W / T", f"<{MAX_RATIO:g}x"]]
    for queue in queues:
        test, worker = statistics.median(queue.test), statistics.median(queue.worker)
        rows.append(
            [
                str(queue.q),
                str(queue.q * queue.batches),
                us(test),
                us(worker),
                us(worker - test),
                f"{queue.ratio:.2f}x",
                verdict(queue.ratio < MAX_RATIO),
            ]
        )
    show(rows, [True, True, True, True, True, True, False])
    print(
        "\n  MemoryRuntime.claim scans and sorts every live execution, so the in-process "
        "time per delivery,\n  and with it W / T, depends on how many are queued: the main "
        f"table starts with N = {main_n} queued.\n  Each batch adds one claim that finds "
        "nothing and one next_wake_at (2 / q calls per delivery)."
    )


def print_summary(
    timings: dict[Case, Timing], probes: dict[Case, Probed], floor: Floor, queues: Sequence[Queue]
) -> None:
    test, worker = timings[("in-process", "memory")].median, timings[("worker", "memory")].median
    probed = probes[("worker", "memory")]
    calls, pipe_calls = probed.runtime_calls, probed.pipe_calls
    in_process = test / calls
    overhead = (worker - test) / pipe_calls
    ratio = worker / test
    crossing = (in_process + overhead) / in_process
    probe = probes[("in-process", "memory")]
    bare_put = probe.per(probe.seconds["put_step"])
    bare_put /= STEPS
    crossing_bare = (bare_put + overhead) / bare_put
    floor_call = statistics.median(floor.call)
    print("\nWorker-process overhead per runtime call, memory adapter")
    rows = [
        ["quantity", "value"],
        ["in process, us per delivery (T)", us(test)],
        ["worker, us per delivery (W)", us(worker)],
        ["runtime calls per delivery (c)", num(calls)],
        ["runtime calls crossing the pipe per delivery (p)", num(pipe_calls)],
        ["in process, us per runtime call (T / c)", us(in_process)],
        ["worker, us per runtime call (W / c)", us(worker / calls)],
        ["worker overhead, us per pipe call ((W - T) / p)", us(overhead)],
        ["bare pipe round trip with such a call, us", us(floor_call)],
        ["ratio worker / in process per runtime call (W / T)", f"{ratio:.2f}x"],
    ]
    show(rows, [False, True])
    print("\nTargets (reported, not asserted)")
    n = timings[("in-process", "memory")].n
    print(
        f"  [{verdict(ratio < MAX_RATIO)}] worker-process cost per runtime call under "
        f"{MAX_RATIO:g}x the in-process cost (memory, N = {n}): {ratio:.2f}x"
    )
    for queue in queues:
        print(
            f"  [{verdict(queue.ratio < MAX_RATIO)}] the same with a steady queue of {queue.q}: "
            f"{queue.ratio:.2f}x"
        )
    print(
        f"  (info) stricter readings: a call that crosses the pipe, (T/c + (W-T)/p) / (T/c) = "
        f"{crossing:.2f}x [{verdict(crossing < MAX_RATIO)}];\n"
        f"         against the bare put_step alone ({us(bare_put)} us in process, wrapper "
        f"included): {crossing_bare:.1f}x [{verdict(crossing_bare < MAX_RATIO)}]"
    )


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer iterations (smoke test)")
    parser.add_argument("--reps", type=int, help="repetitions per measurement")
    parser.add_argument("--memory-n", type=int, help="deliveries per repetition, memory")
    parser.add_argument("--duckdb-n", type=int, help="deliveries per repetition, DuckDB")
    args = parser.parse_args(argv)
    reps: int = args.reps or (3 if args.quick else 7)
    probe_reps = max(1, min(reps, 2 if args.quick else 5))
    sizes: dict[AdapterName, int] = {
        "memory": args.memory_n or (100 if args.quick else 400),
        "duckdb": args.duckdb_n or (10 if args.quick else 50),
    }
    floor_count = 500 if args.quick else 3000
    queue_total = 100 if args.quick else 400
    queues = [
        Queue(q, max(1, queue_total // q)) for q in ((10, 50) if args.quick else (10, 50, 200))
    ]
    began = time.perf_counter()
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"yieldstar_sim engine benchmark: python {platform.python_version()}, duckdb "
        f"{duckdb.__version__}, {platform.machine()}, {os.cpu_count()} CPUs (load {load}); {reps} "
        f"repetitions{', quick' if args.quick else ''}\nworkload: '{ten_steps.name}', {STEPS} "
        f"step.run steps with trivial bodies, completing in one delivery; N = "
        f"{sizes['memory']} (memory), {sizes['duckdb']} (duckdb) deliveries per repetition\n"
    )
    timings = {case: Timing(case, sizes[case[1]]) for case in CASES}
    probes = {case: Probed(case, sizes[case[1]]) for case in CASES}
    floor = Floor()
    for rep in range(reps):
        print(f"  repetition {rep + 1}/{reps}", file=sys.stderr, flush=True)
        order = list(CASES) if rep % 2 == 0 else list(reversed(CASES))
        for case in order:
            measure_timing(timings[case])
        if rep < probe_reps:
            for case in order:
                measure_probe(probes[case])
            measure_floor(floor, floor_count)
        for queue in queues:
            for invoker in ("in-process", "worker") if rep % 2 == 0 else ("worker", "in-process"):
                measure_queue(queue, invoker)
    print_timings(timings, probes)
    print_counts(probes)
    print_split(timings, probes)
    print_floor(floor, floor_count)
    print_queues(queues, sizes["memory"])
    print_summary(timings, probes, floor, queues)
    left = multiprocessing.active_children()
    print(f"\n(child processes left: {len(left)}; took {time.perf_counter() - began:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
