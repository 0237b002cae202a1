"""Cost of one engine delivery, in process and in a worker process, on both runtime adapters.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_engine.py            # full run, well under 2 minutes
    .venv/bin/python benchmarks/bench_engine.py --quick    # fewer repetitions, well under 20 s
    .venv/bin/python benchmarks/bench_engine.py --smoke    # every section, tiny (CI)

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

import multiprocessing
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import duckdb
from _engine_kit import (
    ADAPTERS,
    CASES,
    DRIVER_CALLS,
    RUNTIME_METHODS,
    STEPS,
    AdapterName,
    Case,
    Floor,
    InvokerName,
    Probed,
    check,
    measure_floor,
    measure_probe,
    new_engine,
    pickled,
    sample_call,
    ten_steps,
    timed_run,
    trigger,
)
from _harness import TARGETS, footer, header, ms, parser, progress, show, us, verdict
from _harness import sizes as sizes_of

if TYPE_CHECKING:
    from collections.abc import Sequence

MAX_RATIO = 3.0
"""Target: worker cost per runtime call at most this many times the in-process cost."""

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


# --------------------------------------------------------------------------- report


def num(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.2f}"


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
    show(rows, [False, False, True, True, True, True, True, True, True], "  ")
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
    show(rows, [False, True, True, True, True], "  ")
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
    show(rows, [False, False, *([True] * (len(names) + 4))], "  ")
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
    show(rows, [False, False, True, True, True], "  ")
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
    show(rows, [False, False, *([True] * 9)], "  ")
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
    show(rows, [False, True, True], "  ")


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
    show(rows, [True, True, True, True, True, True, False], "  ")
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
    show(rows, [False, True], "  ")
    print(f"\n{TARGETS}")
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
    args_parser = parser(__doc__)
    args_parser.add_argument("--memory-n", type=int, help="deliveries per repetition, memory")
    args_parser.add_argument("--duckdb-n", type=int, help="deliveries per repetition, DuckDB")
    args = args_parser.parse_args(argv)
    smoke = args.smoke
    reps: int = args.reps or (1 if smoke else 3 if args.quick else 7)
    probe_reps = max(1, min(reps, 2 if args.quick else 5))
    sizes: dict[AdapterName, int] = {
        "memory": args.memory_n or (3 if smoke else 100 if args.quick else 400),
        "duckdb": args.duckdb_n or (2 if smoke else 10 if args.quick else 50),
    }
    floor_count = 10 if smoke else 500 if args.quick else 3000
    queue_total = 5 if smoke else 100 if args.quick else 400
    lengths = (2, 5) if smoke else (10, 50) if args.quick else (10, 50, 200)
    queues = [Queue(q, max(1, queue_total // q)) for q in lengths]
    began = header(
        "engine",
        f"duckdb {duckdb.__version__}",
        details=f"{reps} repetitions{sizes_of(args)}",
    )
    print(
        f"workload: '{ten_steps.name}', {STEPS} step.run steps with trivial bodies, completing "
        f"in one delivery; N = {sizes['memory']} (memory), {sizes['duckdb']} (duckdb) "
        "deliveries per repetition\n"
    )
    timings = {case: Timing(case, sizes[case[1]]) for case in CASES}
    probes = {case: Probed(case, sizes[case[1]]) for case in CASES}
    floor = Floor()
    for rep in range(reps):
        progress(f"repetition {rep + 1}/{reps}")
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
    footer(began, f"child processes left: {len(multiprocessing.active_children())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
