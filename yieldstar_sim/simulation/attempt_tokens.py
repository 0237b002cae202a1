"""An attempt that completes by its own token when its worker has given up on it.

A step declared ``completes_by_token()`` records each attempt's result through the attempt's
own runtime call, ``complete_attempt``, under its attempt token (``core.attempts``). Its
worker makes that call when the attempt ends in its delivery (the driver's
``CompleteAttempt``). An attempt its worker gave up on at its timeout (a stall outlasted it:
``attempts._elapse``) hangs on apart, and when it ends it makes the call too, as a Temporal
activity that timed out still reports its completion by its task token: a choice point of its
own (op ``complete_attempt``), where every call fault applies. A runtime that fences by the
attempt refuses it; one that does not takes an earlier attempt's result as the step's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.attempts import AttemptToken
from yieldstar_sim.core.codec import InvalidValue, durable_value_codec
from yieldstar_sim.core.model import InfrastructureError
from yieldstar_sim.core.ops import Op
from yieldstar_sim.engine.body_world import without_frames
from yieldstar_sim.runtime.protocol import attempts_of
from yieldstar_sim.simulation.faults import new_point_info
from yieldstar_sim.simulation.narration import completion_data
from yieldstar_sim.simulation.points import WorkerCrashed, call
from yieldstar_sim.simulation.trace_payloads import TraceKind
from yieldstar_sim.simulation.trace_values import summary

if TYPE_CHECKING:
    from collections.abc import Generator

    from yieldstar_sim.core.codec import DurableValue
    from yieldstar_sim.core.commands import BodyResult, RunBody
    from yieldstar_sim.core.model import Lease
    from yieldstar_sim.simulation.points import Where
    from yieldstar_sim.simulation.state import RunState


@dataclass(frozen=True, slots=True)
class OwnCompletion:
    """What an attempt that completes by its token reports when it ends: its step, its
    attempt number and the value its body returned (plain data)."""

    step_key: str
    attempt: int
    value: DurableValue


def own_completion(command: RunBody, result: BodyResult) -> OwnCompletion | None:
    """What the attempt ``command`` ran reports by its token when it ends: ``None`` for a
    step that does not complete by token, a body that raised, or one whose value is no plain
    data (the driver fails such a step: nothing to complete)."""
    if not command.completes_by_token or result.error is not None:
        return None
    step_key = command.step_key
    encoded = durable_value_codec.round_trip(result.value, path=f"step {step_key!r} result")
    if isinstance(encoded, InvalidValue):
        return None
    return OwnCompletion(step_key, command.attempt, encoded[1])


def complete_abandoned(
    state: RunState, lease: Lease, where: Where, completion: OwnCompletion
) -> Generator[Any, Any, None]:
    """The ``complete_attempt`` call of an attempt its worker gave up on, under the lease it
    started under; a refusal, a failure or a crash there ends the attempt, nothing more (its
    worker owns the delivery and has moved on)."""
    step_key, attempt, value = completion.step_key, completion.attempt, completion.value
    token = AttemptToken(lease, step_key, attempt)
    info = new_point_info(where["worker"], Op.COMPLETE_ATTEMPT, lease.execution_id, step_key)
    try:
        yield from call(
            state, info,
            lambda: attempts_of(state.runtime).complete_attempt(token, value),
            token=lease.token,
            done=f"attempt {attempt} completed step {step_key}: {summary(value)}",
            data=lambda _: completion_data(attempt, value),
        )  # fmt: skip
    except WorkerCrashed:
        state.event(
            state.clock.now(), TraceKind.CRASH,
            "the attempt its worker gave up on dies with its process's crash fault",
            **{**where, "op": Op.COMPLETE_ATTEMPT, "point": None},
        )  # fmt: skip
    except InfrastructureError as refused:
        # Refused (a stale attempt) or failed: the call's event says which. Its traceback
        # holds this run's frames: without it, a finished run is freed at once.
        without_frames(refused)
