"""A recorded step's identity, and the replay's check of it (issue 35, item 3).

A step that starts another workflow (``step.start``, ``step.call``, ``step.child``,
``step.spawn``) records, beside its ``executionId``, what it asked for: its kind, the target
workflow, the child ID and a digest of the start params (``"step": {...}``). Replay compares
what the code asks for now with that record, as Temporal compares each command with its
history, and a difference is a ``NondeterminismError`` naming the first field that differs:
without it a changed argument of a recorded step (a child's params computed differently after
a deploy) would replay silently, returning the old target, unless a fault forced a re-run.
A step recorded before identities were (no ``"step"``) is not compared.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.authoring import (
    CallStep,
    ChildStep,
    DelayStep,
    MemberRequest,
    RunStep,
    StartStep,
    StepRequest,
    TargetStep,
    WaitForEventStep,
)
from yieldstar_sim.core.codec import DurableValue, EncodedValue, durable_value_codec
from yieldstar_sim.core.commands import PutStep
from yieldstar_sim.core.driver_flow import relay
from yieldstar_sim.core.model import NondeterminismError, StepRecord

if TYPE_CHECKING:
    from collections.abc import Generator

#: The key of a step value that holds its identity.
IDENTITY_KEY = "step"

_KINDS = {"start", "call", "child", "spawn"}


def params_digest(params: object) -> str:
    """The first 12 hex digits of the SHA-256 of the params' canonical JSON (``invalid`` for
    params that are no durable value: the runtime refuses those, and the refusal is recorded)."""
    encoded = durable_value_codec.encode(params, path="params")
    if not isinstance(encoded, EncodedValue):
        return "invalid"
    return hashlib.sha256(encoded.canonical.encode("utf-8")).hexdigest()[:12]


def identity_of(request: object) -> dict[str, DurableValue] | None:
    """What a step that starts a workflow asked for; None for a body or a delay, whose key
    and kind are their identity."""
    if isinstance(request, ChildStep):
        kind = "spawn" if request.spawn else "child"
        return {
            "kind": kind,
            "workflow": request.workflow_id,
            "child": request.child_id,
            "params": params_digest(request.params),
        }
    if isinstance(request, StartStep | CallStep):
        kind = "start" if isinstance(request, StartStep) else "call"
        return {
            "kind": kind,
            "workflow": request.workflow_id,
            "params": params_digest(request.params),
        }
    return None


def stamped(steps: Generator[Any, Any, Any], request: StepRequest) -> Generator[Any, Any, Any]:
    """Drive one step's commands, adding its identity to every value it records for its key
    that names a target. ``steps`` itself for a step that names no target (a body, a delay,
    a group): most steps, on the hot path, pay no relay."""
    if not isinstance(request, TargetStep):
        return steps
    identity: dict[str, DurableValue] | None = None  # made once, when first recorded

    def stamp(command: Any) -> Any:
        nonlocal identity
        if (
            isinstance(command, PutStep)
            and command.step_key == request.key
            and isinstance(command.value, dict)
            and "executionId" in command.value  # a target was named: a refusal names none
        ):
            if identity is None:
                identity = identity_of(request)
            value = {**command.value, IDENTITY_KEY: identity}
            return PutStep(
                command.lease, command.step_key, command.status, value, command.attempt,
                command.wake_at,
            )  # fmt: skip
        return command

    return relay(steps, stamp)


def recorded_identity(record: StepRecord) -> dict[str, DurableValue] | None:
    """The identity a step record holds, if it holds one."""
    value = record.value
    if not isinstance(value, dict) or "executionId" not in value:
        return None
    identity = value.get(IDENTITY_KEY)
    if not isinstance(identity, dict) or identity.get("kind") not in _KINDS:
        return None
    return identity


def _words(identity: dict[str, DurableValue] | None, request: StepRequest | None = None) -> str:
    if identity is None:
        if isinstance(request, DelayStep):
            return "a delay"
        return "a step body to run" if isinstance(request, RunStep) else "another kind of step"
    words = f"a {identity['kind']} of workflow {identity['workflow']!r}"
    if "child" in identity:
        words += f" as {identity['child']!r}"
    return words


def changed(
    request: MemberRequest | DelayStep | WaitForEventStep, record: StepRecord | None, position: int
) -> NondeterminismError | None:
    """The first difference between what the code asks for and what was recorded under the
    same key, as a ``NondeterminismError``; None when they agree (or nothing was recorded)."""
    was = None if record is None else recorded_identity(record)
    if record is None or was is None:
        return None
    now = identity_of(request)
    key = request.key
    if now is None or now["kind"] != was["kind"]:
        detail = f"the record has {_words(was)}, the code asks for {_words(now, request)}"
    elif now["kind"] == "start":
        return None  # RFC 003: the runtime answers a changed start request START_REQUEST_MISMATCH
    elif now["workflow"] != was["workflow"]:
        detail = (
            f"the record has {_words(was)}, the code asks for a {now['kind']} of workflow "
            f"{now['workflow']!r}"
        )
    elif now.get("child") != was.get("child"):
        detail = (
            f"the record has child ID {was.get('child')!r}, the code asks for {now.get('child')!r}"
        )
    elif now["params"] != was["params"]:
        detail = (
            f"the code asks for {_words(now)} with other params than recorded (params digest "
            f"{was['params']} recorded, {now['params']} now)"
        )
    else:
        return None
    return NondeterminismError(record.execution_id, position, key, key, detail=detail)
