"""Lockstep differential test: the memory runtime (the reference) and the DuckDB runtime.

A Hypothesis state machine applies the same random runtime calls to a ``MemoryRuntime`` and a
``DuckDBRuntime``, each on its own ``ManualClock`` (advanced together), and checks that both
adapters answer every call the same way (the return value, or the exception's type, code and
message) and, after every step, hold the same records: executions, start requests, the due list,
the next wake, every known execution's steps, and how often each failure point was passed.

The calls: triggers (chosen IDs that collide or are invalid, generated IDs, valid and invalid
parameters), starts (callers that exist, were pruned or never existed; repeats that match or
change the workflow, the parameters, missing vs empty parameters, or detached), claims (first
due or named), clock moves (to exact lease expiries too), fenced writes under current, expired,
released and superseded leases, whole deliveries, prunes, calls with one invalid argument, and
a failure point armed on both adapters before a call.

The short scenarios at the end replay, through the same machine, the disagreements it found.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Generic, TypeAlias, TypeVar

import pytest
from hypothesis import Phase, currently_in_test_context, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from yieldstar_sim import DuckDBRuntime, ManualClock, MemoryRuntime
from yieldstar_sim.core.model import (
    Cancelled,
    ChildAccepted,
    ChildRequest,
    Completed,
    Delivery,
    ErrorInfo,
    ExecutionRecord,
    Failed,
    Lease,
    RequestId,
    StartAccepted,
    StartRequest,
    StartResult,
    Suspended,
    WorkflowRunOutcome,
)
from yieldstar_sim.errors import InfrastructureError, InjectedFailure, YieldstarError
from yieldstar_sim.runtime.failpoints import FAILPOINT_NAMES

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.runtime import Runtime

pytestmark = [pytest.mark.duckdb, pytest.mark.slow]

T = TypeVar("T")

# --------------------------------------------------------------------------- pools
#
# Small pools, so that collisions, repeats and stale leases happen within a few steps.

#: Execution IDs a caller may choose (and so collide on), plus IDs that never exist.
CHOSEN_IDS = ("a", "b", "order-42")
UNKNOWN_IDS = ("nobody", "@ship-order-99")
#: Execution IDs the runtime must refuse: empty, reserved prefix, control characters.
INVALID_IDS = ("", "@x-1", "a\nb", "del\x7f")
WORKFLOWS = ("charge-order", "ship-order", "a-1")
START_WORKFLOWS = ("ship-order", "ship-express")
START_STEP_KEYS = ("ship", "pay", "refund")
OWNERS = ("w1", "w2", "w3")
STEP_KEYS = ("charge", "wait", "ship")


def mostly(
    common: st.SearchStrategy[T], rare: st.SearchStrategy[T], *, odds: int = 4
) -> st.SearchStrategy[T]:
    """``common`` about ``odds`` times as often as ``rare``.

    Hypothesis favours the ends of a range of choices (and so the first and last branches of
    ``one_of``); ``rare`` sits in the middle, so that it stays rare and shrinks away.
    """
    half = [common] * (odds // 2)
    return st.one_of(*half, rare, *half)


VALID_PARAMS: tuple[object, ...] = (
    {"order": 42},
    {},
    {"order": 43},
    {"b": 1, "a": [True, None, 1.5]},
    {"a": [True, None, 1.5], "b": 1},  # the same canonical form as the previous one
    {"zero": -0.0, "one": 1.0},
)
INVALID_PARAMS: tuple[object, ...] = (
    {"amount": math.nan},
    {"items": (1, 2)},
    {"big": 2**60},
    {1: "non-string key"},
    [1, 2, 3],
    "not an object",
)
#: Parameters: missing (None), valid objects (empty or not), and values the codec refuses.
PARAMS: st.SearchStrategy[object] = mostly(
    st.one_of(st.none(), st.sampled_from(VALID_PARAMS)), st.sampled_from(INVALID_PARAMS)
)

#: Durable values for step values and results, including strings with Unicode line breaks
#: (U+2028 LINE SEPARATOR, U+0085 NEXT LINE) that canonical JSON leaves unescaped.
VALUES: st.SearchStrategy[object] = st.sampled_from(
    (
        None,
        0,
        1.5,
        -0.0,
        "text",
        [1, "two", None],
        {"ok": True, "n": 1.0},
        "line\u2028separator",
        "next\x85line",
    )
)
STATUSES = st.sampled_from(("completed", "pending", "failed"))
ATTEMPTS = st.sampled_from((1, 2, 3))
#: Lease and renewal durations (positive).
DURATIONS = st.one_of(
    st.sampled_from((5.0, 1.0, 10.0, 0.25, 2.0)), st.floats(min_value=0.001, max_value=30.0)
)
#: Offsets from now for wake times (a negative one asks for a wake in the past).
WAKE_OFFSETS = st.one_of(
    st.sampled_from((0.0, 1.0, 10.0, 45.0)), st.floats(min_value=-5.0, max_value=120.0)
)
DELAYS = st.one_of(st.sampled_from((0.0, 1.0, 2.5)), st.floats(min_value=0.0, max_value=10.0))
#: Clock advances: mostly short, sometimes past every lease.
ADVANCES = mostly(
    st.sampled_from((0.25, 1.0, 2.0, 5.0, 0.0)),
    st.one_of(st.sampled_from((30.0, 31.0)), st.floats(min_value=0.0, max_value=100.0)),
)
ERRORS = st.builds(
    ErrorInfo,
    st.sampled_from(("ValueError", "WorkflowStartError")),
    st.sampled_from(("card declined", "", "two\u2028lines")),
    st.sampled_from((None, "START_REQUEST_MISMATCH")),
)
OUTCOMES: st.SearchStrategy[WorkflowRunOutcome] = st.one_of(
    st.builds(Completed, VALUES),
    st.just(Suspended()),
    st.builds(Failed, ERRORS),
    st.just(Cancelled()),
)

InvalidCall: TypeAlias = "Callable[[Lease], Callable[[Runtime], object]]"

#: Calls with one invalid argument, each given a lease (current, stale or forged).
#: Arguments are checked before anything else, so both adapters must refuse them the same way
#: whatever the lease, and before any failure point.
INVALID_CALLS: dict[str, InvalidCall] = {
    "trigger: empty workflow ID": lambda _: lambda rt: rt.trigger(""),
    "trigger: workflow ID with a newline": lambda _: lambda rt: rt.trigger("a\nb"),
    "start: empty caller": lambda _: (
        lambda rt: rt.start(StartRequest(RequestId("", "ship"), "ship-order"))
    ),
    "start: caller with a newline": lambda _: (
        lambda rt: rt.start(StartRequest(RequestId("a\nb", "ship"), "ship-order"))
    ),
    "start: empty step key": lambda _: (
        lambda rt: rt.start(StartRequest(RequestId("a", ""), "ship-order"))
    ),
    "start: empty workflow ID": lambda _: (
        lambda rt: rt.start(StartRequest(RequestId("a", "ship"), ""))
    ),
    "start: detached is not a bool": lambda _: (
        lambda rt: rt.start(
            StartRequest(RequestId("a", "ship"), "ship-order", None, "yes")  # type: ignore[arg-type]
        )
    ),
    "claim: empty owner": lambda _: lambda rt: rt.claim("", lease_seconds=30),
    "claim: zero lease": lambda _: lambda rt: rt.claim("w1", lease_seconds=0),
    "claim: negative lease": lambda _: lambda rt: rt.claim("w1", lease_seconds=-1),
    "claim: NaN lease": lambda _: lambda rt: rt.claim("w1", lease_seconds=math.nan),
    "claim: infinite lease": lambda _: lambda rt: rt.claim("w1", lease_seconds=math.inf),
    "renew: zero lease": lambda lease: lambda rt: rt.renew(lease, lease_seconds=0),
    "renew: NaN lease": lambda lease: lambda rt: rt.renew(lease, lease_seconds=math.nan),
    "put_step: empty step key": lambda lease: lambda rt: rt.put_step(lease, "", status="completed"),
    "put_step: unknown status": lambda lease: (
        lambda rt: rt.put_step(
            lease,
            "charge",
            status="done",  # type: ignore[arg-type]
        )
    ),
    "put_step: attempt 0": lambda lease: (
        lambda rt: rt.put_step(lease, "charge", status="completed", attempt=0)
    ),
    "put_step: attempt True": lambda lease: (
        lambda rt: rt.put_step(lease, "charge", status="completed", attempt=True)
    ),
    "put_step: NaN value": lambda lease: (
        lambda rt: rt.put_step(lease, "charge", status="completed", value=math.nan)
    ),
    "put_step: tuple value": lambda lease: (
        lambda rt: rt.put_step(lease, "charge", status="completed", value=(1, 2))
    ),
    "put_step: bytes value": lambda lease: (
        lambda rt: rt.put_step(lease, "charge", status="failed", value=b"bytes")
    ),
    "put_step: unsafe integer": lambda lease: (
        lambda rt: rt.put_step(lease, "charge", status="completed", value={"big": 2**60})
    ),
    "put_step: negative wake": lambda lease: (
        lambda rt: rt.put_step(lease, "wait", status="pending", wake_at=-1.0)
    ),
    "put_step: NaN wake": lambda lease: (
        lambda rt: rt.put_step(lease, "wait", status="pending", wake_at=math.nan)
    ),
    "record_wake: negative time": lambda lease: lambda rt: rt.record_wake(lease, -1.0),
    "record_wake: NaN time": lambda lease: lambda rt: rt.record_wake(lease, math.nan),
    "release: negative delay": lambda lease: lambda rt: rt.release(lease, delay=-1.0),
    "release: NaN delay": lambda lease: lambda rt: rt.release(lease, delay=math.nan),
    "acknowledge: NaN result": lambda lease: lambda rt: rt.acknowledge(lease, Completed(math.nan)),
    "acknowledge: tuple result": lambda lease: (
        lambda rt: rt.acknowledge(
            lease,
            Completed({"t": (1, 2)}),  # type: ignore[dict-item]
        )
    ),
    "put_step: not a lease": lambda lease: (
        lambda rt: rt.put_step(
            lease.execution_id,  # type: ignore[arg-type]
            "charge",
            status="completed",
        )
    ),
    "renew: not a lease": lambda lease: (
        lambda rt: rt.renew(
            (lease.execution_id, lease.owner, lease.token),  # type: ignore[arg-type]
            lease_seconds=30,
        )
    ),
}

#: An index into a list on the machine (modulo its length), 0 being the newest entry; mostly
#: one of the newest few.
PICK = mostly(st.integers(min_value=0, max_value=2), st.integers(min_value=3, max_value=20), odds=2)
#: How ``repeat_start`` changes an earlier request.
REQUEST_CHANGES = (
    "as is",
    "other workflow",
    "other params",
    "no params",
    "empty params",
    "detached flipped",
)
#: Picks below this prefer what moves an execution on: a lease still held (so that writes
#: land), a due execution (for a named claim) or a terminal one (for a prune).
HELD_BELOW = 2
#: An execution ID: a caller-chosen one (so that requests repeat) or a known one, by index.
EXECUTION = st.one_of(st.sampled_from(CHOSEN_IDS), PICK)

#: The exceptions a runtime call may raise to its caller; anything else is an adapter bug.
EXPECTED_ERRORS = (YieldstarError, InfrastructureError, ValueError, TypeError)


# --------------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class Answer(Generic[T]):
    """What one adapter answered to one call: a value, or an exception."""

    value: T | None
    error: BaseException | None

    @property
    def ok(self) -> bool:
        """Whether the call returned (rather than raised)."""
        return self.error is None

    def describe(self) -> str:
        if self.error is None:
            return f"returned {self.value!r}"
        code = getattr(self.error, "code", None)
        return f"raised {type(self.error).__name__}(code={code!r}, message={str(self.error)!r})"

    def kind(self) -> str:
        """A short label of the answer, for Hypothesis' statistics."""
        if self.error is not None:
            code = getattr(self.error, "code", None)
            return f"raised {type(self.error).__name__}" + (f" {code}" if code else "")
        if isinstance(self.value, ExecutionRecord):
            return f"returned {self.value.status}"
        return f"returned {type(self.value).__name__}"

    def signature(self) -> object:
        """What must be equal between the adapters."""
        if self.error is None:
            return ("value", self.value)
        return ("error", type(self.error), getattr(self.error, "code", None), str(self.error))


