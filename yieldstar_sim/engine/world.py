"""The outside world that step bodies act on, and the ledger of what they did.

Effects go to a ledger that crashes never roll back, so a duplicate effect stays visible. Each
effect carries its provenance: the execution, step key and attempt whose body made it, the
worker that ran it and the virtual time. A small key-value store (``step.world.read`` and
``step.world.write``) holds the outside state that workflows race on: a stock level, a
balance, a flag in another service. Like the ledger, crashes never roll it back. What a step
body sees of it, ``step.world``, is ``body_world.BodyWorld``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from yieldstar_sim.core.codec import DurableObject, durable_value_codec
from yieldstar_sim.core.frozen import maker

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


#: Every effect of every run is noted with one (``core.frozen``).
_new_effect = Effect if TYPE_CHECKING else maker(Effect)


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
        effect = _new_effect(
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
        check_key(key, "read")
        text = self.canonical.get(key)
        return default if text is None else durable_value_codec.decode(text)

    def write(self, key: str, value: object) -> str:
        """Store ``value`` under ``key``; returns its canonical JSON. Only durable JSON values
        (None, bools, numbers, strings, lists, string-keyed dicts) can be stored."""
        check_key(key, "write")
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


def check_key(key: object, what: str) -> None:
    """Refuse a store key that is not a non-empty string, naming the call (``read``/``write``)."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"step.world.{what} takes a non-empty string key, not {key!r}")


class WorkerCrashRequested(BaseException):
    """Raised out of a step body by ``step.world.crash_worker()``: the worker running it dies
    there. A ``BaseException``, so that the body's ``except Exception`` cannot catch it; it
    is never a step failure or an outcome (the delivery ends with neither, and its lease runs
    out)."""


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

    def commit(self, context: BodyContext, writes: dict[str, object]) -> None:
        """Write every key of a transaction together (``WorldError``: none of them)."""
        ...

    def crash_worker(self, context: BodyContext) -> None:
        """The body crashes the worker running it: raise ``WorkerCrashRequested`` (or end
        the process), never return."""
        ...

    def rollback(self, context: BodyContext, keys: tuple[str, ...], reason: str) -> None:
        """A transaction ended without its writes (``keys``), for ``reason``: nothing lands."""
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

    def crash_worker(self, context: BodyContext) -> None:
        """The in-process worker dies: its dispatcher gives up the delivery with neither an
        outcome nor a release, so its lease runs out and the execution is recovered."""
        raise WorkerCrashRequested(
            f"step {context.step_key} of {context.execution_id} crashed its worker"
        )

    def commit(self, context: BodyContext, writes: dict[str, object]) -> None:
        """Write a transaction's keys, together (nothing runs between them here)."""
        for key, value in writes.items():
            self.store.write(key, value)

    def rollback(self, context: BodyContext, keys: tuple[str, ...], reason: str) -> None:
        """Nothing was written: a transaction's writes wait for its commit."""
