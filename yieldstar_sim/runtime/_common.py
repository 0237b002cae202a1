"""What every runtime adapter does the same way: argument checks, encodings, messages.

Keeping these in one place is what makes the adapters agree record for record; the lockstep
differential test checks that they do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from yieldstar_sim.core.clock import Clock, ManualClock
from yieldstar_sim.core.codec import (
    DurableObject,
    DurableValue,
    DurableValueError,
    InvalidValue,
    durable_value_codec,
)
from yieldstar_sim.core.frozen import maker
from yieldstar_sim.core.ids import check_execution_id, check_name, check_time
from yieldstar_sim.core.model import (
    AdmissionErrorCode,
    ChildAccepted,
    ChildRequest,
    ChildResult,
    ErrorInfo,
    ExecutionAdmissionError,
    ExecutionOrigin,
    ExecutionRecord,
    ExecutionStatus,
    InvalidIDError,
    Lease,
    LeaseLostError,
    ParentLink,
    RequestId,
    StartRejected,
    StartRequest,
    StartRequestRecord,
    StepRecord,
    StepStatus,
    TerminalCallerError,
    WorkflowRunOutcome,
    WorkflowStartErrorCode,
)
from yieldstar_sim.runtime.failpoints import FailPoints

if TYPE_CHECKING:
    from collections.abc import Sequence


STEP_STATUSES: frozenset[str] = frozenset({"completed", "failed", "pending"})

#: The columns of an execution row, in the order both adapters hand them to ``execution_record``.
EXECUTION_COLUMNS = (
    "execution_id",
    "seq",
    "workflow_id",
    "params",
    "origin",
    "parent_execution_id",
    "parent_step_key",
    "parent_detached",
    "status",
    "result",
    "error",
    "created_at",
    "finished_at",
    "due_at",
    "lease_owner",
    "lease_token",
    "lease_expires_at",
    "cancel_requested",
    "waiting_on",
    "recoveries",
    "instance_id",
)


def _opt_float(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


def decode_object(canonical: str | None) -> DurableObject | None:
    """Decode stored parameters (``None`` stays ``None``: no parameters)."""
    if canonical is None:
        return None
    value = durable_value_codec.decode_trusted(canonical)
    assert isinstance(value, dict)
    return value


def execution_record(row: Sequence[object]) -> ExecutionRecord:
    """Build the public record from a row in ``EXECUTION_COLUMNS`` order."""
    (
        execution_id,
        seq,
        workflow_id,
        params,
        origin,
        parent_execution_id,
        parent_step_key,
        parent_detached,
        status,
        result,
        error,
        created_at,
        finished_at,
        due_at,
        lease_owner,
        lease_token,
        lease_expires_at,
        cancel_requested,
        waiting_on,
        recoveries,
        instance_id,
    ) = row
    parent = (
        ParentLink(str(parent_execution_id), str(parent_step_key), bool(parent_detached))
        if parent_execution_id is not None
        else None
    )
    lease = (
        Lease(
            str(execution_id),
            str(lease_owner),
            int(lease_token),  # type: ignore[call-overload]
            float(lease_expires_at),  # type: ignore[arg-type]
            int(seq),  # type: ignore[call-overload]
        )
        if lease_owner is not None
        else None
    )
    return ExecutionRecord(
        execution_id=str(execution_id),
        workflow_id=str(workflow_id),
        params=decode_object(params),  # type: ignore[arg-type]
        origin=_origin(origin),
        parent=parent,
        status=ExecutionStatus(str(status)),
        created_at=float(created_at),  # type: ignore[arg-type]
        seq=int(seq),  # type: ignore[call-overload]
        result=None if result is None else durable_value_codec.decode_trusted(str(result)),
        error=None
        if error is None
        else ErrorInfo.from_value(durable_value_codec.decode_trusted(str(error))),
        finished_at=_opt_float(finished_at),
        due_at=_opt_float(due_at),
        lease=lease,
        lease_token=int(lease_token),  # type: ignore[call-overload]
        cancel_requested=bool(cancel_requested),
        waiting_on=None if waiting_on is None else str(waiting_on),
        recoveries=int(recoveries),  # type: ignore[call-overload]
        instance_id=None if instance_id is None else str(instance_id),
    )


def _origin(value: object) -> ExecutionOrigin:
    if value == "start":
        return "start"
    if value == "child":
        return "child"
    if value == "spawn":
        return "spawn"
    if value == "continue":
        return "continue"
    return "trigger"


def start_request_record(record: ExecutionRecord) -> StartRequestRecord:
    """The start-request record a started target stands for."""
    assert record.parent is not None
    return StartRequestRecord(
        request_id=RequestId(record.parent.execution_id, record.parent.step_key),
        workflow_id=record.workflow_id,
        params=record.params,
        detached=record.parent.detached,
        target_execution_id=record.execution_id,
        created_at=record.created_at,
    )


# --------------------------------------------------------------------------- arguments


@dataclass(frozen=True, slots=True)
class CheckedStart:
    """A start request whose fields are checked and whose parameters are encoded."""

    caller: str
    step_key: str
    workflow_id: str
    params: str | None
    detached: bool


def encode_start_params(params: object) -> str | StartRejected | None:
    """The canonical encoding of start parameters, or the RFC's rejection of invalid ones."""
    if params is None:
        return None
    encoding = durable_value_codec.validate_object(params, path="params")
    if encoding.status == "invalid":
        return StartRejected(WorkflowStartErrorCode.INVALID_START_PARAMETERS, encoding.message)
    return encoding.canonical


