"""Choice points and the faults that strike at them: one table from fault kind to what it does.

Every runtime call an actor makes passes a choice point first (``pass_point``), where the actor
is sent the move taken there: it goes, struck by a fault or not. ``call`` applies the fault
around the runtime call:
``BEFORE`` says what each kind does before the call (a crash, a freeze, an infrastructure
error, a child process's exit, a skewed clock), ``AFTER`` what the two kinds that let the call
commit do once it has (the worker dies, or the response is lost). A step body's elapse uses the
same ``BEFORE`` table for the kinds that apply there (``attempts.py``, which adds the stall).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, NoReturn

from yieldstar_sim.core.frozen import maker
from yieldstar_sim.core.model import (
    DeliveryRejectedError,
    InfrastructureError,
    InjectedFailure,
    LeaseLostError,
)
from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.faults import FaultKind, PointInfo, fault_action
from yieldstar_sim.simulation.kernel import Point, Wait
from yieldstar_sim.simulation.narration import call_text, result_data
from yieldstar_sim.simulation.runtime_actions import trace_actions
from yieldstar_sim.simulation.trace_payloads import (
    ErrorData,
    FaultData,
    FreezeData,
    ReasonData,
    SkewData,
    TraceKind,
)

if TYPE_CHECKING:
    from yieldstar_sim.simulation.moves import Move
    from yieldstar_sim.simulation.state import RunState
    from yieldstar_sim.simulation.trace_payload_base import Payload

#: Each choice point is asked for with a Point (``core.frozen``).
_new_point = Point if TYPE_CHECKING else maker(Point)  # calls type-checked as Point(...)

#: Where a fault struck: the keywords of every trace event that follows from it.
Where = dict[str, Any]


class WorkerCrashed(BaseException):
    """The simulated crash of a worker: a BaseException, so workflow code cannot catch it (and
    it is never thrown into workflow code: the worker simply stops driving it). A crash the
    workflow's own code caused (``step.world.crash_worker()``) says so in its message and
    names the execution, the step and the delivery's fencing token."""

    def __init__(
        self,
        message: str = "",
        *,
        execution_id: str | None = None,
        step_key: str | None = None,
        token: int | None = None,
    ) -> None:
        super().__init__(message)
        self.execution_id = execution_id
        self.step_key = step_key
        self.token = token


class ResponseLost(InfrastructureError):
    """The runtime call committed but its response never reached the worker."""


def pass_point(
    state: RunState,
    info: PointInfo,
    *,
    token: int | None = None,
    label: str | None = None,
    options: tuple[str, ...] = (),
    solo: bool = False,
    blocking: bool = False,
) -> Generator[Point, Any, tuple[Move, Where]]:
    """Pass the choice point ``info`` (a worker's call, a body's elapse, a client's attempt)
    and trace the fault its move brings, if any; return the move and where it struck.
    ``label`` names the point where its info's label does not tell it from another;
    ``options`` are the values the point chooses among (a draw's, a completion's); ``solo``:
    only a fault is decided there; ``blocking``: offered only while something is due (a
    claim's: ``kernel.Point``)."""
    label = info.label if label is None else label
    move: Move = yield _new_point(label, info, options, solo, blocking)
    return move, struck(state, info, move, token)


def struck(state: RunState, info: PointInfo, move: Move, token: int | None) -> Where:
    """Where ``move``, just taken at the choice point ``info``, struck, its fault traced if it
    brings one (``pass_point``'s second half)."""
    where: Where = {
        "worker": info.worker, "op": info.op, "execution_id": info.execution_id,
        "step_key": info.step_key, "token": token, "point": state.kernel.points - 1,
    }  # fmt: skip
    kind = move.fault
    if kind is not None:
        state.event(
            state.clock.now(), TraceKind.FAULT, f"{fault_action(kind, move.seconds)} {info.label}",
            data=FaultData(str(kind), move.seconds), **where,
        )  # fmt: skip
    return where


def skew(state: RunState, name: str, seconds: float, where: Where) -> None:
    """Set ``name``'s clock ``seconds`` back, from now on, and say so in the trace (a write:
    actors ``tell`` it)."""
    clocks = state.clocks
    clocks.behind[name] = clocks.behind.get(name, 0.0) + seconds
    believed = clocks.now(name)
    state.trace.add(
        state.clock.now(), TraceKind.SKEW,
        f"{name}'s clock falls {clocks.behind[name]:g}s behind: it reads t={believed:g} at "
        f"true t={state.clock.now():g}",
        data=SkewData(clocks.behind[name], believed), **where,
    )  # fmt: skip


# ---------------------------------------------------------------- what each kind does, before


Before = Callable[["RunState", PointInfo, "Move", Where], Generator[Any, Any, None]]


def _crash(state: RunState, info: PointInfo, move: Move, where: Where) -> Generator[Any]:
    raise WorkerCrashed
    yield  # a generator, like every handler


