"""Scenarios: the workflows, triggers, workers, fault plan and invariants of a story.

A scenario file is a Python file that defines ``scenario = ys.Scenario(...)``; its module
docstring tells the story.
"""

from __future__ import annotations

import hashlib
import inspect
import linecache
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.authoring import Workflow
from yieldstar_sim.core.suggest import did_you_mean
from yieldstar_sim.engine.recovery import check_max_recovery_attempts
from yieldstar_sim.simulation.scenario_clients import Client
from yieldstar_sim.simulation.sends import SendEvent, check_sends

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.core.profiles import DriverProfile
    from yieldstar_sim.core.steps import StepDefinition
    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.faults import Fault
    from yieldstar_sim.simulation.invariants.protocol import Invariant


@dataclass(frozen=True, slots=True)
class Trigger:
    """A direct trigger the scenario makes at virtual time ``at`` (default: the start).

    With ``client``, a ``ys.Client`` makes it as an actor with a choice point, faults and
    retries; with a caller-chosen ``execution_id`` too, that is an external start with a
    request ID (the business ID), and the runtime's ``on_existing_id`` policy answers a repeat.
    Without ``client`` it is made without faults, as before.
    """

    workflow_id: str
    params: object = None
    execution_id: str | None = None
    at: float = 0.0
    client: Client | None = None

    def describe(self) -> str:
        """The trigger as a scenario writes it, for messages: ``ys.Trigger('charge',
        execution_id='charge-1')``.

        >>> Trigger("charge", {"order": 1}, execution_id="charge-1").describe()
        "ys.Trigger('charge', execution_id='charge-1')"
        """
        named = f", execution_id={self.execution_id!r}" if self.execution_id is not None else ""
        at = f", at={self.at:g}" if self.at else ""
        return f"ys.Trigger({self.workflow_id!r}{named}{at})"


@dataclass(frozen=True, slots=True)
class Cancel:
    """The scenario requests cancellation of ``execution_id`` at virtual time ``at`` (RFC 009);
    with ``client``, a ``ys.Client`` requests it, with a choice point, faults and retries. An
    ID the run never has is a ``ScenarioError`` (a client's cancel refused because its
    execution does not exist *yet* is the runtime's answer)."""

    execution_id: str
    at: float = 0.0
    client: Client | None = None


@dataclass(frozen=True, slots=True)
class Prune:
    """The scenario prunes the terminal execution ``execution_id`` at virtual time ``at``
    (RFC 013); an execution that is not terminal then is left alone, and the trace says so."""

    execution_id: str
    at: float = 0.0


_END_STATUSES = ("completed", "failed", "cancelled", "dead-lettered")

#: A run's choice points at most when ``max_points`` is None, or, when that is more, this many
#: per trigger: the bound catches a run that never settles, and a story's orders take about
#: 17 points each (a thousand of them were cut at 10,000). A loop of steps that never ends
#: costs more with every point (each delivery replays every step recorded before it): at
#: 10,000 points it ran 20 s on DuckDB, and the wall-clock limit cut it under load, blamed on
#: "the workflow code"; at 2,000 it is cut in about a second, and its sentence says so.
MAX_POINTS = 2_000
POINTS_PER_TRIGGER = 100


