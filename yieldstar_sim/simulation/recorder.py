"""What each actor was told, so that an actor can be made again where it stands.

An actor's generator cannot be copied, but it is a function of what it was told: the values
the kernel sent it at each resumption (a fault, or nothing), and every answer it got from the
shared state between two resumptions (a runtime call's result, a step body's result, a read of
the world). A ``Recorder`` keeps, for each actor, the function that makes it (its *factory*)
and that log; ``rebuild`` makes a new generator and feeds it the log, with every write to the
shared state muted (the state itself is restored from a snapshot) and the clock and the
kernel's point counter put back to what they read then. It ends suspended where the original
is: at its choice point, asleep or parked. This is what lets the exhaustive search restore a
saved state instead of replaying the whole path to it.

The rule every actor keeps, so that this holds: a value an actor reads from the shared state
(the runtime, the world's store, its random numbers, a list another actor appends to) reaches
it through ``answer``; a write to the shared state is skipped while ``replaying``; the kernel
and the trace are muted while an actor is made again. Where an actor's future no longer
depends on its past (a worker back at its claim, or starting a delivery), it says so with
``reset``: its log starts again there, so that making it again costs one delivery at most.

>>> from yieldstar_sim.core.clock import ManualClock
>>> from yieldstar_sim.simulation.kernel import Kernel, Point
>>> import random
>>> def counter(recorder):
...     total = 0
...     while True:
...         total += recorder.answer(lambda: 1)
...         yield Point(f"total {total}")
>>> clock = ManualClock()
>>> kernel = Kernel(clock, random.Random(0))
>>> recorder = Recorder(kernel, clock)
>>> original = counter(recorder)
>>> recorder.spawn("c", original, lambda: counter(recorder))
>>> for _ in range(3):
...     _ = kernel.step()
>>> again = recorder.rebuild("c", recorder.logs["c"])
>>> again.gi_frame.f_locals["total"], original.gi_frame.f_locals["total"]
(4, 4)
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator

    from yieldstar_sim.core.clock import ManualClock
    from yieldstar_sim.simulation.kernel import Kernel

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Resume:
    """The kernel resumed the actor at time ``t`` (its point counter at ``points``), sending
    ``value``: a fault at a choice point, or None."""

    t: float
    points: int
    value: Any


@dataclass(frozen=True, slots=True)
class Answer:
    """What one ``answer`` returned."""

    value: Any


@dataclass(frozen=True, slots=True)
class Raised:
    """What one ``answer`` raised."""

    error: BaseException


class ActorLog:
    """One actor's factory and what it was told since it was made (or last ``reset``)."""

    __slots__ = ("entries", "factory")

    def __init__(self, factory: Callable[[], Generator[Any, Any, None]], entries: list[Any]):
        self.factory = factory
        self.entries = entries


class RestoreDiverged(Exception):
    """An actor made again from its log did not do what it did: it asked for more, or other,
    than it was told. Workflow or step code that reads something outside the simulation
    (a wall clock, ``uuid4()``, a global) is the usual cause; the search replays from the
    start instead."""


class _Feed:
    """A log being fed to an actor made again: resumptions and answers, in order."""

    __slots__ = ("at", "entries", "name")

    def __init__(self, name: str, entries: list[Any]) -> None:
        self.name, self.entries, self.at = name, entries, 0

    def resume(self) -> Resume | None:
        """The next resumption, or None at the end of the log."""
        if self.at == len(self.entries):
            return None
        entry = self.entries[self.at]
        if type(entry) is not Resume:
            raise RestoreDiverged(
                f"{self.name}, made again, stopped where it had asked for {entry!r} "
                f"(entry {self.at} of its log)"
            )
        self.at += 1
        return entry

    def answer(self) -> Any:
        """The next answer (or the error it raised)."""
        entry = self.entries[self.at] if self.at < len(self.entries) else None
        if entry is None or type(entry) is Resume:
            raise RestoreDiverged(
                f"{self.name}, made again, asked the shared state for something where it had "
                f"{'ended its log' if entry is None else 'waited'} (entry {self.at})"
            )
        self.at += 1
        if type(entry) is Raised:
            raise entry.error.with_traceback(None)
        return entry.value