def _ask(call: Callable[[], T]) -> Answer[T]:
    try:
        return Answer(call(), None)
    except Exception as error:
        return Answer(None, error)


class LockstepMachine(RuleBasedStateMachine):
    """Drives a MemoryRuntime and a DuckDBRuntime with the same calls and compares them.

    ``other_name`` and ``make_other`` name and make the adapter held to the memory runtime (its
    attribute keeps the name ``duckdb``); ``PostgresLockstepMachine`` puts PostgreSQL there."""

    other_name = "DuckDB"

    @staticmethod
    def make_other(clock: ManualClock) -> Runtime:
        return DuckDBRuntime(clock=clock)

    def __init__(self) -> None:
        super().__init__()
        self.memory_clock = ManualClock()
        self.duckdb_clock = ManualClock()
        self.memory = MemoryRuntime(clock=self.memory_clock)
        self.duckdb = self.make_other(self.duckdb_clock)
        #: Every execution ID seen (chosen, generated, pruned) and some that never exist.
        self.known: list[str] = [*UNKNOWN_IDS, *CHOSEN_IDS]
        #: Every start request made, oldest first, and the target each request ID first got.
        self.requests: list[StartRequest] = []
        self.targets: dict[RequestId, str] = {}
        #: Every lease handed out by a claim or a renewal, oldest first; most become stale.
        self.leases: list[Lease] = []
        #: A failure point to arm on both adapters, and whether for the next call of any kind
        #: (else for the next call of the point's own operation).
        self.pending: tuple[str, bool] | None = None

    def teardown(self) -> None:
        self.memory.close()
        self.duckdb.close()

    # ------------------------------------------------------------------ plumbing

    @property
    def now(self) -> float:
        return self.memory_clock.now()

    def both(self, operation: str, args: str, call: Callable[[Runtime], T]) -> Answer[T]:
        """Make the same call on both adapters (with the pending failure point armed, if it
        applies), check that they answered the same, and return the memory runtime's answer."""
        armed = None
        if self.pending is not None:
            name, any_call = self.pending
            if any_call or name.startswith(f"{operation}."):
                armed, self.pending = name, None
                self.memory.failpoints.arm(armed)
                self.duckdb.failpoints.arm(armed)
        try:
            memory = _ask(lambda: call(self.memory))
            duckdb = _ask(lambda: call(self.duckdb))
        finally:
            if armed is not None:
                # An armed point the call did not reach must not fire in a later call.
                self.memory.failpoints.disarm(armed)
                self.duckdb.failpoints.disarm(armed)
        context = f"{operation}({args})" + (f" with {armed} armed" if armed else "")
        # The comparison of every call. Known disagreements it reports (see the scenarios at
        # the end of this file): a start whose caller does not exist with start.before_commit
        # armed, and the repeat of a start request whose target was pruned.
        assert memory.signature() == duckdb.signature(), (
            f"{context}: the memory runtime {memory.describe()}, "
            f"the {self.other_name} runtime {duckdb.describe()}"
        )
        for answer in (memory, duckdb):
            assert answer.error is None or isinstance(answer.error, EXPECTED_ERRORS), (
                f"{context}: an adapter raised an unexpected {answer.describe()}"
            )
        if isinstance(memory.error, InjectedFailure):
            assert str(memory.error) == f"injected failure at {armed}", (
                f"{context}: {memory.describe()}"
            )
        if currently_in_test_context():  # not in the hand-written scenarios
            event(f"{operation}: {memory.kind()}" + (f" at {armed}" if armed else ""))
        return memory

    def remember(self, execution_id: str) -> None:
        if execution_id not in self.known:
            self.known.append(execution_id)

    def pick_id(self, pick: int | str) -> str:
        """A caller-chosen ID as is, or a known execution ID by index (0 is the newest)."""
        if isinstance(pick, str):
            return pick
        return self.known[-1 - pick % len(self.known)]

    def pick_due(self, pick: int | str) -> str:
        """Like ``pick_id``, but small picks prefer the newest due executions."""
        if isinstance(pick, int) and pick < HELD_BELOW:
            now_due = set(self.memory.due())
            due = [execution_id for execution_id in self.known if execution_id in now_due]
            if due:
                return due[-1 - pick % len(due)]
        return self.pick_id(pick)

    def pick_lease(self, pick: int) -> Lease:
        """A lease from an earlier claim or renewal, newest first (a forged one if none).

        Picks below ``HELD_BELOW`` prefer the leases still held, so that writes land; the others
        reach every lease, most of them stale (expired, released, superseded or pruned).
        """
        if not self.leases:
            return Lease(self.pick_id(pick), OWNERS[pick % len(OWNERS)], pick % 2, self.now + 10)
        if pick < HELD_BELOW:
            current = {record.lease for record in self.memory.executions()}
            held = [lease for lease in self.leases if lease in current]
            held = [lease for lease in held if lease.expires_at > self.now] or held
            if held:
                return held[-1 - pick % len(held)]
        return self.leases[-1 - pick % len(self.leases)]

    # ------------------------------------------------------------------ admission

    @initialize(params=st.one_of(st.none(), st.sampled_from(VALID_PARAMS)))
    def admit_callers(self, params: object) -> None:
        """Start every run with two caller-chosen executions and a generated one, so that
        runs in which Hypothesis disables ``trigger`` still have executions to work on."""
        for execution_id in ("a", "b", None):
            answer = self.both(
                "trigger",
                f"'charge-order', {params!r}, execution_id={execution_id!r}",
                lambda runtime: runtime.trigger(
                    "charge-order",
                    params,
                    execution_id=execution_id,  # noqa: B023
                ),
            )
            if answer.value is not None:
                self.remember(answer.value)

    @rule(
        workflow_id=st.sampled_from(WORKFLOWS),
        params=PARAMS,
        execution_id=mostly(
            st.one_of(st.none(), st.sampled_from(CHOSEN_IDS)), st.sampled_from(INVALID_IDS)
        ),
    )
    def trigger(self, workflow_id: str, params: object, execution_id: str | None) -> None:
        """Trigger with a chosen ID (new, colliding or invalid) or a generated one, with valid
        or invalid parameters."""
        answer = self.both(
            "trigger",
            f"{workflow_id!r}, {params!r}, execution_id={execution_id!r}",
            lambda runtime: runtime.trigger(workflow_id, params, execution_id=execution_id),
        )
        if answer.value is not None:
            self.remember(answer.value)

    @rule(
        caller=EXECUTION,
        step_key=st.sampled_from(START_STEP_KEYS),
        workflow_id=st.sampled_from(START_WORKFLOWS),
        params=PARAMS,
        detached=st.booleans(),
    )
    def start(
        self, caller: int | str, step_key: str, workflow_id: str, params: object, detached: bool
    ) -> None:
        """Start with request IDs from small pools: first calls, matching and mismatched
        repeats, unknown or pruned callers, missing vs empty and invalid parameters."""
        request = StartRequest(
            RequestId(self.pick_id(caller), step_key), workflow_id, params, detached
        )
        self.start_and_compare(request)

    @precondition(lambda self: bool(self.requests))
    @rule(request=PICK, change=st.sampled_from(REQUEST_CHANGES))
    def repeat_start(self, request: int, change: str) -> None:
        """Repeat an earlier start request as is (a replay), or with one change (a mismatch
        if it was accepted): another workflow, other/no/empty parameters, or detached."""
        earlier = self.requests[-1 - request % len(self.requests)]
        if request < HELD_BELOW:
            # Prefer the RFC's "repeats after the target is terminal" (or pruned).
            live = {r.execution_id for r in self.memory.executions() if not r.terminal}
            finished = [
                r
                for r in self.requests
                if r.request_id in self.targets and self.targets[r.request_id] not in live
            ]
            if finished:
                earlier = finished[-1 - request % len(finished)]
        repeat = {
            "as is": earlier,
            "other workflow": replace(earlier, workflow_id=f"{earlier.workflow_id}-v2"),
            "other params": replace(earlier, params={"order": 44}),
            "no params": replace(earlier, params=None),
            "empty params": replace(earlier, params={}),
            "detached flipped": replace(earlier, detached=not earlier.detached),
        }[change]
        self.start_and_compare(repeat)

    def start_and_compare(self, request: StartRequest) -> None:
        answer: Answer[StartResult] = self.both(
            "start", repr(request), lambda runtime: runtime.start(request)
        )
        if request not in self.requests:
            self.requests.append(request)
        if isinstance(answer.value, StartAccepted):
            self.remember(answer.value.execution_id)
            self.targets.setdefault(request.request_id, answer.value.execution_id)

    # ------------------------------------------------------------------ leases

    def claim_and_compare(
        self, owner: str, lease_seconds: float, execution_id: str | None
    ) -> Delivery | None:
        answer: Answer[Delivery | None] = self.both(
            "claim",
            f"{owner!r}, lease_seconds={lease_seconds!r}, execution_id={execution_id!r}",
            lambda runtime: runtime.claim(
                owner, lease_seconds=lease_seconds, execution_id=execution_id
            ),
        )
        if answer.value is not None:
            self.leases.append(answer.value.lease)
        return answer.value

    @rule(owner=st.sampled_from(OWNERS), lease_seconds=DURATIONS)
    def claim(self, owner: str, lease_seconds: float) -> None:
        """Claim the first due execution (a new one, a woken one, or one whose lease expired)."""
        self.claim_and_compare(owner, lease_seconds, None)

    @rule(owner=st.sampled_from(OWNERS), lease_seconds=DURATIONS, execution_id=EXECUTION)
    def claim_named(self, owner: str, lease_seconds: float, execution_id: int | str) -> None:
        """Claim a named execution: due, leased, expired, terminal, pruned or unknown."""
        self.claim_and_compare(owner, lease_seconds, self.pick_due(execution_id))

    @rule(
        owner=st.sampled_from(OWNERS),
        lease_seconds=DURATIONS,
        named=st.one_of(st.none(), PICK),
        steps=st.lists(st.tuples(st.sampled_from(STEP_KEYS), STATUSES, VALUES), max_size=3),
        wake_offset=st.one_of(st.none(), WAKE_OFFSETS),
        ending=st.one_of(OUTCOMES, DELAYS),
        then_prune=st.booleans(),
    )
    def deliver(
        self,
        *,
        owner: str,
        lease_seconds: float,
        named: int | str | None,
        steps: list[tuple[str, str, object]],
        wake_offset: float | None,
        ending: WorkflowRunOutcome | float,
        then_prune: bool,
    ) -> None:
        """A whole delivery: claim (the first due, a due one by pick, or one by ID), record a few
        steps and maybe a wake, then acknowledge an outcome (and maybe prune the execution) or
        release with a delay. Each call is compared; the first refused or failed call ends the
        delivery, like a crashed worker."""
        execution_id = None if named is None else self.pick_due(named)
        delivery = self.claim_and_compare(owner, lease_seconds, execution_id)
        if delivery is None:
            return
        lease = delivery.lease
        for step_key, status, value in steps:
            if not self.put_step_and_compare(
                lease, step_key, status=status, value=value, attempt=1, wake_at=None
            ):
                return
        if wake_offset is not None:
            at = max(0.0, self.now + wake_offset)
            woken = self.both(
                "record_wake", f"{lease!r}, {at!r}", lambda rt: rt.record_wake(lease, at)
            )
            if not woken.ok:
                return
        if isinstance(ending, float):
            delay = ending
            self.both(
                "release", f"{lease!r}, delay={delay!r}", lambda rt: rt.release(lease, delay=delay)
            )
            return
        acknowledged = self.both(
            "acknowledge", f"{lease!r}, {ending!r}", lambda rt: rt.acknowledge(lease, ending)
        )
        if then_prune and acknowledged.ok:
            target = lease.execution_id
            self.both("prune", repr(target), lambda rt: rt.prune(target))

    @rule(seconds=ADVANCES)
    def advance(self, seconds: float) -> None:
        """Move both clocks forward together (sometimes past every lease's expiry)."""
        self.memory_clock.advance(seconds)
        self.duckdb_clock.advance(seconds)

    @rule()
    def advance_to_next_wake(self) -> None:
        """Move both clocks to exactly the next wake (a lease's expiry or a due time)."""
        at = self.memory.next_wake_at()
        if at is not None and at > self.now:
            self.memory_clock.set(at)
            self.duckdb_clock.set(at)

    @precondition(lambda self: bool(self.leases))
    @rule(lease=PICK, lease_seconds=DURATIONS)
    def renew(self, lease: int, lease_seconds: float) -> None:
        """Renew a current, expired, stale or forged lease."""
        held = self.pick_lease(lease)
        answer = self.both(
            "renew",
            f"{held!r}, lease_seconds={lease_seconds!r}",
            lambda runtime: runtime.renew(held, lease_seconds=lease_seconds),
        )
        if answer.value is not None:
            self.leases.append(answer.value)

    @precondition(lambda self: bool(self.leases))
    @rule(
        lease=PICK,
        step_key=st.sampled_from(STEP_KEYS),
        status=STATUSES,
        value=VALUES,
        attempt=ATTEMPTS,
        wake_offset=st.one_of(st.none(), WAKE_OFFSETS),
    )
    def put_step(
        self,
        *,
        lease: int,
        step_key: str,
        status: str,
        value: object,
        attempt: int,
        wake_offset: float | None,
    ) -> None:
        """Record or rewrite a step, with or without a wake, under a current or stale lease."""
        wake_at = None if wake_offset is None else max(0.0, self.now + wake_offset)
        self.put_step_and_compare(
            self.pick_lease(lease),
            step_key,
            status=status,
            value=value,
            attempt=attempt,
            wake_at=wake_at,
        )

    def put_step_and_compare(
        self,
        lease: Lease,
        step_key: str,
        *,
        status: str,
        value: object,
        attempt: int,
        wake_at: float | None,
    ) -> bool:
        return self.both(
            "put_step",
            f"{lease!r}, {step_key!r}, status={status!r}, value={value!r}, attempt={attempt!r}, "
            f"wake_at={wake_at!r}",
            lambda runtime: runtime.put_step(
                lease,
                step_key,
                status=status,  # type: ignore[arg-type]
                value=value,
                attempt=attempt,
                wake_at=wake_at,
            ),
        ).ok

    @precondition(lambda self: bool(self.leases))
    @rule(lease=PICK, offset=WAKE_OFFSETS)
    def record_wake(self, lease: int, offset: float) -> None:
        """Record a wake (the earliest one wins) under a current or stale lease."""
        held = self.pick_lease(lease)
        at = max(0.0, self.now + offset)
        self.both("record_wake", f"{held!r}, {at!r}", lambda runtime: runtime.record_wake(held, at))

    @precondition(lambda self: bool(self.leases))
    @rule(lease=PICK, delay=DELAYS)
    def release(self, lease: int, delay: float) -> None:
        """Release a current or stale lease with a redelivery delay (zero or positive)."""
        held = self.pick_lease(lease)
        self.both(
            "release",
            f"{held!r}, delay={delay!r}",
            lambda runtime: runtime.release(held, delay=delay),
        )

    @precondition(lambda self: bool(self.leases))
    @rule(lease=PICK, outcome=OUTCOMES)
    def acknowledge(self, lease: int, outcome: WorkflowRunOutcome) -> None:
        """Acknowledge Completed/Suspended/Failed/Cancelled under a current or stale lease; both
        return the same record, and it is the one stored."""
        held = self.pick_lease(lease)
        answer: Answer[ExecutionRecord] = self.both(
            "acknowledge",
            f"{held!r}, {outcome!r}",
            lambda runtime: runtime.acknowledge(held, outcome),
        )
        if answer.value is not None:
            assert answer.value == self.duckdb.execution(held.execution_id)

    # ------------------------------------------------------------------ children, waits, cancel

    @rule(
        caller=EXECUTION,
        step_key=st.sampled_from(START_STEP_KEYS),
        workflow_id=st.sampled_from(START_WORKFLOWS),
        child_id=st.one_of(st.sampled_from(("kid-1", "kid-2", "a")), EXECUTION),
        params=PARAMS,
        detached=st.booleans(),
    )
    def start_child(
        self,
        *,
        caller: int | str,
        step_key: str,
        workflow_id: str,
        child_id: int | str,
        params: object,
        detached: bool,
    ) -> None:
        """Create or join a run by business ID: first calls, replays of a creation, joins of
        runs others created (or of the caller itself), other workflows, pruned IDs."""
        request = ChildRequest(
            RequestId(self.pick_id(caller), step_key),
            workflow_id,
            self.pick_id(child_id),
            params,
            detached,
        )
        answer = self.both(
            "start_child", repr(request), lambda runtime: runtime.start_child(request)
        )
        if isinstance(answer.value, ChildAccepted):
            self.remember(answer.value.execution_id)

    @precondition(lambda self: bool(self.leases))
    @rule(lease=PICK, other=EXECUTION)
    def wait_for(self, lease: int, other: int | str) -> None:
        """Register a wait for another execution (a terminal acknowledgement must wake it the
        same way on both) and read that execution."""
        held, waited = self.pick_lease(lease), self.pick_id(other)
        self.both(
            "wait_for", f"{held!r}, {waited!r}", lambda runtime: runtime.wait_for(held, waited)
        )

    @rule(execution_id=EXECUTION)
    def cancel(self, execution_id: int | str) -> None:
        """Request cancellation of an execution and what it owns (or of an unknown one)."""
        target = self.pick_id(execution_id)
        self.both("cancel", repr(target), lambda runtime: runtime.cancel(target))

    # ------------------------------------------------------------------ retention

    @rule(execution_id=EXECUTION)
    def prune(self, execution_id: int | str) -> None:
        """Prune a terminal, live, already pruned or unknown execution (small picks prefer
        terminal ones, so that pruning and what follows it is exercised)."""
        target = self.pick_id(execution_id)
        if isinstance(execution_id, int) and execution_id < HELD_BELOW:
            terminal = [r.execution_id for r in self.memory.executions() if r.terminal]
            if terminal:
                target = terminal[-1 - execution_id % len(terminal)]
        self.both("prune", repr(target), lambda runtime: runtime.prune(target))

    @rule(case=st.sampled_from(sorted(INVALID_CALLS)), lease=PICK)
    def invalid_argument(self, case: str, lease: int) -> None:
        """A call with one invalid argument: both adapters refuse it the same way."""
        call = INVALID_CALLS[case](self.pick_lease(lease))
        answer = self.both(case.partition(":")[0], case, call)
        assert answer.error is not None, f"{case}: accepted, returned {answer.value!r}"

    # ------------------------------------------------------------------ failure points

    @rule(name=st.sampled_from(FAILPOINT_NAMES), any_call=st.booleans())
    def arm_failure_point(self, name: str, any_call: bool) -> None:
        """Arm the same failure point on both adapters for the next call (of any kind, or of
        the point's operation): both must raise InjectedFailure there, or neither."""
        self.pending = (name, any_call)

    # ------------------------------------------------------------------ invariants

    @invariant()
    def both_adapters_hold_the_same_records(self) -> None:
        """Executions, start requests, due list, next wake and every known execution's steps
        agree after every step."""
        assert self.memory_clock.now() == self.duckdb_clock.now()
        executions = self.memory.executions()
        assert executions == self.duckdb.executions()
        for record in executions:  # IDs admitted by a call whose response was lost
            self.remember(record.execution_id)
        assert self.memory.start_requests() == self.duckdb.start_requests()
        assert self.memory.due() == self.duckdb.due()
        assert self.memory.next_wake_at() == self.duckdb.next_wake_at()
        for execution_id in self.known:
            memory_steps = _ask(lambda: self.memory.steps(execution_id))  # noqa: B023
            duckdb_steps = _ask(lambda: self.duckdb.steps(execution_id))  # noqa: B023
            assert memory_steps.signature() == duckdb_steps.signature(), (
                f"steps({execution_id!r}): the memory runtime {memory_steps.describe()}, "
                f"the {self.other_name} runtime {duckdb_steps.describe()}"
            )

    @invariant()
    def both_adapters_pass_the_same_failure_points(self) -> None:
        """Each named failure point was reached as often on both adapters, armed or not (the
        memory runtime's failure points are documented to sit where the DuckDB runtime's do)."""
        memory, duckdb = Counter(self.memory.failpoints.hits), Counter(self.duckdb.failpoints.hits)
        differ = {
            name: (memory[name], duckdb[name])
            for name in sorted(set(memory) | set(duckdb))
            if memory[name] != duckdb[name]
        }
        assert not differ, f"failure points passed (memory, DuckDB) times: {differ}"

    def check(self) -> None:
        """Both invariants, for the hand-written scenarios."""
        self.both_adapters_hold_the_same_records()
        self.both_adapters_pass_the_same_failure_points()


