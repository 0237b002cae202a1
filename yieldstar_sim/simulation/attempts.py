"""Step attempts that take time: each ``step.world.elapse`` in a body is a choice point, one
attempt can stall apart from its worker, and each worker heartbeats by its own clock.

A step body is a plain function: it cannot stop halfway, so it runs to its end when its worker
starts it. What it does to the world is played back in time instead: what it did before its
first elapse lands at once, and each elapse is a choice point after which the worker waits out
the work before the next part lands. A fault there falls between two parts of the body: a
crash loses the effects after it, a freeze stops the worker, a stall hangs this attempt alone
(its worker goes on to other work; the attempt resumes later, a zombie; or, when the stall
outlasts the step's timeout, the worker gives up on it at the timeout and retries while the
attempt hangs on apart), a skew sets the worker's clock back. Reads of the clock inside a
body see the time the body computed, not a stall's: a stalled attempt does not know it
stalled.

Before each elapse the worker judges its lease by its own clock: it renews the lease (a
heartbeat) when, by that clock, the lease would end during the work. A worker whose clock runs
behind believes its lease holds when by true time it has expired; the runtime judges by true
time, and fencing refuses the worker's next write.

Each worker's clock is a ``state.WorkerClocks``; a skew fault (``points.skew``) sets it back.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.model import LeaseLostError
from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.faults import FaultKind, new_point_info
from yieldstar_sim.simulation.kernel import Wait
from yieldstar_sim.simulation.points import BEFORE, WorkerCrashed, pass_point
from yieldstar_sim.simulation.trace import HeartbeatData, ReasonData, StallData, TraceKind

if TYPE_CHECKING:
    from yieldstar_sim.core.model import Lease
    from yieldstar_sim.simulation.points import Where
    from yieldstar_sim.simulation.state import RunState

#: What a body did, in order: an effect or a read to land now (a callable), or seconds of work.
BodyOp = Callable[[], None] | float


@dataclass(frozen=True, slots=True)
class Detach:
    """Yielded by a stalling attempt: the rest of the delivery goes on as actor ``actor``, and
    the worker that ran it is free again. The kernel never sees it (``detachable`` takes it)."""

    actor: str


def detachable(
    state: RunState,
    delivery: Generator[Any, Any, None],
    remake: Callable[[], Generator[Any, Any, None]],
) -> Generator[Any, Any, None]:
    """Drive ``delivery`` for its worker; when it detaches (a stall), hand the rest of it to a
    new actor of the kernel and return, so that the worker claims other work meanwhile.
    ``remake`` makes the delivery again from its start, for a restored run to make the new
    actor again: fed what the worker was told since the delivery started, it stands where it
    detached."""
    running: Generator[Any, Any, None] | None = delivery
    value: Any = None
    try:
        while True:
            try:
                request = delivery.send(value)
            except StopIteration:
                return
            if isinstance(request, Detach):
                recorder, worker = state.recorder, state.kernel.running
                log = None if recorder is None or worker is None else recorder.logs.get(worker)
                told = [] if log is None or state.replaying else log.entries
                state.spawn(
                    request.actor,
                    partial(_stalled_again, state, request.actor, remake, list(told)),
                    actor=_stalled(state, delivery),
                )  # fmt: skip
                running = None
                return
            value = yield request
    finally:
        if running is not None:
            running.close()


def _stalled_again(
    state: RunState,
    name: str,
    remake: Callable[[], Generator[Any, Any, None]],
    told: list[Any],
) -> Generator[Any, Any, None]:
    """A stalled delivery made again: the delivery, fed what its worker was told up to the
    stall, then the rest of it as ``_stalled``."""
    delivery = remake()
    if state.recorder is not None:
        state.recorder.replay(name, delivery, told)
    yield from _stalled(state, delivery)


def _stalled(state: RunState, delivery: Generator[Any, Any, None]) -> Generator[Any, Any, None]:
    """The rest of a stalled delivery, as an actor of its own."""
    value: Any = None
    try:
        while True:
            try:
                request = delivery.send(value)
            except StopIteration:
                return
            except WorkerCrashed:
                # A crash fault at one of the attempt's later calls ends this attempt; the
                # worker it stalled away from lives on.
                state.trace.add(
                    state.clock.now(), TraceKind.CRASH,
                    "the stalled attempt dies with its process's crash fault",
                )  # fmt: skip
                return
            value = None if isinstance(request, Detach) else (yield request)
    finally:
        delivery.close()


def play_body(
    state: RunState,
    name: str,
    lease: Lease,
    *,
    step_key: str,
    attempt: int,
    ops: list[BodyOp],
    timeout: float | None = None,
) -> Generator[Any, Any, bool]:
    """Land what a body did, in order, passing a choice point at each of its elapses. False
    when the worker gave up on the attempt at its ``timeout`` (a stall outlasted it): the rest
    of the attempt goes on apart, and the worker treats the attempt as timed out."""
    deadline = None if timeout is None else state.clock.now() + timeout
    for index, op in enumerate(ops):
        if callable(op):
            # An actor made again is told what landed before its point: it is in the state.
            if not state.replaying:
                op()
            continue
        kept = yield from _elapse(
            state, name, lease, step_key=step_key, attempt=attempt, seconds=op,
            deadline=deadline, rest=ops[index + 1 :],
        )  # fmt: skip
        if not kept:
            return False
    return True


def _elapse(
    state: RunState,
    name: str,
    lease: Lease,
    *,
    step_key: str,
    attempt: int,
    seconds: float,
    deadline: float | None,
    rest: list[BodyOp],
) -> Generator[Any, Any, bool]:
    info = new_point_info(name, Op.ELAPSE, lease.execution_id, step_key)
    fault, where = yield from pass_point(state, info, token=lease.token)
    kind = FaultKind(fault.kind) if fault is not None else None
    stall = fault.seconds if fault is not None and kind == FaultKind.STALL else None
    if kind is not None:  # most elapses: no fault, nothing to look up
        assert fault is not None
        before = BEFORE.get(kind)
        if before is not None:  # a crash, a freeze or a skew: as before a runtime call
            yield from before(state, info, fault, where)
    state.answer(partial(heartbeat, state, name, lease, seconds, where))
    if stall is None:
        yield Wait(state.clock.now() + seconds)
        return True
    until = state.clock.now() + stall + seconds
    if deadline is not None and deadline < until:
        # The worker waits for the attempt until its timeout, then gives up on it and retries;
        # the attempt itself hangs on and acts later, beside its retry.
        state.trace.add(
            state.clock.now(), TraceKind.STALL,
            f"{name}'s attempt {attempt} of step {step_key} hangs for {stall:g}s (until "
            f"t={until:g}); at its timeout (t={deadline:g}) {name} gives up on it",
            data=StallData(attempt, stall, until, timed_out=True), **where,
        )  # fmt: skip
        actor = f"{name}~{lease.execution_id}~{lease.token}~{attempt}"
        abandoned = StallData(attempt, stall, until, timed_out=True)
        state.spawn(actor, partial(_abandoned, state, abandoned, where, rest))
        yield Wait(max(deadline, state.clock.now()))
        return False
    state.trace.add(
        state.clock.now(), TraceKind.STALL,
        f"{name}'s attempt {attempt} of step {step_key} hangs for {stall:g}s (until t={until:g}); "
        f"{name} goes on with other work",
        data=StallData(attempt, stall, until), **where,
    )  # fmt: skip
    yield Detach(f"{name}~{lease.execution_id}~{lease.token}")
    yield Wait(until)
    state.trace.add(
        state.clock.now(), TraceKind.UNSTALL,
        f"{name}'s attempt {attempt} of step {step_key} resumes, unaware of the {stall:g}s it "
        "lost",
        data=StallData(attempt, stall, until), **where,
    )  # fmt: skip
    return True


def _abandoned(
    state: RunState, stall: StallData, where: Where, rest: list[BodyOp]
) -> Generator[Any, Any, None]:
    """An attempt its worker gave up on at its timeout: it resumes after its stall and does
    the rest of what its body did (no call of its own: its worker owns the delivery)."""
    yield Wait(stall.until)
    state.trace.add(
        state.clock.now(), TraceKind.UNSTALL,
        f"{where['worker']}'s attempt {stall.attempt} of step {where['step_key']} resumes after "
        "its worker gave up on it at its timeout; what it does still reaches the world",
        data=stall, **{**where, "point": None},
    )  # fmt: skip
    for op in rest:
        if callable(op):
            if not state.replaying:
                op()
        else:
            yield Wait(state.clock.now() + op)


def heartbeat(state: RunState, name: str, lease: Lease, work: float, where: Where) -> None:
    """Before ``work`` seconds of a body, renew the lease if by the worker's clock it would end
    during them (with half a lease to spare). A refused renewal raises ``LeaseLostError``."""
    lease_seconds = state.scenario.lease_seconds
    believed = state.clocks.now(name)
    ends = state.lease_ends.get((lease.execution_id, lease.token), lease.expires_at)
    behind = state.clocks.behind.get(name, 0.0)
    now = state.clock.now()
    clock = f" (its clock reads t={believed:g})" if behind else ""
    if believed + work + lease_seconds / 2 <= ends:
        truth = ""
        if behind:
            truth = f"; true t={now:g}: " + ("it has expired" if now >= ends else "it holds")
        state.trace.add(
            now, TraceKind.HEARTBEAT,
            f"{name} works {work:g}s{clock}: it believes its lease (to t={ends:g}) outlasts the "
            f"work and does not renew{truth}",
            data=HeartbeatData(believed, ends, work, renewed=False), **where,
        )  # fmt: skip
        return
    try:
        state.runtime.renew(lease, lease_seconds=work + lease_seconds)
    except LeaseLostError as refused:
        state.trace.add(
            now, TraceKind.HEARTBEAT,
            f"{name} works {work:g}s{clock} and asks to renew its lease (to t={ends:g})",
            data=HeartbeatData(believed, ends, work, renewed=False), **where,
        )  # fmt: skip
        state.trace.add(
            now, TraceKind.REFUSED, f"renew refused: {refused}", data=ReasonData(str(refused)),
            **{**where, "op": Op.RENEW, "point": None},
        )  # fmt: skip
        raise
    ends = now + work + lease_seconds
    state.lease_ends[(lease.execution_id, lease.token)] = ends
    state.trace.add(
        now, TraceKind.HEARTBEAT,
        f"{name} works {work:g}s{clock} and heartbeats: its lease runs to t={ends:g}",
        data=HeartbeatData(believed, ends, work, renewed=True), **where,
    )  # fmt: skip
