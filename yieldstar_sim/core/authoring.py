"""Writing workflows: ``@workflow`` and the step runner's verbs (``core.steps``: declared steps).

A workflow is a generator function ``(step, params)``; each step verb is a generator to
``yield from``::

    @workflow("charge-order")
    def charge_order(step, params):
        order = params["order"]
        yield from step.run("charge", lambda: step.world.effect("card.charged", order=order))
        target = yield from step.start("ship", "ship-order", {"order": order})
        return {"shipment": target.execution_id}

Nothing here touches storage or time: the verbs only describe steps; the driver decides.
"""

from __future__ import annotations

import inspect
import math
import os
import sys
from collections.abc import Callable, Container, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeAlias, TypeVar

from yieldstar_sim.core.ids import check_name
from yieldstar_sim.core.model import StepDeclarationError, StepKeyError
from yieldstar_sim.core.steps import RetryPolicy, StepDefinition

if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from types import CodeType

    from yieldstar_sim.core.events import ReceivedEvent

# --------------------------------------------------------------------------- workflows

T = TypeVar("T")

WorkflowFunction: TypeAlias = Callable[["StepRunner", Any], Any]


@dataclass(frozen=True, slots=True)
class Workflow:
    """A workflow definition: its name (the workflow ID) and its generator function."""

    name: str
    fn: WorkflowFunction = field(repr=False)
    max_duration: float | None = None
    """Seconds of virtual time after admission when the execution, and what it owns, is
    cancelled (the guide's MaxDuration); ``None``: no limit."""

    def __call__(self, step: StepRunner, params: Any) -> Any:
        """Call the workflow function (the driver does this; users rarely need to)."""
        return self.fn(step, params)


def workflow(
    name: str, *, max_duration: float | None = None
) -> Callable[[WorkflowFunction], Workflow]:
    """Declare a workflow named ``name`` (optionally cancelled after ``max_duration`` s).

    >>> @workflow("ship-order")
    ... def ship_order(step, params):
    ...     booking = yield from step.run("book-courier", lambda: "courier-1")
    ...     return booking
    >>> ship_order
    Workflow(name='ship-order', max_duration=None)
    """
    check_name(name, "a workflow name")
    if max_duration is not None and (
        isinstance(max_duration, bool)
        or not isinstance(max_duration, int | float)
        or not math.isfinite(max_duration)
        or max_duration <= 0
    ):
        raise ValueError(f"max_duration must be a positive number of seconds, not {max_duration!r}")

    def declare(fn: WorkflowFunction) -> Workflow:
        if not callable(fn):
            raise TypeError(f"@workflow({name!r}) decorates a function, not {fn!r}")
        return Workflow(name, fn, None if max_duration is None else float(max_duration))

    return declare


# --------------------------------------------------------------------------- what steps return


@dataclass(frozen=True, slots=True)
class StartedExecution:
    """What ``step.start`` returns: the target's execution ID (RFC 003's ``{ executionId }``)."""

    execution_id: str


# --------------------------------------------------------------------------- step requests


@dataclass(frozen=True, slots=True)
class RunStep:
    """``step.run``: run ``body(*args, **kwargs)`` under ``policy`` unless recorded."""

    key: str
    body: Callable[..., Any] = field(repr=False)
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    policy: RetryPolicy = field(default_factory=RetryPolicy)  # frozen: one is as good as another
    error: StepDeclarationError | None = None


#: The policy of a step run without one: shared, as frozen values can be (each ``step.run``
#: of each delivery, replayed ones too, built its own).
_DEFAULT_POLICY = RetryPolicy()


@dataclass(frozen=True, slots=True)
class DelayStep:
    """``step.delay``: suspend until ``seconds`` after the step was first reached."""

    key: str
    seconds: float


@dataclass(frozen=True, slots=True)
class TargetStep:
    """A step that asks the runtime for a run of another workflow, ``workflow_id``: a start, a
    call or a child (the driver checks the name before the runtime sees it)."""

    key: str
    workflow_id: str


@dataclass(frozen=True, slots=True)
class StartStep(TargetStep):
    """``step.start``: start another workflow as a durable step (RFC 003)."""

    params: object = None
    detached: bool = False