#: Deterministic, and sized to run in about 20 s here (each DuckDB statement costs ~0.5 ms and
#: every step compares all the records). Shrinking is off: shrinking a failure of this machine
#: takes minutes, while the unshrunk report already names the call on which the adapters
#: disagree, both answers, and every step before it.
LOCKSTEP_SETTINGS = settings(
    max_examples=40,
    stateful_step_count=80,
    derandomize=True,
    database=None,
    deadline=None,
    phases=(Phase.explicit, Phase.generate),
)


def test_memory_and_duckdb_runtimes_agree_call_for_call() -> None:
    """Random sequences of trigger/start/claim/clock/fenced-write/prune calls, with armed
    failure points, give the same answers and leave the same records on both adapters."""
    run_state_machine_as_test(LockstepMachine, settings=LOCKSTEP_SETTINGS)


class PostgresLockstepMachine(LockstepMachine):
    """The same machine with a PostgresRuntime (its own schema per example) in DuckDB's place."""

    other_name = "PostgreSQL"

    @staticmethod
    def make_other(clock: ManualClock) -> Runtime:
        from yieldstar_sim.runtime.postgres import PostgresRuntime

        return PostgresRuntime(os.environ["YIELDSTAR_PG_DSN"], clock=clock)


@pytest.mark.postgres
def test_memory_and_postgres_runtimes_agree_call_for_call() -> None:
    """The lockstep test against a real PostgreSQL server: the same random calls, the same
    answers and records as the memory runtime (and so as DuckDB)."""
    run_state_machine_as_test(PostgresLockstepMachine, settings=LOCKSTEP_SETTINGS)


