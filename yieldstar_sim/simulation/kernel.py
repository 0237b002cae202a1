"""The simulation kernel: virtual time, actors, choice points. No dependencies.

Actors are generators. An actor yields ``Wait(until)`` to sleep and ``Point(label)`` to stop
at a *choice point*. The kernel decides nothing: ``settle`` resumes whoever is due, moving
time as needed, until some actor waits at a point; ``ready`` names the actors waiting at one,
and ``take`` resumes the one its caller chose, sending it what the caller decided there (the
move: which fault strikes, which option of a draw is drawn). Who goes, and with what, is the
caller's business (``execution.Execution``), as what a point means is the actor's.

A *blocking* point (``Point(blocking=True)``: a worker's claim) is offered only while the next wake
is due (``next_wake() <= now``: something can be claimed). Until then its actor is blocked at
it, described as parked (``PARKED``), and no move of it is offered: a claim that would find
nothing is no choice point, and does not race with what the other actors do. When a nudge
(``Kernel.nudge``: something it may wait for changed) or the next wake comes, it is offered
again, its generator never resumed meanwhile.

A *solo* point (``Point(solo=True)``) is one where only a fault is to be decided, not who goes:
while an actor waits at one, it is the only actor ready. An actor that goes on from a solo point
to another keeps its turn; actors that reach solo points meanwhile wait in the order they came.
So a step body's calls to the outside world, each a solo point, land together at their instant
as they did before they were points, and a plain run draws no random number there.

Everything the kernel holds but its actors' generators is data (``snapshot``/``restore``).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Callable, Generator


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
    """What ``Kernel.waits`` holds for an actor parked at a blocking point (``PARKED``)."""

    def __reduce__(self) -> str:
        # Pickled as ``PARKED`` itself (a shipped state's ``waits``): readers compare by identity.
        return "PARKED"


#: What a parked actor waits for in ``Kernel.waits``: one object, so that comparing two
#: snapshots of it finds the same object.
PARKED = Park()


@dataclass(frozen=True, slots=True)
class Point:
    """Stop at a choice point; the actor is sent back what was decided there. ``options``
    names the values the point chooses among (a draw's), empty where only who goes, and with
    which fault, is decided."""

    label: str
    info: Any = field(default=None, compare=False)
    options: tuple[str, ...] = field(default=(), compare=False)
    solo: bool = field(default=False, compare=False)
    """Only a fault is decided here: the actor waiting at it is the only one ready (see the
    module's docstring)."""
    blocking: bool = field(default=False, compare=False)
    """Offered only while the next wake is due; until then its actor is blocked at it (see the
    module's docstring)."""


#: An actor: a generator that yields what it waits for (a time, a choice point) and is sent
#: back, at a choice point, what was decided there.
Actor: TypeAlias = "Generator[Wait | Point, Any, None]"


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


@dataclass(frozen=True, slots=True)
class KernelState:
    """What a kernel holds, but its actors' generators: ``Kernel.snapshot`` takes it and
    ``Kernel.restore`` puts it back, with generators made again by the caller."""

    now: float
    sleeping: tuple[tuple[float, int, str], ...]
    ties: int
    at_point: tuple[tuple[str, Point], ...]
    waits: tuple[tuple[str, Point | float | Park], ...]
    points: int
    idle_wake: tuple[float, int] | None
    running: str | None
    actors: frozenset[str]
    turns: tuple[str, ...] = ()
    holder: str | None = None
    blocked: tuple[tuple[str, Point], ...] = ()


class Kernel:
    """Runs actors on a virtual clock, one choice point at a time."""

    def __init__(
        self, clock: VirtualClock, *, next_wake: Callable[[], float | None] = lambda: None
    ) -> None:
        self.clock = clock
        self.next_wake = next_wake
        """When the next parked actor may have something to do (the runtime's next wake)."""
        self._sleeping: list[tuple[float, int, str]] = []
        self._ties = 0  # the heap's tie-breaker: a number, so that a snapshot can hold it
        self._actors: dict[str, Any] = {}
        self._at_point: dict[str, Point] = {}
        self.waits: dict[str, Point | float | Park] = {}
        """What each actor that is not running waits for: its point, the time it sleeps until,
        or ``PARKED``; what ``waiting`` describes, kept as the actors move (one dict write
        each), so that a reader can tell that nobody moved by comparing it with a copy (the
        state keys: equal values describe alike)."""
        self.points = 0
        """How many choice points have been taken."""
        self._idle_wake: tuple[float, int] | None = None
        self.running: str | None = None
        """The actor the kernel resumed last: while an actor runs, that actor."""
        self.turns: list[str] = []
        """The actors waiting at solo points, the one whose turn it is first (read outside
        the kernel, never written: the state keys read their order when more than one
        waits)."""
        self._holder: str | None = None
        """The actor that went last at a solo point, while it goes on to another."""
        self._blocked: dict[str, Point] = {}
        """The actors at blocking points while nothing is due: offered again when woken."""
        self._blocking: set[str] = set()
        """The actors at blocking points that are offered (in ``_at_point``)."""

    def _sleep(self, when: float, name: str) -> None:
        self._ties += 1
        heapq.heappush(self._sleeping, (when, self._ties, name))
        self.waits[name] = when

    def spawn(
        self, name: str, actor: Generator[Any, Any, None], *, at: float | None = None
    ) -> None:
        """Add an actor that starts at ``at`` (default: now)."""
        if name in self._actors:
            raise ValueError(f"an actor named {name!r} exists already")
        self._actors[name] = actor
        self._sleep(self.clock.now() if at is None else at, name)

    def nudge(self) -> None:
        """Offer every parked actor its point again (something it may wait for has changed)."""
        if self._blocked:
            self._unblock()

    def wake(self, name: str) -> None:
        """Offer the parked actor ``name`` alone its point again (``nudge`` offers every one)."""
        if name in self._blocked:
            point = self._blocked.pop(name)
            self._at_point[name] = self.waits[name] = point
            self._blocking.add(name)

    def _unblock(self) -> None:
        """Offer every blocked actor its point again (``settle`` blocks it again if nothing is
        due after all)."""
        for name, point in self._blocked.items():
            self._at_point[name] = self.waits[name] = point
            self._blocking.add(name)
        self._blocked.clear()

    def _block(self) -> None:
        """Block the actors at blocking points, unless the next wake is due."""
        wake = self.next_wake()
        if wake is not None and wake <= self.clock.now():
            return
        for name in sorted(self._blocking):
            self._blocked[name] = self._at_point.pop(name)
            self.waits[name] = PARKED
        self._blocking.clear()

    def _advance(self, name: str, value: Any) -> None:
        """Resume ``name`` with ``value`` until it asks for a point, sleeps or ends."""
        self.running = name
        try:
            request = self._actors[name].send(value)
        except StopIteration:
            del self._actors[name]
            if self._holder == name:
                self._holder = None
            return
        if isinstance(request, Point):
            self._at_point[name] = self.waits[name] = request
            if request.blocking:
                self._blocking.add(name)
            if request.solo:
                # The actor whose turn it is keeps it; any other waits its turn.
                if self._holder == name:
                    self.turns.insert(0, name)
                else:
                    self.turns.append(name)
                return
        if self._holder == name:
            self._holder = None
        if isinstance(request, Point):
            return
        if isinstance(request, Wait):
            self._sleep(max(request.until, self.clock.now()), name)
        else:
            raise TypeError(f"actor {name!r} yielded {request!r}; actors yield Wait or Point")

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
        wake = self.next_wake() if self._blocked else None
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

    def settle(self, *, until: float | None = None) -> bool:
        """Resume whoever is due, moving time as needed (not past ``until``), until an actor
        waits at a choice point: True then, False when nothing is left to do (or nothing
        before ``until``)."""
        sleeping = self._sleeping
        if sleeping and sleeping[0][0] <= self.clock.now():  # most points wake no sleeper
            self._resume_due()
        while True:
            if self._blocking:
                self._block()
            if self._at_point:
                return True
            if not self._wake_due(until):
                return False

    def ready(self) -> list[str]:
        """The actors that may go at this choice point: those waiting at one, by name, or,
        while any waits at a solo point, those waiting at one in the order they came (the
        actor still on its move, which keeps its turn, alone)."""
        turns = self.turns
        if turns:
            if len(turns) == 1 or turns[0] == self._holder:
                return [turns[0]]
            # Which of two actors that reached solo points at one instant goes first is a
            # choice like any other: the order they woke in is history, no state.
            return list(turns)
        return sorted(self._at_point)

    @property
    def holder(self) -> str | None:
        """The actor still on its move at a solo point, whose turn it keeps (None if none)."""
        turns = self.turns
        return turns[0] if turns and turns[0] == self._holder else None

    def point(self, name: str) -> Point:
        """The choice point actor ``name`` waits at (``KeyError`` if it waits at none)."""
        return self._at_point[name]

    def take(self, name: str, value: Any) -> None:
        """Let actor ``name``, waiting at a choice point, go, sending it ``value``; it runs
        until it next waits (the next ``settle`` resumes whoever that woke)."""
        if name not in self._at_point:
            raise KeyError(
                f"{name!r} waits at no choice point; the actors waiting at one are {self.ready()}"
            )
        if self.turns and name not in self.ready():
            raise KeyError(f"{name!r} waits its turn: {self.turns[0]!r} goes first")
        self.go(name, value)

    def go(self, name: str, value: Any) -> None:
        """``take`` without its checks, for a caller that had ``name`` from ``ready`` at this
        very point (a plain run's loop: its every point passes here)."""
        point = self._at_point.pop(name)
        del self.waits[name]
        self._blocking.discard(name)
        self.points += 1
        if point.solo:
            self.turns.remove(name)
            self._holder = name
        self._advance(name, value)

    def pending(self) -> bool:
        """Whether anything is still to happen: an actor at a point or asleep, or a wake due
        for a parked actor."""
        if self._at_point or self._sleeping:
            return True
        return bool(self._blocked) and self.next_wake() is not None and not self._spun()

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
        states += [(name, describe(PARKED)) for name in self._blocked]
        return sorted(states)

    def snapshot(self) -> KernelState:
        """Everything but the actors' generators, as it is now (between two choice points)."""
        return KernelState(
            self.clock.now(), tuple(self._sleeping), self._ties, tuple(self._at_point.items()),
            tuple(self.waits.items()), self.points, self._idle_wake,
            self.running, frozenset(self._actors), tuple(self.turns), self._holder,
            tuple(self._blocked.items()),
        )  # fmt: skip

    def restore(self, state: KernelState, actors: dict[str, Any]) -> None:
        """Put back ``state`` with ``actors``, a generator for each of its actors, each waiting
        where the snapshot says it waits. The clock is the caller's to set."""
        if set(actors) != state.actors:
            raise ValueError(f"restoring actors {sorted(actors)}, not {sorted(state.actors)}")
        self._actors = dict(actors)
        self._sleeping = list(state.sleeping)
        self._ties = state.ties
        self._at_point = dict(state.at_point)
        self.waits = dict(state.waits)
        self.points = state.points
        self._idle_wake = state.idle_wake
        self.running = state.running
        self.turns = list(state.turns)
        self._holder = state.holder
        self._blocked = dict(state.blocked)
        self._blocking = {name for name, point in state.at_point if point.blocking}

    def generators(self) -> dict[str, Any]:
        """Each actor's generator, by name: the actors that have not ended."""
        return dict(self._actors)

    def replace(self, name: str, actor: Generator[Any, Any, None]) -> None:
        """Resume ``actor`` as ``name`` from now on, in place of the generator that was
        ``name``: one standing where it stands (that one, unwrapped)."""
        self._actors[name] = actor

    def close(self) -> None:
        """Close every actor that has not ended."""
        for actor in self._actors.values():
            actor.close()
        self._actors.clear()
        self._at_point.clear()
        self._sleeping.clear()
        self.waits.clear()
        self.turns.clear()
        self._holder = None
        self._blocked.clear()
        self._blocking.clear()
