"""The driver's runtime calls, one row each: which ``Runtime`` method a command calls, the op a
choice point and a ``Fault`` name it by, and how it crosses the worker process's pipe.

The in-process invoker, the worker-process invoker (both ends of its pipe) and the simulator all
read this table, so a new command is added here once.

>>> RUNTIME_CALLS[RecordWake].op is Op.RECORD_WAKE
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from yieldstar_sim.core.commands import (
    CallStart,
    Command,
    OrderCompletions,
    PutStep,
    ReadClock,
    RecordWake,
    RequestCancel,
    StartChild,
    WaitFor,
)
from yieldstar_sim.core.model import ChildRequest, RequestId, StartRequest
from yieldstar_sim.core.ops import Op

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.core.model import Lease
    from yieldstar_sim.runtime.protocol import Runtime

C = TypeVar("C")


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


RUNTIME_CALLS: dict[type[Any], CallKind[Any]] = {
    PutStep: CallKind[PutStep](
        op=Op.PUT_STEP,
        perform=lambda runtime, put: runtime.put_step(
            put.lease,
            put.step_key,
            status=put.status,
            value=put.value,
            attempt=put.attempt,
            wake_at=put.wake_at,
        ),
        step_key=lambda put: put.step_key,
        encode=lambda put: (put.step_key, put.status, put.value, put.attempt, put.wake_at),
        decode=lambda fields, lease: PutStep(lease, *fields),
    ),
    RecordWake: CallKind[RecordWake](
        op=Op.RECORD_WAKE,
        perform=lambda runtime, wake: runtime.record_wake(wake.lease, wake.at),
        step_key=_no_step,
        encode=lambda wake: (wake.at,),
        decode=lambda fields, lease: RecordWake(lease, fields[0]),
    ),
    WaitFor: CallKind[WaitFor](
        op=Op.WAIT_FOR,
        perform=lambda runtime, wait: runtime.wait_for(wait.lease, wait.execution_id),
        step_key=_no_step,
        encode=lambda wait: (wait.execution_id,),
        decode=lambda fields, lease: WaitFor(lease, fields[0]),
    ),
    CallStart: CallKind[CallStart](
        op=Op.START,
        perform=lambda runtime, call: runtime.start(call.request),
        step_key=lambda call: call.request.request_id.step_key,
        encode=lambda call: (
            call.request.request_id.execution_id,
            call.request.request_id.step_key,
            call.request.workflow_id,
            call.request.params,
            call.request.detached,
        ),
        decode=lambda fields, _: CallStart(StartRequest(RequestId(*fields[:2]), *fields[2:])),
    ),
    StartChild: CallKind[StartChild](
        op=Op.START_CHILD,
        perform=lambda runtime, child: runtime.start_child(child.request),
        step_key=lambda child: child.request.request_id.step_key,
        encode=lambda child: (
            child.request.request_id.execution_id,
            child.request.request_id.step_key,
            child.request.workflow_id,
            child.request.child_id,
            child.request.params,
            child.request.detached,
        ),
        decode=lambda fields, _: StartChild(ChildRequest(RequestId(*fields[:2]), *fields[2:])),
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