def check_start(request: StartRequest) -> CheckedStart | StartRejected:
    """Check a start request; invalid parameters come back as the RFC's rejection."""
    if not isinstance(request, StartRequest):
        raise TypeError(f"start takes a StartRequest, not {type(request).__name__}")
    request_id = request.request_id
    if not isinstance(request_id, RequestId):
        raise TypeError(f"request_id must be a RequestId, not {type(request_id).__name__}")
    caller = check_name(request_id.execution_id, "the caller's execution ID")
    step_key = check_name(request_id.step_key, "the step key")
    workflow_id = check_name(request.workflow_id, "the workflow ID")
    if not isinstance(request.detached, bool):
        raise TypeError(f"detached must be a bool, not {type(request.detached).__name__}")
    params = encode_start_params(request.params)
    if isinstance(params, StartRejected):
        return params
    return CheckedStart(caller, step_key, workflow_id, params, request.detached)


def check_trigger(
    workflow_id: object, params: object, execution_id: str | None
) -> tuple[str, str | None]:
    """Check a direct trigger; return the workflow ID and encoded parameters."""
    workflow_id = check_name(workflow_id, "the workflow ID")
    if execution_id is not None:
        check_execution_id(execution_id)
    if params is None:
        return workflow_id, None
    encoding = durable_value_codec.validate_object(params, path="params")
    if encoding.status == "invalid":
        raise ExecutionAdmissionError(AdmissionErrorCode.INVALID_PARAMETERS, encoding.message)
    return workflow_id, encoding.canonical


def mismatch(
    request: CheckedStart, target_id: str, workflow_id: str, params: str | None
) -> StartRejected | None:
    """The rejection for a repeated request that asks for something else, if it does."""
    if workflow_id == request.workflow_id and params == request.params:
        return None
    return StartRejected(
        WorkflowStartErrorCode.START_REQUEST_MISMATCH,
        f"start request ({request.caller}, {request.step_key}) first started {target_id} as "
        f"{workflow_id} with params {params or 'none'}; this request asks for "
        f"{request.workflow_id} with params {request.params or 'none'}",
    )


@dataclass(frozen=True, slots=True)
class CheckedChild:
    """A child or spawn request whose fields are checked and whose parameters are encoded."""

    caller: str
    step_key: str
    workflow_id: str
    child_id: str
    params: str | None
    detached: bool

    @property
    def origin(self) -> str:
        return "spawn" if self.detached else "child"