# --------------------------------------------------------------------------- scenarios
#
# Short runs of the machine's own rules, with every comparison made after every step.

Step: TypeAlias = "Callable[[LockstepMachine], object]"


def run_scenario(*steps: Step) -> None:
    """Run ``steps`` on a fresh machine (after its initialize rule: executions ``a``, ``b``
    and a generated one), checking both invariants after each step."""
    machine = LockstepMachine()
    try:
        machine.admit_callers(params=None)
        machine.check()
        for step in steps:
            step(machine)
            machine.check()
    finally:
        machine.teardown()


def _start(caller: str, step_key: str = "ship") -> Step:
    return lambda m: m.start(
        caller=caller, step_key=step_key, workflow_id="ship-order", params=None, detached=False
    )


def test_a_start_from_an_unknown_caller_passes_the_same_failure_points() -> None:
    """A start whose caller does not exist gets CALLER_NOT_FOUND from both adapters, having
    passed the same failure points.

    Disagreement (memory vs DuckDB): ``MemoryRuntime.start`` looks the caller up before
    ``start.before_commit``; ``DuckDBRuntime.start`` passes that point first (after its INSERT
    found nothing) and only then finds that the caller is missing. So the DuckDB runtime counts
    a hit the memory runtime does not.
    """
    run_scenario(_start("nobody"))


