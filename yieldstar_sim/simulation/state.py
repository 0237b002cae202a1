"""A simulation run's state as plain data: the ``RunState`` every actor takes.

The actors (workers, step attempts, clients, the scenario's own actor, the body world's port)
are functions and small classes over a ``RunState``; ``execution.Execution`` builds one, spawns
the actors and takes their moves. Everything a run changes lives here: the virtual clock and the
kernel's queue, the runtime, the world's store and effect ledger, the trace, each worker's clock
and each lease's end, the admissions seen.

An actor touches what the run shares through two doors only: ``ask`` for anything whose answer
it goes on with (a runtime call, a read of the store or of a worker's clock), ``tell`` for
anything it only writes (a trace event, a nudge, an admission noted). That is what lets a run be
saved and restored (``saving.py``): an actor's generator is a function of what it was resumed
with and what it asked, and an actor made again from that log is handed its answers back while
everything it tells is dropped, the restored state holding it already.

Everything of the state that is data is saved and put back here, in ``save_data`` and
``restore_data``: a field added to the run's state is added to them, and nowhere else.

>>> clocks = WorkerClocks(lambda: 100.0)
>>> clocks.behind["w1"] = 60.0
>>> clocks.now("w1"), clocks.now("w2")
(40.0, 100.0)
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from yieldstar_sim.simulation.footprints import RANDOM
from yieldstar_sim.simulation.kernel import Point
from yieldstar_sim.simulation.trace import Admission

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.core.clock import ManualClock
    from yieldstar_sim.engine.invoker import Registry
    from yieldstar_sim.engine.world import Effect, Ledger, WorldStore
    from yieldstar_sim.runtime.protocol import Runtime
    from yieldstar_sim.simulation.deadline import Deadline
    from yieldstar_sim.simulation.footprints import Touches
    from yieldstar_sim.simulation.kernel import Actor, Kernel
    from yieldstar_sim.simulation.saving import Journal
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


@dataclass(frozen=True, slots=True)
class RunData:
    """The data of a run's state at one choice point (``RunState.save_data``): what only grows
    kept by its length, the rest copied; or, to be shipped to another run
    (``RunState.ship_data``), what only grows held whole."""

    trace: int | tuple[TraceEvent, ...]
    effects: int | tuple[Effect, ...]
    store: dict[str, str]
    behind: dict[str, float]
    lease_ends: dict[tuple[str, int], float]
    admissions: int | tuple[Admission, ...]
    admitted: frozenset[tuple[str, int]]
    world_random: Any
    world_draws: int


@dataclass(eq=False)
class RunState:
    """Everything one run of a scenario changes, and what it was made from."""

    scenario: Scenario
    seed: int
    clock: ManualClock
    runtime: Runtime
    kernel: Kernel
    """The kernel: its queue of waiting actors."""
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
    world_draws: int = 0
    """How many numbers the world's random stream has given (``step.world.random()``): where
    the stream stands, which the state keys read."""
    journal: Journal | None = None
    """What each actor was told, when the run may be saved and restored (``saving.py``)."""
    touches: Touches | None = None
    """Where the move being taken records what it touches (``footprints.py``), when the
    run records footprints; None otherwise."""
    reports: bool = False
    """Whether the runtime reports what it decides on its own (``runtime_actions.py``): asked
    after each runtime call, then."""
    claim_rivals: dict[int | None, tuple[str, ...]] = field(default_factory=dict)
    """By choice point, the other workers waiting at their claim where a claim of an
    execution was taken (the state keys read it: ``StateKeys.past``). Never saved: a claim's
    entry is written where the claim is taken, on the path the run is on."""
    _world_random: random.Random | None = field(default=None, repr=False)

    # ------------------------------------------------------------ the actors' two doors

    def ask(self, compute: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``compute(*args, **kwargs)``: the running actor asks the shared state, and goes on
        with the answer (logged when the run may be restored; handed back, not computed, to
        an actor made again)."""
        journal = self.journal
        if journal is None or not (journal.recording or journal.feeding):
            return compute(*args, **kwargs)
        return journal.ask(compute, *args, **kwargs)

    def tell(self, write: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """``write(*args, **kwargs)``: the running actor changes the shared state, and goes on
        with nothing of it (dropped for an actor made again: the restored state holds it)."""
        journal = self.journal
        if journal is None or journal.feeding is None:
            write(*args, **kwargs)

    @property
    def rebuilding(self) -> bool:
        """Whether an actor is being made again from its log (``tell`` drops everything then):
        code that builds something only to tell it may skip the building."""
        journal = self.journal
        return journal is not None and journal.feeding is not None

    @property
    def recording(self) -> bool:
        """Whether what the actors are told is being recorded (a run that may be saved)."""
        journal = self.journal
        return journal is not None and journal.recording and journal.feeding is None

    def event(self, t: float, kind: Any, text: str, **fields: Any) -> None:
        """Add a trace event (``Trace.add``), told (spelled out: a run adds hundreds)."""
        journal = self.journal
        if journal is None or journal.feeding is None:
            self.trace.add(t, kind, text, **fields)

    def claimed(self, worker: str | None, point: int | None) -> None:
        """Note the other workers waiting at their claim where ``worker``'s claim of an
        execution was taken (``claim_rivals``): they have not moved since that point, so what
        they wait for is what they waited for there."""
        self.claim_rivals[point] = tuple(
            name
            for name, wait in self.kernel.waits.items()
            if name != worker and isinstance(wait, Point) and wait.blocking
        )

    def nudge(self) -> None:
        """Wake every parked actor, told."""
        journal = self.journal
        if journal is None or journal.feeding is None:
            self.kernel.nudge()

    def wake(self, name: str) -> None:
        """Wake the parked actor ``name``, told."""
        self.tell(self.kernel.wake, name)

    def spawn(
        self,
        name: str,
        factory: Callable[[], Actor],
        *,
        actor: Actor | None = None,
        at: float | None = None,
    ) -> None:
        """Spawn an actor in the kernel: ``actor``, or ``factory()``; ``factory`` makes it
        again from its arguments when the run is restored."""
        journal = self.journal
        if journal is None:
            self.kernel.spawn(name, factory() if actor is None else actor, at=at)
        elif journal.feeding is None:
            journal.spawn(name, factory() if actor is None else actor, factory, at=at)

    def reset(self, name: str, factory: Callable[[], Actor]) -> None:
        """Actor ``name`` stands where a new ``factory()`` would: what it was told before is
        no longer needed to make it again."""
        journal = self.journal
        if journal is not None and journal.recording:  # unrecorded, no log is kept
            journal.reset(name, factory)

    def told_so_far(self) -> list[Any]:
        """A copy of what the running actor was told since its last ``reset``: an actor that
        splits off it (a stalled attempt's rest of the delivery) is made again from it (empty
        when the run keeps no journal, or while an actor is made again)."""
        journal, running = self.journal, self.kernel.running
        if journal is None or journal.feeding is not None or running is None:
            return []
        log = journal.logs.get(running)
        return [] if log is None else list(log.entries)

    def feed(self, name: str, actor: Actor, entries: list[Any]) -> None:
        """Feed ``entries`` (``told_so_far``) to ``actor``, new, as actor ``name`` made again."""
        if self.journal is not None:
            self.journal.feed(name, actor, entries)

    # ------------------------------------------------------------ the world's random numbers

    def world_random(self) -> float:
        """The world's next random number: a stream apart from the scheduler's, so that reading
        one never changes which worker goes next."""
        # Made on first use: seeding a generator from a string is a noticeable part of a short
        # run, and most runs read no random number.
        made = self._world_random
        if made is None:
            made = self._world_random = random.Random(f"world-{self.seed}")
        self.world_draws += 1
        if self.touches is not None:
            self.touches.write(RANDOM)
        return made.random()

    # ------------------------------------------------------------ saving the data

    def save_data(self) -> RunData:
        """The state's data as it is now."""
        made = self._world_random
        return RunData(
            trace=len(self.trace.events),
            effects=len(self.ledger.effects),
            store=dict(self.store.canonical),
            behind=dict(self.clocks.behind),
            lease_ends=dict(self.lease_ends),
            admissions=len(self.admissions),
            admitted=frozenset(self.admitted),
            world_random=None if made is None else made.getstate(),
            world_draws=self.world_draws,
        )

    def ship_data(self, data: RunData) -> RunData:
        """``data`` (``save_data``'s, taken on this run's path) with what only grows held
        whole: the trace, the effects and the admissions up to their saved lengths, for any
        run of the same scenario to ``restore_data``."""
        assert type(data.trace) is int, "a saved state's data, not a shipped one's"
        assert type(data.effects) is int
        assert type(data.admissions) is int
        return replace(
            data,
            trace=tuple(self.trace.events[: data.trace]),
            effects=tuple(self.ledger.effects[: data.effects]),
            admissions=tuple(self.admissions[: data.admissions]),
        )

    def restore_data(self, data: Any) -> None:
        """Put the state's data back as ``save_data`` took it (into the same objects: the
        actors hold them), or as ``ship_data`` holds it (whole, into a run of its own)."""
        if type(data.trace) is int:
            self.trace.truncate(data.trace)
            del self.ledger.effects[data.effects :]
            del self.admissions[data.admissions :]
        else:
            self.trace.truncate(0)
            self.trace.events += data.trace
            self.ledger.effects[:] = data.effects
            self.admissions[:] = data.admissions
        _put_back(self.store.canonical, data.store)
        _put_back(self.clocks.behind, data.behind)
        _put_back(self.lease_ends, data.lease_ends)
        self.admitted.clear()
        self.admitted.update(data.admitted)
        if data.world_random is None:
            self._world_random = None  # made again on first use, from the seed
        else:
            if self._world_random is None:
                self._world_random = random.Random()
            self._world_random.setstate(data.world_random)
        self.world_draws = data.world_draws

    def body_mark(self) -> tuple[int, dict[str, str], Any, int]:
        """What a step body can change at once (its reads' events, its store writes, the
        random numbers it read), to ``roll_back`` a body's run stopped at a draw: its effects
        and elapses had not landed, and it cannot have admitted anything (``port.draw``)."""
        made = self._world_random
        return (
            len(self.trace.events),
            dict(self.store.canonical),
            None if made is None else made.getstate(),
            self.world_draws,
        )

    def roll_back(self, mark: tuple[int, dict[str, str], Any, int]) -> None:
        """Take back what a body did since ``body_mark`` gave ``mark``."""
        events, store, made, draws = mark
        self.trace.truncate(events)
        _put_back(self.store.canonical, store)
        if made is None:
            self._world_random = None  # made again from the seed on first use
        else:
            assert self._world_random is not None
            self._world_random.setstate(made)
        self.world_draws = draws

    # ------------------------------------------------------------ reads of the run

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
        that answers for an execution admitted earlier is never counted as a second one (a
        write: actors ``tell`` it)."""
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

    def observe_last_admission(self, execution_id: str, how: str, by: tuple[str, str]) -> None:
        """``observe_admission`` by the trace's last event (the call that admitted it)."""
        self.observe_admission(execution_id, how, by, self.trace.events[-1])


def _put_back(mapping: dict[Any, Any], saved: dict[Any, Any]) -> None:
    mapping.clear()
    mapping.update(saved)
