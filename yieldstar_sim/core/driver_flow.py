"""The driver's control flow between a step and ``drive``: suspend the delivery, throw an error
into workflow code, or end it because the code left its recorded path. ``core.driver`` and
``core.driver_groups`` both raise them, check step keys with ``check_step_key``, and watch a
step's commands go by with ``relay``; ``Replay`` is what a delivery found recorded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.ids import control_match
from yieldstar_sim.core.model import NondeterminismError, StepKeyError

if TYPE_CHECKING:
    from collections.abc import Callable, Container, Generator

    from yieldstar_sim.core.commands import Command
    from yieldstar_sim.core.model import StepRecord


class Suspend(Exception):
    """The unfinished step and its wake are recorded: end the delivery as suspended."""


class Throw(Exception):
    """Throw ``error`` into workflow code at the step it is waiting on."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class Diverged(Exception):
    """The code took another path than the record: end the delivery failed at once.

    Not thrown into workflow code: code that caught it would go on writing steps against a
    history that no longer matches it.
    """

    def __init__(self, error: NondeterminismError) -> None:
        super().__init__(str(error))
        self.error = error


class Replay:
    """The recorded steps of one execution and the order the code reaches steps in."""

    def __init__(self, execution_id: str, steps: tuple[StepRecord, ...]) -> None:
        self.execution_id = execution_id
        self.recorded = sorted(steps, key=lambda step: step.position)
        self.by_key = {step.step_key: step for step in steps}
        self.reached: set[str] = set()

    def cancel_delivered(self) -> bool:
        """Whether a cancellation was already thrown into this execution (and recorded)."""
        return any(
            step.status == "failed" and isinstance(step.value, dict) and step.value.get("cancelled")
            for step in self.recorded
        )

    def reach(self, key: object) -> StepRecord | None:
        """Check the step key the code asks for next; return its record, if any."""
        key = check_step_key(key, self.reached, self.execution_id)
        position = len(self.reached)
        self.reached.add(key)
        recorded = self.recorded[position].step_key if position < len(self.recorded) else None
        if recorded is not None and recorded != key:
            raise Diverged(NondeterminismError(self.execution_id, position, recorded, key))
        return self.by_key.get(key) if recorded is not None else None


def check_step_key(key: object, reached: Container[str], execution_id: str) -> str:
    """``key``, when it can name the next step of ``execution_id``: a non-empty string with no
    control character that no step reached so far (``reached``) has; else ``Throw`` of the
    ``StepKeyError`` that says why, into the code that asked for it."""
    if not isinstance(key, str) or not key:
        raise Throw(StepKeyError(f"a step key must be a non-empty string, not {key!r}"))
    if control_match(key) is not None:
        raise Throw(StepKeyError(f"step key {key!r} contains an ASCII control character"))
    if key in reached:
        raise Throw(
            StepKeyError(
                f"step key {key!r} is used twice in execution {execution_id!r}; "
                "each step needs its own key (e.g. add the item or the loop index)"
            )
        )
    return key


def relay(
    steps: Generator[Command, Any, Any], each: Callable[[Command], Command]
) -> Generator[Command, Any, Any]:
    """``yield from steps``, with each command it yields passed through ``each`` on its way out
    (to note it or rewrite it): answers and errors go back in as ``yield from`` sends them, and
    closing the relay closes ``steps``."""
    value: Any = None
    error: list[BaseException] = []  # taken out as thrown: see ``step_delivery``
    while True:
        try:
            command = steps.throw(error.pop()) if error else steps.send(value)
        except StopIteration as stop:
            return stop.value
        value = None
        try:
            value = yield each(command)
        except GeneratorExit:
            steps.close()
            raise
        except BaseException as raised:  # a runtime call's error: the steps' to handle
            error.append(raised)