@dataclass(frozen=True, slots=True)
class Expect:
    """How the scenario allows some executions to end; made by ``ys.expect``.

    It names the executions by ``workflow_id`` and/or ``execution_id`` and allows them to end
    ``status``; a failure must match ``error`` (the error's class name), ``code`` and a
    ``message`` fragment where given. Every execution may complete (or end cancelled after a
    cancellation request); any other end is a violation. An expectation that does not come
    true in a run is a warning beside the verdict, not a violation: under exploration the
    faults that make a scenario fail on purpose are not in every schedule.
    """

    workflow_id: str | None = None
    execution_id: str | None = None
    status: str = "failed"
    error: str | None = None
    code: str | None = None
    message: str | None = None

    def __post_init__(self) -> None:
        if self.workflow_id is None and self.execution_id is None:
            raise ValueError("ys.expect needs a workflow ID or an execution_id to name executions")
        for what in ("workflow_id", "execution_id", "error", "code", "message"):
            value = getattr(self, what)
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"ys.expect: {what} must be a non-empty string, not {value!r}")
        if self.status not in _END_STATUSES:
            raise ValueError(
                f"ys.expect: status must be one of {', '.join(_END_STATUSES)}, not {self.status!r}"
            )
        if self.status != "failed" and (self.error or self.code or self.message):
            raise ValueError("ys.expect: error, code and message describe a failure only")

    def names(self, execution_id: str, workflow_id: str) -> bool:
        """Whether this expectation is about that execution."""
        return (self.workflow_id is None or self.workflow_id == workflow_id) and (
            self.execution_id is None or self.execution_id == execution_id
        )

    def describe(self) -> str:
        """``charge-order to fail with WorkflowStartError START_REQUEST_MISMATCH``."""
        who = " ".join(filter(None, (self.workflow_id, self.execution_id)))
        if self.status != "failed":
            return f"{who} to end {self.status}"
        how = " ".join(filter(None, (self.error, self.code)))
        if self.message:
            how += f" ({self.message!r})" if how else f"an error saying {self.message!r}"
        return f"{who} to fail" + (f" with {how}" if how else "")


def expect(
    workflow_id: str | None = None,
    *,
    execution_id: str | None = None,
    status: str = "failed",
    error: str | None = None,
    code: str | None = None,
    message: str | None = None,
) -> Expect:
    """Declare how executions of ``workflow_id`` (or the one ``execution_id``) end, for a
    scenario that fails on purpose (``Scenario(expected=[...])``).

    >>> expect("charge-order", code="START_REQUEST_MISMATCH").describe()
    'charge-order to fail with START_REQUEST_MISMATCH'
    """
    return Expect(workflow_id, execution_id, status, error, code, message)


@dataclass(frozen=True, slots=True)
class Deploy:
    """From virtual time ``at`` on, deliveries run these workflow versions (same names)."""

    at: float
    workflows: tuple[Workflow, ...]

    def __init__(self, at: float, workflows: Sequence[Workflow]) -> None:
        object.__setattr__(self, "at", float(at))
        object.__setattr__(self, "workflows", tuple(workflows))


