"""Per-call cost of the runtime adapters, and the SQL statements the DuckDB adapter issues.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_runtime.py            # full run, about 1-2 minutes
    .venv/bin/python benchmarks/bench_runtime.py --quick    # smoke test, well under 20 s

What it measures, for every runtime call (trigger, start new / repeat / mismatch, claim,
put_step, record_wake, renew, acknowledge, release, execution, steps, due, next_wake_at, prune)
on both adapters (``MemoryRuntime`` and an in-memory ``DuckDBRuntime``):

* **cost**: the median over repetitions (7 by default) of the per-call mean of one timed batch
  of calls (``time.perf_counter``, garbage collector paused). Every repetition sets up a fresh
  runtime through the public API, makes a few untimed warm-up calls, then times the batch. The
  read calls (execution, steps, due, next_wake_at) share one runtime per repetition, populated
  with executions in every state, which they leave unchanged.
* **SQL/call**: for DuckDB, the statements each call issues (``DuckDBRuntime.statements`` delta;
  a BEGIN, COMMIT or ROLLBACK counts as one).
* **bare**: the cost of exactly the statements the adapter issues, with no adapter around
  them: the same SQL text (``duckdb_runtime.QUERIES``) and the same parameter dicts the adapter
  builds, executed and fetched on the runtime's own cursor (``runtime.connection``), on a runtime
  set up identically. Parameters are prepared before the clock starts, so the bare cost is
  DuckDB (parse, plan, execute, fetch) plus the ``duckdb`` binding's Python round trip.
* **ratio**: DuckDB adapter cost / bare cost, the median of the per-repetition ratios (the
  adapter and bare runs of a repetition are timed back to back, in alternating order). It is
  the price of the adapter's Python side: argument checks, the durable-value codec, failure
  points, decoding rows into records.
* **same state**: after the first repetition the adapter's and the bare run's tables are
  compared row for row, proving the bare run did the same writes ("read": both ran on the same
  runtime).

Then two workloads, on each adapter: one *delivery* (claim, 10 put_steps, one start,
record_wake, acknowledge) repeated over many executions, and a *mixed* order workflow
(triggers, starts, claims, steps, renewals, releases, acknowledgements, prunes, and a repeated
start after a lost response). For each: the calls and statements by kind, the average SQL
statements per runtime call, and the mean cost per call (the statement tally comes from one
extra, untimed run; the timed runs include a thin call-counting wrapper, about 0.3 us a call).

Then the *set-up share of a run*: a whole ``ys.simulate`` of the bundled ``durable-start`` on
DuckDB (median wall time), beside the cost of making and closing its runtime, both with the
per-process pool of reset in-memory databases (``duckdb_runtime.POOL``, what runs use) and
without it (the pool emptied before each: a fresh connection and schema, as before the pool).
Set-up / run is the share; the pooled and fresh runs alternate within one repetition.

Then *memory against its previous version*: the memory runtime as it is beside the one at git
revision ``--baseline`` (default ``f8dc05f``, before it kept decoded values; loaded from
``git show`` as a module of its own, on today's shared helpers and codec, so the ratio leaves
out what those gained), alternating, medians: a whole ``ys.simulate`` of bundled scenarios
(batches of 40 runs) and the runtime calls alone (the *delivery* and *mixed* workloads).
``--memory-only`` runs just this section.

Targets, reported as PASS/MISS (never asserted):

* set-up at most 5% of a pooled DuckDB run;
* a memory run at most 0.6x its cost at the baseline;
* at most 1.5 SQL statements per runtime call on average over the workloads;
* every DuckDB call within 1.3x the bare cost of its own statements.
"""

from __future__ import annotations

import argparse
import gc
import math
import platform
import statistics
import subprocess
import sys
import time
import types
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeAlias, TypeVar

import duckdb
from _report import table, us, verdict

import yieldstar_sim as ys
from yieldstar_sim.core.clock import ManualClock
from yieldstar_sim.core.codec import durable_value_codec
from yieldstar_sim.core.model import (
    Completed,
    Delivery,
    Lease,
    RequestId,
    StartAccepted,
    StartRequest,
    Suspended,
)
from yieldstar_sim.runtime.duckdb_runtime import POOL, QUERIES, DuckDBRuntime
from yieldstar_sim.runtime.memory import MemoryRuntime

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from yieldstar_sim.core.codec import DurableObject, DurableValue
    from yieldstar_sim.core.model import StartResult, StepStatus
    from yieldstar_sim.runtime.protocol import Runtime

P = ParamSpec("P")
R = TypeVar("R")

Call: TypeAlias = "Callable[[], object]"
Params: TypeAlias = "dict[str, object] | None"
Statement: TypeAlias = "tuple[str, Params]"
"""One ``cursor.execute(sql, params).fetchall()`` of the bare run."""
BareOp: TypeAlias = "list[Statement]"
"""The statements one adapter call issues, in its order."""

LEASE = 1000.0
"""Lease length: long enough never to expire during a batch (the clock stands still anyway)."""
WARMUP = 5
"""Untimed calls at the start of every batch."""
STEPS_PER_DELIVERY = 10
MAX_STATEMENTS_PER_CALL = 1.5
MAX_RATIO = 1.3
MAX_SETUP_SHARE = 0.05
MAX_MEMORY_RATIO = 0.6
BASELINE = "f8dc05f"
"""The revision whose memory runtime the current one is measured against."""


