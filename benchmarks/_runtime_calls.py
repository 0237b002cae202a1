"""The runtime calls bench_runtime and bench_postgres time, each prepared as a batch twice over:
as adapter calls, and as exactly the SQL statements those calls issue (``Batch.bare``).

Every batch is set up through the public API on a fresh runtime; its first ``WARMUP`` calls
are untimed. The read calls (execution, steps, due, next_wake_at) run against one population
of executions in every state (``populate``), which they leave unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, TypeAlias

from _harness import per_call

from yieldstar_sim.core.clock import ManualClock
from yieldstar_sim.core.codec import durable_value_codec
from yieldstar_sim.core.ids import start_target_base, trigger_id_prefix
from yieldstar_sim.core.model import (
    Completed,
    Delivery,
    Lease,
    RequestId,
    StartAccepted,
    StartRequest,
    Suspended,
)
from yieldstar_sim.runtime.duckdb_runtime import QUERIES, DuckDBRuntime
from yieldstar_sim.runtime.memory import MemoryRuntime

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.core.codec import DurableObject, DurableValue
    from yieldstar_sim.core.model import StartResult, StepStatus
    from yieldstar_sim.runtime.protocol import Runtime

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
        "guard": True,  # DuckDBRuntime's orphan guard, on by default
        "target_base": start_target_base(
            request.workflow_id, request.request_id.execution_id, request.request_id.step_key
        ),
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
                        "id_prefix": trigger_id_prefix("charge-order"),
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
        # The adapter's claim_rows and claim_take (its row by ID and revision); the bare run
        # writes through claim, the same UPDATE finding its row by the subquery (a little dearer).
        [[q("claim_rows", {"execution_id": None}), q("claim", dict(params))] for _ in range(n)],
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
                # A terminal outcome: one statement updates it and wakes its waiters, a
                # compare-and-swap on the revision the adapter counted (admitted at 0, claimed
                # once); the adapter knows the leased row, so it reads no record back.
                q(
                    "acknowledge_terminal",
                    fence(
                        lease,
                        now,
                        status="completed",
                        result=encode(_result(i)),
                        error=None,
                        revision=1,
                    ),
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
    seconds = per_call(calls)
    return Trial(seconds, (statements(runtime) - before) / len(calls))