@dataclass
class Scenario:
    """Everything a simulation run needs besides its seed, schedule and extra faults.

    ``workers`` is a count (``w1``, ``w2``, ...) or a list of names. ``faults`` is the
    scenario's own fault plan (the story's crash); ``invariants`` are checked after every run
    beside the built-in ones. ``expected`` declares the executions meant to fail (or to end
    otherwise than completed): ``[ys.expect("charge-order", code="START_REQUEST_MISMATCH")]``.
    ``max_time`` (virtual seconds) and ``max_points`` (choice points) bound a run; a run they
    cut is ``incomplete``, never ``ok``. ``max_points=None`` (the default) is 2,000 or 100 per
    trigger, whichever is more (``point_limit``), so that a story copied to a thousand orders
    still runs to its end. A trigger or cancel with ``client=ys.Client(...)`` is
    made by that client, an actor whose calls are choice points (a fault names it as its
    ``worker``); the others are made without faults.
    """

    name: str
    workflows: Sequence[Workflow]
    triggers: Sequence[Trigger]
    invariants: Sequence[Invariant | Callable[..., Any]] = ()
    workers: int | Sequence[str] = 2
    lease_seconds: float = 30.0
    redelivery_delay: float = 5.0
    restart_delay: float = 1.0
    faults: Sequence[Fault] = ()
    steps: Sequence[StepDefinition] = ()
    deploys: Sequence[Deploy] = ()
    cancels: Sequence[Cancel] = ()
    prunes: Sequence[Prune] = ()
    sends: Sequence[SendEvent] = ()
    """External events sent to runs or instances (``ys.SendEvent``), each by its sender, an
    actor whose attempts are choice points."""
    profile: str | DriverProfile = "memory"
    """The driver profile (``memory``, ``temporal``, ``restate``, or a ``ys.DriverProfile``):
    an engine's native rules."""
    runtime_options: Mapping[str, object] = field(default_factory=dict)
    """Keyword arguments for the runtime's constructor, e.g. ``{"orphan_guard": False}`` to
    show the hazard the runtimes' orphan guard prevents (see ``RUNTIME_OPTIONS``)."""
    runtime: RuntimeChoice | None = None
    """The runtime adapter the scenario runs on unless a caller names another: a factory
    called with the virtual clock as ``clock=``, or its ``"package.module:factory"`` name
    (``None``: the caller's default, DuckDB for a run and memory for an exploration)."""
    confirm_runtime: RuntimeChoice | None = None
    """For a scenario that names its ``runtime``: the runtime the explorer confirms findings
    on (``None``: no confirmation, since the scenario's runtime differs on purpose)."""
    description: str = ""
    max_time: float = 3600.0
    max_points: int | None = None
    expected: Sequence[Expect] = ()
    world_in_workflow_code: bool = False
    """Let ``step.world`` work in workflow code, outside any step body, instead of failing the
    workflow: off by default; on to *show* the hazard (an effect there repeats on every
    replay, a random number or clock reading there changes between deliveries)."""
    stop_after_failed_renewals: int | None = 1
    """The workers' lease-loss policy for a step body that heartbeats (``step.heartbeat()``):
    a worker stops the attempt after this many failed renewals in a row, at once when the
    runtime refuses a renewal (the lease is gone), and before more work when by its own clock
    the lease has ended; the body sees the stop at its heartbeat, and the rest of it does not
    run. ``None``: a worker never stops an attempt for its lease (what a renewal answers is
    ignored and the body works on): the classic zombie's cause."""
    max_recovery_attempts: int | None = None
    """How many times an execution may be recovered (claimed again after its holder's lease
    ran out: a worker that crashed or froze holding it) before the workers dead-letter it
    instead of running it again, as DBOS's ``max_recovery_attempts`` does; ``None`` (the
    default): no limit, and a poison workflow is recovered without end."""
    overlap_safe: Sequence[str] = ()
    """Step keys whose attempts may run at the same time (what they do is safe to do twice at
    once: an effect with an idempotency key, say): the built-in invariant that two attempts of
    one step never overlap in time leaves these steps alone."""
    ref: str | None = field(default=None, compare=False)
    """Where the scenario was loaded from (a bundled name or a file path), for artifacts."""
    source_sha256: str | None = field(default=None, compare=False)
    """The SHA-256 of the scenario file's bytes as loaded (file references only): a replay
    artifact records it, and replaying imports the file only if its bytes still match."""

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ValueError(f"a scenario needs a name, not {self.name!r}")
        self.workflows = tuple(self.workflows)
        self.triggers = tuple(self.triggers)
        self.invariants = tuple(self.invariants)
        self.faults = tuple(self.faults)
        self.steps = tuple(self.steps)
        self.deploys = tuple(sorted(self.deploys, key=lambda deploy: deploy.at))
        self.cancels = tuple(self.cancels)
        self.prunes = tuple(self.prunes)
        self.sends = tuple(self.sends)
        self.overlap_safe = _step_keys(self.name, self.overlap_safe)
        self.runtime_options = _check_runtime_options(self.name, self.runtime_options)
        self.expected = tuple(self.expected)
        for expectation in self.expected:
            if not isinstance(expectation, Expect):
                raise TypeError(
                    f"scenario {self.name!r}: expected holds ys.expect(...) entries, not "
                    f"{expectation!r}"
                )
        from yieldstar_sim.core.profiles import driver_profile

        driver_profile(self.profile)  # refuses an unknown profile now, with the known ones
        for workflow in self.workflows:
            if not isinstance(workflow, Workflow):
                raise TypeError(f"scenario {self.name!r}: {workflow!r} is not a @ys.workflow")
        for trigger in self.triggers:
            if not isinstance(trigger, Trigger):
                raise TypeError(f"scenario {self.name!r}: {trigger!r} is not a ys.Trigger")
        if not self.triggers:
            raise ValueError(f"scenario {self.name!r} has no triggers: nothing would run")
        self._check_trigger_workflows()
        self._check_trigger_params()
        if not self.worker_names:
            raise ValueError(f"scenario {self.name!r} needs at least one worker")
        self._check_clients()
        check_sends(self.name, self.sends, self.worker_names, ScenarioDefinitionError)
        from yieldstar_sim.simulation.faults import Fault

        for fault in self.faults:
            if not isinstance(fault, Fault):
                raise TypeError(f"scenario {self.name!r}: {fault!r} is not a ys.Fault")
            actors = [*self.worker_names, *self.client_names]
            if fault.worker is not None and fault.worker not in actors:
                raise ScenarioDefinitionError(
                    f"scenario {self.name!r}: the fault '{fault.describe()}' names worker "
                    f"{fault.worker!r}{did_you_mean(fault.worker, actors)}, but the workers are "
                    f"{', '.join(self.worker_names)}"
                    + (
                        f" and the clients {', '.join(self.client_names)}"
                        if self.client_names
                        else ""
                    )
                )
        if self.max_points is not None and (
            isinstance(self.max_points, bool)
            or not isinstance(self.max_points, int)
            or (self.max_points < 1)
        ):
            raise ValueError(
                f"scenario {self.name!r}: max_points must be a whole number >= 1, not "
                f"{self.max_points!r}"
            )
        policy = self.stop_after_failed_renewals
        if policy is not None and (
            isinstance(policy, bool) or not isinstance(policy, int) or policy < 1
        ):
            raise ValueError(
                f"scenario {self.name!r}: stop_after_failed_renewals is a whole number >= 1 "
                f"(failed renewals in a row), or None to never stop, not {policy!r}"
            )
        check_max_recovery_attempts(self.max_recovery_attempts, f"scenario {self.name!r}")
        if not isinstance(self.world_in_workflow_code, bool):
            raise TypeError(
                f"scenario {self.name!r}: world_in_workflow_code is True or False, not "
                f"{self.world_in_workflow_code!r}"
            )
        for what in ("lease_seconds", "redelivery_delay", "restart_delay", "max_time"):
            value = getattr(self, what)
            if (
                not isinstance(value, int | float)
                or value < 0
                or (what == "lease_seconds" and value <= 0)
            ):
                raise ValueError(
                    f"scenario {self.name!r}: {what} must be a positive number, not {value!r}"
                )

    def _check_trigger_workflows(self) -> None:
        """A trigger of a workflow the scenario never registers (at the start or in a deploy)
        is a typo, not a verdict: every run of it would fail the same way."""
        known = {w.name for w in self.workflows}
        known |= {w.name for deploy in self.deploys for w in deploy.workflows}
        for trigger in self.triggers:
            if trigger.workflow_id not in known:
                raise ScenarioDefinitionError(
                    f"scenario {self.name!r}: ys.Trigger({trigger.workflow_id!r}) names no "
                    f"workflow of the scenario{did_you_mean(trigger.workflow_id, known)}; its "
                    f"workflows: {', '.join(sorted(known)) or 'none'}"
                )

    def _check_trigger_params(self) -> None:
        """A trigger whose params the runtime refuses (not a plain ``dict`` of durable values)
        is refused on every run: the run admitted nothing, checked nothing, and came back
        green. It is the scenario's mistake, named with the trigger and the value's path."""
        from yieldstar_sim.core.codec import InvalidValue, durable_value_codec

        for trigger in self.triggers:
            if trigger.params is None:
                continue
            checked = durable_value_codec.validate_object(trigger.params, path="params")
            if isinstance(checked, InvalidValue):
                raise ScenarioDefinitionError(
                    f"scenario {self.name!r}: {trigger.describe()} has params the runtime "
                    f"refuses ({checked.message}): a trigger's params are a dict of plain data "
                    "(str, int, float, bool, None, lists and dicts with str keys); send a "
                    "date as an ISO string, a Decimal as a str, an enum as its value"
                )

    @property
    def point_limit(self) -> int:
        """The choice points a run may take: ``max_points``, or when it is None, 2,000 or
        100 per trigger, whichever is more."""
        if self.max_points is not None:
            return self.max_points
        return max(MAX_POINTS, POINTS_PER_TRIGGER * len(self.triggers))

    @property
    def worker_names(self) -> list[str]:
        """The workers' names."""
        if isinstance(self.workers, int):
            return [f"w{i}" for i in range(1, self.workers + 1)]
        return [str(name) for name in self.workers]

    @property
    def client_names(self) -> list[str]:
        """The names of the clients that make triggers, cancels or sends, in order of
        appearance (a send without a client is the default sender's, ``sender``)."""
        names: list[str] = []
        senders = [send.sender for send in self.sends]
        for item in (*self.triggers, *self.cancels, *senders):
            client = item if isinstance(item, Client) else getattr(item, "client", None)
            if client is not None and client.name not in names:
                names.append(client.name)
        return names

    def _check_clients(self) -> None:
        from yieldstar_sim.core.ids import check_execution_id
        from yieldstar_sim.core.model import InvalidIDError

        for cancel in self.cancels:
            if not isinstance(cancel, Cancel):
                raise TypeError(f"scenario {self.name!r}: {cancel!r} is not a ys.Cancel")
        for trigger in self.triggers:
            if trigger.execution_id is None:
                continue
            try:
                check_execution_id(trigger.execution_id)
            except InvalidIDError as invalid:
                # The runtime refuses it on every run: the refusal was taken for an answer and
                # the run, with nothing admitted, came back green.
                raise ValueError(
                    f"scenario {self.name!r}: the trigger of {trigger.workflow_id} names an "
                    f"execution ID no caller may choose: {invalid.message}"
                ) from None
        policies: dict[str, Client] = {}
        items: list[Trigger | Cancel | SendEvent] = [*self.triggers, *self.cancels]
        items += [send for send in self.sends if isinstance(send, SendEvent)]
        for item in items:
            client = item.client
            if client is None:
                continue
            if not isinstance(client, Client):
                raise TypeError(
                    f"scenario {self.name!r}: client= takes a ys.Client, not {client!r}"
                )
            if client.name in self.worker_names or client.name.startswith("~"):
                raise ValueError(
                    f"scenario {self.name!r}: client {client.name!r} has the name of a worker "
                    "(or starts with '~'): clients and workers need names of their own"
                )
            if policies.setdefault(client.name, client) != client:
                raise ValueError(
                    f"scenario {self.name!r}: client {client.name!r} is declared twice with "
                    "different retry policies: declare it once and reuse it"
                )

    @property
    def story(self) -> str:
        """The description's first line."""
        return (self.description.strip().splitlines() or [""])[0]

    def fingerprint(self) -> str:
        """A hash of the code that decides a run: workflows, deployed versions, step
        declarations and invariants. A replay artifact refuses to replay if it changed."""
        linecache.checkcache()  # a file edited since it was last read must be read again
        digest = hashlib.sha256()
        functions: list[tuple[str, Any]] = [(f"workflow {w.name}", w.fn) for w in self.workflows]
        for deploy in self.deploys:
            functions += [(f"deploy@{deploy.at:g} {w.name}", w.fn) for w in deploy.workflows]
        functions += [(f"step {s.name}", s.body) for s in self.steps]
        functions += [
            (f"invariant {i}", getattr(inv, "check", inv)) for i, inv in enumerate(self.invariants)
        ]
        for name, function in functions:
            digest.update(name.encode())
            digest.update(_source(function).encode())
        return "sha256:" + digest.hexdigest()[:32]


