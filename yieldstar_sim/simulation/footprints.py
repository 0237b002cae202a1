"""What a move touches: the shared state it reads and writes, so that a search can tell which
moves commute.

A *footprint* is the set of things a move read and the set it wrote, recorded while the move
is taken (``Execution(footprints=True)``): from what its actor did until it next waits, not
from what it might do, so a claim's footprint names the execution it got. Two moves are
*independent* when neither writes a thing the other reads or writes. Independence is meant to
be the textbook relation: taken in either order from one state, two independent moves reach the
same state. The tests check exactly that on small scenarios (``test_footprints.py``): for every
pair of moves called independent, both orders reach the same state key.

The things, each a ``(kind, name)`` pair, a name of None standing for every thing of the kind:

- ``("lease", id)``, ``("steps", id)``, ``("status", id)``: an execution's rows, in three
  parts: its lease (and whether it has ended), which every call fenced by it reads; its step
  records; the rest of its record (when it is due, what it waits for, its cancellation);
- ``QUEUE``: which executions are due now and in what order a claim takes them (a claim reads
  it; admissions, cancels and prunes write it, and so do acknowledgements, releases, wakes and
  renewals where they change what is due now: one that only moves when an execution is next
  due, later, writes that execution's status, since a claim now cannot take it either way and
  time does not move while a move waits);
- ``("request", id)``: one start request's record, whose target it names;
- ``ADMISSIONS``: the runtime's sequence of admissions (it numbers the executions a start
  admits, and orders the queue), so two admissions never commute;
- ``("store", key)``: a key of the outside world's store; ``LEDGER``: the effects, in the order
  they land; ``RANDOM``: the world's random stream;
- ``FAULTS``: the search's budget of faults: a move struck by a fault spends it, so it never
  commutes with another such move.

A runtime call's footprint is read off the call (its arguments and its answer) by
``RecordedRuntime``, on the contract of the runtime protocol: a call touches the executions and
requests it names or answers with, and the queue where it changes what is due. A runtime that
keeps to that contract is one whose calls commute as the footprints say; the search trusts it
only of the runtimes the project ships (``trusted``).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from yieldstar_sim.runtime.protocol import attempts_of, events_of

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence, Sized

    from yieldstar_sim.core.attempts import AttemptToken
    from yieldstar_sim.core.model import (
        ChildRequest,
        Delivery,
        ExecutionRecord,
        Lease,
        StartRequest,
        StepStatus,
        WorkflowRunOutcome,
    )
    from yieldstar_sim.runtime.protocol import Runtime, RuntimeAction

Thing = tuple[str, str | None]
"""A thing a move touches: its kind and its name (None: every thing of that kind)."""

QUEUE: Thing = ("queue", "")
ADMISSIONS: Thing = ("admissions", "")
#: The external events a runtime holds (``EventClient``).
EVENTS: Thing = ("events", "")
LEDGER: Thing = ("ledger", "")
RANDOM: Thing = ("random", "")
FAULTS: Thing = ("faults", "")
EVERY_REQUEST: Thing = ("request", None)
EVERY_KEY: Thing = ("store", None)
#: Every part of every execution's rows.
EVERY_EXECUTION: tuple[Thing, ...] = (("lease", None), ("steps", None), ("status", None))


def lease(execution_id: str) -> Thing:
    """An execution's lease (owner, token, expiry) and whether it has ended: what every
    fenced call reads."""
    return ("lease", execution_id)


def steps(execution_id: str) -> Thing:
    """An execution's step records."""
    return ("steps", execution_id)


def status(execution_id: str) -> Thing:
    """The rest of an execution's record: when it is due, what it waits for, whether its
    cancellation was requested, its result."""
    return ("status", execution_id)


def execution(execution_id: str) -> tuple[Thing, Thing, Thing]:
    """Every part of an execution's rows."""
    return lease(execution_id), steps(execution_id), status(execution_id)


def request(request_id: object) -> Thing:
    """A start request's record (its ID as text)."""
    return ("request", str(request_id))


