"""Saving a run's state at a choice point and putting it back: the one place that knows how.

A run's state is data (``state.RunState``: the clock, the runtime's records, the trace, the
ledger, the store, each worker's beliefs; the kernel's queue) and, besides, the actors'
generators, which cannot be copied. What a generator holds is a function of what it was told:
the values the kernel resumed it with and the answers it asked of the shared state
(``RunState.ask``). The ``Journal`` keeps that per actor, from the actor's last ``reset`` (a
worker back at its claim, or past a quiet step), and makes the generator again by feeding it
its log: every answer is handed back without being computed again, and everything it tells
the shared state (``RunState.tell``) is dropped, since the restored state holds it already.

``save`` takes the data (``RunState.save_data``), the kernel's snapshot, the runtime's
snapshot and the length of each actor's log; ``restore`` puts them back into the same objects
and replaces each actor that moved since with one made again from its log when it next moves.
A runtime that cannot snapshot itself (``Snapshots``: DuckDB, PostgreSQL, an adapter that does
not say it can) is never saved: the caller replays the path instead (``execution.py``).

``ship`` makes a saved state bytes that ``land`` puts into another run of the same scenario, in
this process or another: the data held whole, and each actor's log with its factory, pickled.
A factory is a function of data and of the run's ``RunState``; the state is left out by
reference, and the receiving run binds its own (docs/decisions.md, "A saved state that
travels").
"""

from __future__ import annotations

import contextlib
import io
import pickle
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from yieldstar_sim.core.frozen import maker

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator

    from yieldstar_sim.core.clock import ManualClock
    from yieldstar_sim.simulation.kernel import Kernel, KernelState

T = TypeVar("T")


@runtime_checkable
class Snapshots(Protocol):
    """A runtime that can save its records and put them back (the memory runtime can). An
    adapter that keeps state of its own must save that too, or not say it can: a restored run
    is checked against a replay of the same path, and one that came back different stops the
    search (``execution.RestoreMismatch``)."""

    def snapshot(self) -> object:
        """Everything the runtime holds, as a value ``restore`` takes back."""
        ...

    def restore(self, snapshot: object) -> None:
        """Put the runtime back as ``snapshot`` says."""
        ...


def can_snapshot(runtime: object) -> bool:
    """Whether ``runtime`` says it can save and restore its records."""
    return isinstance(runtime, Snapshots)


@dataclass(frozen=True, slots=True)
class Resume:
    """The kernel resumed the actor at time ``t`` (its point counter at ``points``), sending
    ``value``: the move taken at its choice point, or None."""

    t: float
    points: int
    value: Any


@dataclass(frozen=True, slots=True)
class Answer:
    """What one ``ask`` returned."""

    value: Any


@dataclass(frozen=True, slots=True)
class Raised:
    """What one ``ask`` raised."""

    error: BaseException


#: Every resumption of every actor of a saved run is logged, and most asks are (``core.frozen``).
new_resume = Resume if TYPE_CHECKING else maker(Resume)  # calls type-checked as Resume(...)
_new_answer = Answer if TYPE_CHECKING else maker(Answer)


class ActorLog:
    """One actor's factory and what it was told since it was made (or last ``reset``)."""

    __slots__ = ("entries", "factory")

    def __init__(self, factory: Callable[[], Generator[Any, Any, None]], entries: list[Any]):
        self.factory = factory
        self.entries = entries


class RestoreDiverged(Exception):
    """An actor made again from its log did not do what it did: it asked for more, or other,
    than it was told. Workflow or step code that reads something outside the simulation
    (a wall clock, ``uuid4()``, a global) is the usual cause."""


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