@dataclass(frozen=True, slots=True)
class CallStep(TargetStep):
    """``step.call``: start another workflow, then wait for its outcome (RFC 008)."""

    params: object = None


@dataclass(frozen=True, slots=True)
class ChildStep(TargetStep):
    """``step.child`` (owned, waited for) or ``step.spawn`` (detached, not waited for): a run
    with a business ID, created or joined."""

    child_id: str
    params: object = None
    spawn: bool = False


@dataclass(frozen=True, slots=True)
class WaitForEventStep:
    """``step.wait_for_event``: suspend until an event ``name`` comes, or ``timeout`` s pass."""

    key: str
    name: str
    timeout: float | None = None


@dataclass(frozen=True, slots=True)
class ContinueAsNewStep:
    """``step.continue_as_new``: end this run and start the instance's next one with
    ``params``. It has no step key: it is the run's outcome."""

    params: object = None
    key: str = ""


MemberRequest: TypeAlias = RunStep | StartStep | CallStep | ChildStep
"""What a ``step.all`` group may hold: every verb but ``step.delay``."""


@dataclass(frozen=True, slots=True)
class GroupStep:
    """``step.all``: the members' steps, in call order, run concurrently and waited for."""

    members: tuple[MemberRequest, ...]

    @property
    def keys(self) -> tuple[str, ...]:
        """The members' step keys, in call order."""
        return tuple(member.key for member in self.members)


StepRequest: TypeAlias = (
    RunStep | DelayStep | StartStep | CallStep | ChildStep | GroupStep | WaitForEventStep
    | ContinueAsNewStep
)  # fmt: skip
STEP_REQUESTS = (
    RunStep, DelayStep, StartStep, CallStep, ChildStep, GroupStep, WaitForEventStep,
    ContinueAsNewStep,
)  # fmt: skip


def _workflow_name(workflow: Workflow | str) -> str:
    return workflow.name if isinstance(workflow, Workflow) else workflow


class World(Protocol):
    """The simulated outside world that step bodies act on (``step.world``)."""

    @property
    def attempt(self) -> int:
        """The running step body's attempt number (1 for the first)."""
        ...

    def effect(self, name: str, /, *, idempotency_key: str | None = None, **data: object) -> None:
        """Record an external effect in the ledger, which crashes never roll back.

        Effects with one ``idempotency_key`` count once (the service deduplicates them).
        """
        ...

    def trigger(self, workflow_id: str, params: object = None) -> str:
        """Admit a new execution with a fresh ID: the non-durable trigger of RFC 003's Problem."""
        ...

    def read(self, key: str, default: object = None) -> Any:
        """Read ``key`` from the outside world's key-value store (``default`` when unwritten)."""
        ...

    def write(self, key: str, value: object) -> None:
        """Write a durable JSON value under ``key`` in the outside world's key-value store."""
        ...

    def elapse(self, seconds: float) -> None:
        """Let the current step body take ``seconds`` of virtual time."""
        ...

    def heartbeat(self) -> None:
        """Tell the worker the step body is alive: it renews the lease (``step.heartbeat()``)."""
        ...

    def choice(self, options: Sequence[T]) -> T:
        """One of a few ``options``: a draw the simulator makes a choice point."""
        ...

    def coin(self) -> bool:
        """True or False: a draw of two."""
        ...

    @property
    def token(self) -> int | None:
        """The fencing token of the delivery running the body: it only grows, so a service
        that keeps the highest it saw can turn a stale attempt away."""
        ...

    def transaction(self) -> AbstractContextManager[Any]:
        """``with step.world.transaction():``: the store's writes inside land together at its
        end, or none of them."""
        ...


