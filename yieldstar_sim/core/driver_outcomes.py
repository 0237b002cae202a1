"""How a delivery of workflow code ends: the outcome of code that returned, raised, or was
found ended, and the workflow-code mistakes named there (a verb never run, or iterated by the
code itself; a result that is not durable). ``core.driver`` is their one caller."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.core.codec import InvalidValue, durable_value_codec
from yieldstar_sim.core.error_words import error_words
from yieldstar_sim.core.model import (
    BaseExceptionRaised,
    Cancelled,
    Completed,
    ErrorInfo,
    ExecutionStatus,
    ExitCalled,
    Failed,
    WorkflowCancelledError,
    WorkflowDefinitionError,
)

if TYPE_CHECKING:
    from collections.abc import Container

    from yieldstar_sim.core.authoring import StepRunner
    from yieldstar_sim.core.codec import DurableValue
    from yieldstar_sim.core.model import WorkflowRunOutcome


def raised(
    error: BaseException,
    runner: StepRunner,
    performed: Container[int],
    *,
    cancel_recorded: bool,
    code: str,
) -> WorkflowRunOutcome:
    """The outcome of workflow ``code`` that raised ``error``, called or resumed alike;
    ``performed`` holds the ids of the requests the code yielded to the driver, and
    ``cancel_recorded`` says whether a cancellation request is recorded."""
    iterated = runner.iterated_by_code(performed)
    if iterated is not None:  # what it raised follows from the mistake: name the mistake
        return failed(
            WorkflowDefinitionError(
                f"{_iterated(runner.execution_id, iterated)} (it then raised {error_words(error)})"
            )
        )
    if isinstance(error, SystemExit):
        return failed(ExitCalled.from_exit(error, code))
    if not isinstance(error, Exception):  # GeneratorExit, a KeyboardInterrupt of its own...
        return failed(BaseExceptionRaised.from_base(error, code))
    # RFC 003: cancelled means thrown *after a recorded cancellation request*; workflow code
    # that raises it on its own has failed like any other error.
    if isinstance(error, WorkflowCancelledError) and cancel_recorded:
        return Cancelled()
    return failed(error)


def failed(error: BaseException) -> Failed:
    """The outcome of an execution that failed with ``error``."""
    return Failed(ErrorInfo.from_exception(error), exception=error)


def _iterated(execution_id: str, verb: str) -> str:
    """The mistake of workflow ``execution_id`` that iterated ``verb`` (``step.run('book')``,
    ``step.all(...)``) itself: ``receipt, label = step.all([...])`` unpacks the verb's
    generator, as ``asyncio.gather`` would be awaited."""
    name = verb.split("(", maxsplit=1)[0]
    lost = "its steps never ran" if name == "step.all" else "the step never ran"
    return (
        f"workflow {execution_id!r} iterated {verb} itself instead of running it, so {lost}: "
        f"write `value = yield from {name}(...)` (the verbs are generators)"
    )


def completed(
    execution_id: str, result: object, runner: StepRunner, performed: Container[int]
) -> WorkflowRunOutcome:
    """The outcome of workflow code that returned ``result``: completed, unless it left a
    verb unrun or iterated one itself, or the result is not durable."""
    iterated = runner.iterated_by_code(performed)
    if iterated is not None:
        return failed(WorkflowDefinitionError(_iterated(execution_id, iterated)))
    forgotten = runner.never_run()
    if forgotten:
        return failed(
            WorkflowDefinitionError(
                f"workflow {execution_id!r} called step {forgotten[0]!r} without running it: "
                "write `value = yield from step.run(...)` (the verbs are generators)"
            )
        )
    encoding = durable_value_codec.round_trip(result, path="result")
    if isinstance(encoding, InvalidValue):
        return failed(
            WorkflowDefinitionError(
                f"workflow {execution_id!r} returned a value that is not durable: "
                f"{encoding.message}"
            )
        )
    return Completed(encoding[1])


def recorded_outcome(
    status: ExecutionStatus, result: DurableValue, error: ErrorInfo | None
) -> WorkflowRunOutcome:
    """The outcome an ended execution's record already holds."""
    if status == ExecutionStatus.COMPLETED:
        return Completed(result)
    if status == ExecutionStatus.CANCELLED:
        return Cancelled()
    return Failed(error or ErrorInfo("Error", "failed"))