def test_a_start_from_an_unknown_caller_with_start_before_commit_armed() -> None:
    """With start.before_commit armed, a start whose caller does not exist fails the same way
    on both adapters.

    Disagreement: the memory runtime raises ExecutionAdmissionError(CALLER_NOT_FOUND) without
    reaching the point (which stays armed); the DuckDB runtime raises InjectedFailure.
    """
    run_scenario(
        lambda m: m.arm_failure_point(name="start.before_commit", any_call=False),
        _start("nobody"),
    )


def test_repeating_a_start_whose_target_was_pruned() -> None:
    """A caller repeats a start request after its (terminal) target was pruned: both adapters
    answer the same.

    Disagreement: ``MemoryRuntime.prune`` keeps the caller's request record that points at the
    pruned target, so the repeat looks the target up and raises ``KeyError``; the DuckDB
    runtime's request record lives in the target's row, went with it, and the repeat admits a
    new target.
    """
    run_scenario(
        _start("a"),
        lambda m: m.deliver(
            owner="w1",
            lease_seconds=5.0,
            named=0,  # the newest due execution: the target
            steps=[],
            wake_offset=None,
            ending=Completed({"courier": "booked"}),
            then_prune=True,
        ),
        _start("a"),
    )


def test_step_values_and_results_with_unicode_line_breaks() -> None:
    """Step values and results holding U+2028 or U+0085 (which JSON leaves unescaped) read back
    the same from both adapters (a regression test: the DuckDB step log once split on them)."""
    run_scenario(
        lambda m: m.deliver(
            owner="w1",
            lease_seconds=5.0,
            named=None,
            steps=[("charge", "completed", "line\u2028separator"), ("ship", "failed", "x\x85y")],
            wake_offset=None,
            ending=Completed("done\u2028"),
            then_prune=False,
        ),
    )


