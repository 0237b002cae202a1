"""Two workloads of runtime calls a worker fleet would make, for bench_runtime and bench_postgres:
a *delivery* repeated over many executions, and a *mixed* order workflow with a child.

``run_workload`` times one on a fresh runtime; a ``Recorder`` counts the calls (and, when it
tallies, the SQL statements by kind, from an extra untimed run).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from _harness import gc_paused
from _runtime_calls import (
    LEASE,
    STEPS_PER_DELIVERY,
    accepted,
    admit,
    delivered,
    order_params,
    statements,
)

from yieldstar_sim.core.model import Completed, RequestId, StartRequest, Suspended

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.core.codec import DurableValue
    from yieldstar_sim.runtime.protocol import Runtime

P = ParamSpec("P")
R = TypeVar("R")


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
        with gc_paused():
            start = time.perf_counter()
            workload.run(runtime, recorder, state)
            elapsed = time.perf_counter() - start
        return elapsed / recorder.calls, recorder
    finally:
        runtime.close()