class Recorder:
    """Every actor's factory and log, kept as the kernel resumes it (``Kernel.on_resume``)
    and as it asks the shared state (``answer``). See the module's docstring."""

    def __init__(self, kernel: Kernel, clock: ManualClock) -> None:
        self.kernel, self.clock = kernel, clock
        self.logs: dict[str, ActorLog] = {}
        self.feed: _Feed | None = None
        """The log being fed to an actor made again (None: the run is live)."""
        self.resumed = 0
        """Resumptions fed to actors made again: the work restoring costs, in the units a
        kernel step is counted in."""
        self.rebuilt = 0
        """Actors made again."""
        self.mutes: list[Callable[[bool], None]] = []
        """Told True while an actor is made again, False after: what else must be muted
        then (the trace)."""
        self._depth = 0
        kernel.on_resume = self._resumed

    @property
    def replaying(self) -> bool:
        """Whether an actor is being made again: writes to the shared state are skipped."""
        return self.feed is not None

    def _resumed(self, name: str, value: Any) -> None:
        log = self.logs.get(name)
        if log is not None:
            log.entries.append(Resume(self.clock.now(), self.kernel.points, value))

    def answer(self, compute: Callable[[], T]) -> T:
        """``compute()``, logged for the running actor; while it is made again, what it
        returned (or raised) then, without computing it. Answers inside an answer (the world
        calls of a step body whose result is one answer) are not logged apart."""
        feed = self.feed
        if feed is not None:
            value: T = feed.answer()
            return value
        if self._depth:
            return compute()
        self._depth = 1
        try:
            value = compute()
        except BaseException as error:
            self._depth = 0
            self._log(Raised(error))
            raise
        self._depth = 0
        self._log(Answer(value))
        return value

    def _log(self, entry: Answer | Raised) -> None:
        running = self.kernel.running
        log = None if running is None else self.logs.get(running)
        if log is not None:
            log.entries.append(entry)

    def spawn(
        self,
        name: str,
        actor: Generator[Any, Any, None],
        factory: Callable[[], Generator[Any, Any, None]],
        *,
        at: float | None = None,
    ) -> None:
        """Spawn ``actor`` in the kernel, made again by ``factory`` (a function of data: the
        actor's arguments). Nothing while an actor is made again: the kernel is restored
        with it."""
        if self.feed is not None:
            return
        self.logs[name] = ActorLog(factory, [])
        self.kernel.spawn(name, actor, at=at)

    def reset(self, name: str, factory: Callable[[], Generator[Any, Any, None]]) -> None:
        """Say that the running actor ``name`` stands where a new ``factory()``, started now,
        would stand: its log starts again here."""
        if self.feed is None and name in self.logs:
            self.logs[name] = ActorLog(
                factory, [Resume(self.clock.now(), self.kernel.points, None)]
            )

    def rebuild(self, name: str, log: ActorLog) -> Generator[Any, Any, None]:
        """A new generator of ``log``'s factory, fed ``log``: it stands where the actor stood
        when the log was this long."""
        actor = log.factory()
        self.replay(name, actor, log.entries)
        self.rebuilt += 1
        return actor

    def replay(self, name: str, actor: Generator[Any, Any, Any], entries: list[Any]) -> None:
        """Feed ``entries`` to ``actor`` (new, not started) as actor ``name``: it ends at the
        yield after the last of them."""
        kernel, clock = self.kernel, self.clock
        outer = (self.feed, kernel.running, clock.now(), kernel.points)
        feed = self.feed = _Feed(name, entries)
        kernel.running = name
        with self._muted():
            try:
                while (resume := feed.resume()) is not None:
                    clock.rewind(resume.t)
                    kernel.points = resume.points
                    self.resumed += 1
                    try:
                        actor.send(resume.value)
                    except StopIteration:
                        raise RestoreDiverged(f"{name}, made again, ended early") from None
                if feed.at != len(entries):  # pragma: no cover - resume() raises first
                    raise RestoreDiverged(f"{name}, made again, left part of its log")
            finally:
                self.feed, kernel.running = outer[0], outer[1]
                clock.rewind(outer[2])
                kernel.points = outer[3]

    @contextlib.contextmanager
    def _muted(self) -> Iterator[None]:
        kernel = self.kernel
        was = kernel.muted
        kernel.muted = True
        for mute in self.mutes:
            mute(True)
        try:
            yield
        finally:
            kernel.muted = was
            if not was:
                for mute in self.mutes:
                    mute(False)

    def discard(self, actor: Generator[Any, Any, Any]) -> None:
        """Close a generator no longer wanted (a restore replaced it) with everything muted:
        what its ``finally`` blocks do is not part of any run."""
        feed, self.feed = self.feed, _Feed("a discarded actor", [])
        try:
            with self._muted(), contextlib.suppress(Exception, RestoreDiverged):
                actor.close()
        finally:
            self.feed = feed

    def snapshot(self) -> dict[str, tuple[ActorLog, int]]:
        """Each actor's log, and how long it is now."""
        return {name: (log, len(log.entries)) for name, log in self.logs.items()}
