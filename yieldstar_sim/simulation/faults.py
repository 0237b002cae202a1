"""Faults the simulator injects at choice points, and the plans that place them.

A fault is placed either by choice-point index (``at=17``: what the explorer generates) or by
description (``worker``, ``op``, ``execution_id``, ``step_key`` and which ``occurrence``: what a
person writes in a scenario). Each fault fires at most once.

>>> plan = FaultPlan([Fault("crash", op="put_step", step_key="ship")])
>>> plan.faults[0].describe()
'crash before put_step of step ship'
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.frozen import maker
from yieldstar_sim.core.ops import Op
from yieldstar_sim.core.suggest import did_you_mean

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from yieldstar_sim.core.codec import DurableObject
    from yieldstar_sim.simulation.trace import TraceEvent


class FaultKind(enum.StrEnum):
    """What happens to the worker at a choice point (``KIND_EFFECTS`` says what each does)."""

    CRASH = "crash"
    CRASH_AFTER = "crash_after"
    LOSE_RESPONSE = "lose_response"
    FREEZE = "freeze"
    INFRA_ERROR = "infra_error"
    CHILD_EXIT = "child_exit"
    STALL = "stall"
    SKEW = "skew"
    WORLD_ERROR = "world_error"
    LOSE_EVENT = "lose_event"
    DUPLICATE_EVENT = "duplicate_event"
    DELAY_EVENT = "delay_event"

    @property
    def effect(self) -> str:
        """What this fault does to the worker and its call, in one sentence."""
        return KIND_EFFECTS[self]


#: What each fault kind does, in one sentence (``yieldstar-sim list --faults`` prints these).
KIND_EFFECTS: dict[FaultKind, str] = {
    FaultKind.CRASH: "The worker dies before the call; it restarts later with no memory and its "
    "lease expires, so another worker (or it) replays the execution.",
    FaultKind.CRASH_AFTER: "The call commits, then the worker dies before seeing the response; "
    "its lease expires and the execution is replayed.",
    FaultKind.LOSE_RESPONSE: "The call commits but its response is lost: the worker lives and "
    "the client raises an infrastructure error.",
    FaultKind.FREEZE: "The worker stops for `seconds` before the call (default 40; its lease may "
    "expire and another worker replay), then makes it and is fenced if it lost the lease.",
    FaultKind.INFRA_ERROR: "The call fails without effect; the client raises an infrastructure "
    "error.",
    FaultKind.CHILD_EXIT: "The worker's child process exits before the call; the parent releases "
    "the lease and the execution is delivered again.",
    FaultKind.STALL: "One step attempt (not the worker) hangs for `seconds` at its elapse "
    "(default 90): the worker goes on, the lease expires, the retry runs elsewhere, then the "
    "attempt resumes: its effects land and its fenced writes are refused.",
    FaultKind.SKEW: "From this point on the worker's clock runs `seconds` behind (default 60): it "
    "heartbeats by its own clock and may think an expired lease still holds; fencing judges by "
    "true time.",
    FaultKind.WORLD_ERROR: "The outside world fails a step body's call (a store read or write, "
    "an effect, a transaction's commit): nothing of it happens, and the body sees "
    "ys.WorldError there; a body that lets it go has its delivery rejected and run again.",
    FaultKind.LOSE_EVENT: "An external event is lost on its way to the runtime: the runtime "
    "never sees it, and its sender, which got no refusal, takes it as sent.",
    FaultKind.DUPLICATE_EVENT: "An external event reaches the runtime twice (a transport that "
    "delivers at least once): the same request, with the same event ID, is sent a second time.",
    FaultKind.DELAY_EVENT: "An external event is held back `seconds` on its way (default 40), "
    "then reaches the runtime: whatever the target ran meanwhile (a continue-as-new, its end) "
    "comes first.",
}

#: The runtime calls that are choice points, by the ``op`` a ``Fault`` names, and what each is.
#: A test runs every bundled scenario and checks the simulator makes no choice point outside it.
CHOICE_POINT_OPS: dict[Op, str] = {
    Op.CLAIM: "a free worker asks for a delivery: a lease, a fencing token, the recorded steps",
    Op.PUT_STEP: "record a step's result, failure or timer (step.run, step.delay, a start's "
    "target)",
    Op.RECORD_WAKE: "record when a suspended execution wakes (a durable timer, a retry backoff)",
    Op.WAIT_FOR: "suspend until another execution finishes (step.call, step.child joins)",
    Op.START: "the durable start of a target (step.start, step.call): one per start request",
    Op.START_CHILD: "create or join an owned child, or spawn a detached one (step.child, "
    "step.spawn)",
    Op.CANCEL: "request cancellation of an execution and what it owns (a workflow's, or a "
    "client's)",
    Op.ACKNOWLEDGE: "report the execution's outcome and end the lease",
    Op.RELEASE: "hand a delivery back (a rejected delivery, a worker process exit)",
    Op.TRIGGER: "a client (ys.Client) admits an execution: a scenario trigger, or an external "
    "start with a caller-chosen request ID",
    Op.SEND_EVENT: "a sender (ys.SendEvent) hands an external event to the runtime, for a run "
    "or an instance",
    Op.WAIT_FOR_EVENT: "take a pending event and record it as the step (step.wait_for_event)",
    Op.COMPLETE_ATTEMPT: "a step attempt records its result under its own attempt token (a step "
    "declared completes_by_token(); also an attempt its worker gave up on, when it ends)",
    Op.ELAPSE: "a step body lets time pass (step.world.elapse): its later effects wait for it",
    Op.COMPLETE: "one of a step.all's concurrent step bodies completes: which one is next is "
    "the choice (no fault is placed there: the worker's calls around it are where faults go)",
    Op.RENEW: "a step body heartbeats (step.heartbeat()): its worker renews the lease, and "
    "counts a renewal that fails (infra_error) or whose answer is lost (lose_response)",
    Op.DRAW: "a step body's draw (step.world.choice, coin): which value it draws is the choice, "
    "each option a move of the worker's (no fault is placed there)",
    Op.STORE_READ: "a step body reads the outside world's store (step.world.read) where its work "
    "reaches the read (only a world_error is placed there)",
    Op.STORE_WRITE: "a step body's write to the outside world's store (step.world.write) lands "
    "where its work reaches it (only a world_error is placed there)",
    Op.EFFECT: "a step body's effect (step.world.effect) lands where its work reaches it (only "
    "a world_error is placed there)",
    Op.COMMIT: "a step body's transaction (with step.world.transaction()) commits, its writes "
    "landing together (only a world_error is placed there)",
}

#: The ops each kind can be placed at (None: every op). A fault whose kind does not apply at
#: a point passes it by: there is no call at an elapse to lose the response of, and only a
#: step body's elapse has an attempt to stall.
#: The outside world's ops: a step body's calls to it, where a world_error alone is placed
#: (the worker's own faults strike at its runtime calls and elapses, around the body).
WORLD_OPS = frozenset({Op.STORE_READ, Op.STORE_WRITE, Op.EFFECT, Op.COMMIT})
#: Where an external event's delivery can go wrong: a sender's ``send_event``.
_SEND_OPS = frozenset({Op.SEND_EVENT})
_CALL_OPS = frozenset(CHOICE_POINT_OPS) - {Op.ELAPSE, Op.COMPLETE, Op.DRAW} - WORLD_OPS
_WORKER_OPS = frozenset(CHOICE_POINT_OPS) - {Op.COMPLETE, Op.DRAW} - WORLD_OPS
KIND_OPS: dict[FaultKind, frozenset[Op] | None] = {
    FaultKind.CRASH: _WORKER_OPS,
    FaultKind.CRASH_AFTER: _CALL_OPS,
    FaultKind.LOSE_RESPONSE: _CALL_OPS,
    FaultKind.FREEZE: _WORKER_OPS,
    FaultKind.INFRA_ERROR: _CALL_OPS,
    FaultKind.CHILD_EXIT: _CALL_OPS,
    FaultKind.STALL: frozenset({Op.ELAPSE}),
    FaultKind.SKEW: _WORKER_OPS,
    FaultKind.WORLD_ERROR: WORLD_OPS,
    FaultKind.LOSE_EVENT: _SEND_OPS,
    FaultKind.DUPLICATE_EVENT: _SEND_OPS,
    FaultKind.DELAY_EVENT: _SEND_OPS,
}

#: The ops the explorer places each kind at, where it differs from ``KIND_OPS``: a skew
#: changes what a worker does only where it reads its clock to heartbeat (at an elapse), so
#: the explorer tries it there and nowhere else.
EXPLORED_OPS: dict[FaultKind, frozenset[Op]] = {FaultKind.SKEW: frozenset({Op.ELAPSE})}


def applies_at(kind: FaultKind | str, op: Op | str, *, exploring: bool = False) -> bool:
    """Whether a fault of ``kind`` can fire at a choice point of ``op`` (with ``exploring``,
    whether the explorer places it there).

    >>> applies_at("stall", "put_step"), applies_at("crash", "elapse")
    (False, True)
    """
    # Asked at every choice point for every fault of a plan: a kind already a FaultKind skips
    # the enum's lookup.
    if kind.__class__ is not FaultKind:
        kind = FaultKind(kind)
    ops = EXPLORED_OPS.get(kind) if exploring else None
    ops = ops if ops is not None else KIND_OPS[kind]
    return ops is None or op in ops


FAULT_KINDS = tuple(FaultKind)
_WORLD_ONLY = frozenset({FaultKind.WORLD_ERROR})
#: The kinds that strike an external event on its way, at a sender's ``send_event`` alone.
EVENT_KINDS = frozenset({FaultKind.LOSE_EVENT, FaultKind.DUPLICATE_EVENT, FaultKind.DELAY_EVENT})
DEFAULT_FREEZE = 40.0
DEFAULT_DELAY = 40.0
DEFAULT_STALL = 90.0
DEFAULT_SKEW = 60.0

#: The kinds that take ``seconds``, with their default and what the seconds are.
TIMED_KINDS: dict[FaultKind, tuple[float, str]] = {
    FaultKind.FREEZE: (DEFAULT_FREEZE, "a freeze lasts"),
    FaultKind.STALL: (DEFAULT_STALL, "a stall lasts"),
    FaultKind.SKEW: (DEFAULT_SKEW, "a skew sets a worker's clock back by"),
    FaultKind.DELAY_EVENT: (DEFAULT_DELAY, "an event's delay is"),
}


def fault_action(kind: FaultKind, seconds: float | None) -> str:
    """What a fault of ``kind`` does, as the start of a sentence: ``freeze 40s before``.

    >>> fault_action(FaultKind.CRASH, None), fault_action(FaultKind.STALL, 90.0)
    ('crash before', 'stall the attempt 90s at')
    """
    if kind == FaultKind.FREEZE:
        return f"freeze {seconds:g}s before"
    if kind == FaultKind.STALL:
        return f"stall the attempt {seconds:g}s at"
    if kind == FaultKind.SKEW:
        return f"set the worker's clock {seconds:g}s back at"
    if kind == FaultKind.DELAY_EVENT:
        return f"hold the event back {seconds:g}s at"
    return {
        FaultKind.CRASH: "crash before",
        FaultKind.CRASH_AFTER: "crash after",
        FaultKind.LOSE_RESPONSE: "lose the response of",
        FaultKind.INFRA_ERROR: "infrastructure error at",
        FaultKind.CHILD_EXIT: "worker process exit before",
        FaultKind.WORLD_ERROR: "outside-world error at",
        FaultKind.LOSE_EVENT: "lose the event of",
        FaultKind.DUPLICATE_EVENT: "deliver twice the event of",
    }[kind]


def explored_seconds(kind: FaultKind, freeze: float) -> float | None:
    """The seconds the explorer gives a fault of ``kind``, from its freeze length (the lease
    plus the redelivery delay): a stall twice that, so the lease expires and a retry has time
    to run before the attempt resumes; a skew twice that, so a heartbeat falls behind; an
    event's delay as long as a freeze, so that it lands past a lease's worth of its target's
    work."""
    if kind in (FaultKind.FREEZE, FaultKind.DELAY_EVENT):
        return freeze
    if kind in (FaultKind.STALL, FaultKind.SKEW):
        return 2 * freeze
    return None


@dataclass(frozen=True, slots=True)
class PointInfo:
    """What a choice point is: who makes which runtime call, for which execution and step."""

    worker: str
    op: Op
    execution_id: str | None = None
    step_key: str | None = None

    @property
    def label(self) -> str:
        """A readable label: ``w1 put_step order-42/ship``."""
        # The op's text looked up, not formatted: an ``Op`` formats as a copy of its text,
        # and every choice point of every run is labelled.
        op = _OP_TEXT.get(self.op, self.op)
        execution_id, step_key = self.execution_id, self.step_key
        if step_key:
            return f"{self.worker} {op} {execution_id or ''}/{step_key}".strip()
        return f"{self.worker} {op} {execution_id or ''}".strip()


#: Each op's text, a plain string (``PointInfo.label``).
_OP_TEXT: dict[str, str] = {op: op.value for op in Op}


#: A PointInfo is built at every choice point (``core.frozen``); type checkers check the calls
#: against the class itself.
new_point_info = PointInfo if TYPE_CHECKING else maker(PointInfo)


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault: its kind and where it fires.

    ``at`` places it at a choice-point index; otherwise the first point (or the
    ``occurrence``-th) matching every given field gets it. ``seconds`` is how long a freeze,
    a stall, a skew or an event's delay lasts.
    """

    kind: FaultKind | str
    at: int | None = None
    worker: str | None = None
    op: Op | str | None = None
    """The op of the point (``"put_step"`` or ``Op.PUT_STEP``; always an ``Op`` once made)."""
    execution_id: str | None = None
    step_key: str | None = None
    occurrence: int = 1
    seconds: float | None = None
    label: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "kind", FaultKind(self.kind))
        except ValueError:
            raise ValueError(
                f"unknown fault kind {self.kind!r}{did_you_mean(str(self.kind), FAULT_KINDS)}; "
                f"the kinds are {', '.join(FAULT_KINDS)}"
            ) from None
        if self.op is not None:
            if self.op not in CHOICE_POINT_OPS:
                raise ValueError(
                    f"unknown fault op {self.op!r}{did_you_mean(str(self.op), CHOICE_POINT_OPS)}"
                    f"; the ops are {', '.join(CHOICE_POINT_OPS)} (yieldstar-sim list --faults "
                    "says what each is)"
                )
            object.__setattr__(self, "op", Op(self.op))
        for what in ("worker", "execution_id", "step_key"):
            value = getattr(self, what)
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"a fault's {what} is a non-empty string, not {value!r}")
        if self.at is not None and (
            isinstance(self.at, bool) or not isinstance(self.at, int) or self.at < 0
        ):
            raise ValueError(f"a fault's choice point must be a whole number >= 0, not {self.at!r}")
        if (
            isinstance(self.occurrence, bool)
            or not isinstance(self.occurrence, int)
            or self.occurrence < 1
        ):
            raise ValueError(f"occurrence counts from 1, not {self.occurrence!r}")
        kind = FaultKind(self.kind)
        if kind in TIMED_KINDS:
            default, what = TIMED_KINDS[kind]
            seconds = default if self.seconds is None else self.seconds
            if (
                isinstance(seconds, bool)
                or not isinstance(seconds, int | float)
                or not math.isfinite(seconds)
                or seconds <= 0
            ):
                raise ValueError(f"{what} a positive number of seconds, not {seconds!r}")
            object.__setattr__(self, "seconds", float(seconds))
        elif self.seconds is not None:
            raise ValueError(
                f"only a freeze, a stall, a skew or a delay_event takes seconds, not a {self.kind}"
            )
        if self.op is not None and not applies_at(kind, self.op):
            where = ", ".join(sorted(KIND_OPS[kind] or ()))
            raise ValueError(
                f"a {kind} cannot be placed at {self.op}: it applies at {where}"
                + (" (a step body's step.world.elapse)" if kind == FaultKind.STALL else "")
                + (" (a step body's calls to the outside world)" if kind in _WORLD_ONLY else "")
                + (" (a sender's ys.SendEvent)" if kind in EVENT_KINDS else "")
            )

    def matches(self, index: int, point: PointInfo) -> bool:
        """Whether this fault's placement names this point (ignoring ``occurrence``)."""
        if not applies_at(self.kind, point.op):
            return False
        if self.at is not None:
            return self.at == index
        # Spelled out rather than a loop over pairs: asked at every choice point.
        return (
            (self.worker is None or self.worker == point.worker)
            and (self.op is None or self.op == point.op)
            and (self.execution_id is None or self.execution_id == point.execution_id)
            and (self.step_key is None or self.step_key == point.step_key)
        )

    def describe(self) -> str:
        """A short sentence: ``freeze 40s before w1's put_step of step ship``."""
        what = self.action()
        if self.at is not None:
            return f"{what} choice point #{self.at}" + (f" ({self.label})" if self.label else "")
        if self.op:
            where = (f"{self.worker}'s " if self.worker else "") + self.op
        else:
            # "api's any call" read badly, and a stall goes at elapses only, never at calls.
            kind = FaultKind(self.kind)
            where = (
                "any elapse" if kind == FaultKind.STALL
                else "any call to the outside world" if kind in _WORLD_ONLY
                else "any send_event" if kind in EVENT_KINDS
                else "any call"
            )  # fmt: skip
            where += f" of {self.worker}" if self.worker else ""
        if self.step_key:
            where += f" of step {self.step_key}"
        if self.execution_id:
            where += f" in {self.execution_id}"
        if self.occurrence > 1:
            where += f" (occurrence {self.occurrence})"
        return f"{what} {where}"

    def action(self) -> str:
        """What the fault does, as the start of a sentence: ``freeze 40s before``."""
        return fault_action(FaultKind(self.kind), self.seconds)

    def to_json(self) -> DurableObject:
        """The fault as plain data, for replay artifacts."""
        data: DurableObject = {"kind": str(self.kind)}
        for name in ("at", "worker", "op", "execution_id", "step_key", "seconds", "label"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        if self.occurrence != 1:
            data["occurrence"] = self.occurrence
        return data

    @classmethod
    def from_json(cls, data: Any) -> Fault:
        """Inverse of ``to_json``; refuses anything else with a clear message."""
        if not isinstance(data, dict) or "kind" not in data:
            raise ValueError(f"a fault is an object with a kind, not {data!r}")
        allowed = {
            "kind",
            "at",
            "worker",
            "op",
            "execution_id",
            "step_key",
            "seconds",
            "label",
            "occurrence",
        }
        unknown = set(data) - allowed
        if unknown:
            raise ValueError(f"a fault has no field {sorted(unknown)[0]!r}")
        return cls(**data)


def placed(kind: FaultKind, seconds: float | None, index: int, label: str) -> Fault:
    """A fault of ``kind`` placed by index at choice point ``index`` (labelled ``label``), as
    a run records each fault that struck: built without checking its fields again (one per
    fault struck, and the check cost more than a short run's choice point)."""
    made = object.__new__(Fault)
    for name, value in (
        ("kind", kind), ("at", index), ("worker", None), ("op", None),
        ("execution_id", None), ("step_key", None), ("occurrence", 1),
        ("seconds", seconds), ("label", label),
    ):  # fmt: skip
        object.__setattr__(made, name, value)
    return made


class FaultPlan:
    """Faults a scenario places by description (or by index), each at most once: a plain
    run asks it at every choice point which fault strikes there."""

    def __init__(self, faults: list[Fault] | tuple[Fault, ...] = ()) -> None:
        self.faults = tuple(faults)
        for fault in self.faults:
            if not isinstance(fault, Fault):
                raise TypeError(f"a fault plan holds ys.Fault objects, not {fault!r}")
        self._seen = [0] * len(self.faults)
        self._fired = [False] * len(self.faults)

    def fault_at(self, index: int, point: Any) -> Fault | None:
        """The first unfired fault whose placement matches this point, now fired."""
        info: PointInfo = point.info
        for number, fault in enumerate(self.faults):
            if self._fired[number] or not fault.matches(index, info):
                continue
            self._seen[number] += 1
            if fault.at is None and self._seen[number] < fault.occurrence:
                continue
            self._fired[number] = True
            return fault
        return None

    def snapshot(self) -> tuple[tuple[int, ...], tuple[bool, ...]]:
        """How far the plan got (each fault's passes and firing), for ``restore``."""
        return tuple(self._seen), tuple(self._fired)

    def restore(self, snapshot: tuple[tuple[int, ...], tuple[bool, ...]]) -> None:
        """Put back how far the plan got when ``snapshot`` was taken."""
        seen, fired = snapshot
        self._seen, self._fired = list(seen), list(fired)

    @property
    def unfired(self) -> list[Fault]:
        """Faults whose point never came."""
        return [fault for fault, fired in zip(self.faults, self._fired, strict=True) if not fired]


def trace_points(trace: Iterable[TraceEvent]) -> dict[int, tuple[PointInfo, int]]:
    """Every choice point that left an event, by index: the call it was and the sequence
    number of its first event."""
    points: dict[int, tuple[PointInfo, int]] = {}
    for event in trace:
        if event.point is None or event.point in points or event.worker is None or not event.op:
            continue  # every event of a choice point names its worker and op
        op = Op(event.op)
        # A claim's event names the execution it claimed; its point did not know it yet.
        execution_id = None if op == Op.CLAIM else event.execution_id
        points[event.point] = (PointInfo(event.worker, op, execution_id, event.step_key), event.seq)
    return points


def by_description(fault: Fault, points: Mapping[int, PointInfo]) -> Fault | None:
    """``fault``, placed at a choice-point index, placed by description instead: the worker,
    call, execution, step and which occurrence of that call it was. Another fault added or
    removed before it moves the indices but not the description. None when its point is not
    in ``points`` (its call left no event)."""
    if fault.at is None:
        return fault
    info = points.get(fault.at)
    if info is None:
        return None
    occurrence = sum(1 for index, other in points.items() if index <= fault.at and other == info)
    return Fault(
        fault.kind, worker=info.worker, op=info.op, execution_id=info.execution_id,
        step_key=info.step_key, occurrence=occurrence, seconds=fault.seconds,
    )  # fmt: skip
