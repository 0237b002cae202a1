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

- ``("execution", id)``: an execution's rows: its record, its steps, its lease;
- ``QUEUE``: which executions are due and in what order a claim takes them (a claim reads it;
  admissions, acknowledgements, releases, wakes, renewals, cancels and prunes write it);
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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

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
LEDGER: Thing = ("ledger", "")
RANDOM: Thing = ("random", "")
FAULTS: Thing = ("faults", "")
EVERY_EXECUTION: Thing = ("execution", None)
EVERY_REQUEST: Thing = ("request", None)
EVERY_KEY: Thing = ("store", None)


def execution(execution_id: str) -> Thing:
    """An execution's rows."""
    return ("execution", execution_id)


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

        >>> put = Footprint(writes=frozenset({execution("a")}))
        >>> put.independent_of(Footprint(writes=frozenset({execution("b")})))
        True
        >>> put.independent_of(Footprint(reads=frozenset({EVERY_EXECUTION})))
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
        """The footprint in words: ``reads queue; writes execution order-41``."""
        parts = []
        for verb, things in (("reads", self.reads - self.writes), ("writes", self.writes)):
            if things:
                parts.append(f"{verb} " + ", ".join(sorted(_name(t) for t in things)))
        return "; ".join(parts) or "touches nothing shared"


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
    named."""

    def __init__(self, runtime: Runtime, touches: Touches) -> None:
        self._runtime = runtime
        self._touches = touches

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runtime, name)

    # ---------------------------------------------------------------- reads

    def execution(self, execution_id: str) -> ExecutionRecord | None:
        """``Runtime.execution``: reads that execution."""
        self._touches.read(execution(execution_id))
        return self._runtime.execution(execution_id)

    def executions(self) -> list[ExecutionRecord]:
        """``Runtime.executions``: reads every execution."""
        self._touches.read(EVERY_EXECUTION)
        return self._runtime.executions()

    def steps(self, execution_id: str) -> list[Any]:
        """``Runtime.steps``: reads that execution."""
        self._touches.read(execution(execution_id))
        return self._runtime.steps(execution_id)

    def start_requests(self) -> list[Any]:
        """``Runtime.start_requests``: reads every request and execution."""
        self._touches.read(EVERY_REQUEST, EVERY_EXECUTION)
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
        return self._answered(self._runtime.start(start))

    def start_child(self, child: ChildRequest) -> Any:
        """``Runtime.start_child``: as ``start``, and the parent it links the child to."""
        self._touches.write(
            request(child.request_id), ADMISSIONS, QUEUE, execution(child.request_id.execution_id)
        )
        return self._answered(self._runtime.start_child(child))

    def trigger(
        self, workflow_id: str, params: object = None, *, execution_id: str | None = None
    ) -> str:
        """``Runtime.trigger``: the admissions, the queue, and the execution it admits."""
        touches = self._touches
        touches.write(ADMISSIONS, QUEUE)
        if execution_id is not None:
            touches.write(execution(execution_id), request(execution_id))
        admitted = self._runtime.trigger(workflow_id, params, execution_id=execution_id)
        touches.write(execution(admitted))
        return admitted

    def _answered(self, result: Any) -> Any:
        target = getattr(result, "execution_id", None)
        if isinstance(target, str):
            self._touches.write(execution(target))
        return result

    # ---------------------------------------------------------------- a delivery's calls

    def claim(
        self, owner: str, *, lease_seconds: float, execution_id: str | None = None
    ) -> Delivery | None:
        """``Runtime.claim``: reads the queue, writes the execution it leases."""
        touches = self._touches
        touches.read(QUEUE)
        if execution_id is not None:
            touches.write(execution(execution_id))
        delivery = self._runtime.claim(
            owner, lease_seconds=lease_seconds, execution_id=execution_id
        )
        if delivery is not None:
            touches.write(execution(delivery.lease.execution_id))
        return delivery

    def renew(self, lease: Lease, *, lease_seconds: float) -> Lease:
        """``Runtime.renew``: the leased execution, and the queue (a lease that ran out is
        claimable until it is renewed)."""
        self._touches.write(execution(lease.execution_id), QUEUE)
        return self._runtime.renew(lease, lease_seconds=lease_seconds)

    def put_step(
        self,
        lease: Lease,
        step_key: str,
        *,
        status: StepStatus,
        value: Any = None,
        attempt: int = 1,
        wake_at: float | None = None,
    ) -> Any:
        """``Runtime.put_step``: the leased execution (and the queue, for a step that sets
        when the execution is next due)."""
        self._touches.write(execution(lease.execution_id))
        if wake_at is not None:
            self._touches.write(QUEUE)
        return self._runtime.put_step(
            lease, step_key, status=status, value=value, attempt=attempt, wake_at=wake_at
        )

    def record_wake(self, lease: Lease, at: float) -> None:
        """``Runtime.record_wake``: the leased execution and the queue."""
        self._touches.write(execution(lease.execution_id), QUEUE)
        self._runtime.record_wake(lease, at)

    def acknowledge(self, lease: Lease, outcome: WorkflowRunOutcome) -> ExecutionRecord:
        """``Runtime.acknowledge``: the leased execution, the queue, and the parent it may
        wake."""
        touches = self._touches
        touches.write(execution(lease.execution_id), QUEUE)
        try:
            record = self._runtime.acknowledge(lease, outcome)
        except BaseException:
            touches.write(EVERY_EXECUTION)  # a parent it may have woken is not named
            raise
        if record.parent is not None:
            touches.write(execution(record.parent.execution_id))
        return record

    def release(self, lease: Lease, *, delay: float) -> None:
        """``Runtime.release``: the leased execution and the queue."""
        self._touches.write(execution(lease.execution_id), QUEUE)
        self._runtime.release(lease, delay=delay)

    def wait_for(self, lease: Lease, execution_id: str) -> ExecutionRecord | None:
        """``Runtime.wait_for``: the waiting execution and the one it waits for."""
        self._touches.write(execution(lease.execution_id), execution(execution_id), QUEUE)
        return self._runtime.wait_for(lease, execution_id)

    # ---------------------------------------------------------------- clients', the runtime's own

    def cancel(self, execution_id: str) -> list[str]:
        """``Runtime.cancel``: the execution, each it reached, and the queue."""
        touches = self._touches
        touches.write(execution(execution_id), QUEUE)
        try:
            reached = self._runtime.cancel(execution_id)
        except BaseException:
            touches.write(EVERY_EXECUTION)  # what it reached is not named
            raise
        touches.write(*map(execution, reached))
        return reached

    def prune(self, execution_id: str) -> None:
        """``Runtime.prune``: everything (an ID pruned may be admitted again)."""
        self._touches.write(EVERY_EXECUTION, EVERY_REQUEST, QUEUE, ADMISSIONS)
        self._runtime.prune(execution_id)

    def take_actions(self) -> list[RuntimeAction]:
        """``ReportsActions.take_actions``: each execution acted on, and the queue."""
        actions: list[RuntimeAction] = self._runtime.take_actions()  # type: ignore[attr-defined]
        if actions:
            self._touches.write(QUEUE, *(execution(a.execution_id) for a in actions))
        return actions


def things(footprints: Iterable[Footprint]) -> Footprint:
    """The union of ``footprints``."""
    union = Footprint()
    for footprint in footprints:
        union = union | footprint
    return union
