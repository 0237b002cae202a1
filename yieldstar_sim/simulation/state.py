"""A simulation run's state as plain data: the ``RunState`` every actor takes.

The actors (workers, step attempts, clients, the scenario's own actor, the body world's port)
are functions and small classes over a ``RunState`` and never see the ``Simulator``, which only
builds a state, spawns the actors and runs the kernel. Everything a run changes lives here:
the virtual clock and the kernel's queue, the runtime, the world's store and effect ledger, the
trace, each worker's clock and each lease's end, the admissions seen. What is not data (the
actors' generators, held by the kernel) is a function of the recorded steps: the driver rebuilds
a workflow's position from its step log, as it does after every crash.

>>> clocks = WorkerClocks(lambda: 100.0)
>>> clocks.behind["w1"] = 60.0
>>> clocks.now("w1"), clocks.now("w2")
(40.0, 100.0)
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from yieldstar_sim.simulation.trace import Admission

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.core.clock import ManualClock
    from yieldstar_sim.engine.invoker import Registry
    from yieldstar_sim.engine.world import Ledger, WorldStore
    from yieldstar_sim.runtime.protocol import Runtime
    from yieldstar_sim.simulation.deadline import Deadline
    from yieldstar_sim.simulation.faults import FaultPlan
    from yieldstar_sim.simulation.kernel import Actor, Kernel
    from yieldstar_sim.simulation.recorder import Recorder
    from yieldstar_sim.simulation.scenario import Scenario
    from yieldstar_sim.simulation.trace import Trace, TraceEvent

T = TypeVar("T")


@dataclass
class WorkerClocks:
    """Each worker's clock: true time less how far behind a skew set it."""

    true_now: Callable[[], float]
    behind: dict[str, float] = field(default_factory=dict)
    """Seconds each skewed worker's clock runs behind true time."""

    def now(self, worker: str) -> float:
        """The time ``worker`` believes it is."""
        return self.true_now() - self.behind.get(worker, 0.0)


@dataclass(eq=False)
class RunState:
    """Everything one run of a scenario changes, and what it was made from."""

    scenario: Scenario
    seed: int
    clock: ManualClock
    runtime: Runtime
    kernel: Kernel
    """The kernel: its queue of waiting actors, its choices and its faults' plan."""
    plan: FaultPlan
    trace: Trace
    ledger: Ledger
    store: WorldStore
    """The world's key-value store, empty at the start of every run."""
    deadline: Deadline
    """The run's wall-clock limit, armed around the user code the actors run."""
    registries: list[tuple[float, Registry]]
    """The workflow versions deployed, each from its time on (the first from t=0)."""
    clocks: WorkerClocks
    """Each worker's own clock: true time, less what a skew fault set it back by."""
    lease_ends: dict[tuple[str, int], float] = field(default_factory=dict)
    """Where each lease (by execution and fencing token) ends after its heartbeats."""
    admissions: list[Admission] = field(default_factory=list)
    """Every admission seen, once per incarnation, from the runtime's records."""
    admitted: set[tuple[str, int]] = field(default_factory=set)
    """The (execution, incarnation) pairs in ``admissions``."""
    groups: dict[int, list[str]] = field(default_factory=dict)
    """Each ``step.all``'s completion order so far (its members' step keys), and each draw's
    (its options' indices: the first is the one drawn), by the number ``new_group`` gave it:
    shared by the worker and the actors it spawned for them, so kept here, with the rest of
    what a restored state puts back."""
    group_names: dict[int, str] = field(default_factory=dict)
    """What each group is for (``new_group``): the state keys read the groups by it, not by
    their numbers, which follow the order runs happened to make them in."""
    recorder: Recorder | None = None
    """What each actor was told, when the run may be restored to a saved state (the
    exhaustive search's): actors read the shared state through ``answer``."""
    _world_random: random.Random | None = field(default=None, repr=False)

    @property
    def world_random(self) -> random.Random:
        """The world's own random numbers: a stream apart from the scheduler's, so that reading
        one never changes which worker goes next."""
        # Made on first use: seeding a generator from a string is a noticeable part of a short
        # run, and most runs read no random number.
        if self._world_random is None:
            self._world_random = random.Random(f"world-{self.seed}")
        return self._world_random

    @property
    def replaying(self) -> bool:
        """Whether an actor is being made again from what it was told: it writes nothing."""
        recorder = self.recorder
        return recorder is not None and recorder.feed is not None

    def answer(self, compute: Callable[[], T]) -> T:
        """``compute()``: a read of the shared state by the running actor, logged when the
        run may be restored (``recorder.Recorder.answer``)."""
        recorder = self.recorder
        return compute() if recorder is None else recorder.answer(compute)

    def spawn(
        self,
        name: str,
        factory: Callable[[], Actor],
        *,
        actor: Actor | None = None,
        at: float | None = None,
    ) -> None:
        """Spawn an actor in the kernel: ``actor``, or ``factory()``; ``factory`` makes it
        again from its arguments when the run is restored (``Recorder.spawn``)."""
        made = factory() if actor is None else actor
        if self.recorder is None:
            self.kernel.spawn(name, made, at=at)
        else:
            self.recorder.spawn(name, made, factory, at=at)

    def reset(self, name: str, factory: Callable[[], Actor]) -> None:
        """Actor ``name`` stands where a new ``factory()`` would (``Recorder.reset``)."""
        if self.recorder is not None:
            self.recorder.reset(name, factory)

    def new_group(self, what: str) -> int:
        """A number for a new ``step.all`` completion order (or a draw), with its empty list;
        ``what`` says what it is for (``"draw order-42/route"``), and its name is ``what``
        with how many groups were made for it before (``"draw order-42/route #1"``), the same
        whichever order two executions' groups were made in.

        >>> state = RunState.__new__(RunState)
        >>> state.groups, state.group_names = {}, {}
        >>> [state.new_group(what) for what in ("draw e1/s0", "draw e0/s1", "draw e1/s0")]
        [0, 1, 2]
        >>> state.group_names[2]
        'draw e1/s0 #1'
        """
        number = len(self.groups)
        before = sum(1 for name in self.group_names.values() if name.rpartition(" #")[0] == what)
        self.groups[number] = []
        self.group_names[number] = f"{what} #{before}"
        return number

    def registry(self) -> Registry:
        """The workflow versions deployed now."""
        now = self.clock.now()
        return [registry for at, registry in self.registries if at <= now][-1]

    def observe_admission(
        self,
        execution_id: str,
        how: str,
        by: tuple[str, str] | None,
        event: TraceEvent | None = None,
    ) -> None:
        """Note an admission by the runtime's record of it (its incarnation), so that a reply
        that answers for an execution admitted earlier is never counted as a second one."""
        if self.replaying:
            return  # seen then; the admissions are restored with the state
        record = self.runtime.execution(execution_id)
        if record is None:
            return  # pruned already; the final records cannot show it either
        key = (execution_id, record.seq)
        if key in self.admitted:
            return
        self.admitted.add(key)
        self.admissions.append(
            Admission(
                execution_id, record.seq, record.workflow_id, how, by,
                record.created_at, None if event is None else event.seq,
            )
        )  # fmt: skip
