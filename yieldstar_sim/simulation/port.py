"""The world a step body acts on inside a simulation: effects into the ledger, triggers,
elapsed time, heartbeats, the clock and random numbers, draws, the key-value store, each
traced with the execution, step, worker and fencing token that did it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.model import WorkflowDefinitionError
from yieldstar_sim.engine.world import TRIGGERED, WORKFLOW_CODE, BodyContext
from yieldstar_sim.simulation.attempts import HEARTBEAT
from yieldstar_sim.simulation.trace_payloads import (
    EffectData,
    StoreReadData,
    StoreWriteData,
    TraceKind,
    WorldReadData,
)
from yieldstar_sim.simulation.trace_values import summary

if TYPE_CHECKING:
    from yieldstar_sim.core.codec import DurableObject
    from yieldstar_sim.simulation.attempts import BodyOp
    from yieldstar_sim.simulation.state import RunState


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

    def effect(
        self,
        context: BodyContext,
        name: str,
        data: DurableObject,
        idempotency_key: str | None = None,
    ) -> None:
        if self.ops is not None:
            self.ops.append(lambda: self._land(context, name, data, idempotency_key, 0.0))
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
        details = EffectData(
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
        return self.state.ask(self._trigger, context, workflow_id, params)

    def _trigger(self, context: BodyContext, workflow_id: str, params: object) -> str:
        execution_id = self.state.runtime.trigger(workflow_id, params)
        self.admitted = True
        self.effect(context, TRIGGERED, {"workflow_id": workflow_id, "execution_id": execution_id})
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
        return self.state.ask(self._read, context, what)

    def _read(self, context: BodyContext, what: str) -> float:
        sim = self.state
        clock = sim.clocks.now(context.worker)  # a skewed worker reads its own clock
        value = sim.world_random() if what == "random" else clock + self.elapsed
        if self.ops is not None:
            self.ops.append(lambda: self._traced_read(context, what, value))
        else:
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
        return self.state.ask(self._get, context, key, default)

    def _get(self, context: BodyContext, key: str, default: object) -> Any:
        sim = self.state
        found = key in sim.store.canonical
        value = sim.store.read(key, default)
        shown = summary(value) if found else f"nothing (default {summary(default)})"
        sim.trace.add(
            sim.clock.now(), TraceKind.STORE_READ,
            f"step {context.step_key} read {key}: {shown}",
            worker=context.worker, execution_id=context.execution_id, step_key=context.step_key,
            token=context.lease.token if context.lease is not None else None,
            data=StoreReadData(key, sim.store.read(key) if found else None, found,
                               context.attempt),
        )  # fmt: skip
        return value

    def put(self, context: BodyContext, key: str, value: object) -> None:
        self.state.tell(self._put, context, key, value)

    def _put(self, context: BodyContext, key: str, value: object) -> None:
        sim = self.state
        previous = sim.store.read(key)
        sim.store.write(key, value)
        sim.trace.add(
            sim.clock.now(), TraceKind.STORE_WRITE,
            f"step {context.step_key} wrote {key}: {summary(value)}",
            worker=context.worker, execution_id=context.execution_id, step_key=context.step_key,
            token=context.lease.token if context.lease is not None else None,
            data=StoreWriteData(key, sim.store.read(key), previous, context.attempt),
        )  # fmt: skip