def _step_keys(scenario: str, keys: object) -> tuple[str, ...]:
    """``overlap_safe`` as a tuple of step keys; a bare string (``"charge"``, which would read
    as five one-letter keys) or a key that is not a non-empty string is refused."""
    if isinstance(keys, str) or not isinstance(keys, Sequence | frozenset | set):
        raise TypeError(
            f"scenario {scenario!r}: overlap_safe is a list of step keys, e.g. "
            f'overlap_safe=["charge"], not {keys!r}'
        )
    for key in keys:
        if not isinstance(key, str) or not key:
            raise ValueError(
                f"scenario {scenario!r}: overlap_safe holds step keys (non-empty strings), "
                f"not {key!r}"
            )
    return tuple(keys)


#: The options the built-in runtimes take (``Scenario.runtime_options``), with their types.
RUNTIME_OPTIONS: dict[str, type] = {"orphan_guard": bool, "on_existing_id": str}

#: The values an option takes when they are fewer than its type's (checked at load time).
RUNTIME_OPTION_VALUES: dict[str, tuple[object, ...]] = {
    "on_existing_id": ("refuse", "return_existing"),
}


def _check_runtime_options(scenario: str, options: object) -> dict[str, object]:
    if not isinstance(options, Mapping):
        raise TypeError(
            f"scenario {scenario!r}: runtime_options must be a mapping of option names to "
            f"values, not {options!r}"
        )
    known = ", ".join(sorted(RUNTIME_OPTIONS))
    for name, value in options.items():
        kind = RUNTIME_OPTIONS.get(name) if isinstance(name, str) else None
        if kind is None:
            raise ValueError(
                f"scenario {scenario!r}: unknown runtime option {name!r}; the runtimes take: "
                f"{known}"
            )
        if not isinstance(value, kind):
            raise TypeError(
                f"scenario {scenario!r}: runtime option {name!r} must be a {kind.__name__}, "
                f"not {value!r}"
            )
        allowed = RUNTIME_OPTION_VALUES.get(name)
        if allowed is not None and value not in allowed:
            raise ValueError(
                f"scenario {scenario!r}: runtime option {name!r} is one of "
                f"{', '.join(map(repr, allowed))}, not {value!r}"
            )
    return dict(options)


def _source(function: Any) -> str:
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        code = getattr(function, "__code__", None)
        return repr((code.co_code, code.co_consts)) if code is not None else repr(function)


# --------------------------------------------------------------------------- loading


class ScenarioError(Exception):
    """A scenario that cannot be found or loaded; the message names the problem."""


class ScenarioDefinitionError(ScenarioError, ValueError):
    """A scenario that names what it does not have (a workflow, a worker), caught before it
    runs: a typo, never a verdict."""


class FaultPlanError(ScenarioError, ValueError):
    """A fault of the plan that no choice point of the run matched: it never fired, so the run
    did not test what the scenario says it tests."""


def given_scenario(value: object, call: str) -> Scenario:
    """``value``, the scenario a public ``call`` was given, or a ``TypeError`` that says what a
    scenario is and, for a name or a path, how to load it."""
    if isinstance(value, Scenario):
        return value
    hint = (
        f"; load one by name or path with ys.load_scenario({str(value)!r})"
        if isinstance(value, str | Path)
        else ""
    )
    raise TypeError(f"{call} takes a ys.Scenario, not {value!r} ({type(value).__name__}){hint}")