class StepRunner:
    """The ``step`` object a workflow function receives."""

    def __init__(self, execution_id: str, world: World) -> None:
        self._execution_id = execution_id
        self._world = world
        self._created: list[tuple[str, Generator[Any, Any, Any]]] = []
        self._requests: dict[int, StepRequest] = {}
        self._called_at: dict[int, tuple[CodeType, int]] = {}
        """Where workflow code called each verb (its code and the offset of the call in it),
        by the generator's id: the mistakes named later (a verb never run) say the line, not
        only the key. The line is found only then: every verb of every delivery is noted here,
        and finding its line cost a third of noting it."""
        self._groups: list[tuple[GroupStep, Generator[Any, Any, Any]]] = []

    @property
    def execution_id(self) -> str:
        """The ID of the execution this workflow code runs as."""
        return self._execution_id

    @property
    def world(self) -> World:
        """The outside world, for step bodies: ``step.world.effect("courier.booked")``."""
        return self._world

    def heartbeat(self) -> None:
        """Inside a step body: tell the worker the body is alive, and renew the lease.

        A long body heartbeats between pieces of work::

            def load_truck(order):
                for crate in range(3):
                    step.world.elapse(20)   # 20 s of work
                    step.heartbeat()        # the lease runs 30 s from here

        In the simulator each heartbeat is a choice point where a renewal can fail; a worker
        that lost the lease stops the attempt (``Scenario.stop_after_failed_renewals``), and the
        body sees it here: the rest of it does not run. Same as ``step.world.heartbeat()``.
        """
        self._world.heartbeat()

    def _track(self, key: str, request: StepRequest) -> Generator[StepRequest, Any, Any]:
        generator = _perform(request)
        self._created.append((key, generator))
        self._requests[id(generator)] = request
        # The code that called the verb (this frame, the verb's, then the caller's): its code
        # and offset only, never the frame, which would keep the workflow's locals alive.
        caller = sys._getframe(2)
        self._called_at[id(generator)] = (caller.f_code, caller.f_lasti)
        return generator

    def _release(self) -> None:
        """Drop the verbs made in this delivery, once it has ended (the driver calls this).

        A verb's request holds its body, and a body usually refers to ``step`` (``lambda:
        step.world.effect(...)``): kept here, they made a reference cycle through which a
        finished run (its kernel, runtime and trace) waited for the cyclic collector instead
        of being freed at once."""
        self._created.clear()
        self._requests.clear()
        self._called_at.clear()
        self._groups.clear()

    def iterated_by_code(self, performed: Container[int]) -> tuple[str, str] | None:
        """The first verb that workflow code iterated itself (unpacked, listed, looped over)
        instead of running it with ``yield from``: its generator started, yet its request
        (``id`` not in ``performed``, the requests the driver was given) never reached the
        driver, so the step never ran. Named as the code wrote it (``step.all(...)`` or
        ``step.run('book')``), with where (``called_at``)."""
        # A group's members reach the driver inside their group (``_members`` closes them).
        grouped = {id(member) for group, _ in self._groups for member in group.members}
        for _key, generator in self._created:
            request = self._requests[id(generator)]
            if id(request) not in performed and id(request) not in grouped and _started(generator):
                return str(self.verb_of(generator)), self.called_at(generator)
        for group, generator in self._groups:
            if id(group) not in performed and _started(generator):
                return "step.all(...)", self.called_at(generator)
        return None

    def key_of(self, generator: object) -> str | None:
        """The step key a step verb's generator was made for, if it was made here."""
        return next((key for key, made in self._created if made is generator), None)

    def verb_of(self, generator: object) -> str | None:
        """A verb's generator made here as the code wrote it: ``step.delay('settle')``."""
        request = self._requests.get(id(generator))
        if request is None or isinstance(request, GroupStep):  # a group is tracked apart
            return None
        if isinstance(request, ContinueAsNewStep):
            return "step.continue_as_new(...)"
        spawn = isinstance(request, ChildStep) and request.spawn
        return f"{'step.spawn' if spawn else _VERBS[type(request)]}({request.key!r})"

    def called_at(self, generator: object) -> str:
        """Where workflow code called the verb of ``generator``: `` at line 9 of shop.py``
        (empty when it was not made here)."""
        where = self._called_at.get(id(generator))
        if where is None:
            return ""
        code, offset = where
        line = next((n for start, end, n in code.co_lines() if start <= offset < end), None)
        return f" at line {line} of {os.path.basename(code.co_filename)}"

    def never_run(self) -> list[Generator[Any, Any, Any]]:
        """The step verbs called without ``yield from`` (their generator never started), in
        the order the code called them: name one with ``verb_of`` and ``called_at``."""
        return [
            generator
            for _key, generator in self._created
            if inspect.getgeneratorstate(generator) == inspect.GEN_CREATED
        ]

    def run(
        self, key: str, body: Callable[..., Any] | StepDefinition, /, *args: Any, **kwargs: Any
    ) -> Generator[StepRequest, Any, Any]:
        """A durable step: run ``body(*args, **kwargs)`` once, record its result, replay it.

        ``body`` is a callable or a ``StepDefinition`` (whose retry policy then applies). The
        result must be a durable value. Use ``value = yield from step.run(...)``.
        """
        if isinstance(body, StepDefinition):
            request = RunStep(key, body.body, args, kwargs, body.policy, body.error)
        else:
            request = RunStep(key, body, args, kwargs, _DEFAULT_POLICY)
        return self._track(key, request)

    def delay(self, key: str, seconds: float) -> Generator[StepRequest, Any, None]:
        """A durable timer: suspend the workflow until ``seconds`` of virtual time passed."""
        return self._track(key, DelayStep(key, seconds))

    def wait_for_event(
        self, key: str, name: str, *, timeout: float | None = None
    ) -> Generator[StepRequest, Any, ReceivedEvent | None]:
        """A durable wait for an external event named ``name``; returns a ``ReceivedEvent``
        (its ``payload``), or ``None`` once ``timeout`` seconds passed without one.

        The event is taken and recorded as this step in one write, so a replay returns the
        same event and no other run takes it. It is the oldest unconsumed event of that name
        sent to this run or to its instance (``runtime.send_event``)::

            approval = yield from step.wait_for_event("approval", "approve", timeout=3600)
            if approval is None:
                return "expired"
        """
        return self._track(key, WaitForEventStep(key, name, timeout))

    def continue_as_new(self, params: object = None) -> Generator[StepRequest, Any, NoReturn]:
        """End this run and start the next run of the same workflow instance with ``params``
        (a durable value): the instance keeps its ID, the new run gets its own execution ID
        and an empty history. Events sent to the instance and not yet taken wait for the new
        run. Nothing after it runs::

            yield from step.continue_as_new({"cursor": cursor})
        """
        return self._track("", ContinueAsNewStep(params))

    def start(
        self,
        key: str,
        workflow_id: Workflow | str,
        params: object = None,
        *,
        detached: bool = False,
    ) -> Generator[StepRequest, Any, StartedExecution]:
        """Start another workflow as a durable step; returns ``StartedExecution``.

        ``workflow_id`` is a workflow's name or the workflow itself. Replaying it returns the
        same target; a changed request raises ``WorkflowStartError`` with
        START_REQUEST_MISMATCH; invalid parameters raise it with INVALID_START_PARAMETERS.
        """
        return self._track(key, StartStep(key, _workflow_name(workflow_id), params, detached))

    def call(
        self, key: str, workflow_id: Workflow | str, params: object = None
    ) -> Generator[StepRequest, Any, Any]:
        """Start another workflow (as ``step.start``, owned) and wait for it (RFC 008).

        ``workflow_id`` is a workflow's name or the workflow itself. Returns the target's
        result; raises ``ChildFailedError`` (with the target's ID and error) if it failed or
        was cancelled. The target's end wakes this workflow.
        """
        return self._track(key, CallStep(key, _workflow_name(workflow_id), params))

    def child(
        self, key: str, workflow: Workflow | str, child_id: str, params: object = None
    ) -> Generator[StepRequest, Any, Any]:
        """Run ``workflow`` as the child ``child_id`` (a stable business ID) and wait for it.

        If the call creates the run, this workflow owns it: cancelling this one cancels it. If
        the ID exists, it joins that run, ignores ``params`` and never takes ownership.
        Returns the child's result, or raises ``ChildFailedError``.
        """
        return self._track(key, ChildStep(key, _workflow_name(workflow), child_id, params))

    def all(
        self, members: Iterable[Generator[Any, Any, Any]]
    ) -> Generator[StepRequest, Any, list[Any]]:
        """Run the steps ``members`` concurrently and wait for them all (fan-out, fan-in).

        ``members`` are step verbs called but not run: ``step.run``, ``step.start``,
        ``step.call``, ``step.child`` or ``step.spawn`` (not ``step.delay``), as
        ``asyncio.gather`` takes coroutines::

            shipment, email = yield from step.all([
                step.call("ship", "ship-order", {"order": 42}),
                step.run("email", send_email, 42),
            ])

        Returns each member's usual result, in call order. A member that fails raises its
        error here (the first recorded, as ``asyncio.gather`` raises the first to occur);
        the others go on, as owned children of this execution. Replay matches members by
        step key, whatever order they completed in. Cancelling this execution ends the wait
        and cancels the members it owns.
        """
        group = GroupStep(self._members(members))
        generator = _perform(group)
        self._groups.append((group, generator))
        caller = sys._getframe(1)
        self._called_at[id(generator)] = (caller.f_code, caller.f_lasti)
        return generator

    def _members(self, members: Iterable[Generator[Any, Any, Any]]) -> tuple[MemberRequest, ...]:
        if isinstance(members, Generator) or not isinstance(members, Iterable):
            raise TypeError(
                "step.all takes a list of step verbs, e.g. "
                "step.all([step.run('a', f), step.call('b', 'other')]), not "
                f"{type(members).__name__}"
            )
        given = list(members)
        try:
            return self._checked_members(given)
        except Exception:
            # The members were handed to step.all, which refused them: its error is the
            # mistake to name, not each member as a verb never run or iterated.
            handed = {id(member) for member in given}
            self._created = [made for made in self._created if id(made[1]) not in handed]
            raise

    def _checked_members(
        self, members: list[Generator[Any, Any, Any]]
    ) -> tuple[MemberRequest, ...]:
        found: list[MemberRequest] = []
        for member in members:
            request = self._requests.get(id(member)) if inspect.isgenerator(member) else None
            if request is None:
                raise TypeError(
                    f"step.all takes step verbs made by this workflow's step (step.run, "
                    f"step.start, step.call, step.child, step.spawn), not {member!r}"
                )
            if isinstance(request, DelayStep | GroupStep | WaitForEventStep | ContinueAsNewStep):
                verb = _VERBS.get(type(request), "step.delay")
                raise TypeError(
                    f"step.all cannot hold {verb}({getattr(request, 'key', '')!r}): run "
                    "it before or after the group"
                )
            if inspect.getgeneratorstate(member) != inspect.GEN_CREATED:
                raise TypeError(
                    f"step {request.key!r} was already run (or given to another step.all): a "
                    "member of step.all is a verb called but not run, without `yield from`"
                )
            if any(seen.key == request.key for seen in found):
                raise StepKeyError(
                    f"step key {request.key!r} is used twice in one step.all; each member "
                    "needs its own key"
                )
            member.close()  # the group runs it: not a verb "called without running it"
            found.append(request)
        if not found:
            raise TypeError("step.all needs at least one step to wait on")
        return tuple(found)

    def spawn(
        self, key: str, workflow: Workflow | str, child_id: str, params: object = None
    ) -> Generator[StepRequest, Any, str]:
        """Start ``workflow`` as the detached run ``child_id`` and return its ID at once.

        The run outlives this one; an existing ID counts as success while its record is
        retained (after it is pruned, the same ID starts a new run).
        """
        return self._track(
            key, ChildStep(key, _workflow_name(workflow), child_id, params, spawn=True)
        )


def _perform(request: StepRequest) -> Generator[StepRequest, Any, Any]:
    return (yield request)


def _started(generator: Generator[Any, Any, Any]) -> bool:
    return inspect.getgeneratorstate(generator) != inspect.GEN_CREATED


#: How workflow code calls each request's verb, for messages.
_VERBS: dict[type, str] = {
    RunStep: "step.run", DelayStep: "step.delay", StartStep: "step.start",
    CallStep: "step.call", ChildStep: "step.child", WaitForEventStep: "step.wait_for_event",
}  # fmt: skip