def stored(key: str) -> Thing:
    """A key of the outside world's store."""
    return ("store", key)


@dataclass(frozen=True, slots=True)
class Footprint:
    """What one move read and wrote (see the module's docstring)."""

    reads: frozenset[Thing] = frozenset()
    writes: frozenset[Thing] = frozenset()

    def independent_of(self, other: Footprint) -> bool:
        """Whether neither move writes what the other reads or writes.

        >>> put = Footprint(frozenset({lease("a")}), frozenset({steps("a")}))
        >>> put.independent_of(Footprint(writes=frozenset({steps("b"), lease("a")})))
        False
        >>> put.independent_of(Footprint(writes=frozenset({status("a")})))
        True
        >>> put.independent_of(Footprint(reads=frozenset(EVERY_EXECUTION)))
        False
        """
        return not (
            _meet(self.writes, other.writes)
            or _meet(self.writes, other.reads)
            or _meet(other.writes, self.reads)
        )

    def __or__(self, other: Footprint) -> Footprint:
        return Footprint(self.reads | other.reads, self.writes | other.writes)

    def describe(self) -> str:
        """The footprint in words: ``reads lease order-41, queue; writes steps order-41``."""
        parts = []
        for verb, things in (("reads", self.reads - self.writes), ("writes", self.writes)):
            if things:
                parts.append(f"{verb} " + ", ".join(sorted(_name(t) for t in things)))
        return "; ".join(parts) or "touches nothing shared"


NOTHING = Footprint()
"""A move that touched nothing shared."""
EVERYTHING = Footprint(
    writes=frozenset(
        {*EVERY_EXECUTION, EVERY_REQUEST, EVERY_KEY, QUEUE, ADMISSIONS, LEDGER, RANDOM}
    )
)
"""What a move not seen may have touched: as much as any does."""


def _name(thing: Thing) -> str:
    kind, name = thing
    if name is None:
        return f"every {kind}"
    return f"{kind} {name}" if name else kind


def _meet(ours: frozenset[Thing], theirs: frozenset[Thing]) -> bool:
    """Whether a thing of ``ours`` is a thing of ``theirs`` (a None name meets every name)."""
    if not ours or not theirs:
        return False
    if not ours.isdisjoint(theirs):
        return True
    kinds = {kind for kind, name in theirs if name is None}
    if any(kind in kinds for kind, _ in ours):
        return True
    kinds = {kind for kind, name in ours if name is None}
    return any(kind in kinds for kind, _ in theirs)


class Touching(Protocol):
    """Where the move being taken records what it touches (``RunState.touches``)."""

    touches: Touches | None


class Touches:
    """The footprint of the move being taken, as its actor touches things."""

    __slots__ = ("reads", "writes")

    def __init__(self) -> None:
        self.reads: set[Thing] = set()
        self.writes: set[Thing] = set()

    def read(self, *things: Thing) -> None:
        """The move read ``things``."""
        self.reads.update(things)

    def write(self, *things: Thing) -> None:
        """The move wrote ``things``."""
        self.writes.update(things)

    def take(self) -> Footprint:
        """What was touched since the last ``take``, and start again."""
        footprint = Footprint(frozenset(self.reads), frozenset(self.writes))
        self.reads.clear()
        self.writes.clear()
        return footprint

    def record(
        self, state: Touching, go: Callable[[], None], *, faulted: bool, parked: Callable[[], bool]
    ) -> Footprint:
        """What ``go()``, a move being taken on ``state``, touched: a fault spends the budget,
        and a move that leaves its actor ``parked`` reads the queue (a move that changes the
        queue wakes every parked actor, so the two do not commute)."""
        self.take()
        if faulted:
            self.write(FAULTS)
        state.touches = self
        try:
            go()
        finally:
            state.touches = None
        if parked():
            self.read(QUEUE)
        return self.take()


#: The runtime's attributes the search reads outside any move's calls (the keys' rows, a saved
#: state): passed through unrecorded.
_UNRECORDED = frozenset({"rows_view", "row_writes", "snapshot", "restore", "close"})