# --------------------------------------------------------------------------- sample values


def order_params(i: int) -> DurableObject:
    """Start/trigger parameters of a realistic size."""
    return {
        "order": i,
        "customer": f"c-{i % 97}",
        "items": [{"sku": "A-1", "qty": 2}, {"sku": "B-7", "qty": 1}],
        "total": 42.5,
    }


def step_value(i: int) -> DurableValue:
    """A step result of a realistic size."""
    return {"ok": True, "attempt": 1, "ref": f"ref-{i}", "amount": 12.5}


def encode(value: object) -> str:
    """Canonical JSON, as the adapter stores it."""
    return durable_value_codec.encode_or_raise(value)


def step_entry(step_key: str, status: str, value: object, attempt: int, now: float) -> str:
    """One step-log line, exactly as ``DuckDBRuntime.put_step`` appends it."""
    return (
        f'{{"a":{attempt},"k":{encode(step_key)},"s":"{status}",'
        f'"t":{encode(now)},"v":{encode(value)}}}\n'
    )


def fence(lease: Lease, now: float, **extra: object) -> dict[str, object]:
    """The parameters of a fenced write, in the order ``DuckDBRuntime._fenced`` builds them."""
    return {
        **extra,
        "execution_id": lease.execution_id,
        "incarnation": lease.incarnation,
        "owner": lease.owner,
        "token": lease.token,
        "now": now,
    }


def start_params(request: StartRequest, now: float) -> tuple[dict[str, object], dict[str, object]]:
    """The ``start_insert`` and ``start_find`` parameters ``DuckDBRuntime.start`` builds."""
    params = request.params
    insert: dict[str, object] = {
        "workflow_id": request.workflow_id,
        "params": None if params is None else encode(params),
        "caller": request.request_id.execution_id,
        "step_key": request.request_id.step_key,
        "detached": request.detached,
        "now": now,
    }
    find: dict[str, object] = {
        "caller": request.request_id.execution_id,
        "step_key": request.request_id.step_key,
    }
    return insert, find


def q(name: str, params: Params = None) -> Statement:
    """The named query with its parameters."""
    return QUERIES[name], params


def delivered(delivery: Delivery | None) -> Delivery:
    """The delivery of a claim that must succeed."""
    if delivery is None:
        raise RuntimeError("benchmark set-up: a claim found nothing to claim")
    return delivery


def accepted(result: StartResult) -> str:
    """The target of a start that must be accepted."""
    if not isinstance(result, StartAccepted):
        raise RuntimeError(f"benchmark set-up: a start was refused: {result!r}")
    return result.execution_id


# --------------------------------------------------------------------------- set-up helpers


def admit(runtime: Runtime, count: int, prefix: str = "order") -> list[str]:
    """Trigger ``count`` executions with parameters; return their IDs."""
    return [
        runtime.trigger("charge-order", order_params(i), execution_id=f"{prefix}-{i}")
        for i in range(count)
    ]


def claimed(runtime: Runtime, count: int, prefix: str = "order") -> list[Lease]:
    """Admit ``count`` executions and claim each one; return the leases."""
    return [
        delivered(runtime.claim("w1", lease_seconds=LEASE, execution_id=execution_id)).lease
        for execution_id in admit(runtime, count, prefix)
    ]


def record_steps(runtime: Runtime, lease: Lease, count: int) -> None:
    """Record ``count`` completed steps under ``lease``."""
    for k in range(count):
        runtime.put_step(lease, f"step-{k}", status="completed", value=step_value(k))


# --------------------------------------------------------------------------- benches


@dataclass
class Batch:
    """The prepared calls of one batch: on the adapter, and the same work as bare SQL."""

    calls: list[Call]
    bare: list[BareOp]


Prepare: TypeAlias = "Callable[[Runtime, int], Batch]"


def prepare_trigger(runtime: Runtime, n: int) -> Batch:
    now = runtime.clock.now()
    ids = [f"order-{i}" for i in range(n)]
    params = [order_params(i) for i in range(n)]
    return Batch(
        [
            partial(runtime.trigger, "charge-order", p, execution_id=e)
            for e, p in zip(ids, params, strict=True)
        ],
        [
            [
                q(
                    "trigger",
                    {
                        "execution_id": e,
                        "workflow_id": "charge-order",
                        "params": encode(p),
                        "now": now,
                    },
                )
            ]
            for e, p in zip(ids, params, strict=True)
        ],
    )


def _requests(caller: str, n: int, *, shift: int = 0) -> list[StartRequest]:
    return [
        StartRequest(RequestId(caller, f"ship-{i}"), "ship-order", order_params(i + shift))
        for i in range(n)
    ]


def prepare_start_new(runtime: Runtime, n: int) -> Batch:
    now = runtime.clock.now()
    (caller,) = admit(runtime, 1)
    requests = _requests(caller, n)
    return Batch(
        [partial(runtime.start, r) for r in requests],
        [[q("start_insert", start_params(r, now)[0]), q("commit")] for r in requests],
    )


