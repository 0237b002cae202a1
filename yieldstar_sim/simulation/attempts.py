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

A body that heartbeats (``step.heartbeat()``) renews its lease by its heartbeats alone: each is
a choice point (op ``renew``) where the worker makes the renewal, and where a fault fails it
(``infra_error``) or loses its answer (``lose_response``). The worker keeps the scenario's
lease-loss policy (``Scenario.stop_after_failed_renewals``): it stops the attempt after so many
failed renewals in a row, at once when a renewal is refused, and before more work when by its
own clock the lease it knows of has ended (it froze past it). The body sees the stop at its
heartbeat: what it did after it does not land, as if ``step.heartbeat()`` had raised there.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.frozen import maker
from yieldstar_sim.core.model import DeliveryRejectedError, InfrastructureError, LeaseLostError
from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.attempt_tokens import complete_abandoned
from yieldstar_sim.simulation.faults import FaultKind, new_point_info
from yieldstar_sim.simulation.kernel import Wait
from yieldstar_sim.simulation.points import BEFORE, WorkerCrashed, call, pass_point
from yieldstar_sim.simulation.runtime_actions import trace_actions
from yieldstar_sim.simulation.trace_payloads import (
    HeartbeatData,
    ReasonData,
    RenewData,
    StallData,
    StopData,
    TraceKind,
)
from yieldstar_sim.simulation.world_ops import WorldOp, land

if TYPE_CHECKING:
    from yieldstar_sim.core.model import Lease
    from yieldstar_sim.simulation.attempt_tokens import OwnCompletion
    from yieldstar_sim.simulation.points import Where
    from yieldstar_sim.simulation.state import RunState
    from yieldstar_sim.simulation.world_ops import Redo


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """A body's ``step.heartbeat()``, in what it did: its worker renews the lease there."""

    def __reduce__(self) -> str:
        return "HEARTBEAT"  # pickled as the one mark itself: it is compared by identity


#: The one heartbeat mark (``SimPort.heartbeat`` appends it to what a body did).
HEARTBEAT = Heartbeat()


@dataclass(frozen=True, slots=True)
class CrashWorker:
    """A body's ``step.world.crash_worker()``, in what it did: its worker dies there, when the
    work reaches it, as at a crash fault (the body's code stopped there)."""

    def __reduce__(self) -> str:
        return "CRASH_WORKER"  # pickled as the one mark itself: it is compared by identity


#: The one crash mark (``SimPort.crash_worker`` appends it to what a body did).
CRASH_WORKER = CrashWorker()

#: What a body did, in order: a call to the outside world (a ``WorldOp``), something else to
#: land now (a callable: a trace of a read of the clock), seconds of work, a heartbeat, or the
#: crash of its worker (always last).
BodyOp = Callable[[], None] | float | Heartbeat | CrashWorker


class AttemptStopped(LeaseLostError):
    """A worker stopped a step attempt whose lease it lost (``Scenario.
    stop_after_failed_renewals``): the delivery rejects, as on any lost lease."""


@dataclass(frozen=True, slots=True)
class Played:
    """How a body's playback ended: ``done`` (all of it landed), ``timed_out`` (its worker
    gave up on it at its timeout; it works on apart until ``ended``), ``stopped`` (its
    worker stopped it: ``stop`` says why) or ``redo`` (it runs again from a call to the
    outside world that failed or found another value: ``redo``). ``work`` is the seconds of
    work played; ``worked_until`` when its last work or effect landed."""

    how: str
    work: float
    worked_until: float
    ended: float | None = None
    stop: StopData | None = None
    reason: str = ""
    """Why it was stopped, in words."""
    redo: Redo | None = None
    """How the body runs again (``redo``), from what it did at ``at``."""
    at: int = 0


#: A Played is made at every attempt's end (``core.frozen``).
new_played = Played if TYPE_CHECKING else maker(Played)  # calls type-checked as Played(...)


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
    return _relay(delivery, partial(_hand_off, state, delivery, remake))


def _hand_off(
    state: RunState,
    delivery: Generator[Any, Any, None],
    remake: Callable[[], Generator[Any, Any, None]],
    request: Detach,
) -> bool:
    """The rest of a detached ``delivery`` goes on as a new actor (``detachable``)."""
    state.spawn(
        request.actor,
        partial(_stalled_again, state, request.actor, remake, state.told_so_far()),
        actor=_stalled(state, delivery),
    )  # fmt: skip
    return True