class Journal:
    """Every actor's factory and log, kept as it is resumed and as it asks the shared state,
    and the actors made again from them. See the module's docstring."""

    def __init__(self, kernel: Kernel, clock: ManualClock) -> None:
        self.kernel, self.clock = kernel, clock
        self.logs: dict[str, ActorLog] = {}
        self.feeding: _Feed | None = None
        """The log being fed to an actor made again (None: the run is live)."""
        self.recording = True
        """False while a run goes on that will not be saved (``unrecorded``): the actors that
        move then are only noted (``moved``), and made again from their saved logs when the
        run is restored."""
        self.moved: set[str] = set()
        self.resumed = 0
        """Resumptions fed to actors made again: what restoring cost, in kernel steps."""
        self.rebuilt = 0
        """Actors made again."""
        self._depth = 0

    # ------------------------------------------------------------ what the actors call

    def ask(self, compute: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``compute(...)``, logged for the running actor; while it is made again, what it
        returned (or raised) then, without computing it. Asks inside an ask (the world calls
        of a step body whose result is one answer) are not logged apart."""
        feed = self.feeding
        if feed is not None:
            value: T = feed.answer()
            return value
        if self._depth or not self.recording:
            return compute(*args, **kwargs)
        self._depth = 1
        try:
            value = compute(*args, **kwargs)
        except BaseException as error:
            self._depth = 0
            self._log(Raised(error))
            raise
        self._depth = 0
        self._log(_new_answer(value))
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
        actor's arguments)."""
        if self.recording:
            self.logs[name] = ActorLog(factory, [])
            actor = self._recorded(name, actor)
        else:
            self.moved.add(name)
        self.kernel.spawn(name, actor, at=at)

    def reset(self, name: str, factory: Callable[[], Generator[Any, Any, None]]) -> None:
        """Say that the running actor ``name`` stands where a new ``factory()``, started now,
        would stand: its log starts again here."""
        if self.recording and self.feeding is None and name in self.logs:
            self.logs[name] = ActorLog(
                factory, [Resume(self.clock.now(), self.kernel.points, None)]
            )

    # ------------------------------------------------------------ recording and feeding

    def _recorded(
        self, name: str, actor: Generator[Any, Any, None] | None, log: ActorLog | None = None
    ) -> Generator[Any, Any, None]:
        """``actor`` as the kernel drives it, each resumption logged. With no ``actor``, one
        restored to ``log``: made again from it when the kernel first resumes it (most
        restored runs are cut before any actor but the one that moves has moved); such a
        generator is primed (``next``) before it is handed to the kernel. One frame either
        way: every resumption of every actor passes here.

        Unrecorded, an actor that moves is noted as moved and handed to the kernel to drive
        itself from then on: its log no longer says where it stands, so the restore that
        ends an unrecorded run makes it again whatever it logs, and the frame would only
        cost (most resumptions of a search are of runs it never saves)."""
        value: Any = None
        if actor is None:
            assert log is not None
            value = yield  # primed: waits here until the kernel resumes it
            actor = log.factory()
            self.feed(name, actor, log.entries)
            self.rebuilt += 1
        send = actor.send
        handed = False
        try:
            while True:
                if self.recording:
                    entries = self.logs.get(name)
                    if entries is not None:
                        entries.entries.append(
                            new_resume(self.clock.now(), self.kernel.points, value)
                        )
                else:
                    self.moved.add(name)
                    self.kernel.replace(name, actor)
                    handed = True
                try:
                    request = send(value)
                except StopIteration:
                    return
                if handed:
                    yield request
                    return  # never resumed: the kernel drives ``actor`` itself now
                value = yield request
        finally:
            if not handed:
                actor.close()

    def feed(self, name: str, actor: Generator[Any, Any, Any], entries: list[Any]) -> None:
        """Feed ``entries`` to ``actor`` (new, not started) as actor ``name``: it ends at the
        yield after the last of them."""
        kernel, clock = self.kernel, self.clock
        outer = (self.feeding, kernel.running, clock.now(), kernel.points)
        feed = self.feeding = _Feed(name, entries)
        kernel.running = name
        try:
            while (resume := feed.resume()) is not None:
                clock.rewind(resume.t)
                kernel.points = resume.points
                self.resumed += 1
                try:
                    actor.send(resume.value)
                except StopIteration:
                    raise RestoreDiverged(f"{name}, made again, ended early") from None
        finally:
            self.feeding, kernel.running = outer[0], outer[1]
            clock.rewind(outer[2])
            kernel.points = outer[3]

    def discard(self, actor: Generator[Any, Any, Any]) -> None:
        """Close a generator no longer wanted (a restore replaced it): whatever its
        ``finally`` blocks would tell the shared state is dropped."""
        feed, self.feeding = self.feeding, _Feed("a discarded actor", [])
        try:
            with contextlib.suppress(Exception, RestoreDiverged):
                actor.close()
        finally:
            self.feeding = feed

    @contextlib.contextmanager
    def unrecorded(self) -> Iterator[None]:
        """Go on without recording (a run that will not be saved, only restored from an
        earlier save): recording costs a sixth of a run."""
        self.recording = False
        try:
            yield
        finally:
            self.recording = True


class Saveable(Protocol):
    """What ``save`` and ``restore`` take of a run's state (``state.RunState`` is one): its
    journal, kernel, runtime and clock, and its data (``save_data``/``restore_data``)."""

    journal: Journal | None
    kernel: Kernel
    runtime: Any
    clock: ManualClock

    def save_data(self) -> object:
        """The state's data as it is now."""
        ...

    def restore_data(self, data: Any) -> None:
        """Put the state's data back as ``save_data`` took it, or as ``ship_data`` holds it."""
        ...

    def ship_data(self, data: Any) -> object:
        """``data`` (``save_data``'s, on the run's path to now) held whole, for another run."""
        ...


@dataclass(frozen=True, slots=True)
class Saved:
    """A run's state at one choice point (``save``), to ``restore``."""

    kernel: KernelState
    runtime: object
    data: object
    logs: dict[str, tuple[ActorLog, int]]


def save(state: Saveable) -> Saved:
    """Save ``state`` as it is now (between two choice points). Its runtime must snapshot
    itself (``can_snapshot``) and its journal must be recording."""
    journal = state.journal
    if journal is None or not journal.recording:
        raise RuntimeError("only a run whose journal records can be saved")
    return Saved(
        kernel=state.kernel.snapshot(),
        runtime=state.runtime.snapshot(),
        data=state.save_data(),
        logs={name: (log, len(log.entries)) for name, log in journal.logs.items()},
    )


def restore(state: Saveable, saved: Saved) -> int:
    """Put ``state`` back as ``saved`` says; returns how many actors moved since, each made
    again from its log when it next moves."""
    journal = state.journal
    assert journal is not None, "a saved run has a journal"
    state.clock.rewind(saved.kernel.now)
    state.runtime.restore(saved.runtime)
    state.restore_data(saved.data)
    kernel = state.kernel
    running = kernel.generators()
    moved = journal.moved
    actors: dict[str, Any] = {}
    made = 0
    for name in sorted(saved.kernel.actors):
        log, length = saved.logs[name]
        actor = running.get(name)
        if (
            actor is not None
            and name not in moved
            and journal.logs.get(name) is log
            and len(log.entries) == length
        ):
            actors[name] = actor  # it has not moved since: it stands where it stood
            continue
        again = ActorLog(log.factory, log.entries[:length])
        journal.logs[name] = again
        lazy = journal._recorded(name, None, again)
        next(lazy)
        actors[name] = lazy
        made += 1
    for name, actor in running.items():
        if actors.get(name) is not actor:
            journal.discard(actor)
    for name in [name for name in journal.logs if name not in saved.kernel.actors]:
        del journal.logs[name]
    moved.clear()
    kernel.restore(saved.kernel, actors)
    return made


#: What a shipped state holds in place of the run's state: the receiving run binds its own.
_THE_RUN = "the run's state"


class _Shipper(pickle.Pickler):
    """Pickles a saved state with the run's state left out by reference (``ship``)."""

    def __init__(self, file: io.BytesIO, state: object) -> None:
        super().__init__(file, protocol=5)
        self.state = state

    def persistent_id(self, obj: object) -> str | None:
        """The run's state by reference; anything else pickled as it is."""
        return _THE_RUN if obj is self.state else None


class _Lander(pickle.Unpickler):
    """Unpickles a shipped state with the receiving run's state bound in (``land``)."""

    def __init__(self, file: io.BytesIO, state: object) -> None:
        super().__init__(file)
        self.state = state

    def persistent_load(self, pid: object) -> object:
        """The receiving run's state, where the shipped one referred to its own."""
        if pid != _THE_RUN:
            raise pickle.UnpicklingError(f"a shipped state refers to {pid!r}, which no run holds")
        return self.state


def ship(state: Saveable, saved: Saved) -> bytes:
    """``saved`` (saved on the path of ``state``'s run to where it stands now) as bytes that
    ``land`` puts into another run of the same scenario: its data held whole
    (``ship_data``), and the log of each actor it holds, cut to its saved length, with the
    factory that makes the actor again; compressed. A value that does not pickle raises
    (``pickle.PicklingError``, ``TypeError`` or ``AttributeError``)."""
    actors = saved.kernel.actors
    whole = Saved(
        kernel=saved.kernel,
        runtime=saved.runtime,
        data=state.ship_data(saved.data),
        logs={
            name: (ActorLog(log.factory, log.entries[:length]), length)
            for name, (log, length) in saved.logs.items()
            if name in actors
        },
    )
    buffer = io.BytesIO()
    _Shipper(buffer, state).dump(whole)
    # Compressed: the trace's words repeat (a third of the size, for a tenth of the time).
    return zlib.compress(buffer.getvalue(), 1)


def land(state: Saveable, shipped: bytes) -> Saved:
    """What ``ship`` shipped, its factories bound to ``state`` (a run of the same scenario):
    ``restore`` puts it back, every actor made again from its log, as often as asked.
    Unpickling runs code: land only what a worker you trust shipped."""
    saved = _Lander(io.BytesIO(zlib.decompress(shipped)), state).load()
    if type(saved) is not Saved:
        raise pickle.UnpicklingError(f"not a shipped state: {type(saved).__name__}")
    return saved