def check_child(request: ChildRequest) -> CheckedChild | StartRejected:
    """Check a child request; the child ID follows the guide's ID rules (InvalidIDError)."""
    if not isinstance(request, ChildRequest):
        raise TypeError(f"start_child takes a ChildRequest, not {type(request).__name__}")
    caller = check_name(request.request_id.execution_id, "the caller's execution ID")
    step_key = check_name(request.request_id.step_key, "the step key")
    workflow_id = check_name(request.workflow_id, "the workflow ID")
    child_id = check_execution_id(request.child_id, what="child ID")
    params = encode_start_params(request.params)
    if isinstance(params, StartRejected):
        return params
    return CheckedChild(caller, step_key, workflow_id, child_id, params, bool(request.detached))


def child_answer(
    request: CheckedChild,
    requested: tuple[str, str, str | None] | None,
    existing: tuple[str, str] | None,
) -> ChildResult | None:
    """Decide a child request the runtime could not insert: a replay of our own creation, a
    join, or a refusal. ``requested`` is (target, workflow, params) of the caller's request
    with this step key; ``existing`` is (ID, workflow) of the run holding the child ID.
    ``None``: neither exists any more (a race with a prune): try again."""
    if requested is not None:
        target, workflow_id, params = requested
        if (target, workflow_id, params) == (request.child_id, request.workflow_id, request.params):
            return ChildAccepted(target, created=True)
        return StartRejected(
            WorkflowStartErrorCode.START_REQUEST_MISMATCH,
            f"child request ({request.caller}, {request.step_key}) first created {target} as "
            f"{workflow_id} with params {params or 'none'}; this request asks for "
            f"{request.child_id} as {request.workflow_id} with params {request.params or 'none'}",
        )
    if existing is None:
        return None
    existing_id, workflow_id = existing
    if existing_id == request.caller and workflow_id == request.workflow_id:
        raise InvalidIDError(
            f"child ID {request.child_id!r} is the caller's own ID for the same workflow "
            f"{workflow_id!r}"
        )
    if workflow_id != request.workflow_id:
        return StartRejected(
            WorkflowStartErrorCode.START_REQUEST_MISMATCH,
            f"{request.child_id} runs {workflow_id}, so a {request.workflow_id} child cannot "
            "join it",
        )
    return ChildAccepted(existing_id, created=False)


def caller_not_found(request: CheckedStart | CheckedChild) -> ExecutionAdmissionError:
    """The error for a start whose caller does not exist (never admitted, or pruned)."""
    return ExecutionAdmissionError(
        AdmissionErrorCode.CALLER_NOT_FOUND,
        f"start request ({request.caller}, {request.step_key}): the caller {request.caller} "
        "does not exist (never admitted, or pruned)",
    )


def caller_terminal(request: CheckedStart | CheckedChild, status: str) -> TerminalCallerError:
    """The error for a new start whose caller is terminal: its delivery is stale, and a
    terminal execution admits no new targets (nobody would own or cancel them)."""
    what = "child request" if isinstance(request, CheckedChild) else "start request"
    return TerminalCallerError(
        f"{what} ({request.caller}, {request.step_key}): the caller {request.caller} is "
        f"{status}: a terminal execution admits no new targets (the delivery that asks is stale)"
    )


def inherits_cancellation(
    orphan_guard: bool, *, detached: bool, caller_cancel_requested: bool
) -> bool:
    """Whether a new target starts with its cancellation requested: an owned target admitted
    while its owner's cancellation is requested follows its owner (the guard's second rule)."""
    return orphan_guard and not detached and caller_cancel_requested


def check_orphan_guard(value: object) -> bool:
    """Return ``value`` if it is a bool: the ``orphan_guard`` option of the runtimes."""
    if not isinstance(value, bool):
        raise TypeError(f"orphan_guard must be True or False, not {value!r}")
    return value


#: What a runtime answers a trigger whose caller-chosen execution ID (its business ID) exists:
#: ``refuse`` (RFC 001's EXECUTION_EXISTS, the default) or ``return_existing`` (DBOS-style:
#: the existing execution's ID, when it runs the same workflow). docs/decisions.md says why.
EXISTING_ID_POLICIES = ("refuse", "return_existing")


def check_on_existing_id(value: object) -> str:
    """Return ``value`` if it names a policy: the ``on_existing_id`` option of the runtimes."""
    if value not in EXISTING_ID_POLICIES:
        raise ValueError(
            f"on_existing_id must be one of {', '.join(map(repr, EXISTING_ID_POLICIES))}, "
            f"not {value!r}"
        )
    return str(value)


