"""Invokers deliver one execution event and return its outcome (RFC 003, "Delivery
acknowledgement"). ``InProcessInvoker`` runs workflow code in this process; the worker-process
invoker (``yieldstar_sim.engine.worker``) runs it in a child process. Both run the same driver
through ``run_delivery`` and honour the same contract: ``deliver`` returns an outcome, or raises
an ``InfrastructureError`` (the worker replies retry) and records no outcome. Whatever a runtime
call raises, an infrastructure error or any other ``Exception`` (a start client that throws
``RuntimeError``), the delivery rejects: workflow code never sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from yieldstar_sim.core.authoring import Workflow
from yieldstar_sim.core.driver import Command, DriverGenerator, RunBody, drive
from yieldstar_sim.core.error_words import error_words
from yieldstar_sim.core.model import (
    Delivery,
    DeliveryRejectedError,
    InfrastructureError,
    ProfileError,
    StepDeclarationError,
    WorkflowRunOutcome,
)
from yieldstar_sim.core.profiles import DriverProfile, driver_profile
from yieldstar_sim.engine.body_world import BodyWorld
from yieldstar_sim.engine.calls import perform_runtime_call

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterable
    from contextlib import AbstractContextManager

    from yieldstar_sim.core.steps import StepDefinition
    from yieldstar_sim.engine.world import EngineWorld
    from yieldstar_sim.runtime.protocol import Runtime


@dataclass(frozen=True, slots=True)
class ExecutionEvent:
    """One delivery of one execution to one worker."""

    delivery: Delivery
    worker: str


class Invoker(Protocol):
    """Runs workflow code for an execution event."""

    def deliver(self, event: ExecutionEvent) -> WorkflowRunOutcome:
        """Run the delivery to its outcome, or raise an ``InfrastructureError``."""
        ...

    def close(self) -> None:
        """Release the invoker's resources (processes, pipes)."""
        ...


class Registry:
    """The workflows (and reusable step declarations) an engine can run.

    Registration refuses duplicate names and step declarations with errors, before any worker
    starts.
    """

    def __init__(
        self,
        workflows: Iterable[Workflow],
        steps: Iterable[StepDefinition] = (),
        profile: str | DriverProfile = "memory",
    ) -> None:
        self.profile = driver_profile(profile)
        self._workflows: dict[str, Workflow] = {}
        for definition in workflows:
            if not isinstance(definition, Workflow):
                raise TypeError(
                    f"register workflows declared with @ys.workflow(name), not {definition!r}"
                )
            if definition.name in self._workflows:
                raise ValueError(f"two workflows are named {definition.name!r}")
            self._workflows[definition.name] = definition
        for step in steps:
            if step.error is not None:
                raise StepDeclarationError(f"step {step.name!r}: {step.error}")
            refusal = self.profile.check_policy(step.name, step.policy)
            if refusal is not None:
                raise ProfileError(refusal)

    def get(self, name: str) -> Workflow | None:
        """The workflow named ``name``, if registered."""
        return self._workflows.get(name)

    @property
    def names(self) -> list[str]:
        """The registered workflow names, sorted."""
        return sorted(self._workflows)


def step_delivery(
    driver: DriverGenerator,
    perform: Callable[[Command], Generator[Any, Any, Any]],
    *,
    errors: type[BaseException] | tuple[type[BaseException], ...] = Exception,
    guard: AbstractContextManager[Any] | None = None,
) -> Generator[Any, Any, WorkflowRunOutcome]:
    """Step the driver, carrying out each command with ``perform``, until it returns an outcome.

    ``perform`` is a generator, so that the simulator can pass a choice point inside it (the
    invokers' never yield). An error of ``errors`` from ``perform`` is thrown into the driver
    at the command that caused it; the driver never shows infrastructure errors to workflow
    code, so they leave here. ``guard`` wraps each step of the workflow code (the simulator's
    wall-clock deadline): one reusable context manager, entered again at every step. The
    driver is closed however the delivery ends.
    """
    value: Any = None
    # The error to throw in is taken out of this list as it is thrown, so no local names it:
    # when it comes back out, its traceback holds this frame, and a frame that held it would
    # be a reference cycle keeping the whole finished run alive until the cyclic collector.
    error: list[BaseException] = []
    try:
        while True:
            try:
                if guard is None:
                    command = driver.throw(error.pop()) if error else driver.send(value)
                else:
                    with guard:
                        command = driver.throw(error.pop()) if error else driver.send(value)
            except StopIteration as stop:
                outcome: WorkflowRunOutcome = stop.value
                return outcome
            value = None
            try:
                value = yield from perform(command)
            except errors as raised:
                error.append(raised)
    finally:
        driver.close()


def run_delivery(driver: DriverGenerator, perform: Callable[[Command], Any]) -> WorkflowRunOutcome:
    """Carry out the driver's commands with ``perform`` until it returns an outcome
    (``step_delivery`` with a ``perform`` that returns at once)."""

    def at_once(command: Command) -> Generator[Any, Any, Any]:
        result = perform(command)
        yield from ()
        return result

    steps = step_delivery(driver, at_once)
    try:
        next(steps)
    except StopIteration as stop:
        outcome: WorkflowRunOutcome = stop.value
        return outcome
    raise AssertionError("a delivery's perform never yields")  # pragma: no cover


class InProcessInvoker:
    """Runs workflow code in this process, against the runtime directly."""

    def __init__(self, runtime: Runtime, registry: Registry, world: EngineWorld) -> None:
        self._runtime = runtime
        self._registry = registry
        self._world = world

    def deliver(self, event: ExecutionEvent) -> WorkflowRunOutcome:
        """Run the delivery in this process."""
        body_world = BodyWorld(self._world, event.worker, event.delivery.lease)
        workflow = self._registry.get(event.delivery.execution.workflow_id)

        def perform(command: Command) -> Any:
            if isinstance(command, RunBody):
                return body_world.run(command)
            return perform_runtime_call(self._runtime, command)

        try:
            return run_delivery(
                drive(workflow, event.delivery, body_world, self._registry.profile), perform
            )
        except InfrastructureError:
            raise
        except Exception as error:
            # The worker invoker's child replies retry for any error; reject here the same way
            # so that the dispatcher releases the lease whichever invoker ran the delivery.
            raise DeliveryRejectedError(f"deliver rejected: {describe_error(error)}") from error

    def close(self) -> None:
        """Nothing to release."""


def describe_error(error: BaseException) -> str:
    """An error as a rejection names it: its class and message."""
    return error_words(error)
