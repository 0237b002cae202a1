"""How a delivery of workflow code ends: the outcome of code that returned, raised, or was
found ended, and the workflow-code mistakes named there (a verb never run, or iterated by the
code itself; a result that is not durable). ``core.driver`` is their one caller."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.core.codec import InvalidValue, durable_value_codec
from yieldstar_sim.core.error_words import error_words
from yieldstar_sim.core.model import (
    STEP_NOT_RUN,
    BaseExceptionRaised,
    Cancelled,
    Completed,
    ContinuedAsNew,
    DeadLettered,
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
    then = f" (it then raised {error_words(error)})"
    iterated = runner.iterated_by_code(performed)
    if iterated is not None:  # what it raised follows from the mistake: name the mistake
        return failed(_not_run(f"{_iterated(runner, iterated)}{then}"))
    if isinstance(error, SystemExit):
        return failed(ExitCalled.from_exit(error, code))
    if not isinstance(error, Exception):  # GeneratorExit, a KeyboardInterrupt of its own...
        return failed(BaseExceptionRaised.from_base(error, code))
    # RFC 003: cancelled means thrown *after a recorded cancellation request*; workflow code
    # that raises it on its own has failed like any other error.
    if isinstance(error, WorkflowCancelledError) and cancel_recorded:
        return Cancelled()
    forgotten = runner.never_run()
    if forgotten:
        # ``target = step.start(...)`` then ``target.execution_id`` raised AttributeError
        # about a generator: the error follows from the verb never run, which is the fix.
        return failed(_not_run(f"{_never_run(runner, forgotten[0])}{then}"))
    return failed(error)


def failed(error: BaseException) -> Failed:
    """The outcome of an execution that failed with ``error``."""
    return Failed(ErrorInfo.from_exception(error), exception=error)


def _not_run(message: str) -> WorkflowDefinitionError:
    return WorkflowDefinitionError(message, code=STEP_NOT_RUN)


def _iterated(runner: StepRunner, iterated: tuple[str, str]) -> str:
    """The mistake of workflow code that iterated a verb (``step.run('book')``,
    ``step.all(...)``) itself: ``receipt, label = step.all([...])`` unpacks the verb's
    generator, as ``asyncio.gather`` would be awaited."""
    verb, where = iterated
    lost = "its steps never ran" if verb.startswith("step.all") else "the step never ran"
    return (
        f"workflow {runner.execution_id!r} iterated {verb} itself{where} instead of running "
        f"it, so {lost}: write `{_run_as(verb)}` (the verbs are generators)"
    )


def _never_run(runner: StepRunner, generator: object) -> str:
    """The mistake of workflow code that called a verb and never ran it (no ``yield from``),
    named by verb, step key and line."""
    verb = runner.verb_of(generator) or "a step verb"
    return (
        f"workflow {runner.execution_id!r} called {verb}{runner.called_at(generator)} without "
        f"`yield from`, so the step never ran: write `{_run_as(verb)}` (the verbs are "
        "generators)"
    )


#: What workflow code writes to run each verb and keep what it gives back.
_RUN_AS = {
    "step.run": "value = yield from step.run",
    "step.delay": "yield from step.delay",
    "step.start": "target = yield from step.start",
    "step.call": "result = yield from step.call",
    "step.child": "result = yield from step.child",
    "step.spawn": "child_id = yield from step.spawn",
}


def _run_as(verb: str) -> str:
    """``step.delay('settle')`` run as it should be: ``yield from step.delay('settle', ...)``."""
    name, _, key = verb.partition("(")
    if name == "step.all":
        return "results = yield from step.all([...])"
    return f"{_RUN_AS.get(name, f'yield from {name}')}({key.rstrip(')')}, ...)"


def completed(
    execution_id: str, result: object, runner: StepRunner, performed: Container[int]
) -> WorkflowRunOutcome:
    """The outcome of workflow code that returned ``result``: completed, unless it left a
    verb unrun or iterated one itself, or the result is not durable."""
    iterated = runner.iterated_by_code(performed)
    if iterated is not None:
        return failed(_not_run(_iterated(runner, iterated)))
    forgotten = runner.never_run()
    if forgotten:
        return failed(_not_run(_never_run(runner, forgotten[0])))
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
    if status == ExecutionStatus.DEAD_LETTERED and error is not None:
        return DeadLettered(error)
    if status == ExecutionStatus.CONTINUED_AS_NEW:
        return ContinuedAsNew(None)
    return Failed(error or ErrorInfo("Error", "failed"))