def _prepare_start_again(runtime: Runtime, n: int, *, shift: int) -> Batch:
    now = runtime.clock.now()
    (caller,) = admit(runtime, 1)
    for request in _requests(caller, n):
        accepted(runtime.start(request))
    again = _requests(caller, n, shift=shift)
    bare: list[BareOp] = []
    for request in again:
        insert, find = start_params(request, now)
        bare.append([q("start_insert", insert), q("start_find", find)])
    return Batch([partial(runtime.start, r) for r in again], bare)


def prepare_start_repeat(runtime: Runtime, n: int) -> Batch:
    return _prepare_start_again(runtime, n, shift=0)


def prepare_start_mismatch(runtime: Runtime, n: int) -> Batch:
    return _prepare_start_again(runtime, n, shift=1)


def _claims(runtime: Runtime, n: int) -> Batch:
    now = runtime.clock.now()
    params = {"owner": "w1", "expires_at": now + LEASE, "execution_id": None, "now": now}
    return Batch(
        [partial(runtime.claim, "w1", lease_seconds=LEASE) for _ in range(n)],
        [[q("claim", dict(params))] for _ in range(n)],
    )


def prepare_claim(runtime: Runtime, n: int) -> Batch:
    admit(runtime, n)
    return _claims(runtime, n)


def prepare_claim_with_steps(runtime: Runtime, n: int) -> Batch:
    for lease in claimed(runtime, n):
        record_steps(runtime, lease, STEPS_PER_DELIVERY)
        runtime.release(lease, delay=0.0)
    return _claims(runtime, n)