def _relay(
    delivery: Generator[Any, Any, None], detached: Callable[[Detach], bool]
) -> Generator[Any, Any, None]:
    """Pass ``delivery``'s requests to the kernel and the kernel's answers back, until it ends.
    At each ``Detach`` it yields, ``detached`` says whether the rest of it was handed to an
    actor of its own (True: it stops here, left open for that actor); if not, it goes on,
    told nothing."""
    running: Generator[Any, Any, None] | None = delivery
    value: Any = None
    try:
        while True:
            try:
                request = delivery.send(value)
            except StopIteration:
                return
            if isinstance(request, Detach):
                if detached(request):
                    running = None
                    return
                value = None
                continue
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
    state.feed(name, delivery, told)
    yield from _stalled(state, delivery)


def _stalled(state: RunState, delivery: Generator[Any, Any, None]) -> Generator[Any, Any, None]:
    """The rest of a stalled delivery, as an actor of its own (a later stall of the attempt
    does not detach it again: it is apart already)."""
    try:
        yield from _relay(delivery, _stays)
    except WorkerCrashed:
        # A crash fault at one of the attempt's later calls ends this attempt; the worker it
        # stalled away from lives on.
        state.event(
            state.clock.now(), TraceKind.CRASH,
            "the stalled attempt dies with its process's crash fault",
        )  # fmt: skip


def _stays(request: Detach) -> bool:
    return False


@dataclass(slots=True)
class Playback:
    """Where the landing of an attempt stands, across the runs of its body (a body runs
    again from a call where the outside world failed or changed: ``world_ops.Redo``): its
    deadline, the worker's watch over its lease, the work landed so far, and the tape and
    start clock of the body's last run."""

    deadline: float | None
    watch: _LeaseWatch | None
    work: float
    worked_until: float
    tape: tuple[Any, ...] = ()
    clock: float = 0.0


def playback(
    state: RunState, name: str, lease: Lease, *, attempt: int, timeout: float | None
) -> Playback:
    """A playback starting now, for an attempt whose step has ``timeout``."""
    deadline = None if timeout is None else state.clock.now() + timeout
    return Playback(deadline, None, 0.0, state.clock.now())


def play_body(
    state: RunState,
    name: str,
    lease: Lease,
    *,
    step_key: str,
    attempt: int,
    ops: list[BodyOp],
    played: Playback,
    start: int = 0,
    passed: bool = False,
    completion: OwnCompletion | None = None,
) -> Generator[Any, Any, Played]:
    """Land what a body did, in order from ``start``, passing a choice point at each of its
    elapses and heartbeats and a solo point at each of its calls to the outside world (the
    one at ``start`` ``passed`` its point already). How it ended: ``timed_out`` when the
    worker gave up on the attempt at its timeout (a stall outlasted it: the rest of the
    attempt goes on apart, and the worker treats it as timed out), ``stopped`` when the
    worker stopped it for its lease, ``redo`` when the body must run again from a call
    (``Played.redo``, at ``Played.at``). An attempt that completes by its token
    (``completion``) and that its worker gives up on completes by it when it ends."""
    watch = played.watch
    if watch is None and HEARTBEAT in ops[start:]:
        watch = played.watch = _LeaseWatch.of(state, name, lease, attempt)
    for index in range(start, len(ops)):
        op = ops[index]
        if op is HEARTBEAT:
            assert watch is not None
            stop = yield from watch.heartbeat(step_key)
            if stop is not None:
                return Played(
                    "stopped", played.work, played.worked_until, stop=stop, reason=watch.reason
                )
            continue
        if op is CRASH_WORKER:
            raise WorkerCrashed(
                f"step {step_key} of {lease.execution_id} called step.world.crash_worker()",
                execution_id=lease.execution_id,
                step_key=step_key,
                token=lease.token,
            )
        if isinstance(op, WorldOp):
            redo = yield from land(
                state, name, lease, step_key, op, tape=played.tape, clock=played.clock,
                passed=passed and index == start,
            )  # fmt: skip
            if redo is not None:
                return Played("redo", played.work, played.worked_until, redo=redo, at=index)
            played.worked_until = state.clock.now()
            continue
        if callable(op):
            state.tell(op)
            played.worked_until = state.clock.now()
            continue
        assert isinstance(op, float)
        how, ended = yield from _elapse(
            state, name, lease, step_key=step_key, attempt=attempt, seconds=op,
            deadline=played.deadline, rest=ops[index + 1 :], watch=watch, completion=completion,
        )  # fmt: skip
        if how == "stopped":
            assert watch is not None
            return Played(
                "stopped", played.work, played.worked_until, stop=watch.stopped,
                reason=watch.reason,
            )  # fmt: skip
        if how == "timed_out":
            return Played("timed_out", played.work, played.worked_until, ended=ended)
        played.work += op
        played.worked_until = state.clock.now()
    return new_played("done", played.work, played.worked_until)


