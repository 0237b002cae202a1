"""The outside world that step bodies act on, and the ledger of what they did.

Effects go to a ledger that crashes never roll back, so a duplicate effect stays visible. Each
effect carries its provenance: the execution, step key and attempt whose body made it, the
worker that ran it and the virtual time. A small key-value store (``step.world.read`` and
``step.world.write``) holds the outside state that workflows race on: a stock level, a
balance, a flag in another service. Like the ledger, crashes never roll it back.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from yieldstar_sim.core.codec import DurableObject, InvalidValue, durable_value_codec
from yieldstar_sim.core.driver import BodyResult, RunBody
from yieldstar_sim.core.interrupts import raised_by_code
from yieldstar_sim.core.model import (
    BaseExceptionRaised,
    ExitCalled,
    InfrastructureError,
    StepTimeoutError,
    WorkflowDefinitionError,
)

if TYPE_CHECKING:
    from yieldstar_sim.core.clock import ManualClock
    from yieldstar_sim.core.model import Lease
    from yieldstar_sim.runtime.protocol import ExecutionClient

T = TypeVar("T")

#: The ledger name of a non-durable trigger made from a step body.
TRIGGERED = "workflow.triggered"

#: The step key of what workflow code does through ``step.world`` outside any step body (only
#: where a scenario allows it: ``Scenario(world_in_workflow_code=True)``).
WORKFLOW_CODE = "(workflow code)"


def _without_frames(error: BaseException) -> BaseException:
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


@dataclass(frozen=True, slots=True)
class BodyContext:
    """Which step body is running: the provenance of everything it does."""

    execution_id: str
    step_key: str
    attempt: int
    worker: str
    lease: Lease | None = None


@dataclass(frozen=True, slots=True)
class Effect:
    """One external effect, with where it came from."""

    name: str
    data: DurableObject
    execution_id: str
    step_key: str
    attempt: int
    worker: str
    at: float
    idempotency_key: str | None = None
    """Effects with one idempotency key are one effect done several times (the outside service
    deduplicates them), as the steps guide advises for effects a retry may repeat."""
    token: int | None = None
    """The fencing token of the delivery whose body made it: two effects of one step under
    different tokens come from different deliveries (a replay), under one token from retries."""


@dataclass
class Ledger:
    """Every effect step bodies made, in order. Crashes and replays never remove one."""

    effects: list[Effect] = field(default_factory=list)

    def count(self, name: str, **where: object) -> int:
        """How many effects named ``name`` whose data matches ``where``."""
        return sum(
            1
            for effect in self.effects
            if effect.name == name and all(effect.data.get(k) == v for k, v in where.items())
        )

    def named(self, name: str) -> list[Effect]:
        """The effects named ``name``, in order."""
        return [effect for effect in self.effects if effect.name == name]

    def record(
        self,
        context: BodyContext,
        name: str,
        data: DurableObject,
        *,
        at: float,
        idempotency_key: str | None = None,
    ) -> Effect:
        """Append the effect a body made at ``at`` (where it came from is in ``context``)."""
        token = context.lease.token if context.lease is not None else None
        effect = Effect(
            name, data, context.execution_id, context.step_key, context.attempt, context.worker,
            at, idempotency_key, token,
        )  # fmt: skip
        self.effects.append(effect)
        return effect


@dataclass
class WorldStore:
    """The outside world's key-value store: durable JSON values by key, kept as canonical JSON
    so that a value read is a fresh copy (mutating it changes nothing until it is written).

    >>> store = WorldStore()
    >>> store.write("seats_left", 1)
    '1'
    >>> store.read("seats_left"), store.read("holders", [])
    (1, [])
    >>> store.write("bad", object())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: step.world.write('bad', ...) takes a durable JSON value: value: object is not ...
    """

    canonical: dict[str, str] = field(default_factory=dict)
    """Each key's value as canonical JSON (what state fingerprints hash)."""

    def read(self, key: str, default: object = None) -> Any:
        """The value under ``key`` (a fresh copy), or ``default`` when none was written."""
        _check_key(key, "read")
        text = self.canonical.get(key)
        return default if text is None else durable_value_codec.decode(text)

    def write(self, key: str, value: object) -> str:
        """Store ``value`` under ``key``; returns its canonical JSON. Only durable JSON values
        (None, bools, numbers, strings, lists, string-keyed dicts) can be stored."""
        _check_key(key, "write")
        encoded = durable_value_codec.encode(value, path="value")
        if encoded.status == "invalid":
            raise ValueError(
                f"step.world.write({key!r}, ...) takes a durable JSON value: {encoded.message}"
            )
        self.canonical[key] = encoded.canonical
        return encoded.canonical

    def values(self) -> dict[str, Any]:
        """Every key and its value (fresh copies), sorted by key."""
        return {k: durable_value_codec.decode(v) for k, v in sorted(self.canonical.items())}


#: The most options one draw takes: each is a choice point, and the exhaustive search tries
#: every one.
MAX_DRAW_OPTIONS = 16


def _option_label(option: object) -> str:
    """An option as a draw's trace names it: its repr, cut to 40 characters."""
    text = repr(option)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_key(key: object, what: str) -> None:
    if not isinstance(key, str) or not key:
        raise ValueError(f"step.world.{what} takes a non-empty string key, not {key!r}")


