"""The driver's runtime calls, one row each: which ``Runtime`` method a command calls, the op a
choice point and a ``Fault`` name it by, and how it crosses the worker process's pipe.

The in-process invoker, the worker-process invoker (both ends of its pipe) and the simulator all
read this table, so a new command is added here once.

>>> RUNTIME_CALLS[RecordWake].op is Op.RECORD_WAKE
True
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from yieldstar_sim.core.attempts import AttemptToken
from yieldstar_sim.core.commands import (
    CallStart,
    Command,
    CompleteAttempt,
    ConsumeEvent,
    FencedCall,
    OrderCompletions,
    PutStep,
    ReadClock,
    RecordWake,
    RequestCall,
    RequestCancel,
    StartChild,
    WaitFor,
)
from yieldstar_sim.core.model import ChildRequest, RequestId, StartRequest
from yieldstar_sim.core.ops import Op
from yieldstar_sim.runtime.protocol import attempts_of, events_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.core.model import Lease
    from yieldstar_sim.runtime.protocol import Runtime

C = TypeVar("C")
F = TypeVar("F", bound=FencedCall)
R = TypeVar("R", bound=RequestCall[Any])


# Not slots: a subscripted generic (``CallKind[PutStep](...)``) sets ``__orig_class__``.
@dataclass(frozen=True)
class CallKind(Generic[C]):
    """How one kind of driver command becomes a runtime call."""

    op: Op
    """The call's name at a choice point and in a ``Fault`` (``faults.CHOICE_POINT_OPS``)."""
    perform: Callable[[Runtime, C], Any]
    """Make the call against a runtime."""
    step_key: Callable[[C], str | None]
    """The step the call is for, if any (a choice point's label names it)."""
    encode: Callable[[C], tuple[Any, ...]]
    """The command as plain values for the worker pipe, without the lease: the parent holds
    the delivery's lease already, and tuples pickle several times faster than dataclasses."""
    decode: Callable[[tuple[Any, ...], Lease], C]
    """Inverse of ``encode``, with the delivery's lease put back."""


def _no_step(_: object) -> None:
    return None


def _fenced_call(
    op: Op,
    command: type[F],
    perform: Callable[[Runtime, F], Any],
    *,
    step_key: Callable[[F], str | None] = _no_step,
) -> CallKind[F]:
    """The row of a command fenced by the delivery's lease (``FencedCall``, whose first field it
    is): the command crosses the pipe without it (the parent holds it), as its other fields in
    constructor order."""
    names = [name.name for name in fields(command)][1:]
    others = attrgetter(*names)
    # ``attrgetter`` of one name answers the value itself, not a tuple of one.
    encode = others if len(names) > 1 else lambda call: (others(call),)
    return CallKind(
        op=op,
        perform=perform,
        step_key=step_key,
        encode=encode,
        decode=lambda values, lease: command(lease, *values),
    )


def _request_call(
    op: Op,
    command: Callable[[Any], R],
    request: type[StartRequest | ChildRequest],
    perform: Callable[[Runtime, R], Any],
) -> CallKind[R]:
    """The row of a command that carries a start's or a child's ``request``: the two kinds cross
    the pipe alike, as the two parts of the request's ID, then the request's other fields in
    constructor order (each request type has several, so ``attrgetter`` answers a tuple)."""
    others = attrgetter(*[name.name for name in fields(request)][1:])

    def encode(call: R) -> tuple[Any, ...]:
        request_id = call.request.request_id
        return (request_id.execution_id, request_id.step_key, *others(call.request))

    def decode(values: tuple[Any, ...], _: Lease) -> R:
        return command(request(RequestId(*values[:2]), *values[2:]))

    return CallKind(
        op=op,
        perform=perform,
        step_key=lambda call: call.request.request_id.step_key,
        encode=encode,
        decode=decode,
    )


RUNTIME_CALLS: dict[type[Any], CallKind[Any]] = {
    PutStep: _fenced_call(
        Op.PUT_STEP,
        PutStep,
        lambda runtime, put: runtime.put_step(
            put.lease,
            put.step_key,
            status=put.status,
            value=put.value,
            attempt=put.attempt,
            wake_at=put.wake_at,
        ),
        step_key=lambda put: put.step_key,
    ),
    RecordWake: _fenced_call(
        Op.RECORD_WAKE, RecordWake, lambda runtime, wake: runtime.record_wake(wake.lease, wake.at)
    ),
    WaitFor: _fenced_call(
        Op.WAIT_FOR, WaitFor, lambda runtime, wait: runtime.wait_for(wait.lease, wait.execution_id)
    ),
    ConsumeEvent: _fenced_call(
        Op.WAIT_FOR_EVENT,
        ConsumeEvent,
        lambda runtime, take: events_of(runtime).wait_for_event(
            take.lease, take.step_key, take.name
        ),
        step_key=lambda take: take.step_key,
    ),
    CompleteAttempt: _fenced_call(
        Op.COMPLETE_ATTEMPT,
        CompleteAttempt,
        lambda runtime, done: attempts_of(runtime).complete_attempt(
            AttemptToken(done.lease, done.step_key, done.attempt), done.value
        ),
        step_key=lambda done: done.step_key,
    ),
    CallStart: _request_call(
        Op.START, CallStart, StartRequest, lambda runtime, call: runtime.start(call.request)
    ),
    StartChild: _request_call(
        Op.START_CHILD,
        StartChild,
        ChildRequest,
        lambda runtime, call: runtime.start_child(call.request),
    ),
    RequestCancel: CallKind[RequestCancel](
        op=Op.CANCEL,
        perform=lambda runtime, cancel: runtime.cancel(cancel.execution_id),
        step_key=_no_step,
        encode=lambda cancel: (cancel.execution_id,),
        decode=lambda fields, _: RequestCancel(fields[0]),
    ),
}

#: The same rows by op, for the parent end of the worker pipe.
RUNTIME_CALLS_BY_OP: dict[str, CallKind[Any]] = {call.op: call for call in RUNTIME_CALLS.values()}


def runtime_call(command: Command) -> CallKind[Any]:
    """The table's row for ``command``; a ``TypeError`` for a command that is no runtime call."""
    call = RUNTIME_CALLS.get(type(command))
    if call is None:
        raise TypeError(f"not a runtime call: {command!r}")
    return call


def perform_runtime_call(runtime: Runtime, command: Command) -> Any:
    """Carry out a runtime call or a clock read against ``runtime``; concurrent step bodies
    complete in call order (an engine runs them one after another)."""
    if isinstance(command, ReadClock):
        return runtime.clock.now()
    if isinstance(command, OrderCompletions):
        return command.step_keys
    return runtime_call(command).perform(runtime, command)