class _LeaseWatch:
    """A worker's watch over the lease of an attempt whose body heartbeats: the renewals it
    saw fail in a row, where it knows its lease ends, and the scenario's policy."""

    __slots__ = (
        "attempt", "believed_end", "failed", "lease", "name", "policy", "reason", "state",
        "stopped",
    )  # fmt: skip

    def __init__(
        self, state: RunState, name: str, lease: Lease, attempt: int, believed_end: float
    ) -> None:
        self.state, self.name, self.lease, self.attempt = state, name, lease, attempt
        self.policy = state.scenario.stop_after_failed_renewals
        self.believed_end = believed_end
        self.failed = 0
        self.stopped: StopData | None = None
        self.reason = ""

    @classmethod
    def of(cls, state: RunState, name: str, lease: Lease, attempt: int) -> _LeaseWatch:
        """A watch from what the worker knows now: its lease ends where its last renewal (or
        its claim) said."""
        key = (lease.execution_id, lease.token)
        believed = state.ask(_lease_end, state, key, lease.expires_at)
        return cls(state, name, lease, attempt, believed)

    def heartbeat(self, step_key: str) -> Generator[Any, Any, StopData | None]:
        """The body's heartbeat: a choice point, then the renewal; the stop it leads to, if
        any (the body sees it here)."""
        state, lease = self.state, self.lease
        info = new_point_info(self.name, Op.RENEW, lease.execution_id, step_key)
        lease_seconds = state.scenario.lease_seconds
        try:
            renewed = yield from call(
                state, info, lambda: state.runtime.renew(lease, lease_seconds=lease_seconds),
                token=lease.token, data=lambda renewed: RenewData(renewed.expires_at),
            )  # fmt: skip
        except DeliveryRejectedError:
            raise  # the worker's process exited: the delivery is over, whatever the policy
        except LeaseLostError:
            return self._stop(step_key, "refused")
        except InfrastructureError:
            self.failed += 1
            if self.policy is not None and self.failed >= self.policy:
                return self._stop(step_key, "failed")
            return None
        self.failed = 0
        self.believed_end = renewed.expires_at
        state.tell(
            state.lease_ends.__setitem__, (lease.execution_id, lease.token), renewed.expires_at
        )
        return None

    def expired(self, step_key: str, where: Where) -> bool:
        """Before more work: whether by its own clock the worker knows its lease has ended (it
        froze past it), and so stops the attempt."""
        if self.policy is None:
            return False
        # The worker's clock is shared state (a skew moves it): asked.
        believed_now = self.state.ask(self.state.clocks.now, self.name)
        if believed_now < self.believed_end:
            return False
        self._stop(step_key, "expired", where)
        return True

    def _stop(self, step_key: str, why: str, where: Where | None = None) -> StopData | None:
        """Stop the attempt, and say why in the trace; None when the policy never stops one
        (the worker ignores what its renewal answered and the body works on)."""
        if self.policy is None:
            return None
        state, lease, name = self.state, self.lease, self.name
        stop = StopData(self.attempt, why, self.failed if why == "failed" else 0)
        reason = {
            "failed": f"{self.failed} failed renewal{'s' if self.failed != 1 else ''} in a row "
            f"(it stops after {self.policy})",
            "refused": "the runtime refused its renewal: the lease is gone",
            "expired": f"by its clock its lease ended at t={self.believed_end:g}",
        }[why]
        place = where or {
            "worker": name, "op": Op.RENEW, "execution_id": lease.execution_id,
            "step_key": step_key, "token": lease.token, "point": state.kernel.points - 1,
        }  # fmt: skip
        state.event(
            state.clock.now(), TraceKind.STOP,
            f"{name} stops attempt {self.attempt} of step {step_key}: {reason}; the body sees "
            "it at its heartbeat",
            data=stop, **place,
        )  # fmt: skip
        self.stopped, self.reason = stop, reason
        return stop


