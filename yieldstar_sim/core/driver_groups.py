"""``step.all`` in the driver: fan out a group of steps, then wait for them together (fan-in).

A group takes the next ``n`` places of the execution's step log, one per member, and replay
finds each member's record *by its step key* among those places (the profile's
``group_ids="call-site"``): members complete, and are checkpointed, in whatever order they
finish, so a recovery on another worker meets them in another order than the first run did,
and matching by position would hand one member another's result. ``"completion-order"`` is
that mistake, kept for a scenario to show it (engines have shipped it).

One delivery of a group, in order:

1. every start, call, child and spawn member is issued in call order (its start, its record,
   its wait registered), as ``asyncio.gather`` runs each coroutine to its first wait;
2. the step bodies not yet recorded run, in an order the executor chooses
   (``OrderCompletions``: the engine keeps call order, the simulator makes it a choice point),
   each checkpointed as it completes;
3. if a member failed, the group raises the error of the first failure in the step log (the
   first to occur; a member refused before it wrote anything, such as a bad workflow name,
   comes first), and the other members go on; else, if a member is still waiting (a child
   running, a retry's backoff), the delivery suspends, to be woken by whichever ends; else
   the results come back in call order.

A group that raised raises the same error on every replay: members it found still waiting
are not looked at again, so that a later failure cannot take the first one's place.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Protocol

from yieldstar_sim.core.authoring import RunStep
from yieldstar_sim.core.commands import Command, OrderCompletions, PutStep
from yieldstar_sim.core.driver_flow import Diverged, Replay, Suspend, Throw, check_step_key, relay
from yieldstar_sim.core.model import (
    ErrorInfo,
    NondeterminismError,
    WorkflowCancelledError,
)

if TYPE_CHECKING:
    from yieldstar_sim.core.authoring import GroupStep, MemberRequest
    from yieldstar_sim.core.codec import DurableValue
    from yieldstar_sim.core.model import Lease, StepRecord
    from yieldstar_sim.core.profiles import DriverProfile

#: Run one member against its record (or ``None``): the driver's own step, cancellation and
#: recorded failures included.
MemberStep = Callable[["MemberRequest", "StepRecord | None"], Generator[Command, Any, Any]]


class _Delivery(Protocol):
    """What a group needs of the driver's delivery context."""

    cancel_pending: bool
    cancel_reason: str

    @property
    def lease(self) -> Lease: ...

    @property
    def replay(self) -> Replay: ...

    @property
    def profile(self) -> DriverProfile: ...

    @property
    def execution_id(self) -> str: ...


def perform_group(
    group: GroupStep, ctx: _Delivery, step: MemberStep
) -> Generator[Command, Any, list[Any]]:
    """Run ``group``'s members as the module says; return their results in call order."""
    records = reach_group(ctx.replay, group.keys, by_position=_by_position(ctx.profile))
    raised_before = any(r is not None and r.status == "failed" for r in records.values())
    if ctx.cancel_pending and not raised_before and any(map(_open, records.values())):
        # A group that raised is over, as a recorded step is: the cancellation is thrown at
        # the next step the code reaches.
        yield from _cancel(group, records, ctx)
    runs = [m for m in group.members if _is_run(m)]
    unrecorded = [m for m in runs if records[m.key] is None]
    sequence = [m for m in group.members if not _is_run(m)]
    sequence += [m for m in runs if records[m.key] is not None]
    calls = {key: index for index, key in enumerate(group.keys)}
    results: dict[str, Any] = {}
    failures: list[tuple[tuple[int, int], BaseException]] = []
    suspended = False
    index = 0
    while index < len(sequence) or unrecorded:
        if index == len(sequence):
            # The bodies start together once every start is issued: the executor says in
            # which order they complete (a choice point in the simulator).
            sequence += yield from _completion_order(unrecorded, ctx.execution_id)
            unrecorded = []
        member, index = sequence[index], index + 1
        record = records[member.key]
        if raised_before and record is not None and record.status == "pending":
            suspended = True  # the group raised already: this member's end changes nothing
            continue
        wrote: list[bool] = []
        try:
            results[member.key] = yield from _watched(step(member, record), member.key, wrote)
        except Suspend:
            suspended = True
        except Throw as thrown:
            if record is not None:
                place = (1, record.position)
            elif wrote:
                place = (2, index)  # recorded now: after every earlier record, in this order
            else:
                place = (0, calls[member.key])  # refused before it started: every replay too
            failures.append((place, thrown.error))
    if failures:
        raise Throw(min(failures, key=lambda failure: failure[0])[1])
    if suspended:
        raise Suspend
    return [results[key] for key in group.keys]


def _completion_order(
    members: list[MemberRequest], execution_id: str
) -> Generator[Command, Any, list[MemberRequest]]:
    if len(members) < 2:
        return members
    keys = tuple(member.key for member in members)
    chosen = yield OrderCompletions(execution_id, keys)
    if sorted(chosen) != sorted(keys):
        raise TypeError(f"an order of completion names {chosen!r}, not {keys!r}")
    by_key = {member.key: member for member in members}
    return [by_key[key] for key in chosen]


def reach_group(
    replay: Replay, keys: tuple[str, ...], *, by_position: bool = False
) -> dict[str, StepRecord | None]:
    """Check the group's step keys and reach them; return each member's record, if any.

    The group's records are the next ``len(keys)`` of the step log, in any order; one with
    another key means the code took another path (``NondeterminismError``). ``by_position``
    hands the member at call position ``i`` the ``i``-th record, whatever its key.
    """
    for key in keys:
        check_step_key(key, replay.reached, replay.execution_id)
    start = len(replay.reached)
    replay.reached.update(keys)
    window = replay.recorded[start : start + len(keys)]
    if by_position:
        return {key: window[i] if i < len(window) else None for i, key in enumerate(keys)}
    found: dict[str, StepRecord] = {}
    for offset, record in enumerate(window):
        if record.step_key not in keys:
            missing = next(key for key in keys if key not in found)
            raise Diverged(
                NondeterminismError(replay.execution_id, start + offset, record.step_key, missing)
            )
        found[record.step_key] = record
    return {key: found.get(key) for key in keys}


def _cancel(
    group: GroupStep, records: dict[str, StepRecord | None], ctx: _Delivery
) -> Generator[Command, Any, None]:
    """RFC 009 at a group: the cancellation ends the wait, recorded as the failure of every
    member not yet ended, so every replay throws it here; the runtime cancels what the
    execution owns (its call and child members) with it."""
    ctx.cancel_pending = False
    info = ErrorInfo("WorkflowCancelledError", ctx.cancel_reason)
    for key in group.keys:
        record = records[key]
        if _open(record):
            attempt = 1 if record is None else record.attempt
            failure: DurableValue = {"error": info.to_value(), "cancelled": True}
            yield PutStep(ctx.lease, key, "failed", failure, attempt)
    raise Throw(WorkflowCancelledError(ctx.cancel_reason))


def _watched(
    member: Generator[Command, Any, Any], key: str, wrote: list[bool]
) -> Generator[Command, Any, Any]:
    """``yield from member``, noting in ``wrote`` whether it wrote its step's record."""

    def note(command: Command) -> Command:
        if isinstance(command, PutStep) and command.step_key == key and not wrote:
            wrote.append(True)
        return command

    return (yield from relay(member, note))


def _open(record: StepRecord | None) -> bool:
    return record is None or record.status == "pending"


def _is_run(member: MemberRequest) -> bool:
    return isinstance(member, RunStep)


def _by_position(profile: DriverProfile) -> bool:
    return profile.group_ids == "completion-order"
