"""The world a step body acts on inside a simulation: effects into the ledger, triggers,
elapsed time, heartbeats, the clock and random numbers, draws, the key-value store and its
transactions, each traced with the execution, step, worker and fencing token that did it.

A step body runs at once, and what it did lands in time (``attempts.play_body``). Its calls to
the outside world (a store read or write, an effect, a transaction's commit) are ``WorldOp``
entries of what it did: each lands where the body's work reaches it, at a solo point where
the outside world may fail it (a ``world_error``), and a read is read again there. When a
call fails, or a read finds another value than the body got, the body runs again from its
start (``Redo``): every value it was given before that call is handed back (its *tape*), the
call fails or gives the value found, and what the body does from there lands from there on.
What landed before stays landed. So a body's Python code before such a call runs again, as
for a draw; what it did to the world counts once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.codec import InvalidValue, durable_value_codec
from yieldstar_sim.core.frozen import maker
from yieldstar_sim.core.model import WorkflowDefinitionError
from yieldstar_sim.core.ops import Op
from yieldstar_sim.engine.body_world import WorldError
from yieldstar_sim.engine.world import TRIGGERED, WORKFLOW_CODE, BodyContext, WorkerCrashRequested
from yieldstar_sim.simulation.attempts import CRASH_WORKER, HEARTBEAT
from yieldstar_sim.simulation.footprints import LEDGER, stored
from yieldstar_sim.simulation.trace_payloads import (
    EffectData,
    StoreReadData,
    StoreWriteData,
    TraceKind,
    TransactionData,
    WorldReadData,
)
from yieldstar_sim.simulation.trace_values import summary
from yieldstar_sim.simulation.world_ops import WorldOp

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.core.codec import DurableObject
    from yieldstar_sim.core.driver import BodyResult
    from yieldstar_sim.simulation.attempts import BodyOp
    from yieldstar_sim.simulation.state import RunState
    from yieldstar_sim.simulation.world_ops import Redo


class Undecided(BaseException):
    """Raised out of a step body at a draw not decided yet: the body is run again once the
    draw's choice point has decided it. A ``BaseException``, so that a body's ``except
    Exception`` does not catch it."""

    def __init__(self, options: tuple[str, ...]) -> None:
        super().__init__(f"a draw of {len(options)} options, not decided yet")
        self.options = options


@dataclass(frozen=True, slots=True)
class DrawAsked:
    """What a body's run came to when it stopped at a draw not decided yet: the draw's options
    (their labels). Nothing the run did was kept."""

    options: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Ran:
    """What one run of a step body came to: its result, what it did (to land in time), the
    seconds it took, whether it admitted an execution, every value it was given (its tape)
    and its clock at its start (both for running it again: ``Redo``)."""

    result: BodyResult
    ops: list[BodyOp]
    elapsed: float
    admitted: bool
    tape: tuple[Any, ...]
    clock: float


#: A Ran is made at every run of a step body (``core.frozen``).
new_ran = Ran if TYPE_CHECKING else maker(Ran)  # calls type-checked as Ran(...)
#: Each effect of each body is traced with one.
_new_effect_data = EffectData if TYPE_CHECKING else maker(EffectData)


class SimPort:
    """Carries out a step body's world operations inside the simulation (the engine's
    ``BodyWorld`` calls it)."""

    def __init__(self, state: RunState) -> None:
        self.state = state
        self.elapsed = 0.0
        self.admitted = False
        self.ops: list[BodyOp] | None = None
        """What the running step body did, to land in time (``attempts.play_body``)."""
        self.decided: tuple[int, ...] = ()
        """The options drawn so far for the running body's draws, in order (its run is
        stopped at a draw past them, ``Undecided``, until that draw's point decides it)."""
        self.drawn = 0
        """How many draws the running body made so far."""
        self.calls = 0
        """How many calls to the outside world the running body made so far (``WorldOp``)."""
        self.tape: list[Any] = []
        """Every value the running body was given so far (reads, random numbers, admissions),
        in order."""
        self.replay: tuple[Any, ...] = ()
        """The values a body run again is handed back before any is computed (``Redo``)."""
        self.fail: int | None = None
        """The call to the outside world that fails in this run (``Redo``), by number."""
        self.pending: dict[str, str] = {}
        """The running body's own writes so far, as canonical JSON: its reads see them."""
        self.clock = 0.0
        """The worker's clock when the body first started: ``now()`` reads it plus the work
        done so far."""

    def begin(self, decided: tuple[int, ...], redo: Redo | None, clock: float) -> None:
        """Get ready for a run of a body: its draws ``decided`` so far, and ``redo`` when it
        runs again from a call where its playback stopped (``clock``: the worker's clock now,
        for a first run)."""
        self.elapsed, self.admitted, self.ops = 0.0, False, []
        self.decided, self.drawn = decided, 0
        self.calls, self.tape, self.pending = 0, [], {}
        self.replay = () if redo is None else redo.tape
        self.fail = None if redo is None else redo.fail
        self.clock = clock if redo is None else redo.clock

    def _taped(self, compute: Callable[[], Any]) -> Any:
        """The body's next value: handed back from ``replay``, else computed; on the tape."""
        at = len(self.tape)
        value = self.replay[at] if at < len(self.replay) else compute()
        self.tape.append(value)
        return value

    def _call(self, context: BodyContext, what: str) -> int:
        """Number the body's next call to the outside world (``what``, in words); raise
        ``WorldError`` if it is the one that fails in this run."""
        number = self.calls
        self.calls += 1
        if number == self.fail:
            raise WorldError(
                f"the outside world failed {what} of step {context.step_key} (attempt "
                f"{context.attempt}): nothing of it happened"
            )
        return number

    def effect(
        self,
        context: BodyContext,
        name: str,
        data: DurableObject,
        idempotency_key: str | None = None,
    ) -> None:
        ops = self.ops
        if ops is not None:
            number = self._call(context, f"step.world.effect({name!r})")
            land = partial(self._land, context, name, data, idempotency_key, 0.0)
            ops.append(WorldOp(Op.EFFECT, number, len(self.tape), name, land))
        else:
            # Workflow code's (outside any step): told, so that its code made again on a
            # restore writes nothing twice.
            self.state.tell(self._land, context, name, data, idempotency_key, self.elapsed)

    def _land(
        self,
        context: BodyContext,
        name: str,
        data: DurableObject,
        idempotency_key: str | None,
        elapsed: float,
    ) -> None:
        sim = self.state
        if sim.touches is not None:
            sim.touches.write(LEDGER)
        now = sim.clock.now()
        at = now + elapsed
        token = sim.ledger.record(context, name, data, at=at, idempotency_key=idempotency_key).token
        text = f"effect {name} {summary(data)}"
        in_workflow_code = context.step_key == WORKFLOW_CODE
        if in_workflow_code:
            text += " in workflow code, outside any step"
        behind = sim.clocks.behind.get(context.worker)
        if behind:
            text += f" ({context.worker}'s clock reads t={sim.clocks.now(context.worker):g})"
        if elapsed > 0:
            # Workflow code that let time pass runs atomically at ``now``; the trace stays in
            # time order, and the moment the effect happened is kept beside it.
            text += f" (at t={at:g}, {elapsed:g}s into the body)"
        details = _new_effect_data(
            name, data, context.attempt, idempotency_key, in_workflow_code,
            at if elapsed > 0 else None,
        )  # fmt: skip
        sim.trace.add(
            now, TraceKind.EFFECT, text, worker=context.worker, execution_id=context.execution_id,
            step_key=context.step_key, token=token, data=details,
        )  # fmt: skip

    # Reads are asked through ``RunState.ask`` (a body's are inside its own answer; workflow
    # code's are told again when its worker is made again) and writes are told.

    def trigger(self, context: BodyContext, workflow_id: str, params: object) -> str:
        ops = self.ops
        if ops is None:
            return self.state.ask(self._trigger, context, workflow_id, params)
        # Admitted at once (it cannot wait for the work, and cannot be taken back): a body
        # run again is handed back the execution it admitted.
        execution_id: str = self._taped(partial(self._admit, context, workflow_id, params))
        recorded: DurableObject = {"workflow_id": workflow_id, "execution_id": execution_id}
        ops.append(partial(self._land, context, TRIGGERED, recorded, None, 0.0))
        return execution_id

    def _trigger(self, context: BodyContext, workflow_id: str, params: object) -> str:
        execution_id = self._admit(context, workflow_id, params)
        recorded: DurableObject = {"workflow_id": workflow_id, "execution_id": execution_id}
        self.state.tell(self._land, context, TRIGGERED, recorded, None, self.elapsed)
        return execution_id

    def _admit(self, context: BodyContext, workflow_id: str, params: object) -> str:
        execution_id = self.state.runtime.trigger(workflow_id, params)
        self.admitted = True
        self.state.observe_admission(
            execution_id, "body trigger", (context.execution_id, context.step_key)
        )
        return execution_id

    def elapse(self, context: BodyContext, seconds: float) -> None:
        self.elapsed += seconds
        if self.ops is not None:
            self.ops.append(float(seconds))  # a choice point when the body is played back

    def heartbeat(self, context: BodyContext) -> None:
        if self.ops is None:  # pragma: no cover - BodyWorld refuses it outside a body
            raise WorkflowDefinitionError("step.heartbeat() belongs in a step body")
        self.ops.append(HEARTBEAT)  # a choice point when the body is played back

    def crash_worker(self, context: BodyContext) -> None:
        if self.ops is None:  # pragma: no cover - BodyWorld refuses it outside a body
            raise WorkflowDefinitionError("step.world.crash_worker() belongs in a step body")
        # The worker dies where the work reaches it (``attempts.play_body``); the body's code
        # stops here.
        self.ops.append(CRASH_WORKER)
        raise WorkerCrashRequested(f"step {context.step_key} crashed its worker")

    def draw(self, context: BodyContext, options: tuple[str, ...]) -> int:
        if self.ops is None:  # pragma: no cover - BodyWorld refuses it outside a body
            raise WorkflowDefinitionError("step.world.choice belongs in a step body")
        number = self.drawn
        self.drawn += 1
        if number < len(self.decided):
            return self.decided[number]
        if self.admitted:
            # The run that stops here is taken back, and an admission cannot be.
            raise WorkflowDefinitionError(
                f"step {context.step_key} draws (step.world.choice or coin) after its "
                "step.world.trigger: a body that draws is run again once its draw is decided, "
                "and the execution it admitted cannot be taken back; draw first"
            )
        raise Undecided(options)

    def read(self, context: BodyContext, what: str) -> float:
        ops = self.ops
        if ops is None:
            return self.state.ask(self._read, context, what)
        if what == "random":
            value: float = self._taped(self.state.world_random)
        else:
            # The body's clock is the worker's when it first started (a skewed worker reads its
            # own) plus the work so far: the same in a run of it again, mid-playback.
            value = self._taped(partial(float, self.clock + self.elapsed))
        ops.append(partial(self._traced_read, context, what, value))
        return value

    def _read(self, context: BodyContext, what: str) -> float:
        sim = self.state
        clock = sim.clocks.now(context.worker)  # a skewed worker reads its own clock
        value = sim.world_random() if what == "random" else clock + self.elapsed
        self._traced_read(context, what, value)
        return value

    def _traced_read(self, context: BodyContext, what: str, value: float) -> None:
        sim = self.state
        where = (
            "workflow code, outside any step"
            if context.step_key == WORKFLOW_CODE
            else f"step {context.step_key}"
        )
        call = "random()" if what == "random" else "now()"
        sim.trace.add(
            sim.clock.now(), TraceKind.WORLD, f"{where} read step.world.{call}: {value:.6g}",
            worker=context.worker, execution_id=context.execution_id, step_key=context.step_key,
            token=context.lease.token if context.lease is not None else None,
            data=WorldReadData(what, value, context.step_key == WORKFLOW_CODE),
        )  # fmt: skip

    def get(self, context: BodyContext, key: str, default: object) -> Any:
        ops = self.ops
        if ops is None:
            return self.state.ask(self._get, context, key, default)
        number = self._call(context, f"step.world.read({key!r})")
        at = len(self.tape)
        seen: tuple[bool, str | None] = self._taped(partial(self._peek, key))
        land = partial(self._traced_get, context, key, default, seen)
        ops.append(WorldOp(Op.STORE_READ, number, at, key, land, key=key, seen=seen))
        found, text = seen
        return durable_value_codec.decode(text) if found and text is not None else default

    def _peek(self, key: str) -> tuple[bool, str | None]:
        """What a read of ``key`` gives now: the body's own write, else the store's value (as
        canonical JSON), and whether there was one."""
        text = self.pending.get(key)
        if text is None:
            touches = self.state.touches
            if touches is not None:
                touches.read(stored(key))
            text = self.state.store.canonical.get(key)
        return text is not None, text

    def _get(self, context: BodyContext, key: str, default: object) -> Any:
        seen = self._peek(key)
        self._traced_get(context, key, default, seen)
        found, text = seen
        return durable_value_codec.decode(text) if found and text is not None else default

    def _traced_get(
        self, context: BodyContext, key: str, default: object, seen: tuple[bool, str | None]
    ) -> None:
        sim = self.state
        found, text = seen
        value = durable_value_codec.decode(text) if found and text is not None else None
        shown = summary(value) if found else f"nothing (default {summary(default)})"
        sim.trace.add(
            sim.clock.now(), TraceKind.STORE_READ,
            f"step {context.step_key} read {key}: {shown}",
            worker=context.worker, execution_id=context.execution_id, step_key=context.step_key,
            token=context.lease.token if context.lease is not None else None,
            data=StoreReadData(key, value, found, context.attempt),
        )  # fmt: skip

    def put(self, context: BodyContext, key: str, value: object) -> None:
        ops = self.ops
        if ops is None:
            self.state.tell(self._put, context, key, value)
            return
        number = self._call(context, f"step.world.write({key!r}, ...)")
        self.pending[key] = _canonical(value)
        land = partial(self._put, context, key, value)
        ops.append(WorldOp(Op.STORE_WRITE, number, len(self.tape), key, land))

    def commit(self, context: BodyContext, writes: dict[str, object]) -> None:
        ops = self.ops
        if ops is None:  # pragma: no cover - BodyWorld refuses a transaction outside a body
            raise WorkflowDefinitionError("step.world.transaction() belongs in a step body")
        keys = ", ".join(writes)
        number = self._call(context, f"the commit of its transaction (writing {keys})")
        for key, value in writes.items():
            self.pending[key] = _canonical(value)
        land = partial(self._commit, context, dict(writes))
        ops.append(WorldOp(Op.COMMIT, number, len(self.tape), keys, land))

    def rollback(self, context: BodyContext, keys: tuple[str, ...], reason: str) -> None:
        if self.ops is not None:
            self.ops.append(partial(self._rolled_back, context, keys, reason))

    def _put(
        self, context: BodyContext, key: str, value: object, *, committed: bool = False
    ) -> None:
        sim = self.state
        if sim.touches is not None:
            sim.touches.write(stored(key))
        previous = sim.store.read(key)
        sim.store.write(key, value)
        sim.trace.add(
            sim.clock.now(), TraceKind.STORE_WRITE,
            f"step {context.step_key} wrote {key}: {summary(value)}"
            + (" (its transaction's commit)" if committed else ""),
            worker=context.worker, execution_id=context.execution_id, step_key=context.step_key,
            token=context.lease.token if context.lease is not None else None,
            data=StoreWriteData(key, sim.store.read(key), previous, context.attempt),
        )  # fmt: skip

    def _commit(self, context: BodyContext, writes: dict[str, object]) -> None:
        for key, value in writes.items():
            self._put(context, key, value, committed=True)
        self._transaction_event(context, tuple(writes), None)

    def _rolled_back(self, context: BodyContext, keys: tuple[str, ...], reason: str) -> None:
        self._transaction_event(context, keys, reason)

    def _transaction_event(
        self, context: BodyContext, keys: tuple[str, ...], reason: str | None
    ) -> None:
        sim = self.state
        writes = f"{len(keys)} write{'s' if len(keys) != 1 else ''} ({', '.join(keys)})"
        text = (
            f"step {context.step_key}'s transaction commits {writes}"
            if reason is None
            else f"step {context.step_key}'s transaction rolls back {writes}: {reason}"
        )
        sim.trace.add(
            sim.clock.now(), TraceKind.TRANSACTION, text,
            worker=context.worker, execution_id=context.execution_id, step_key=context.step_key,
            token=context.lease.token if context.lease is not None else None,
            data=TransactionData(keys, reason is None, reason, context.attempt),
        )  # fmt: skip


def _canonical(value: object) -> str:
    """A value the body world has checked already, as canonical JSON."""
    encoded = durable_value_codec.encode(value)
    assert not isinstance(encoded, InvalidValue), encoded.message
    return encoded.canonical