def _lease_end(state: RunState, key: tuple[str, int], claimed: float) -> float:
    return state.lease_ends.get(key, claimed)


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
    watch: _LeaseWatch | None,
    completion: OwnCompletion | None = None,
) -> Generator[Any, Any, tuple[str, float | None]]:
    """One elapse: ``kept`` (the work was waited out), ``stopped`` (the worker stopped the
    attempt before it) or ``timed_out`` (a stall outlasted the timeout), with, then, when the
    attempt that hangs on apart ends."""
    info = new_point_info(name, Op.ELAPSE, lease.execution_id, step_key)
    move, where = yield from pass_point(state, info, token=lease.token)
    kind = move.fault
    stall = move.seconds if kind == FaultKind.STALL else None
    if kind is not None:  # most elapses: no fault, nothing to look up
        before = BEFORE.get(kind)
        if before is not None:  # a crash, a freeze or a skew: as before a runtime call
            yield from before(state, info, move, where)
    if watch is None:
        # A body that never heartbeats: its worker renews for it, by its own clock.
        state.ask(heartbeat, state, name, lease, seconds, where)
    elif watch.expired(step_key, where):
        return "stopped", None
    if stall is None:
        yield Wait(state.clock.now() + seconds)
        return "kept", None
    until = state.clock.now() + stall + seconds
    if deadline is not None and deadline < until:
        # The worker waits for the attempt until its timeout, then gives up on it and retries;
        # the attempt itself hangs on and acts later, beside its retry.
        state.event(
            state.clock.now(), TraceKind.STALL,
            f"{name}'s attempt {attempt} of step {step_key} hangs for {stall:g}s (until "
            f"t={until:g}); at its timeout (t={deadline:g}) {name} gives up on it",
            data=StallData(attempt, stall, until, timed_out=True), **where,
        )  # fmt: skip
        actor = f"{name}~{lease.execution_id}~{lease.token}~{attempt}"
        abandoned = StallData(attempt, stall, until, timed_out=True)
        stops = watch is not None and watch.policy is not None
        state.spawn(
            actor,
            partial(
                _abandoned, state, abandoned, where, rest, stops=stops, lease=lease,
                completion=completion,
            ),
        )  # fmt: skip
        yield Wait(max(deadline, state.clock.now()))
        return "timed_out", until + _work_before_stop(rest, stops=stops)
    state.event(
        state.clock.now(), TraceKind.STALL,
        f"{name}'s attempt {attempt} of step {step_key} hangs for {stall:g}s (until t={until:g}); "
        f"{name} goes on with other work",
        data=StallData(attempt, stall, until), **where,
    )  # fmt: skip
    yield Detach(f"{name}~{lease.execution_id}~{lease.token}")
    yield Wait(until)
    state.event(
        state.clock.now(), TraceKind.UNSTALL,
        f"{name}'s attempt {attempt} of step {step_key} resumes, unaware of the {stall:g}s it "
        "lost",
        data=StallData(attempt, stall, until), **where,
    )  # fmt: skip
    return "kept", None


def _work_before_stop(rest: list[BodyOp], *, stops: bool) -> float:
    """The seconds of work in ``rest`` before the attempt stops (at its first heartbeat, when
    it ``stops`` there)."""
    work = 0.0
    for op in rest:
        if op is CRASH_WORKER:
            break  # the body's code ends there
        if op is HEARTBEAT:
            if stops:
                break
        elif not callable(op):
            assert isinstance(op, float)
            work += op
    return work


def _abandoned(
    state: RunState,
    stall: StallData,
    where: Where,
    rest: list[BodyOp],
    *,
    stops: bool = False,
    lease: Lease | None = None,
    completion: OwnCompletion | None = None,
) -> Generator[Any, Any, None]:
    """An attempt its worker gave up on at its timeout: it resumes after its stall and does
    the rest of what its body did (its worker owns the delivery: its one call is its own
    completion, when its step completes by token: ``completion``, under ``lease``). A body
    that heartbeats, under a policy that stops attempts (``stops``), sees at its next
    heartbeat that its worker gave up on it, and stops there."""
    yield Wait(stall.until)
    state.event(
        state.clock.now(), TraceKind.UNSTALL,
        f"{where['worker']}'s attempt {stall.attempt} of step {where['step_key']} resumes after "
        "its worker gave up on it at its timeout; what it does still reaches the world",
        data=stall, **{**where, "point": None},
    )  # fmt: skip
    for op in rest:
        if op is CRASH_WORKER:
            # The worker gave up on this attempt already and claims on: what the body's
            # crash ends is the attempt it left behind.
            return
        if op is HEARTBEAT:
            if stops:
                state.event(
                    state.clock.now(), TraceKind.STOP,
                    f"{where['worker']}'s attempt {stall.attempt} of step {where['step_key']} "
                    "sees at its heartbeat that its worker gave up on it, and stops",
                    data=StopData(stall.attempt, "abandoned"), **{**where, "point": None},
                )  # fmt: skip
                return
        elif callable(op):
            state.tell(op)
        else:
            assert isinstance(op, float)
            yield Wait(state.clock.now() + op)
    if completion is not None and lease is not None:
        yield from complete_abandoned(state, lease, where, completion)


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
    if state.reports:
        trace_actions(state, Op.RENEW)  # inside the worker's answer, as the renewal is
    ends = now + work + lease_seconds
    state.lease_ends[(lease.execution_id, lease.token)] = ends
    state.trace.add(
        now, TraceKind.HEARTBEAT,
        f"{name} works {work:g}s{clock} and heartbeats: its lease runs to t={ends:g}",
        data=HeartbeatData(believed, ends, work, renewed=True), **where,
    )  # fmt: skip
