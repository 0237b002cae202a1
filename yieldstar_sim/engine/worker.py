"""The worker-process invoker: workflow code runs in a child process.

The parent owns the database (DuckDB lets one process open a file), so the child sends every
runtime call, clock read and world operation to the parent over a pipe and waits for the answer.
Step bodies run in the child. A child that replies retry, or exits before an outcome (killed,
crashed), makes ``deliver`` raise ``DeliveryRejectedError``; the next delivery gets a new child.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import pickle
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.commands import OrderCompletions
from yieldstar_sim.core.driver import CallStart, Command, ReadClock, RunBody, StartChild, drive
from yieldstar_sim.core.model import (
    DeliveryRejectedError,
    Failed,
    InfrastructureError,
    Lease,
    StartAccepted,
    StartRejected,
    WorkflowRunOutcome,
    WorkflowStartErrorCode,
)
from yieldstar_sim.engine.body_world import BodyWorld
from yieldstar_sim.engine.calls import RUNTIME_CALLS_BY_OP, perform_runtime_call, runtime_call
from yieldstar_sim.engine.invoker import ExecutionEvent, Registry, describe_error, run_delivery
from yieldstar_sim.runtime import encode_start_params

if TYPE_CHECKING:
    from collections.abc import Iterator
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

    from yieldstar_sim.core.codec import DurableObject
    from yieldstar_sim.engine.world import BodyContext, EngineWorld
    from yieldstar_sim.runtime.protocol import Runtime


def _context() -> Any:
    # fork: the child inherits the registered workflows (closures and lambdas included) without
    # pickling them. Where fork does not exist, spawn needs importable workflow functions.
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


class WorkerProcessInvoker:
    """Delivers executions to a child process; the parent carries out its runtime calls."""

    def __init__(self, runtime: Runtime, registry: Registry, world: EngineWorld) -> None:
        self._runtime = runtime
        self._registry = registry
        self._world = world
        self._process: BaseProcess | None = None
        self._connection: Connection | None = None
        self.children_started = 0
        """How many child processes this invoker has started (one more after each exit)."""

    @property
    def child_pid(self) -> int | None:
        """The process ID of the current child, if one runs."""
        return self._process.pid if self._process is not None else None

    def _child(self) -> Connection:
        if self._process is not None and self._process.is_alive() and self._connection:
            return self._connection
        self._reap()
        parent_end, child_end = _context().Pipe()
        process = _context().Process(
            target=_child_main, args=(child_end, self._registry), daemon=True
        )
        with frozen_heap():
            process.start()
        child_end.close()
        self._process, self._connection = process, parent_end
        self.children_started += 1
        connection: Connection = parent_end
        return connection

    def _reap(self, *, kill: bool = False) -> int | None:
        code = None
        if self._connection is not None:
            self._connection.close()
        if self._process is not None:
            if kill and self._process.is_alive():
                self._process.kill()  # it waits for an answer: closing the pipe does not end it
            self._process.join(timeout=10)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()
            code = self._process.exitcode
        self._process = self._connection = None
        return code

    def deliver(self, event: ExecutionEvent) -> WorkflowRunOutcome:
        """Run the delivery in the child process; carry out its calls here."""
        connection = self._child()
        lease = event.delivery.lease
        try:
            connection.send(("deliver", event))
            while True:
                message = connection.recv()
                kind = message[0]
                if kind == "outcome":
                    outcome: WorkflowRunOutcome = message[1]
                    return outcome
                if kind == "retry":
                    raise DeliveryRejectedError(f"the worker replied retry: {message[1]}")
                connection.send(self._answer(message, lease))
        except (EOFError, OSError, BrokenPipeError) as error:
            code = self._reap()
            raise DeliveryRejectedError(
                f"the worker process exited (code {code}) before an outcome"
            ) from error
        except DeliveryRejectedError:
            raise  # the child replied retry: it is ready for the next delivery
        except Exception as error:
            # The pipe is in an unknown state (a message that did not pickle): this child
            # cannot serve another delivery. The next one starts a new child.
            self._reap(kill=True)
            raise DeliveryRejectedError(
                f"deliver rejected: {describe_error(error)}; the worker process was stopped"
            ) from error

    def _answer(self, message: tuple[Any, ...], lease: Lease) -> tuple[str, Any]:
        try:
            kind = message[0]
            if kind in _WIRE_CALLS:
                return (
                    "ok",
                    _encode_result(
                        perform_runtime_call(self._runtime, _decode_call(message, lease))
                    ),
                )
            context: BodyContext = message[1]
            if kind == "effect":
                self._world.effect(context, message[2], message[3], message[4])
                return ("ok", None)
            if kind == "trigger":
                return ("ok", self._world.trigger(context, message[2], message[3]))
            if kind == "elapse":
                self._world.elapse(context, message[2])
                return ("ok", None)
            if kind == "read":
                return ("ok", self._world.read(context, message[2]))
            if kind == "get":
                return ("ok", self._world.get(context, message[2], message[3]))
            if kind == "put":
                self._world.put(context, message[2], message[3])
                return ("ok", None)
            if kind == "heartbeat":
                self._world.heartbeat(context)
                return ("ok", None)
            if kind == "draw":
                return ("ok", self._world.draw(context, message[2]))
            if kind == "commit":
                self._world.commit(context, message[2])
                return ("ok", None)
            if kind == "rollback":
                self._world.rollback(context, message[2], message[3])
                return ("ok", None)
            raise ValueError(f"unknown message from the worker: {kind!r}")
        except Exception as error:
            return ("error", _portable(error))

    def close(self) -> None:
        """Stop the child process."""
        if self._connection is not None and self._process is not None:
            with contextlib.suppress(OSError):
                self._connection.send(("stop",))
        self._reap()


# --------------------------------------------------------------------------- the wire

# Runtime calls cross the pipe as plain tuples tagged with their op (``calls.CallKind.encode``);
# a clock read is one more tag.
_CLOCK = "clock"
_WIRE_CALLS = frozenset({_CLOCK, *RUNTIME_CALLS_BY_OP})


class _Unportable(Exception):
    """Stands in the child for an error that cannot cross the pipe; says what it was."""


class _UnportableInfrastructureError(_Unportable, InfrastructureError):
    """Stands in for an infrastructure error that cannot cross the pipe."""


def _portable(error: Exception) -> Exception:
    """``error`` if it survives the pipe (pickles and unpickles), else a stand-in naming it.

    A runtime call may raise any exception (one holding a lock, one whose ``__init__`` takes
    other arguments than it passes on); the child must still get an answer, or it would read
    the next delivery as that answer.
    """
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        infrastructure = isinstance(error, InfrastructureError)
        kind = _UnportableInfrastructureError if infrastructure else _Unportable
        return kind(describe_error(error))
    return error


def _encode_call(command: Command) -> tuple[Any, ...]:
    if isinstance(command, ReadClock):
        return (_CLOCK,)
    call = runtime_call(command)
    return (call.op, *call.encode(command))


def _decode_call(message: tuple[Any, ...], lease: Lease) -> Command:
    if message[0] == _CLOCK:
        return ReadClock()
    decoded: Command = RUNTIME_CALLS_BY_OP[message[0]].decode(message[1:], lease)
    return decoded


def _encode_result(result: Any) -> Any:
    if isinstance(result, StartAccepted):
        return ("accepted", result.execution_id)
    if isinstance(result, StartRejected):
        return ("rejected", str(result.code), result.message)
    return result


def _decode_result(result: Any) -> Any:
    if isinstance(result, tuple) and result and result[0] == "accepted":
        return StartAccepted(result[1])
    if isinstance(result, tuple) and result and result[0] == "rejected":
        return StartRejected(WorkflowStartErrorCode(result[1]), result[2])
    return result


# --------------------------------------------------------------------------- the child


class _ParentPort:
    """The child's side of the pipe: every call waits for the parent's answer."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def ask(self, *message: Any) -> Any:
        self._connection.send(message)
        kind, value = self._connection.recv()
        if kind == "error":
            raise value
        return value

    def effect(
        self, context: BodyContext, name: str, data: DurableObject, idempotency_key: str | None
    ) -> None:
        self.ask("effect", context, name, data, idempotency_key)

    def trigger(self, context: BodyContext, workflow_id: str, params: object) -> str:
        return str(self.ask("trigger", context, workflow_id, params))

    def elapse(self, context: BodyContext, seconds: float) -> None:
        self.ask("elapse", context, seconds)

    def read(self, context: BodyContext, what: str) -> float:
        return float(self.ask("read", context, what))

    def get(self, context: BodyContext, key: str, default: object) -> Any:
        return self.ask("get", context, key, default)

    def put(self, context: BodyContext, key: str, value: object) -> None:
        self.ask("put", context, key, value)

    def heartbeat(self, context: BodyContext) -> None:
        self.ask("heartbeat", context)

    def draw(self, context: BodyContext, options: tuple[str, ...]) -> int:
        return int(self.ask("draw", context, options))

    def commit(self, context: BodyContext, writes: dict[str, object]) -> None:
        self.ask("commit", context, writes)

    def crash_worker(self, context: BodyContext) -> None:
        # The child process dies, as a crashed worker does; its parent sees it exit before
        # an outcome (the delivery rejects, and the dispatcher releases the lease).
        os._exit(70)

    def rollback(self, context: BodyContext, keys: tuple[str, ...], reason: str) -> None:
        self.ask("rollback", context, keys, reason)


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Fork with the heap frozen: a forked child must never collect what it inherited.

    Garbage the parent left behind (DuckDB result and connection objects among it) would be
    finalized in the child, where DuckDB's threads do not exist, and crash it ("Fatal Python
    error: Segmentation fault ... Garbage-collecting"). ``gc.freeze()`` keeps every inherited
    object out of the child's collections; the parent unfreezes at once.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _child_main(connection: Connection, registry: Registry) -> None:
    port = _ParentPort(connection)
    while True:
        try:
            message = connection.recv()
        except EOFError:
            return
        if message[0] != "deliver":
            return
        event: ExecutionEvent = message[1]
        world = BodyWorld(port, event.worker, event.delivery.lease)

        def perform(command: Command, world: BodyWorld = world) -> Any:
            if isinstance(command, RunBody):
                return world.run(command)
            if isinstance(command, OrderCompletions):
                return command.step_keys  # the bodies run here, one after another
            if isinstance(command, CallStart | StartChild):
                # Invalid parameters may not even cross the pipe (a lambda does not pickle):
                # answer with the runtime's own check, without a call.
                params = encode_start_params(command.request.params)
                if isinstance(params, StartRejected):
                    return params
            return _decode_result(port.ask(*_encode_call(command)))

        workflow = registry.get(event.delivery.execution.workflow_id)
        try:
            outcome = run_delivery(
                drive(workflow, event.delivery, world, registry.profile), perform
            )
        except Exception as error:
            reason = str(error) if isinstance(error, _Unportable) else describe_error(error)
            connection.send(("retry", reason))
            continue
        if isinstance(outcome, Failed):
            outcome = Failed(outcome.error)  # the live exception stays here: it may not pickle
        connection.send(("outcome", outcome))