def test_a_terminal_caller_is_refused_and_owned_targets_follow_a_cancelled_owner() -> None:
    """The orphan guard on both adapters: a cancelled caller's new start and child are refused
    alike (passing the same failure points, an armed one included), and the targets a
    cancel-requested owner admits follow it when owned, not when detached."""

    def child(caller: str, child_id: str, *, detached: bool = False) -> Step:
        return lambda m: m.start_child(
            caller=caller, step_key="pack", workflow_id="ship-order", child_id=child_id,
            params=None, detached=detached,
        )  # fmt: skip

    def refused(m: LockstepMachine) -> None:
        assert [r.execution_id for r in m.memory.executions()] == ["a", "b", "@charge-order-3"]
        assert m.memory.execution("a").status == "cancelled"  # type: ignore[union-attr]

    def followed(m: LockstepMachine) -> None:
        flags = {r.execution_id: r.cancel_requested for r in m.duckdb.executions()}
        assert flags == {
            "a": False, "b": True, "@charge-order-3": False, "@ship-order:b/ship": True,
            "kid-2": False,
        }, flags  # fmt: skip

    run_scenario(
        lambda m: m.deliver(
            owner="w1",
            lease_seconds=5.0,
            named="a",  # a claim by order would take @charge-order-3 (triggered rows by ID)
            steps=[],
            wake_offset=None,
            ending=Cancelled(),
            then_prune=False,
        ),
        _start("a"),
        lambda m: m.arm_failure_point(name="start_child.before_commit", any_call=False),
        child("a", "kid-1"),
        child("a", "kid-1"),
        refused,
        lambda m: m.cancel(execution_id="b"),
        _start("b"),
        child("b", "kid-2", detached=True),
        followed,
    )