def _delivery_leases(runtime: Runtime, n: int) -> list[Lease]:
    """One lease per ``STEPS_PER_DELIVERY`` calls, cycled through as a delivery would."""
    leases = claimed(runtime, math.ceil(n / STEPS_PER_DELIVERY))
    return [leases[i // STEPS_PER_DELIVERY] for i in range(n)]


def prepare_put_step(runtime: Runtime, n: int) -> Batch:
    now = runtime.clock.now()
    leases = _delivery_leases(runtime, n)
    keys = [f"step-{i % STEPS_PER_DELIVERY}" for i in range(n)]
    status: StepStatus = "completed"
    return Batch(
        [
            partial(runtime.put_step, lease, key, status=status, value=step_value(i))
            for i, (lease, key) in enumerate(zip(leases, keys, strict=True))
        ],
        [
            [
                q(
                    "put_step",
                    fence(
                        lease,
                        now,
                        entry=step_entry(key, status, step_value(i), 1, now),
                        wake_at=None,
                    ),
                )
            ]
            for i, (lease, key) in enumerate(zip(leases, keys, strict=True))
        ],
    )


def prepare_record_wake(runtime: Runtime, n: int) -> Batch:
    now = runtime.clock.now()
    leases = _delivery_leases(runtime, n)
    wakes = [100.0 + n - i for i in range(n)]  # each one earlier: every call moves the wake
    return Batch(
        [partial(runtime.record_wake, lease, at) for lease, at in zip(leases, wakes, strict=True)],
        [
            [q("record_wake", fence(lease, now, at=at))]
            for lease, at in zip(leases, wakes, strict=True)
        ],
    )


def prepare_renew(runtime: Runtime, n: int) -> Batch:
    now = runtime.clock.now()
    leases = _delivery_leases(runtime, n)
    return Batch(
        [partial(runtime.renew, lease, lease_seconds=LEASE) for lease in leases],
        [[q("renew", fence(lease, now, expires_at=now + LEASE))] for lease in leases],
    )


def _result(i: int) -> DurableValue:
    return {"courier": f"c-{i % 7}", "eta": 12.5, "parcels": [1, 2]}


def prepare_acknowledge(runtime: Runtime, n: int) -> Batch:
    now = runtime.clock.now()
    leases = claimed(runtime, n)
    return Batch(
        [
            partial(runtime.acknowledge, lease, Completed(_result(i)))
            for i, lease in enumerate(leases)
        ],
        [
            [
                # A terminal outcome: one statement updates it and wakes its waiters.
                q(
                    "acknowledge_terminal",
                    fence(lease, now, status="completed", result=encode(_result(i)), error=None),
                ),
            ]
            for i, lease in enumerate(leases)
        ],
    )


def prepare_release(runtime: Runtime, n: int) -> Batch:
    now = runtime.clock.now()
    leases = claimed(runtime, n)
    return Batch(
        [partial(runtime.release, lease, delay=5.0) for lease in leases],
        [[q("release", fence(lease, now, due_at=now + 5.0))] for lease in leases],
    )


def prepare_prune(runtime: Runtime, n: int) -> Batch:
    leases = claimed(runtime, n)
    for i, lease in enumerate(leases):
        runtime.acknowledge(lease, Completed(_result(i)))
    ids = [lease.execution_id for lease in leases]
    return Batch(
        [partial(runtime.prune, execution_id) for execution_id in ids],
        [[q("prune", {"execution_id": execution_id})] for execution_id in ids],
    )


POPULATION = 10
"""Executions in each state of the population the read calls run against."""


def populate(runtime: Runtime) -> None:
    """Add executions in every state that the read calls run against.

    ``POPULATION`` of each: in flight (leased, ``STEPS_PER_DELIVERY`` steps, IDs ``busy-<i>``),
    suspended with a future wake (3 steps), due now, and completed.
    """
    for lease in claimed(runtime, POPULATION, "busy"):
        record_steps(runtime, lease, STEPS_PER_DELIVERY)
    for lease in claimed(runtime, POPULATION, "waiting"):
        record_steps(runtime, lease, 3)
        runtime.record_wake(lease, 100.0)
        runtime.acknowledge(lease, Suspended())
    admit(runtime, POPULATION, "due")
    for i, lease in enumerate(claimed(runtime, POPULATION, "done")):
        runtime.acknowledge(lease, Completed(_result(i)))


def prepare_execution(runtime: Runtime, n: int) -> Batch:
    every = [record.execution_id for record in runtime.executions()]
    ids = [every[i % len(every)] for i in range(n)]
    return Batch(
        [partial(runtime.execution, e) for e in ids],
        [[q("execution", {"execution_id": e})] for e in ids],
    )


def prepare_steps(runtime: Runtime, n: int) -> Batch:
    with_steps = [f"busy-{i}" for i in range(POPULATION)]
    ids = [with_steps[i % len(with_steps)] for i in range(n)]
    return Batch(
        [partial(runtime.steps, e) for e in ids],
        [[q("step_log", {"execution_id": e})] for e in ids],
    )


def prepare_due(runtime: Runtime, n: int) -> Batch:
    now = runtime.clock.now()
    return Batch([runtime.due] * n, [[q("due", {"now": now})] for _ in range(n)])


def prepare_next_wake_at(runtime: Runtime, n: int) -> Batch:
    return Batch([runtime.next_wake_at] * n, [[q("next_wake_at")] for _ in range(n)])


@dataclass(frozen=True)
class Bench:
    """One runtime call to measure."""

    name: str
    prepare: Prepare
    scale: float = 1.0
    """Fraction of the batch size to use (for set-ups that cost many calls per call timed)."""
    note: str = ""
    read: bool = False
    """A read: runs on the shared population (see ``populate``), which it leaves unchanged."""


BENCHES: tuple[Bench, ...] = (
    Bench("trigger", prepare_trigger, note="caller-chosen ID, 4-key params"),
    Bench("start new", prepare_start_new, note="BEGIN+INSERT, COMMIT"),
    Bench("start repeat", prepare_start_repeat, note="same request again"),
    Bench("start mismatch", prepare_start_mismatch, note="same request ID, other params"),
    Bench("claim", prepare_claim, note="first delivery, empty step log"),
    Bench("claim (10 steps)", prepare_claim_with_steps, 0.5, "redelivery with 10 steps"),
    Bench("put_step", prepare_put_step, note="10 steps per lease"),
    Bench("record_wake", prepare_record_wake),
    Bench("renew", prepare_renew),
    Bench("acknowledge", prepare_acknowledge, note="Completed, returns the record"),
    Bench("release", prepare_release),
    Bench("execution", prepare_execution, note="40 executions, all states", read=True),
    Bench("steps", prepare_steps, note="10 steps each", read=True),
    Bench("due", prepare_due, note="10 of 40 due", read=True),
    Bench("next_wake_at", prepare_next_wake_at, note="40 executions", read=True),
    Bench("prune", prepare_prune),
)


# --------------------------------------------------------------------------- timing


def new_memory() -> Runtime:
    return MemoryRuntime(clock=ManualClock())


def new_duckdb() -> DuckDBRuntime:
    return DuckDBRuntime(clock=ManualClock())


def statements(runtime: Runtime) -> int:
    """SQL statements the runtime has issued (0 for an adapter without SQL)."""
    return int(getattr(runtime, "statements", 0))


def time_calls(calls: Sequence[Call]) -> float:
    """Seconds per call of running ``calls`` in order, garbage collector paused."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for call in calls:
            call()
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    return elapsed / len(calls)


def run_statements(cursor: duckdb.DuckDBPyConnection, op: BareOp) -> None:
    """Execute and fetch the statements of one bare op."""
    for sql, params in op:
        cursor.execute(sql, params).fetchall()


def snapshot(runtime: DuckDBRuntime) -> list[tuple[object, ...]]:
    """Every row of the runtime's table, for comparing two runs."""
    return runtime.sql("SELECT * FROM executions ORDER BY seq")


@dataclass
class Trial:
    """One timed batch."""

    seconds_per_call: float
    statements_per_call: float


def time_adapter(runtime: Runtime, batch: Batch) -> Trial:
    """Time the batch's adapter calls after its warm-up calls."""
    for call in batch.calls[:WARMUP]:
        call()
    before = statements(runtime)
    calls = batch.calls[WARMUP:]
    seconds = time_calls(calls)
    return Trial(seconds, (statements(runtime) - before) / len(calls))


def time_bare(runtime: DuckDBRuntime, batch: Batch) -> Trial:
    """Time the batch's statements run directly on the runtime's cursor, after warm-up."""
    cursor = runtime.connection
    ops = [partial(run_statements, cursor, op) for op in batch.bare]
    for op in ops[:WARMUP]:
        op()
    timed = ops[WARMUP:]
    seconds = time_calls(timed)
    return Trial(seconds, sum(len(op) for op in batch.bare[WARMUP:]) / len(timed))


@dataclass
class Result:
    """Every repetition of one bench."""

    bench: Bench
    n: int
    memory: list[float] = field(default_factory=list)
    duckdb: list[float] = field(default_factory=list)
    bare: list[float] = field(default_factory=list)
    statements: set[float] = field(default_factory=set)
    same_state: bool | None = None

    @property
    def ratios(self) -> list[float]:
        return [a / b for a, b in zip(self.duckdb, self.bare, strict=True)]

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    def add(self, memory: Trial, adapter: Trial, bare: Trial) -> None:
        self.memory.append(memory.seconds_per_call)
        self.duckdb.append(adapter.seconds_per_call)
        self.bare.append(bare.seconds_per_call)
        self.statements.add(adapter.statements_per_call)


def measure_write(result: Result, rep: int) -> None:
    """One repetition of a writing call: memory, then the DuckDB adapter and the bare
    statements, each on a fresh, identically set-up runtime, in alternating order."""
    bench, n = result.bench, result.n
    memory = new_memory()
    memory_trial = time_adapter(memory, bench.prepare(memory, n + WARMUP))
    runs: dict[str, tuple[Trial, list[tuple[object, ...]]]] = {}
    for which in ("adapter", "bare") if rep % 2 == 0 else ("bare", "adapter"):
        runtime = new_duckdb()
        try:
            batch = bench.prepare(runtime, n + WARMUP)
            trial = (
                time_adapter(runtime, batch) if which == "adapter" else time_bare(runtime, batch)
            )
            runs[which] = trial, snapshot(runtime) if rep == 0 else []
        finally:
            runtime.close()
    result.add(memory_trial, runs["adapter"][0], runs["bare"][0])
    if rep == 0:
        result.same_state = runs["adapter"][1] == runs["bare"][1]


def measure_reads(results: Sequence[Result], rep: int) -> None:
    """One repetition of every read call, on one populated runtime per adapter.

    Reads leave the population unchanged, so the adapter and the bare statements of a call
    run on the same runtime, in alternating order.
    """
    memory = new_memory()
    populate(memory)
    runtime = new_duckdb()
    populate(runtime)
    try:
        for result in results:
            bench, n = result.bench, result.n
            memory_trial = time_adapter(memory, bench.prepare(memory, n + WARMUP))
            batch = bench.prepare(runtime, n + WARMUP)
            if rep % 2 == 0:
                adapter = time_adapter(runtime, batch)
                bare = time_bare(runtime, batch)
            else:
                bare = time_bare(runtime, batch)
                adapter = time_adapter(runtime, batch)
            result.add(memory_trial, adapter, bare)
    finally:
        runtime.close()


# --------------------------------------------------------------------------- workloads


class Recorder:
    """Calls runtime methods, counting calls (and, if ``tally``, statements by kind)."""

    def __init__(self, runtime: Runtime, *, tally: bool) -> None:
        self.runtime = runtime
        self.tally = tally
        self.calls = 0
        self.kinds: dict[str, list[int]] = {}

    def __call__(self, kind: str, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        self.calls += 1
        if not self.tally:
            return fn(*args, **kwargs)
        before = statements(self.runtime)
        result = fn(*args, **kwargs)
        counts = self.kinds.setdefault(kind, [0, 0])
        counts[0] += 1
        counts[1] += statements(self.runtime) - before
        return result


def delivery_setup(runtime: Runtime, rounds: int) -> list[str]:
    return admit(runtime, rounds)


def delivery_run(runtime: Runtime, do: Recorder, callers: list[str]) -> None:
    """Per caller: claim, 10 put_steps, one start, record_wake, acknowledge (Suspended)."""
    for i, caller in enumerate(callers):
        lease = delivered(do("claim", runtime.claim, "w1", lease_seconds=LEASE)).lease
        for k in range(STEPS_PER_DELIVERY):
            do("put_step", runtime.put_step, lease, f"step-{k}", status="completed", value=k)
        request = StartRequest(RequestId(caller, "ship"), "ship-order", {"order": i})
        accepted(do("start (new)", runtime.start, request))
        do("record_wake", runtime.record_wake, lease, 60.0)
        do("acknowledge", runtime.acknowledge, lease, Suspended())


def mixed_setup(runtime: Runtime, rounds: int) -> list[str]:
    return [f"o-{i}" for i in range(rounds)]


def mixed_run(runtime: Runtime, do: Recorder, orders: list[str]) -> None:
    """An order workflow that starts a shipment child, per order.

    Parent: trigger; delivery 1 (claim, 3 steps, start the child, a pending step with a wake,
    acknowledge Suspended). Child: every 5th first delivery is released (a transient failure);
    then claim, a step, renew, a step, acknowledge Completed. Parent: delivery 2 (claim; every
    4th repeats its start, as after a lost start response; a step; acknowledge Completed).
    Finally both are pruned.
    """
    now = runtime.clock.now()
    for i, order_id in enumerate(orders):
        order = do(
            "trigger", runtime.trigger, "charge-order", order_params(i), execution_id=order_id
        )
        first = delivered(do("claim", runtime.claim, "w1", lease_seconds=LEASE, execution_id=order))
        for key in ("validate", "reserve", "charge"):
            do("put_step", runtime.put_step, first.lease, key, status="completed", value=i)
        request = StartRequest(RequestId(order, "ship"), "ship-order", {"order": i})
        child = accepted(do("start (new)", runtime.start, request))
        ship: DurableValue = {"executionId": child}
        do(
            "put_step",
            runtime.put_step,
            first.lease,
            "ship",
            status="pending",
            value=ship,
            wake_at=now,
        )
        do("acknowledge", runtime.acknowledge, first.lease, Suspended())
        if i % 5 == 0:
            failed = delivered(do("claim", runtime.claim, "w2", lease_seconds=LEASE))
            do("release", runtime.release, failed.lease, delay=0.0)
        work = delivered(do("claim", runtime.claim, "w2", lease_seconds=LEASE, execution_id=child))
        do("put_step", runtime.put_step, work.lease, "pack", status="completed", value=i)
        lease = do("renew", runtime.renew, work.lease, lease_seconds=LEASE)
        do("put_step", runtime.put_step, lease, "label", status="completed", value=f"T-{i}")
        do("acknowledge", runtime.acknowledge, lease, Completed({"tracking": f"T-{i}"}))
        again = delivered(do("claim", runtime.claim, "w1", lease_seconds=LEASE, execution_id=order))
        if i % 4 == 0:
            accepted(do("start (repeat)", runtime.start, request))
        do("put_step", runtime.put_step, again.lease, "ship", status="completed", value=ship)
        do("acknowledge", runtime.acknowledge, again.lease, Completed({"shipped": child}))
        do("prune", runtime.prune, child)
        do("prune", runtime.prune, order)


@dataclass(frozen=True)
class Workload:
    """A sequence of runtime calls a worker fleet would make."""

    name: str
    description: str
    setup: Callable[[Runtime, int], list[str]]
    run: Callable[[Runtime, Recorder, list[str]], None]


WORKLOADS: tuple[Workload, ...] = (
    Workload(
        "delivery",
        "per execution: claim, 10 put_step, start, record_wake, acknowledge",
        delivery_setup,
        delivery_run,
    ),
    Workload(
        "mixed",
        "per order: trigger, 2 parent deliveries, a child with renew, releases, a repeated "
        "start every 4th, prunes",
        mixed_setup,
        mixed_run,
    ),
)


def run_workload(
    make: Callable[[], Runtime], workload: Workload, rounds: int, *, tally: bool
) -> tuple[float, Recorder]:
    """Run a workload on a fresh runtime; return seconds per runtime call and the recorder."""
    runtime = make()
    try:
        state = workload.setup(runtime, rounds)
        recorder = Recorder(runtime, tally=tally)
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            workload.run(runtime, recorder, state)
            elapsed = time.perf_counter() - start
        finally:
            gc.enable()
        return elapsed / recorder.calls, recorder
    finally:
        runtime.close()


@dataclass
class WorkloadResult:
    """Every repetition of one workload."""

    workload: Workload
    rounds: int
    memory: list[float] = field(default_factory=list)
    duckdb: list[float] = field(default_factory=list)
    kinds: dict[str, list[int]] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return sum(calls for calls, _ in self.kinds.values())

    @property
    def statements(self) -> int:
        return sum(count for _, count in self.kinds.values())

    @property
    def per_call(self) -> float:
        return self.statements / self.calls


def measure_workload(workload: Workload, rounds: int, reps: int) -> WorkloadResult:
    result = WorkloadResult(workload, rounds)
    _, counted = run_workload(new_duckdb, workload, rounds, tally=True)
    result.kinds = counted.kinds
    for _ in range(reps):
        result.memory.append(run_workload(new_memory, workload, rounds, tally=False)[0])
        result.duckdb.append(run_workload(new_duckdb, workload, rounds, tally=False)[0])
    return result


# --------------------------------------------------------------------------- report


def count_text(values: set[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:g}" if low == high else f"{low:g}-{high:g}"


def print_calls(results: Sequence[Result]) -> None:
    header = [
        "call",
        "memory us",
        "duckdb us",
        "bare us",
        "overhead us",
        "ratio",
        "SQL/call",
        "same state",
        f"<={MAX_RATIO}x",
        "set-up",
    ]
    rows = [header]
    for result in results:
        duck = statistics.median(result.duckdb)
        bare = statistics.median(result.bare)
        rows.append(
            [
                result.bench.name,
                us(statistics.median(result.memory)),
                us(duck),
                us(bare),
                us(duck - bare),
                f"{result.ratio:.2f}",
                count_text(result.statements),
                "read"
                if result.bench.read
                else {None: "-", True: "yes", False: "DIFFERS"}[result.same_state],
                verdict(result.ratio <= MAX_RATIO),
                result.bench.note,
            ]
        )
    right = [False, True, True, True, True, True, True, False, False, False]
    print("\n".join(table(rows, right)))
    print(
        "\n  us: median over repetitions of the per-call mean of a batch; ratio: median of the\n"
        "  per-repetition duckdb/bare ratios; overhead = duckdb - bare (medians); SQL/call: "
        "statements\n  per call (runtime.statements delta); same state: the bare run left "
        "the table exactly as\n  the adapter did."
    )


def print_workload(result: WorkloadResult) -> None:
    workload = result.workload
    print(f"\nworkload '{workload.name}' ({result.rounds} rounds; {workload.description})")
    rows = [["call", "calls", "statements", "SQL/call"]]
    rows += [
        [kind, str(calls), str(count), f"{count / calls:.2f}"]
        for kind, (calls, count) in result.kinds.items()
    ]
    rows.append(["total", str(result.calls), str(result.statements), f"{result.per_call:.2f}"])
    print("\n".join("  " + line for line in table(rows, [False, True, True, True])))
    print(
        f"  cost per runtime call (median of {len(result.duckdb)}): "
        f"memory {us(statistics.median(result.memory))} us, "
        f"duckdb {us(statistics.median(result.duckdb))} us"
    )


def print_summary(results: Sequence[Result], workloads: Sequence[WorkloadResult]) -> None:
    print("\nTargets (reported, not asserted)")
    for workload in workloads:
        ok = workload.per_call <= MAX_STATEMENTS_PER_CALL
        print(
            f"  [{verdict(ok)}] SQL statements per runtime call, {workload.workload.name} "
            f"workload: {workload.per_call:.2f} (target <= {MAX_STATEMENTS_PER_CALL})"
        )
    misses = [r for r in results if r.ratio > MAX_RATIO]
    passed = len(results) - len(misses)
    print(
        f"  [{verdict(not misses)}] DuckDB call cost within {MAX_RATIO}x of its bare statements: "
        f"{passed} of {len(results)} calls"
    )
    for result in sorted(misses, key=lambda r: -r.ratio):
        extra = statistics.median(result.duckdb) - statistics.median(result.bare)
        print(f"         MISS {result.bench.name}: {result.ratio:.2f}x (+{us(extra)} us per call)")
    differing = [r.bench.name for r in results if r.same_state is False]
    if differing:
        print(
            f"  [WARN] the bare run did not replicate the adapter's writes: {', '.join(differing)}"
        )


# --------------------------------------------------------------------------- set-up share


@dataclass
class SetupShare:
    """Run and set-up medians (seconds) of ``durable-start`` on DuckDB, pooled and fresh."""

    run: dict[str, float]
    setup: dict[str, float]

    def share(self, mode: str) -> float:
        """Set-up as a fraction of a run."""
        return self.setup[mode] / self.run[mode]


def _timed(fn: Callable[[], object]) -> float:
    gc.disable()
    try:
        began = time.perf_counter()
        fn()
        return time.perf_counter() - began
    finally:
        gc.enable()


def _make_and_close() -> None:
    DuckDBRuntime(clock=ManualClock()).close()


def _simulate(scenario: ys.Scenario) -> None:
    ys.simulate(scenario, 0, runtime="duckdb").runtime.close()


def measure_setup_share(reps: int) -> SetupShare:
    """Alternate pooled and fresh (pool emptied first) runs and set-ups, ``reps`` times each."""
    scenario = ys.load_scenario("durable-start")
    _simulate(scenario)  # warm imports and the pool
    runs: dict[str, list[float]] = {"pooled": [], "fresh": []}
    setups: dict[str, list[float]] = {"pooled": [], "fresh": []}
    for _ in range(reps):
        for mode in ("pooled", "fresh"):
            if mode == "fresh":
                POOL.clear()
            runs[mode].append(_timed(partial(_simulate, scenario)))
            if mode == "fresh":
                POOL.clear()
            setups[mode].append(_timed(_make_and_close))
    return SetupShare(
        {mode: statistics.median(times) for mode, times in runs.items()},
        {mode: statistics.median(times) for mode, times in setups.items()},
    )


def print_setup_share(result: SetupShare) -> None:
    """The set-up share table and its target."""
    print("\nSet-up share of a DuckDB run (durable-start, seed 0; medians, ms)\n")
    rows = [["database", "run", "set-up", "share"]]
    rows.extend(
        [
            mode,
            f"{result.run[mode] * 1e3:.1f}",
            f"{result.setup[mode] * 1e3:.2f}",
            f"{result.share(mode):.1%}",
        ]
        for mode in ("fresh", "pooled")
    )
    print("\n".join(table(rows, [False, True, True, True], "  ")))
    print(
        f"\n  pooled run / fresh run: {result.run['pooled'] / result.run['fresh']:.2f}x; "
        f"set-up <= {MAX_SETUP_SHARE:.0%} of a pooled run: "
        f"{verdict(result.share('pooled') <= MAX_SETUP_SHARE)}"
    )


# --------------------------------------------------------------------------- memory vs baseline


def baseline_memory(revision: str) -> type[MemoryRuntime] | None:
    """``MemoryRuntime`` as it was at ``revision`` (``git show``), or None without git."""
    root = Path(__file__).resolve().parent.parent
    try:
        source = subprocess.run(
            ["git", "show", f"{revision}:yieldstar_sim/runtime/memory.py"],
            cwd=root, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType("_memory_baseline")
    module.__file__ = f"<memory.py at {revision}>"
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    runtime: type[MemoryRuntime] = module.MemoryRuntime
    return runtime


MEMORY_SCENARIOS = ("durable-start", "cancel-owner", "retry-backoff")


def measure_memory_versions(
    baseline: type[MemoryRuntime], reps: int, rounds: int
) -> dict[str, dict[str, float]]:
    """Median seconds per run (scenarios) and per call (workloads), now and at the baseline."""
    makers: dict[str, Callable[..., Runtime]] = {"now": MemoryRuntime, "baseline": baseline}
    times: dict[str, dict[str, list[float]]] = {}
    scenarios = {name: ys.load_scenario(name) for name in MEMORY_SCENARIOS}
    batch = 40
    for rep in range(reps):
        order = ("now", "baseline") if rep % 2 == 0 else ("baseline", "now")
        for name, scenario in scenarios.items():
            for version in order:
                make = makers[version]
                gc.collect()
                start = time.perf_counter()
                for _ in range(batch):
                    ys.simulate(scenario, 0, runtime=make, timeout=None).runtime.close()
                seconds = (time.perf_counter() - start) / batch
                times.setdefault(f"run {name}", {}).setdefault(version, []).append(seconds)
        for workload in WORKLOADS:
            for version in order:
                make = makers[version]
                seconds, _ = run_workload(make, workload, rounds, tally=False)
                times.setdefault(f"calls {workload.name}", {}).setdefault(version, []).append(
                    seconds
                )
    return {
        what: {version: statistics.median(values) for version, values in by.items()}
        for what, by in times.items()
    }


def print_memory_versions(results: dict[str, dict[str, float]], revision: str) -> bool:
    """The table and its target (every whole run at most MAX_MEMORY_RATIO of the baseline)."""
    print(f"\nThe memory runtime now against it at {revision} (medians; us per run or call)\n")
    rows = [["measure", f"at {revision}", "now", "now / then"]]
    rows.extend(
        [what, us(by["baseline"]), us(by["now"]), f"{by['now'] / by['baseline']:.2f}x"]
        for what, by in results.items()
    )
    print("\n".join(table(rows, [False, True, True, True], "  ")))
    runs = [by["now"] / by["baseline"] for what, by in results.items() if what.startswith("run")]
    ok = all(ratio <= MAX_MEMORY_RATIO for ratio in runs)
    print(
        f"\n  a memory run at most {MAX_MEMORY_RATIO}x its cost at {revision}: "
        f"{verdict(ok)} (whole runs {min(runs):.2f}x-{max(runs):.2f}x)"
    )
    return ok


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer iterations (smoke test)")
    parser.add_argument("--reps", type=int, help="repetitions per measurement")
    parser.add_argument("--batch", type=int, help="timed calls per batch")
    parser.add_argument(
        "--setup-only", action="store_true", help="only the set-up share of a DuckDB run"
    )
    parser.add_argument(
        "--memory-only", action="store_true", help="only the memory runtime against --baseline"
    )
    parser.add_argument("--baseline", default=BASELINE, help="git revision to compare memory with")
    args = parser.parse_args(argv)
    reps: int = args.reps or (3 if args.quick else 7)
    batch: int = args.batch or (20 if args.quick else 100)
    rounds = 5 if args.quick else 30
    began = time.perf_counter()
    print(
        f"yieldstar_sim runtime benchmark: python {platform.python_version()}, "
        f"duckdb {duckdb.__version__}, {platform.machine()}; {reps} repetitions, "
        f"batches of {batch} calls (+{WARMUP} warm-up){', quick' if args.quick else ''}\n"
    )
    baseline = None if args.setup_only else baseline_memory(args.baseline)
    if baseline is None and not args.setup_only:
        print(f"  (no git or no revision {args.baseline}: the memory comparison is left out)")
    elif baseline is not None:
        print("  memory against the baseline", file=sys.stderr, flush=True)
        versions = measure_memory_versions(baseline, reps * 3, rounds)
        print_memory_versions(versions, args.baseline)
    if args.memory_only:
        print(f"\n(took {time.perf_counter() - began:.1f} s)")
        return 0
    print("  set-up share", file=sys.stderr, flush=True)
    setup = measure_setup_share(reps * 3)
    print_setup_share(setup)
    if args.setup_only:
        print(f"\n(took {time.perf_counter() - began:.1f} s)")
        return 0
    results = [Result(bench, max(1, round(batch * bench.scale))) for bench in BENCHES]
    for rep in range(reps):
        print(f"  repetition {rep + 1}/{reps}", file=sys.stderr, flush=True)
        for result in results:
            if not result.bench.read:
                measure_write(result, rep)
        measure_reads([result for result in results if result.bench.read], rep)
    print_calls(results)
    workloads = []
    for workload in WORKLOADS:
        print(f"  workload {workload.name}", file=sys.stderr, flush=True)
        workloads.append(measure_workload(workload, rounds, reps))
    for workload_result in workloads:
        print_workload(workload_result)
    print_summary(results, workloads)
    print(f"\n(took {time.perf_counter() - began:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