class WorldPort(Protocol):
    """Where a body's world operations are carried out (in-process, or across a pipe)."""

    def effect(
        self, context: BodyContext, name: str, data: DurableObject, idempotency_key: str | None
    ) -> None:
        """Append an effect to the ledger."""
        ...

    def trigger(self, context: BodyContext, workflow_id: str, params: object) -> str:
        """Admit an execution with a fresh ID and record the trigger as an effect."""
        ...

    def elapse(self, context: BodyContext, seconds: float) -> None:
        """Let virtual time pass while the body works."""
        ...

    def read(self, context: BodyContext, what: str) -> float:
        """A reading from the world: ``random`` (a number in [0, 1)) or ``clock``."""
        ...

    def get(self, context: BodyContext, key: str, default: object) -> Any:
        """Read ``key`` from the world's key-value store (``default`` when unwritten)."""
        ...

    def put(self, context: BodyContext, key: str, value: object) -> None:
        """Write a durable value under ``key`` in the world's key-value store."""
        ...

    def heartbeat(self, context: BodyContext) -> None:
        """The body is alive: renew the delivery's lease (a refused renewal raises)."""
        ...

    def draw(self, context: BodyContext, options: tuple[str, ...]) -> int:
        """Draw one of ``options`` (their labels): the index of the one drawn."""
        ...


class EngineWorld:
    """The world as the engine carries it out: a ledger, the runtime and its virtual clock."""

    def __init__(
        self,
        runtime: ExecutionClient,
        clock: ManualClock,
        ledger: Ledger,
        *,
        lease_seconds: float = 30.0,
        store: WorldStore | None = None,
    ) -> None:
        self.runtime = runtime
        self.clock = clock
        self.ledger = ledger
        self.lease_seconds = lease_seconds
        self.store = store if store is not None else WorldStore()
        """The key-value store step bodies read and write (``step.world.read``/``write``)."""

    def effect(
        self,
        context: BodyContext,
        name: str,
        data: DurableObject,
        idempotency_key: str | None = None,
    ) -> None:
        """Append an effect to the ledger."""
        self.ledger.record(
            context, name, data, at=self.clock.now(), idempotency_key=idempotency_key
        )

    def trigger(self, context: BodyContext, workflow_id: str, params: object) -> str:
        """Admit an execution with a fresh ID (no request identity: a replay admits another)."""
        execution_id = self.runtime.trigger(workflow_id, params)
        self.effect(context, TRIGGERED, {"workflow_id": workflow_id, "execution_id": execution_id})
        return execution_id

    def elapse(self, context: BodyContext, seconds: float) -> None:
        """Advance the virtual clock, renewing the delivery's lease as a live worker does.

        The renewals are heartbeats: a body that works for longer than a lease keeps its lease
        (a worker that freezes does not, which is RFC 002's story). A lost lease stops the body
        with ``LeaseLostError``, and the delivery rejects.
        """
        remaining = seconds
        while remaining > 0:
            chunk = min(remaining, self.lease_seconds / 2)
            if context.lease is not None:
                self.runtime.renew(context.lease, lease_seconds=self.lease_seconds)
            self.clock.advance(chunk)
            remaining -= chunk

    def read(self, context: BodyContext, what: str) -> float:
        """A random number, or the virtual clock (the engine's only clock)."""
        return random.random() if what == "random" else self.clock.now()

    def get(self, context: BodyContext, key: str, default: object) -> Any:
        """Read ``key`` from the store."""
        return self.store.read(key, default)

    def put(self, context: BodyContext, key: str, value: object) -> None:
        """Write ``key`` in the store."""
        self.store.write(key, value)

    def heartbeat(self, context: BodyContext) -> None:
        """Renew the delivery's lease now. A renewal that fails raises into the body, which
        stops it and rejects the delivery: the engine's workers stop an attempt at its first
        failed renewal (``Scenario.stop_after_failed_renewals`` is the simulator's policy)."""
        if context.lease is not None:
            self.runtime.renew(context.lease, lease_seconds=self.lease_seconds)

    def draw(self, context: BodyContext, options: tuple[str, ...]) -> int:
        """A random option: the engine's draws are Python's (the simulator's are choice
        points)."""
        return random.randrange(len(options))


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
        _check_key(key, "read")
        return self._port.get(context, key, default)

    def write(self, key: str, value: object) -> None:
        """Write a durable JSON value under ``key`` in the outside world's key-value store.
        Crashes never roll a write back; a replayed step writes again."""
        context = self._current("write")
        _check_key(key, "write")
        encoded = durable_value_codec.round_trip(value, path="value")
        if isinstance(encoded, InvalidValue):
            raise ValueError(
                f"step.world.write({key!r}, ...) takes a durable JSON value: {encoded.message}"
            )
        self._port.put(context, key, encoded[1])

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
            return BodyResult(error=_without_frames(error))
        except SystemExit as exit:
            called = ExitCalled.from_exit(exit, f"step body {command.step_key!r}")
            return BodyResult(error=_without_frames(called))
        except BaseException as error:
            if not raised_by_code(error):
                raise  # the toolkit's own way out (a wall-clock limit, a draw), or Ctrl-C
            raised = BaseExceptionRaised.from_base(error, f"step body {command.step_key!r}")
            return BodyResult(error=_without_frames(raised))
        finally:
            self._context = None
        return BodyResult(value=value)
