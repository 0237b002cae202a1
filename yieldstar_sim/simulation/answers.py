"""What a client's request and a sender's event share around one runtime call: the call
asked, an infrastructure error traced, what the runtime decided meanwhile, and what the
attempt comes to (``answered``, ``retry`` or ``crashed``).

``clients.py`` and ``senders.py`` differ in what they call and in the faults before the call;
from the call on, an attempt ends the same way, and so does its trace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.model import InfrastructureError
from yieldstar_sim.simulation.faults import FaultKind
from yieldstar_sim.simulation.kernel import Wait
from yieldstar_sim.simulation.runtime_actions import trace_actions
from yieldstar_sim.simulation.trace_payloads import ErrorData, TraceKind

if TYPE_CHECKING:
    from collections.abc import Callable, Generator

    from yieldstar_sim.simulation.scenario_clients import ClientRetry
    from yieldstar_sim.simulation.state import RunState


def trace_failure(sim: RunState, action: str, error: str, where: dict[str, Any]) -> None:
    """Trace that the call ``action`` failed with ``error``: a planned infrastructure error
    before the call, or one the runtime raised."""
    sim.event(
        sim.clock.now(), TraceKind.ERROR, f"{action} failed: {error}",
        data=ErrorData(error), **where,
    )  # fmt: skip


def ask_runtime(
    sim: RunState,
    action: str,
    where: dict[str, Any],
    call: Callable[..., object],
    *args: Any,
    **kwargs: Any,
) -> bool:
    """Ask ``call(*args, where, **kwargs)`` (one answer: the call, what it answered, what the
    caller wrote of it) and trace what the runtime decided on its own meanwhile; False when
    the runtime raised an infrastructure error, which is traced."""
    try:
        sim.ask(call, *args, where, **kwargs)
    except InfrastructureError as failed:
        trace_failure(sim, action, str(failed), where)
        seen = False
    else:
        seen = True
    if sim.reports:
        sim.tell(trace_actions, sim)
    return seen


def answered(kind: FaultKind | None, seen: bool, lost: bool) -> str:
    """What an attempt that reached the runtime comes to: ``crashed`` when its caller crashes
    after the call, ``answered`` when the answer came back, ``retry`` otherwise."""
    if kind == FaultKind.CRASH_AFTER:
        return "crashed"
    return "answered" if seen and not lost else "retry"


def attempts(
    sim: RunState,
    retry: ClientRetry,
    attempt: Callable[[int], Generator[Any, Any, str]],
    give_up: Callable[[int, str], None],
) -> Generator[Any, Any, bool]:
    """Make ``attempt(n)`` until one is answered or ``retry``'s attempts are used up, its
    backoff between two; ``give_up(n, why)`` where it ends otherwise. True when the caller
    crashed."""
    for number in range(1, retry.attempts + 1):
        if number > 1:
            yield Wait(sim.clock.now() + retry.backoff)
        outcome = yield from attempt(number)
        if outcome == "answered":
            return False
        if outcome == "crashed":
            give_up(number, "crashed")
            return True
    give_up(retry.attempts, "attempts used up")
    return False