class AdapterOptions:
    """What every adapter keeps alike: the clock its calls read, its orphan guard, its answer
    to an existing ID and its failure points (the constructors take the same options). The
    Protocol's ``clock`` and ``failpoints`` stay on each adapter, where its API page lists
    them (``docs/api.md`` lists a class's own members)."""

    _clock: Clock
    _orphan_guard: bool
    _on_existing_id: str
    _failpoints: FailPoints

    def _keep_options(self, clock: Clock | None, orphan_guard: bool, on_existing_id: str) -> None:
        """Check and keep the options every adapter's constructor takes; no failure armed."""
        self._clock = clock if clock is not None else ManualClock()
        self._orphan_guard = check_orphan_guard(orphan_guard)
        self._on_existing_id = check_on_existing_id(on_existing_id)
        self._failpoints = FailPoints()


def existing_id_answer(
    policy: str, execution_id: str, workflow_id: str, existing_workflow_id: str | None
) -> str:
    """The answer to a trigger whose caller-chosen ID exists (``existing_workflow_id`` is the
    workflow the existing execution runs): its ID under ``return_existing`` when the workflow
    is the same, else the refusal is raised. Returning another workflow's execution would hide
    the conflict, as RFC 003 refuses a mismatched start request."""
    if policy == "return_existing" and existing_workflow_id == workflow_id:
        return execution_id
    raise ExecutionAdmissionError(
        AdmissionErrorCode.EXECUTION_EXISTS,
        f"execution {execution_id!r} already exists"
        + (
            f" and runs {existing_workflow_id}, not {workflow_id}"
            if policy == "return_existing" and existing_workflow_id is not None
            else ""
        ),
    )


def check_lease(lease: object) -> Lease:
    """Return ``lease`` if it is a ``Lease``."""
    if not isinstance(lease, Lease):
        raise TypeError(f"a fenced write takes the Lease from claim, not {type(lease).__name__}")
    return lease


def check_seconds(value: float, what: str, *, positive: bool = False) -> float:
    """Return ``value`` as float if it is a finite number of seconds (> 0 if ``positive``)."""
    seconds = check_time(value, what)
    if positive and seconds <= 0:
        raise ValueError(f"{what} must be positive, not {value!r}")
    return seconds


@dataclass(frozen=True, slots=True)
class StepWrite:
    """A checked step write, every part a plain built-in value (never a subclass whose
    ``__eq__``, ``__str__`` or ``__format__`` could say something else to one adapter)."""

    step_key: str
    status: StepStatus
    attempt: int
    canonical: str
    value: DurableValue
    """What decoding ``canonical`` gives (new containers): what a runtime that keeps values
    decoded stores."""


#: Every step write of every runtime is built here (``core.frozen``).
_new_step_write = StepWrite if TYPE_CHECKING else maker(StepWrite)


def check_put_step(
    step_key: object, status: object, value: object, attempt: object, wake_at: float | None
) -> tuple[StepWrite, float | None]:
    """Check ``put_step``'s arguments: the step write, and the wake time (or ``None``)."""
    write = check_step(step_key, status, value, attempt)
    return write, None if wake_at is None else check_seconds(wake_at, "wake_at")


def check_step(step_key: object, status: object, value: object, attempt: object) -> StepWrite:
    """Check a step write; return it with plain parts and the canonical value."""
    if isinstance(step_key, str):
        step_key = str.__str__(step_key)  # checked and stored as the characters it holds
    check_name(step_key, "the step key")
    assert isinstance(step_key, str)
    plain_status = str.__str__(status) if isinstance(status, str) else status
    if plain_status not in STEP_STATUSES:
        raise ValueError(f"step status must be one of {sorted(STEP_STATUSES)}, not {status!r}")
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
        raise ValueError(f"attempt must be a whole number from 1, not {attempt!r}")
    encoded = durable_value_codec.round_trip(value, path=f"step {step_key!r} value")
    if isinstance(encoded, InvalidValue):
        raise DurableValueError(encoded.message)
    canonical, decoded = encoded
    return _new_step_write(
        step_key, step_status(str(plain_status)), int.__int__(attempt), canonical, decoded
    )