def _freeze(state: RunState, info: PointInfo, move: Move, where: Where) -> Generator[Any]:
    seconds = move.seconds
    assert seconds is not None
    now = state.clock.now
    state.event(
        now(), TraceKind.FREEZE, f"{info.worker} freezes for {seconds:g}s",
        data=FreezeData(seconds), **where,
    )  # fmt: skip
    yield Wait(now() + seconds)
    state.event(now(), TraceKind.RESUME, f"{info.worker} wakes up and goes on", **where)


def _infra_error(state: RunState, info: PointInfo, move: Move, where: Where) -> Generator[Any]:
    # No local names the error: its traceback holds this frame, and a frame that held it
    # would be a reference cycle keeping the finished run alive until the cyclic collector.
    message = f"infrastructure error at {info.label}"
    state.event(
        state.clock.now(), TraceKind.ERROR, f"{info.op} failed: {message}",
        data=ErrorData(message), **where,
    )  # fmt: skip
    raise InjectedFailure(message)
    yield


def _child_exit(state: RunState, info: PointInfo, move: Move, where: Where) -> Generator[Any]:
    message = f"the worker process of {info.worker} exited"  # no local error, as above
    state.event(
        state.clock.now(), TraceKind.ERROR, f"{info.op} not made: {message}",
        data=ErrorData(message, made=False), **where,
    )  # fmt: skip
    raise DeliveryRejectedError(message)
    yield


def _skew(state: RunState, info: PointInfo, move: Move, where: Where) -> Generator[Any]:
    assert move.seconds is not None
    state.tell(skew, state, info.worker, move.seconds, where)
    return
    yield


#: What each fault kind does before its point's call (or elapse). The kinds not here act after
#: the call (``AFTER``) or at an elapse only (a stall: ``attempts.py``).
BEFORE: dict[FaultKind, Before] = {
    FaultKind.CRASH: _crash,
    FaultKind.FREEZE: _freeze,
    FaultKind.INFRA_ERROR: _infra_error,
    FaultKind.CHILD_EXIT: _child_exit,
    FaultKind.SKEW: _skew,
}


# ---------------------------------------------------------------- what each kind does, after


def _crash_after(state: RunState, info: PointInfo, where: Where) -> NoReturn:
    raise WorkerCrashed


def _lose_response(state: RunState, info: PointInfo, where: Where) -> NoReturn:
    state.event(
        state.clock.now(), TraceKind.ERROR, f"the response of {info.op} is lost",
        data=ErrorData(None), **where,
    )  # fmt: skip
    raise ResponseLost(f"the response of {info.label} was lost")


#: What each kind that lets the call commit does once it has.
AFTER: dict[FaultKind, Callable[[RunState, PointInfo, Where], NoReturn]] = {
    FaultKind.CRASH_AFTER: _crash_after,
    FaultKind.LOSE_RESPONSE: _lose_response,
}


def call(
    state: RunState,
    info: PointInfo,
    perform: Callable[[], Any],
    *,
    token: int | None = None,
    done: str | None = None,
    data: Callable[[Any], Payload] | None = None,
) -> Generator[Any, Any, Any]:
    """Pass a choice point, apply its fault, and make the runtime call; ``data`` makes the
    call event's payload from the result (by default, from the result alone)."""
    # A claim waits until something can be claimed: one that would find nothing is no choice
    # point (docs/decisions.md, "Idle workers block"). The point passed as ``pass_point``
    # passes it, without its generator: one of its own for every runtime call cost a search.
    move: Move = yield _new_point(info.label, info, (), False, info.op == Op.CLAIM)
    where = struck(state, info, move, token)
    kind = move.fault
    if kind is not None:  # most points have no fault: nothing to look up
        before = BEFORE.get(kind)
        if before is not None:
            yield from before(state, info, move, where)
    # Asked, and its event told, spelled out: every runtime call of every run passes here.
    journal = state.journal
    try:
        if journal is None or not (journal.recording or journal.feeding):
            result = perform()
        else:
            result = journal.ask(perform)
    except InfrastructureError as failed:
        if state.reports:
            state.tell(trace_actions, state, info.op)
        refused = isinstance(failed, LeaseLostError)
        state.event(
            state.clock.now(), TraceKind.REFUSED if refused else TraceKind.ERROR,
            f"{info.op} {'refused' if refused else 'failed'}: {failed}",
            data=ReasonData(str(failed)) if refused else ErrorData(str(failed)), **where,
        )  # fmt: skip
        if kind == FaultKind.CRASH_AFTER:
            raise WorkerCrashed from failed
        raise
    if state.reports:
        # What the runtime decided on its own during the call, before the call's own event.
        state.tell(trace_actions, state, info.op)
    if info.op == Op.CLAIM and result is not None:
        where.update(execution_id=result.lease.execution_id, token=result.lease.token)
    if journal is None or journal.feeding is None:  # an actor made again tells nothing
        if info.op == Op.CLAIM and result is not None:
            state.claimed(info.worker, where["point"])
        state.trace.add(
            state.clock.now(), TraceKind.CALL, call_text(info, result, done),
            data=(data or result_data)(result), **where,
        )  # fmt: skip
    if kind is not None:
        after = AFTER.get(kind)
        if after is not None:
            after(state, info, where)
    return result
