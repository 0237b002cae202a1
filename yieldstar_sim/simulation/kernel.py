"""The simulation kernel: virtual time, actors, choice points. No dependencies.

Actors are generators. An actor yields ``Wait(until)`` to sleep, ``Park()`` to wait until the
kernel is nudged (or time moves to the next wake), and ``Point(label)`` to ask for a *choice
point*: the kernel decides which ready actor goes next and sends back the fault (or ``None``) to
apply at that point. The kernel decides nothing else; what a point means is the actor's business.

One ``random.Random`` and an optional schedule of choices are the only sources of
nondeterminism: when several actors wait at a point at the same instant, the next entry of the
schedule names the one that goes, and the random generator chooses once the schedule is used up.
Every choice made is recorded, so the run can be replayed exactly.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

if TYPE_CHECKING:
    import random
    from collections.abc import Callable, Generator, Sequence


class VirtualClock(Protocol):
    """The clock the kernel moves (``yieldstar_sim.core.clock.ManualClock`` is one): the kernel
    imports nothing of the package, so it names only what it uses."""

    def now(self) -> float:
        """The current virtual time in seconds."""
        ...

    def set(self, when: float) -> None:
        """Move time forward to ``when``."""
        ...


@dataclass(frozen=True, slots=True)
class Wait:
    """Sleep until virtual time ``until``."""

    until: float


@dataclass(frozen=True, slots=True)
class Park:
    """Sleep until ``Kernel.nudge`` or until time moves to the next wake."""


#: What a parked actor waits for in ``Kernel.waits``: one object, so that comparing two
#: snapshots of it finds the same object (a new ``Park()`` would be compared field by field).
PARKED = Park()


@dataclass(frozen=True, slots=True)
class Point:
    """Ask for a choice point; the kernel answers with the fault to apply there, or None."""

    label: str
    info: Any = field(default=None, compare=False)


#: An actor: a generator that yields what it waits for (a time, a nudge, a choice point) and is
#: sent back, at a choice point, the fault to apply there (or None).
Actor: TypeAlias = "Generator[Wait | Park | Point, Any, None]"


def describe(state: Point | float | Park) -> str:
    """What an actor is doing, as ``Kernel.waiting`` says it, from its ``Kernel.waits`` value:
    at a point (its label), asleep until a time, or parked.

    >>> describe(Point("w1 claim")), describe(2.5), describe(PARKED)
    ('point w1 claim', 'sleep until 2.5', 'parked')
    """
    if isinstance(state, Point):
        return f"point {state.label}"
    if isinstance(state, Park):
        return "parked"
    return f"sleep until {state:g}"


class FaultSource(Protocol):
    """Decides the fault for each choice point (the fault plan)."""

    def fault_at(self, index: int, actor: str, point: Point) -> Any:
        """The fault to apply at choice point number ``index``, or None."""
        ...


class NoFaults:
    """A fault source that never injects anything."""

    def fault_at(self, index: int, actor: str, point: Point) -> Any:
        """No fault, ever."""
        return None


class ScheduleMismatch(Exception):
    """A schedule entry names an actor that is not waiting at a choice point."""


@dataclass(frozen=True, slots=True)
class Choice:
    """One decision: at choice point ``index``, ``actor`` went, among ``among``."""

    index: int
    actor: str
    among: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Deferred:
    """An actor made only when the kernel first resumes it: ``restore`` may be given one where
    making the generator costs something and the actor may never move again."""

    make: Callable[[], Generator[Any, Any, None]]


@dataclass(frozen=True, slots=True)
class KernelState:
    """What a kernel holds at a choice point, but its actors' generators: ``Kernel.snapshot``
    takes it and ``Kernel.restore`` puts it back, with generators made again by the caller."""

    now: float
    sleeping: tuple[tuple[float, int, str], ...]
    ties: int
    at_point: tuple[tuple[str, Point], ...]
    parked: frozenset[str]
    waits: tuple[tuple[str, Point | float | Park], ...]
    points: int
    choices: int
    idle_wake: tuple[float, int] | None
    running: str | None
    schedule: tuple[str, ...]
    actors: frozenset[str]


class Kernel:
    """Runs actors on a virtual clock, one choice point at a time."""

    def __init__(
        self,
        clock: VirtualClock,
        rng: random.Random,
        *,
        schedule: Sequence[str] = (),
        faults: FaultSource | None = None,
        next_wake: Callable[[], float | None] = lambda: None,
        chooser: Callable[[int, list[str]], str] | None = None,
    ) -> None:
        self.clock = clock
        self.rng = rng
        self.faults: FaultSource = faults or NoFaults()
        self.next_wake = next_wake
        self.chooser = chooser
        """Chooses among ready actors once the schedule is used up (default: the seeded rng)."""
        self._schedule = deque(schedule)  # taken from the left, one per point
        self._sleeping: list[tuple[float, int, str]] = []
        self._ties = 0  # the heap's tie-breaker: a number, so that a snapshot can hold it
        self._actors: dict[str, Any] = {}
        self._at_point: dict[str, Point] = {}
        self._parked: set[str] = set()
        self.waits: dict[str, Point | float | Park] = {}
        """What each actor that is not running waits for: its point, the time it sleeps until,
        or ``PARKED``; what ``waiting`` describes, kept as the actors move (one dict write
        each), so that a reader can tell that nobody moved by comparing it with a copy (the
        explorer's fingerprints: equal values describe alike)."""
        self.points = 0
        """How many choice points have been passed."""
        self.choices: list[Choice] = []
        """Every choice point passed, with the actor that went and the actors that could have."""
        self.observers: list[Callable[[int, str, Point, Any], None]] = []
        self._idle_wake: tuple[float, int] | None = None
        self.running: str | None = None
        """The actor the kernel resumed last: while an actor runs, that actor."""
        self.on_resume: Callable[[str, Any], None] | None = None
        """Told of every resumption (the actor, the value sent) before it happens: what a
        recorder of the actors' inputs listens to."""
        self.always_choose = False
        """Ask the chooser at every choice point, even where one actor is ready (a search
        that saves its state at every point asks before the point is taken)."""
        self.muted = False
        """While set, ``spawn``, ``nudge``, ``wake`` and ``withdraw`` change nothing: an actor
        rebuilt from its inputs does again what it did, and what that did to the kernel is
        restored."""

    @property
    def schedule(self) -> list[str]:
        """The actor that went at each choice point: replaying it reproduces the run."""
        return [choice.actor for choice in self.choices]

    def _sleep(self, when: float, name: str) -> None:
        self._ties += 1
        heapq.heappush(self._sleeping, (when, self._ties, name))
        self.waits[name] = when

    def spawn(
        self, name: str, actor: Generator[Any, Any, None], *, at: float | None = None
    ) -> None:
        """Add an actor that starts at ``at`` (default: now)."""
        if self.muted:
            return
        if name in self._actors:
            raise ValueError(f"an actor named {name!r} exists already")
        self._actors[name] = actor
        self._sleep(self.clock.now() if at is None else at, name)

    def nudge(self) -> None:
        """Wake every parked actor (something they may be waiting for has changed)."""
        if self.muted:
            return
        now = self.clock.now()
        for name in sorted(self._parked):
            self._sleep(now, name)
        self._parked.clear()

    def wake(self, name: str) -> None:
        """Wake the parked actor ``name`` alone (``nudge`` wakes every parked actor)."""
        if name in self._parked and not self.muted:
            self._parked.discard(name)
            self._sleep(self.clock.now(), name)

    def withdraw(self, name: str) -> None:
        """Take actor ``name``, waiting at a choice point, out of the run without resuming it
        (the options of a draw that were not drawn: one choice point decides a draw)."""
        if self.muted or name not in self._at_point:
            return
        del self._at_point[name]
        del self.waits[name]
        actor = self._actors.pop(name)
        if type(actor) is not Deferred:
            actor.close()

    def _advance(self, name: str, value: Any) -> None:
        """Resume ``name`` with ``value`` until it asks for a point, sleeps, parks or ends."""
        actor = self._actors[name]
        if type(actor) is Deferred:
            actor = self._actors[name] = actor.make()
        self.running = name
        if self.on_resume is not None:
            self.on_resume(name, value)
        try:
            request = actor.send(value)
        except StopIteration:
            del self._actors[name]
            return
        if isinstance(request, Point):
            self._at_point[name] = self.waits[name] = request
        elif isinstance(request, Wait):
            self._sleep(max(request.until, self.clock.now()), name)
        elif isinstance(request, Park):
            self._parked.add(name)
            self.waits[name] = PARKED
        else:
            raise TypeError(f"actor {name!r} yielded {request!r}; actors yield Wait, Park or Point")

    def _resume_due(self) -> None:
        """Resume every sleeper whose time has come, without moving time: actors woken at this
        instant compete at its next choice point."""
        while self._sleeping and self._sleeping[0][0] <= self.clock.now():
            _, _, name = heapq.heappop(self._sleeping)
            if name in self._actors:
                del self.waits[name]
                self._advance(name, None)

    def _wake_due(self, until: float | None) -> bool:
        """Move time to the next sleeper, or to the next wake if anyone is parked, and resume
        whoever is due then. False when nothing will ever happen again, or not by ``until``."""
        wake = self.next_wake() if self._parked else None
        times = [self._sleeping[0][0]] if self._sleeping else []
        if wake is not None:
            if wake <= self.clock.now() and self._idle_wake == (self.clock.now(), self.points):
                # Parked actors were woken for this wake at this instant and parked again
                # without a choice point: nothing they do will change; do not spin.
                wake = None
            else:
                times.append(wake)
        if not times:
            return False
        when = max(min(times), self.clock.now())
        if until is not None and when > until:
            return False
        self.clock.set(when)
        if wake is not None and wake <= self.clock.now():
            self._idle_wake = (self.clock.now(), self.points)
            self.nudge()
        self._resume_due()
        return True

    def _choose(self, ready: list[str]) -> str:
        if self._schedule:
            wanted = self._schedule.popleft()
            if wanted not in ready:
                raise ScheduleMismatch(
                    f"choice point {self.points}: the schedule says {wanted!r}, but the actors "
                    f"waiting are {ready}"
                )
            return wanted
        if len(ready) == 1 and not (self.always_choose and self.chooser is not None):
            return ready[0]
        if self.chooser is not None:
            return self.chooser(self.points, ready)
        return self.rng.choice(ready)

    def step(self, *, until: float | None = None) -> bool:
        """Pass one choice point (moving time as needed, but not past ``until``); False when
        nothing is left to do."""
        self._resume_due()
        while not self._at_point:
            if not self._wake_due(until):
                return False
        ready = sorted(self._at_point)
        name = self._choose(ready)
        point = self._at_point.pop(name)
        del self.waits[name]
        index = self.points
        self.points += 1
        fault = self.faults.fault_at(index, name, point)
        self.choices.append(Choice(index, name, tuple(ready)))
        for observe in self.observers:
            observe(index, name, point, fault)
        self._advance(name, fault)
        return True

    def run(
        self,
        *,
        until: float | None = None,
        max_points: int | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> str:
        """Pass choice points until nothing is left, time passes ``until``, the budget ends or
        ``stop()`` says so (it is asked before each point).

        Returns why it stopped: ``"quiescent"`` (nothing will ever happen again), ``"until"``
        (something is still due, after ``until``), ``"max_points"`` (the budget ended) or
        ``"stopped"``.
        """
        while max_points is None or self.points < max_points:
            if stop is not None and stop():
                return "stopped"
            if not self.step(until=until):
                return "until" if self.pending() else "quiescent"
        return "quiescent" if not self.pending() and not self._at_point else "max_points"

    def pending(self) -> bool:
        """Whether anything is still to happen: an actor at a point or asleep, or a wake due
        for a parked actor."""
        if self._at_point or self._sleeping:
            return True
        return bool(self._parked) and self.next_wake() is not None and not self._spun()

    def _spun(self) -> bool:
        """Parked actors were woken for the due wake at this instant and parked again without
        a choice point: the wake changes nothing."""
        wake = self.next_wake()
        return (
            wake is not None
            and wake <= self.clock.now()
            and self._idle_wake == (self.clock.now(), self.points)
        )

    def waiting(self) -> list[tuple[str, str]]:
        """What every other actor is doing now: at a point (its label), asleep or parked."""
        states = [(name, describe(point)) for name, point in self._at_point.items()]
        states += [(name, describe(t)) for t, _, name in self._sleeping]
        states += [(name, describe(PARKED)) for name in self._parked]
        return sorted(states)

    def snapshot(self) -> KernelState:
        """Everything but the actors' generators, as it is now (between two steps, or while
        the chooser is asked)."""
        return KernelState(
            self.clock.now(), tuple(self._sleeping), self._ties, tuple(self._at_point.items()),
            frozenset(self._parked), tuple(self.waits.items()), self.points, len(self.choices),
            self._idle_wake, self.running, tuple(self._schedule), frozenset(self._actors),
        )  # fmt: skip

    def restore(self, state: KernelState, actors: dict[str, Any]) -> None:
        """Put back ``state`` (a ``snapshot`` of this kernel on the path to here: the choices
        made since are forgotten) with ``actors``, a generator (or a ``Deferred`` that makes
        it) for each of its actors, each waiting where the snapshot says it waits. The clock
        is the caller's to set."""
        if set(actors) != state.actors:
            raise ValueError(f"restoring actors {sorted(actors)}, not {sorted(state.actors)}")
        self._actors = dict(actors)
        self._sleeping = list(state.sleeping)
        self._ties = state.ties
        self._at_point = dict(state.at_point)
        self._parked = set(state.parked)
        self.waits = dict(state.waits)
        self.points = state.points
        del self.choices[state.choices :]
        self._idle_wake = state.idle_wake
        self.running = state.running
        self._schedule = deque(state.schedule)

    def generators(self) -> dict[str, Any]:
        """Each actor's generator (or ``Deferred``), by name: the actors that have not ended."""
        return dict(self._actors)

    def make_deferred(self) -> None:
        """Make every ``Deferred`` actor now: a run about to go on with nothing that could
        make one later (a restored run that will not be saved again)."""
        for name, actor in self._actors.items():
            if type(actor) is Deferred:
                self._actors[name] = actor.make()

    def close(self) -> None:
        """Close every actor that has not ended."""
        for actor in self._actors.values():
            if type(actor) is not Deferred:
                actor.close()
        self._actors.clear()
        self._at_point.clear()
        self._sleeping.clear()
        self._parked.clear()
        self.waits.clear()