def outcome_columns(outcome: WorkflowRunOutcome) -> tuple[str, str | None, str | None]:
    """The status, encoded result and encoded error an outcome is stored as."""
    from yieldstar_sim.core.model import (
        Cancelled,
        Completed,
        ContinuedAsNew,
        DeadLettered,
        Failed,
        Suspended,
    )

    match outcome:
        case Completed(result=result):
            return (
                ExecutionStatus.COMPLETED,
                durable_value_codec.encode_or_raise(result, path="result"),
                None,
            )
        case Failed(error=error):
            if not isinstance(error, ErrorInfo):
                raise TypeError("Failed.error must be an ErrorInfo")
            return (
                ExecutionStatus.FAILED,
                None,
                durable_value_codec.encode_or_raise(error.to_value()),
            )
        case Cancelled():
            return ExecutionStatus.CANCELLED, None, None
        case DeadLettered(error=error):
            return (
                ExecutionStatus.DEAD_LETTERED,
                None,
                durable_value_codec.encode_or_raise(error.to_value()),
            )
        case Suspended():
            return ExecutionStatus.SUSPENDED, None, None
        case ContinuedAsNew():
            # The result names the next run, which only the runtime's write knows.
            return ExecutionStatus.CONTINUED_AS_NEW, None, None
    raise TypeError(f"not a WorkflowRunOutcome: {outcome!r}")


# --------------------------------------------------------------------------- leases


def lease_lost(lease: Lease, record: ExecutionRecord | None, now: float) -> LeaseLostError:
    """Explain why ``lease`` no longer fences writes to its execution."""
    who = f"{lease.owner}'s lease on {lease.execution_id} (token {lease.token})"
    if record is None:
        why = f"{lease.execution_id} no longer exists"
    elif record.seq != lease.incarnation:
        why = f"{lease.execution_id} was pruned and admitted again since"
    elif record.terminal:
        why = f"{lease.execution_id} is already {record.status}"
    elif record.lease_token != lease.token:
        holder = (
            f"now leased to {record.lease.owner} with token {record.lease.token}"
            if record.lease is not None
            else f"was claimed again (token {record.lease_token}) and released"
        )
        why = f"{lease.execution_id} {holder}"
    elif record.lease is None:
        why = "it was released"
    elif record.lease.expires_at <= now:
        why = f"it expired at t={record.lease.expires_at:g} (now t={now:g})"
    else:  # pragma: no cover - a write that passes every check is not refused
        why = "of a concurrent write"
    return LeaseLostError(f"fenced write refused: {who} is stale: {why}")


def step_status(value: str) -> StepStatus:
    """Narrow a stored status string."""
    if value == "completed":
        return "completed"
    if value == "failed":
        return "failed"
    return "pending"


# --------------------------------------------------------------------------- step logs


def step_entry(write: StepWrite, now: float) -> str:
    """One line of a step log: the canonical JSON of the entry. The codec writes every part but
    the value (already canonical), so no part can close the entry early and add another; "v"
    sorts last, so appending it keeps the keys in canonical order."""
    head = durable_value_codec.encode_or_raise(
        {"a": write.attempt, "k": write.step_key, "s": write.status, "t": now}
    )
    return f'{head[:-1]},"v":{write.canonical}}}\n'


def parse_step_log(execution_id: str, log: str) -> list[StepRecord]:
    """Fold a step log into step records: first entry fixes the position, last one the state."""
    if not log:
        return []
    entries = durable_value_codec.decode_trusted("[" + log.rstrip("\n").replace("\n", ",") + "]")
    assert isinstance(entries, list)
    steps: dict[str, StepRecord] = {}
    for entry in entries:
        assert isinstance(entry, dict)
        key = str(entry["k"])
        old = steps.get(key)
        steps[key] = StepRecord(
            execution_id,
            key,
            len(steps) if old is None else old.position,
            step_status(str(entry["s"])),
            entry["v"],
            int(entry["a"]),  # type: ignore[arg-type]
            float(entry["t"]),  # type: ignore[arg-type]
        )
    return list(steps.values())  # dicts keep first-insertion order: the positions' order
