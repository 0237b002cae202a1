"""What a step body sees of the outside world: ``step.world`` (``BodyWorld``), its transactions
(``with step.world.transaction():``, ``Transaction``) and the error the world fails a call with
(``WorldError``).

Outside a step body it refuses, with the reason; a body's calls go to a ``world.WorldPort``,
which carries them out in-process, across a worker's pipe, or in the simulator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from yieldstar_sim.core.codec import InvalidValue, durable_value_codec
from yieldstar_sim.core.driver import BodyResult, RunBody
from yieldstar_sim.core.frozen import maker
from yieldstar_sim.core.interrupts import raised_by_code
from yieldstar_sim.core.model import (
    BaseExceptionRaised,
    ExitCalled,
    InfrastructureError,
    StepTimeoutError,
    WorkflowDefinitionError,
)
from yieldstar_sim.engine.world import (
    WORKFLOW_CODE,
    BodyContext,
    WorkerCrashRequested,
    check_key,
)

if TYPE_CHECKING:
    from yieldstar_sim.core.model import Lease
    from yieldstar_sim.engine.world import WorldPort

#: Every run of every step body ends here (``core.frozen``).
_new_result = BodyResult if TYPE_CHECKING else maker(BodyResult)

T = TypeVar("T")


class WorldError(InfrastructureError):
    """The outside world failed a step body's call (``step.world.read``, ``write``,
    ``effect``, or a transaction's commit): nothing of that call happened. A body may catch
    it; one that lets it go has its delivery rejected and delivered again, as for any
    infrastructure error (the simulator's ``world_error`` fault raises it)."""


def without_frames(error: BaseException) -> BaseException:
    """``error`` and the errors it was raised from, without their tracebacks.

    A body's error lives on in its ``BodyResult``, which the simulator's frames hold; its
    traceback held those frames (each frame holds its callers), a reference cycle that kept
    every finished run with a failed attempt alive until the cyclic collector. Nothing reads
    a body's traceback: the run records the error's type and message."""
    pending, seen = [error], set()
    while pending:
        each = pending.pop()
        if id(each) in seen:
            continue
        seen.add(id(each))
        each.__traceback__ = None
        pending.extend(e for e in (each.__cause__, each.__context__) if e is not None)
    return error


#: The most options one draw takes: each is a choice point, and the exhaustive search tries
#: every one.
MAX_DRAW_OPTIONS = 16


def _option_label(option: object) -> str:
    """An option as a draw's trace names it: its repr, cut to 40 characters."""
    text = repr(option)
    return text if len(text) <= 40 else text[:37] + "..."


class BodyWorld:
    """``step.world``: what a step body sees. Outside a body it refuses, with the reason."""

    def __init__(
        self,
        port: WorldPort,
        worker: str,
        lease: Lease | None = None,
        *,
        in_workflow_code: bool = False,
    ) -> None:
        self._port = port
        self._worker = worker
        self._lease = lease
        self._in_workflow_code = in_workflow_code
        self._context: BodyContext | None = None
        self._timeout: float | None = None
        self._elapsed = 0.0
        self._transaction: Transaction | None = None

    def _current(self, what: str) -> BodyContext:
        if self._context is None and self._in_workflow_code and self._lease is not None:
            # Allowed on purpose, to show what it does: workflow code replays on every delivery.
            return BodyContext(
                self._lease.execution_id, WORKFLOW_CODE, 0, self._worker, self._lease
            )
        if self._context is None:
            raise WorkflowDefinitionError(
                f"step.world.{what} was called outside a step body; workflow code is replayed, "
                f"so wrap the call in a step: `yield from step.run(key, lambda: "
                f"step.world.{what}(...))`"
            )
        return self._context

    @property
    def attempt(self) -> int:
        """The running step body's attempt number (1 for the first): lets a simulated service
        fail its first attempts."""
        return self._current("attempt").attempt

    def effect(self, name: str, /, *, idempotency_key: str | None = None, **data: object) -> None:
        """Record an external effect, e.g. ``step.world.effect("courier.booked", order=42)``.

        ``idempotency_key`` is the stable business key the outside service deduplicates by:
        effects with one key count as one (``at_most_once``), however often a retry or a
        replay repeats the call.
        """
        context = self._current("effect")
        if not isinstance(name, str) or not name:
            raise ValueError(f"an effect needs a name, not {name!r}")
        if idempotency_key is not None and not isinstance(idempotency_key, str):
            raise TypeError(f"an idempotency key is a string, not {idempotency_key!r}")
        encoded = durable_value_codec.round_trip(data, path=f"effect {name!r} data")
        if isinstance(encoded, InvalidValue):
            raise ValueError(encoded.message)
        value = encoded[1]
        assert isinstance(value, dict)
        self._port.effect(context, name, value, idempotency_key)

    @property
    def token(self) -> int | None:
        """The fencing token of the delivery running this body (RFC 002; None outside a
        lease). It only grows: an outside service that keeps the highest token it has seen
        can turn away a call from an attempt that lost its lease (a zombie stalled mid-work
        that resumes after another worker took over), which no heartbeat can stop."""
        lease = self._current("token").lease
        return None if lease is None else lease.token

    def transaction(self) -> Transaction:
        """A transaction on the outside world's store: ``with step.world.transaction():``.

        The writes inside it wait for the block's end and land together there (its commit,
        where the outside world may fail them all: ``WorldError`` at the block's end); an
        exception out of the block rolls them back, and none lands. Reads inside it see its
        own writes. A failed read or write inside it aborts it: its later calls and its
        commit raise ``WorldError``. Effects are other services' and never roll back.
        Transactions do not nest, and belong in step bodies.
        """
        context = self._current("transaction")
        if context.step_key == WORKFLOW_CODE:
            raise WorkflowDefinitionError(
                "step.world.transaction() belongs in a step body: workflow code replays, so "
                "open it inside a step: `yield from step.run(key, body)`"
            )
        if self._transaction is not None:
            raise WorkflowDefinitionError(
                f"step {context.step_key} opens step.world.transaction() inside another: "
                "transactions do not nest; put the writes in the open one"
            )
        return Transaction(self, context)

    def random(self) -> float:
        """A random number in [0, 1), as a body (or, where a scenario allows it, workflow
        code) reading one would get: a new one on every call, and so on every replay of
        workflow code, which is why workflow code must read it inside a step."""
        return self._port.read(self._current("random"), "random")

    def choice(self, options: Sequence[T]) -> T:
        """One of a few ``options``, drawn at random: ``step.world.choice(["east", "west"])``.

        In the simulator a draw is a choice point: the exhaustive search tries every option,
        the other strategies vary it across schedules (``random()`` is fixed by the seed
        instead). The body runs once its draw is decided, so a body that draws is run again
        from its start for each draw it makes (what it did before the draw is taken back; keep
        a body's Python state out of it, as workflow code's). Up to 16 options; a draw belongs
        in a step body, never in workflow code, and comes before the body's
        ``step.world.trigger``.
        """
        context = self._current("choice")
        if context.step_key == WORKFLOW_CODE:
            raise WorkflowDefinitionError(
                "step.world.choice and coin are a step body's draws (each a choice point): "
                "workflow code replays, so draw inside a step: `yield from step.run(key, "
                "lambda: step.world.choice([...]))`"
            )
        if isinstance(options, Mapping) or not isinstance(options, Sequence):
            raise TypeError(f"step.world.choice takes a sequence of options, not {options!r}")
        items = list(options)
        if not 1 <= len(items) <= MAX_DRAW_OPTIONS:
            raise ValueError(
                f"step.world.choice draws from 1 to {MAX_DRAW_OPTIONS} options (each is a choice "
                f"point), not {len(items)}"
            )
        if len(items) == 1:
            return items[0]  # nothing to choose
        return items[self._port.draw(context, tuple(_option_label(item) for item in items))]

    def coin(self) -> bool:
        """A coin toss, True or False: ``step.world.choice([True, False])``."""
        return self.choice((True, False))

    def heartbeat(self) -> None:
        """Tell the worker that this step body is alive (``step.heartbeat()``): it renews the
        delivery's lease.

        In the simulator each heartbeat is a choice point where a fault can fail the renewal
        or lose its answer; the worker counts failed renewals and, by the scenario's
        ``stop_after_failed_renewals``, stops an attempt whose lease it lost: the body sees it
        here, and the rest of it does not run. A body that heartbeats renews its lease only
        by its heartbeats (a body that never does has its worker renew for it while it
        works). In the engine a failed renewal raises here and the delivery rejects.
        """
        context = self._current("heartbeat")
        if context.step_key == WORKFLOW_CODE:
            raise WorkflowDefinitionError(
                "step.heartbeat() renews a step body's lease: call it inside a step body"
            )
        self._port.heartbeat(context)

    def crash_worker(self) -> NoReturn:
        """Crash the worker running this step body, as a process that dies mid-step does
        (a segfault, an out-of-memory kill): ``step.world.crash_worker()``.

        The body's code stops here, and no step is recorded. In the simulator the worker
        dies when the body's work reaches this call (after the body's elapses before it), as
        at the explorer's crash fault, and restarts with no memory; the execution is
        recovered by the next claim once its lease runs out. A body that calls it on every
        attempt is a poison workflow: it is recovered without end, unless the scenario sets
        ``max_recovery_attempts`` and the execution ends dead-lettered. Since it is the
        workflow's own code, every run and every search keeps it. Step bodies only.
        """
        context = self._current("crash_worker")
        if context.step_key == WORKFLOW_CODE:
            raise WorkflowDefinitionError(
                "step.world.crash_worker() crashes the worker running a step body: call it "
                "inside a step body"
            )
        self._port.crash_worker(context)
        raise WorkerCrashRequested(f"step {context.step_key} crashed its worker")

    def now(self) -> float:
        """The clock, as code reading the wall clock sees it (virtual time in the simulator):
        it moves between deliveries, so workflow code that branches on it replays another
        path. Read it inside a step to make it durable."""
        return self._port.read(self._current("now"), "clock")

    def read(self, key: str, default: object = None) -> Any:
        """Read ``key`` from the outside world's key-value store (``default`` when nothing was
        written there), e.g. ``step.world.read("seats_left", 1)``. What a body reads may be
        stale by the time it acts: the check-then-act race the exhaustive search finds."""
        context = self._current("read")
        check_key(key, "read")
        transaction = self._transaction
        if transaction is None:
            return self._port.get(context, key, default)
        return transaction.read(key, default)

    def write(self, key: str, value: object) -> None:
        """Write a durable JSON value under ``key`` in the outside world's key-value store.
        It lands when the body's work reaches it (after its ``elapse`` before it, as an
        effect does); inside a transaction, at the transaction's end. Crashes never roll a
        write back; a replayed step writes again."""
        context = self._current("write")
        check_key(key, "write")
        encoded = durable_value_codec.round_trip(value, path="value")
        if isinstance(encoded, InvalidValue):
            raise ValueError(
                f"step.world.write({key!r}, ...) takes a durable JSON value: {encoded.message}"
            )
        transaction = self._transaction
        if transaction is None:
            self._port.put(context, key, encoded[1])
        else:
            transaction.write(key, encoded[1])

    def trigger(self, workflow_id: str, params: object = None) -> str:
        """Admit a new execution with a fresh ID: RFC 003's non-durable trigger.

        A replay of the step calls it again and admits another execution: this is the bug
        ``step.start`` fixes, available on purpose to reproduce it.
        """
        return self._port.trigger(self._current("trigger"), workflow_id, params)

    def elapse(self, seconds: float) -> None:
        """Let this step body take ``seconds`` of virtual time (bounded by its timeout)."""
        context = self._current("elapse")
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            raise ValueError(f"elapse takes a non-negative number of seconds, not {seconds!r}")
        if self._timeout is not None and self._elapsed + seconds > self._timeout:
            self._port.elapse(context, self._timeout - self._elapsed)
            self._elapsed = self._timeout
            raise StepTimeoutError(
                f"step {context.step_key!r} attempt {context.attempt} ran past its "
                f"{self._timeout:g}s timeout"
            )
        self._port.elapse(context, float(seconds))
        self._elapsed += seconds

    def run(self, command: RunBody) -> BodyResult:
        """Run one attempt of a step body; its errors and timeouts become the result."""
        self._context = BodyContext(
            command.execution_id, command.step_key, command.attempt, self._worker, self._lease
        )
        self._timeout = command.timeout
        self._elapsed = 0.0
        try:
            value: Any = command.body(*command.args, **command.kwargs)
        except InfrastructureError:
            raise  # the world failed, not the body: the delivery rejects
        except (Exception, StepTimeoutError) as error:
            return BodyResult(error=without_frames(error))
        except SystemExit as exit:
            called = ExitCalled.from_exit(exit, f"step body {command.step_key!r}")
            return BodyResult(error=without_frames(called))
        except BaseException as error:
            if not raised_by_code(error):
                raise  # the toolkit's own way out (a wall-clock limit, a draw), or Ctrl-C
            raised = BaseExceptionRaised.from_base(error, f"step body {command.step_key!r}")
            return BodyResult(error=without_frames(raised))
        finally:
            self._context = None
            self._transaction = None
        return _new_result(value)


class Transaction:
    """``with step.world.transaction():`` (made by ``BodyWorld.transaction``): the store's
    writes inside the block land together at its end, or none of them (see there)."""

    def __init__(self, world: BodyWorld, context: BodyContext) -> None:
        self._world = world
        self._context = context
        self._writes: dict[str, object] = {}
        self._aborted: str | None = None
        self._entered = False

    def __enter__(self) -> Transaction:
        if self._entered:
            raise WorkflowDefinitionError("a step.world.transaction() is entered once")
        self._entered = True
        self._world._transaction = self
        return self

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        world = self._world
        world._transaction = None
        keys = tuple(self._writes)
        if error is not None:
            # An error out of the block (a draw not decided yet too: that run is taken back
            # whole); what it wrote never lands.
            if keys and isinstance(error, Exception):
                world._port.rollback(self._context, keys, f"{type(error).__name__}: {error}")
            return
        if self._aborted is not None:
            if keys:
                world._port.rollback(self._context, keys, self._aborted)
            raise WorldError(
                f"the transaction of step {self._context.step_key} was aborted by an earlier "
                f"error ({self._aborted}): none of its writes landed"
            )
        if keys:
            try:
                world._port.commit(self._context, dict(self._writes))
            except WorldError as failed:
                world._port.rollback(self._context, keys, str(failed))
                raise

    def read(self, key: str, default: object) -> Any:
        """``step.world.read`` inside the transaction: its own write, else the store's."""
        self._check()
        if key in self._writes:
            return durable_value_codec.round_trip(self._writes[key], path="value")[1]  # type: ignore[index]
        try:
            return self._world._port.get(self._context, key, default)
        except WorldError as failed:
            self._aborted = str(failed)
            raise

    def write(self, key: str, value: object) -> None:
        """``step.world.write`` inside the transaction: held until its end."""
        self._check()
        self._writes[key] = value

    def _check(self) -> None:
        if self._aborted is not None:
            raise WorldError(
                f"the transaction of step {self._context.step_key} was aborted by an earlier "
                f"error ({self._aborted})"
            )