class _LyingText(str):
    """A str whose formatting and printing say something other than its characters."""

    def __format__(self, spec: str) -> str:
        return 'completed","t":0,"v":null}\n{"a":1,"k":"injected","s":"completed'

    def __str__(self) -> str:
        return "injected"


class _LyingNumber(int):
    """An int whose formatting writes another step log entry."""

    def __format__(self, spec: str) -> str:
        return '1,"k":"injected","s":"completed","t":0,"v":null}\n{"a":1'

    def __str__(self) -> str:
        return "7"


def test_step_writes_whose_parts_lie_about_their_text() -> None:
    """A step key, status or attempt of a str or int subclass whose ``__format__`` or
    ``__str__`` lies is stored as the characters (or number) it holds by both adapters.

    Disagreement: the DuckDB runtime built its step log line with an f-string, so a status or
    attempt whose ``__format__`` lied injected an extra step ("injected") that the memory
    runtime never recorded; and it refused a str-subclass step key the memory runtime stored.
    """

    def lying_steps(m: LockstepMachine) -> None:
        delivery = m.claim_and_compare("w1", 5.0, None)
        assert delivery is not None
        for key, status, attempt in [
            ("charge", _LyingText("completed"), 1),
            (_LyingText("ship"), "pending", 1),
            ("settle", "failed", _LyingNumber(2)),
        ]:
            assert m.put_step_and_compare(
                delivery.lease, key, status=status, value=None, attempt=attempt, wake_at=None
            )
        steps = m.duckdb.steps(delivery.lease.execution_id)
        assert [(s.step_key, s.status, s.attempt) for s in steps] == [
            ("charge", "completed", 1),
            ("ship", "pending", 1),
            ("settle", "failed", 2),
        ]
        assert all(type(s.step_key) is str and type(s.status) is str for s in steps)

    run_scenario(lying_steps)