def trusted(runtime: object) -> bool:
    """Whether the footprints of ``runtime``'s calls can be trusted: it is one the project
    ships and tests against the footprints' contract (an adapter of your own, or one that
    changes a shipped one, may touch what its calls do not name)."""
    from yieldstar_sim.runtime.memory import MemoryRuntime

    return type(runtime) is MemoryRuntime


class RecordedRuntime:
    """``runtime``, each call's footprint recorded in ``touches`` (see the module's docstring).
    What a call names is recorded before it is made, what it answers after: a call that fails
    still read (and, for a runtime that wrote before failing, may have written) what it
    named. A fenced call reads the lease it is fenced by."""

    def __init__(self, runtime: Runtime, touches: Touches) -> None:
        self._runtime = runtime
        self._touches = touches
        # How many executions there are, where it is cheap to ask (the memory runtime): a
        # start that admits nothing only read the target its request names.
        self._rows: Callable[[], Sized] | None = getattr(runtime, "rows_view", None)
        # What is due now, and every row written, where it is cheap to ask (the memory
        # runtime): a call that leaves what is due as it was does not write the queue, and
        # one that wakes a waiter names it.
        self._due: Callable[[], list[str]] | None = getattr(runtime, "due", None)
        self._writes: Callable[[], Sequence[Any]] | None = getattr(runtime, "row_writes", None)

    def __getattr__(self, name: str) -> Any:
        """Any other attribute of the runtime: the search's own reads of it (its rows for
        the keys, its snapshots) as they are; a call this proxy does not know named as
        touching everything, so that no move across it is taken for independent."""
        found = getattr(self._runtime, name)
        if name in _UNRECORDED or not callable(found):
            return found

        def call(*args: Any, **kwargs: Any) -> Any:
            self._touches.write(*EVERYTHING.writes, EVENTS, QUEUE)
            return found(*args, **kwargs)

        return call

    # ---------------------------------------------------------------- reads

    def execution(self, execution_id: str) -> ExecutionRecord | None:
        """``Runtime.execution``: reads its record (its lease and status)."""
        self._touches.read(lease(execution_id), status(execution_id))
        return self._runtime.execution(execution_id)

    def executions(self) -> list[ExecutionRecord]:
        """``Runtime.executions``: reads every execution."""
        self._touches.read(*EVERY_EXECUTION)
        return self._runtime.executions()

    def steps(self, execution_id: str) -> list[Any]:
        """``Runtime.steps``: reads that execution's steps."""
        self._touches.read(steps(execution_id))
        return self._runtime.steps(execution_id)

    def start_requests(self) -> list[Any]:
        """``Runtime.start_requests``: reads every request and execution."""
        self._touches.read(EVERY_REQUEST, *EVERY_EXECUTION)
        return self._runtime.start_requests()

    def due(self) -> list[str]:
        """``Runtime.due``: reads the queue."""
        self._touches.read(QUEUE)
        return self._runtime.due()

    def next_wake_at(self) -> float | None:
        """``Runtime.next_wake_at``: reads the queue."""
        self._touches.read(QUEUE)
        return self._runtime.next_wake_at()

    # ---------------------------------------------------------------- admissions

    def start(self, start: StartRequest) -> Any:
        """``Runtime.start``: its request, the admissions, the queue, and its target."""
        self._touches.write(request(start.request_id), ADMISSIONS, QUEUE)
        before = self._count()
        return self._answered(self._runtime.start(start), before)

    def start_child(self, child: ChildRequest) -> Any:
        """``Runtime.start_child``: as ``start``, and the parent it links the child to."""
        parent = child.request_id.execution_id
        self._touches.write(request(child.request_id), ADMISSIONS, QUEUE, status(parent))
        before = self._count()
        return self._answered(self._runtime.start_child(child), before)

    def trigger(
        self, workflow_id: str, params: object = None, *, execution_id: str | None = None
    ) -> str:
        """``Runtime.trigger``: the admissions, the queue, and the execution it admits."""
        touches = self._touches
        touches.write(ADMISSIONS, QUEUE)
        if execution_id is not None:
            touches.write(request(execution_id))
        before = self._count()
        admitted = self._runtime.trigger(workflow_id, params, execution_id=execution_id)
        self._target(admitted, before)
        return admitted

    def _count(self) -> int | None:
        return None if self._rows is None else len(self._rows())

    def _answered(self, result: Any, before: int | None) -> Any:
        target = getattr(result, "execution_id", None)
        if isinstance(target, str):
            self._target(target, before)
        return result

    def _target(self, target: str, before: int | None) -> None:
        """A start's target: made (every part of it written), or found (its record read)."""
        if before is not None and self._count() == before:
            self._touches.read(lease(target), status(target))
        else:
            self._touches.write(*execution(target))

    @contextmanager
    def _queue(self) -> Iterator[None]:
        """Around a call that may change what is due: the queue is written if what is due
        now, or the order a claim takes it in, changed (or where that cannot be told). A call
        that only moves when an execution is next due, later, writes that execution's status
        alone: a claim now reads nothing of it, and time does not move while a move waits."""
        due = self._due
        before = None if due is None else due()
        try:
            yield
        finally:
            if due is None or due() != before:
                self._touches.write(QUEUE)

    # ---------------------------------------------------------------- a delivery's calls

    def claim(
        self, owner: str, *, lease_seconds: float, execution_id: str | None = None
    ) -> Delivery | None:
        """``Runtime.claim``: reads the queue; leases an execution and reads its steps."""
        touches = self._touches
        touches.read(QUEUE)
        if execution_id is not None:
            touches.write(lease(execution_id), status(execution_id))
        if execution_id is None:
            delivery = self._runtime.claim(owner, lease_seconds=lease_seconds)
        else:
            delivery = self._runtime.claim(
                owner, lease_seconds=lease_seconds, execution_id=execution_id
            )
        if delivery is not None:
            got = delivery.lease.execution_id
            touches.write(lease(got), status(got))
            touches.read(steps(got))
        return delivery

    def renew(self, held: Lease, *, lease_seconds: float) -> Lease:
        """``Runtime.renew``: the lease, and the queue where it changes what is due (a lease
        that ran out is claimable until it is renewed)."""
        self._touches.write(lease(held.execution_id))
        with self._queue():
            return self._runtime.renew(held, lease_seconds=lease_seconds)

    def put_step(
        self,
        held: Lease,
        step_key: str,
        *,
        status: StepStatus,
        value: Any = None,
        attempt: int = 1,
        wake_at: float | None = None,
    ) -> Any:
        """``Runtime.put_step``: reads the lease, writes the steps (and when the execution is
        next due, for a step that sets it)."""
        touches, execution_id = self._touches, held.execution_id
        touches.read(lease(execution_id))
        touches.write(steps(execution_id))
        if wake_at is None:
            return self._runtime.put_step(
                held, step_key, status=status, value=value, attempt=attempt
            )
        touches.write(("status", execution_id))
        with self._queue():
            return self._runtime.put_step(
                held, step_key, status=status, value=value, attempt=attempt, wake_at=wake_at
            )

    def record_wake(self, held: Lease, at: float) -> None:
        """``Runtime.record_wake``: reads the lease; when it is due; the queue where it
        changes what is due now."""
        self._touches.read(lease(held.execution_id))
        self._touches.write(status(held.execution_id))
        with self._queue():
            self._runtime.record_wake(held, at)

    def acknowledge(self, held: Lease, outcome: WorkflowRunOutcome) -> ExecutionRecord:
        """``Runtime.acknowledge``: the lease and the record, the executions it wakes (those
        waiting for its end), and the queue where it changes what is due now."""
        touches, execution_id = self._touches, held.execution_id
        touches.write(lease(execution_id), status(execution_id))
        if outcome.status == "continued-as-new":
            # It admits the next run and wakes those who joined this one: named coarsely.
            touches.write(*EVERY_EXECUTION, ADMISSIONS, EVENTS, QUEUE)
        writes = self._writes
        since = None if writes is None else len(writes())
        try:
            with self._queue():
                record = self._runtime.acknowledge(held, outcome)
        except BaseException:
            touches.write(("status", None))  # a waiter it may have woken is not named
            raise
        if writes is None or since is None:
            if record.parent is not None:
                touches.write(status(record.parent.execution_id))
        else:
            for row in writes()[since:]:
                touches.write(status(row.execution_id))
        return record

    def complete_attempt(self, token: AttemptToken, value: object = None) -> None:
        """``AttemptClient.complete_attempt``: as a ``put_step`` with no wake, reads the lease
        and the steps (which attempt is current), writes the steps."""
        execution_id = token.lease.execution_id
        self._touches.read(lease(execution_id), steps(execution_id))
        self._touches.write(steps(execution_id))
        attempts_of(self._runtime).complete_attempt(token, value)

    # External events: each call is named as touching every execution, the admissions, the
    # queue and the events, so that it is independent of nothing (no reduction across it).

    def send_event(self, event: Any) -> Any:
        """``EventClient.send_event``: everything (see above)."""
        self._touches.write(*EVERY_EXECUTION, ADMISSIONS, QUEUE, EVENTS)
        return events_of(self._runtime).send_event(event)

    def wait_for_event(self, held: Lease, step_key: str, name: str) -> Any:
        """``EventClient.wait_for_event``: everything (see above)."""
        self._touches.write(*EVERY_EXECUTION, ADMISSIONS, QUEUE, EVENTS)
        return events_of(self._runtime).wait_for_event(held, step_key, name)

    def events(self) -> Any:
        """``EventClient.events``: reads the events and every execution."""
        self._touches.read(*EVERY_EXECUTION, EVENTS)
        return events_of(self._runtime).events()

    def release(self, held: Lease, *, delay: float) -> None:
        """``Runtime.release``: the lease, when the execution is due again, and the queue
        where it changes what is due now (a release to later leaves it as it was: the
        execution, leased, was not claimable, and is not yet)."""
        execution_id = held.execution_id
        self._touches.write(lease(execution_id), status(execution_id))
        with self._queue():
            self._runtime.release(held, delay=delay)

    def wait_for(self, held: Lease, execution_id: str) -> ExecutionRecord | None:
        """``Runtime.wait_for``: reads the lease; what the waiting execution waits for, and
        the record of the one it waits for (whose end will wake it)."""
        own = held.execution_id
        self._touches.read(lease(own), lease(execution_id))
        self._touches.write(status(own), status(execution_id))
        with self._queue():
            return self._runtime.wait_for(held, execution_id)

    # ---------------------------------------------------------------- clients', the runtime's own

    def cancel(self, execution_id: str) -> list[str]:
        """``Runtime.cancel``: the record of the execution and of each it reached, and the
        queue; it reads who owns what (the admissions)."""
        touches = self._touches
        touches.read(ADMISSIONS, lease(execution_id))
        touches.write(status(execution_id), QUEUE)
        try:
            reached = self._runtime.cancel(execution_id)
        except BaseException:
            touches.write(("status", None))  # what it reached is not named
            raise
        for target in reached:
            touches.read(lease(target))
            touches.write(status(target))
        return reached

    def prune(self, execution_id: str) -> None:
        """``Runtime.prune``: everything (an ID pruned may be admitted again)."""
        self._touches.write(*EVERY_EXECUTION, EVERY_REQUEST, QUEUE, ADMISSIONS)
        self._runtime.prune(execution_id)

    def take_actions(self) -> list[RuntimeAction]:
        """``ReportsActions.take_actions``: each execution acted on, and the queue."""
        actions: list[RuntimeAction] = self._runtime.take_actions()  # type: ignore[attr-defined]
        for action in actions:
            self._touches.write(QUEUE, *execution(action.execution_id))
        return actions
