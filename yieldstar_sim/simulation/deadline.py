"""A wall-clock limit for code we do not control: workflow code, step bodies, invariants and
scenario files that may spin forever, or wait forever (``time.sleep(3600)``, a socket read).

Virtual time bounds a run's *simulated* work (``max_time``, ``max_points``), but a ``while
True:`` in pure Python never reaches a choice point, so only the wall clock can stop it. A
watchdog thread (one per process, shared by every deadline: starting a thread per run cost a
third of a short run) interrupts the thread that runs user code, and only while that code is
running (never inside the runtime, mid-transaction); outside user code the simulator polls
``expired`` between choice points and stops there.

How it interrupts depends on the thread (docs/decisions.md says why). On the main thread, where
Python runs signal handlers, it sends that thread ``SIGURG`` (``signal.pthread_kill``): a
blocking call returns early (``EINTR``) to run the handler, which raises ``RunTimedOut`` if the
deadline's user code is still running there, and does nothing otherwise. ``SIGURG`` because its
default action is to ignore it and nothing else in a Python process uses it, so a handler left
installed changes nothing, and ``SIGALRM`` (``pytest-timeout``'s, your own alarm) stays yours.
Off the main thread, the watchdog raises ``RunTimedOut`` asynchronously
(``PyThreadState_SetAsyncExc``), which cuts code that spins but not a call that blocks in C.
A run still going ``GIVE_UP_SECONDS`` past its limit (its code catches every interrupt, or
blocks where no signal reaches, in user code or in what runs between) is handed to
``last_resort``, if the process set one (the command line ends itself, incomplete).

>>> deadline = Deadline(None)
>>> with deadline.user_code("a body"):
...     pass
>>> deadline.expired
False
"""

from __future__ import annotations

import contextlib
import ctypes
import heapq
import itertools
import os
import signal
import sys
import threading
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import FrameType, TracebackType

DEFAULT_TIMEOUT = 60.0
"""Seconds of wall-clock time one simulation run may take before it ends as incomplete."""

AGAIN_SECONDS = 0.05
"""Seconds after which a deadline that fired in user code raises there again, should the code
still be running (the first exception lost on its way)."""

GIVE_UP_SECONDS = 5.0
"""Seconds past its limit after which a run still armed (its code not stopped by any interrupt)
is handed to ``last_resort``."""

#: The signal that interrupts the main thread (None where there is none: Windows).
_SIGNAL: int | None = (
    signal.SIGURG if hasattr(signal, "SIGURG") and hasattr(signal, "pthread_kill") else None
)

last_resort: list[Callable[[str], object]] = []
"""What to do with a run still going ``GIVE_UP_SECONDS`` past its limit: called, from the
watchdog thread, with what runs (the user code, or the run itself when it is outside it).
Empty: its code is interrupted again, for ever (a library cannot end its caller's process);
the command line appends one that ends the command, incomplete."""


class RunTimedOut(BaseException):
    """The run's wall-clock limit passed while user code was running.

    A ``BaseException``, so that user code's ``except Exception`` does not swallow it."""


def _raise_in(thread_id: int, error: type[BaseException] | None) -> None:
    """Schedule ``error`` in the thread ``thread_id`` (None clears a scheduled one)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(error) if error is not None else None
    )


class Deadline:
    """A wall-clock limit of ``seconds`` (None: none) for one run, started on entering it.

    ``with deadline:`` arms it for the current thread; ``with deadline.user_code(where):``
    marks where user code runs, the only place it interrupts. ``where`` names what was running
    when it fired.
    """

    def __init__(self, seconds: float | None) -> None:
        if seconds is not None and (
            isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0
        ):
            raise ValueError(f"a timeout is a positive number of seconds, not {seconds!r}")
        self.seconds = seconds
        self.expired = False
        self.where: str | None = None
        """What user code was running when the limit passed (None: none was)."""
        self._lock = threading.Lock()
        self._inside: str | None = None
        self._pending = False
        self._thread_id = 0
        self._signalled = False
        """Whether the deadline interrupts by ``SIGURG`` (armed on the main thread)."""
        self._armed: _Armed | None = None
        self._fired = 0.0
        """When the limit passed (``time.monotonic``; 0: it has not; -1: the run was handed to
        ``last_resort``)."""
        self._started = 0.0

    def __enter__(self) -> Deadline:
        self._thread_id = threading.get_ident()
        self._started = time.monotonic()
        self._fired = 0.0
        if self.seconds is not None:
            if not isinstance(sys.unraisablehook, _LostTimeouts):
                sys.unraisablehook = _LostTimeouts(sys.unraisablehook)
            self._signalled = _on_main_thread() and _listening()
            if self._signalled:
                _MAIN.append(self)
            self._armed = _WATCHDOG.arm(self, self.seconds)
        return self

    def __exit__(self, *_: object) -> None:
        # Whatever ended the run (an error, or none), the watchdog lets go of it the same way,
        # and nothing it armed (a raise again, a last resort) outlives it.
        with self._lock:
            armed, self._armed = self._armed, None
            self._inside = None
            self._clear_pending()
        if armed is not None:
            _WATCHDOG.cancel(armed)
        if self._signalled:
            self._signalled = False
            with contextlib.suppress(ValueError):
                _MAIN.remove(self)

    @property
    def elapsed(self) -> float:
        """Wall-clock seconds since the deadline was armed."""
        return time.monotonic() - self._started

    def _fire(self) -> None:
        stuck: str | None = None
        with self._lock:
            if self._armed is None:  # let go of (or paused) as it came due: not for this run
                return
            self.expired = True
            now = time.monotonic()
            self._fired = self._fired or now
            if self._fired > 0 and now - self._fired >= GIVE_UP_SECONDS:
                # Still armed long past its limit: code that catches every interrupt, or a
                # wait no interrupt reaches (in user code, or in what runs between: a user
                # __str__ the trace's narration calls). Handed over once.
                stuck = self._inside or "the run (outside the code its limit interrupts)"
                self._fired = -1.0
            raised = self._inside is not None
            if raised:
                self.where = self._inside
                self._pending = True
                if not (self._signalled and _interrupt(self._thread_id)):
                    _raise_in(self._thread_id, RunTimedOut)  # else the handler raises
        if stuck is not None:
            for resort in last_resort:
                resort(stuck)
        # While the code runs, an interrupt can be lost on its way (user code that catches it
        # and goes on, C code that clears the error it finds): raise it again soon. Outside it,
        # the run stops at its next choice point: look again only when it would be given up.
        again = _WATCHDOG.arm(self, AGAIN_SECONDS if raised else GIVE_UP_SECONDS)
        with self._lock:
            armed = self._armed is not None
            if armed:  # still armed: __exit__ cancels this one
                self._armed = again
        if not armed:
            _WATCHDOG.cancel(again)

    def _clear_pending(self) -> None:
        if self._pending:
            if not self._signalled:
                _raise_in(self._thread_id, None)
            self._pending = False

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Stop the clock while the run waits on something that is not its own work (a
        forked child finishing its schedule): the run keeps what was left of its seconds."""
        if self._armed is None or self.seconds is None:
            yield
            return
        _WATCHDOG.cancel(self._armed)
        self._armed = None
        began = time.monotonic()
        try:
            yield
        finally:
            self._started += time.monotonic() - began
            self._armed = _WATCHDOG.arm(self, max(self.seconds - self.elapsed, 0.0))

    def after_fork(self) -> None:
        """In a child forked while this deadline was armed (its watchdog thread did not come
        along, and a lock the parent's watchdog held would stay held): arm it again, here, for
        what is left of its seconds."""
        self._lock = threading.Lock()
        self._thread_id = threading.get_ident()
        self._pending = False
        if self._armed is not None and self.seconds is not None:
            self._armed = _WATCHDOG.arm(self, max(self.seconds - self.elapsed, 0.0))

    def user_code(self, where: str) -> AbstractContextManager[None]:
        """Run user code that the deadline may interrupt; ``where`` says what it is."""
        if self.seconds is None:
            # No limit, nothing can fire: a run enters user code a hundred times, and the
            # guard below costs more than the code it guards in a short run.
            return UNGUARDED
        return _UserCode(self, where)


_MAIN: list[Deadline] = []
"""The deadlines armed on the main thread, innermost last: the ones ``SIGURG`` is for."""

_listening_since: list[int] = []
"""The process that installed the ``SIGURG`` handler, once (a forked child inherits it)."""


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _listening() -> bool:
    """Install the ``SIGURG`` handler, once per process (True: it is ours now).

    Once, and left installed: installing one costs more than a short run's user code, and with
    no deadline armed the handler does what the signal's default does, nothing."""
    if _SIGNAL is None:
        return False
    if _listening_since:
        return True
    try:
        previous = signal.signal(_SIGNAL, _on_signal)
    except (ValueError, OSError):  # not the main interpreter's main thread after all
        return False
    if callable(previous):
        _PREVIOUS.append(previous)
    _listening_since.append(os.getpid())
    return True


_PREVIOUS: list[Callable[[int, FrameType | None], object]] = []
"""A ``SIGURG`` handler someone installed before ours: called for signals not ours."""


def _interrupt(thread_id: int) -> bool:
    """Send ``SIGURG`` to the main thread ``thread_id`` (False when it cannot be sent, or the
    handler there is no longer ours: then the caller raises asynchronously)."""
    if _SIGNAL is None or signal.getsignal(_SIGNAL) is not _on_signal:
        return False
    try:
        signal.pthread_kill(thread_id, _SIGNAL)
    except (OSError, ValueError):
        return False
    return True


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """``SIGURG`` in the main thread: raise ``RunTimedOut`` where a deadline's user code still
    runs, unless the interrupted frame is the guard's own bookkeeping (it raises itself, at its
    end, for a limit that passed as the code returned)."""
    for deadline in reversed(_MAIN):
        if deadline._pending and deadline._inside is not None:
            if frame is not None and frame.f_code in _GUARD_CODE:
                return
            raise RunTimedOut
    for previous in _PREVIOUS:
        previous(signum, frame)


class _LostTimeouts:
    """``sys.unraisablehook`` that drops a `RunTimedOut` Python could not raise, and hands
    anything else to the hook it replaced.

    The asynchronous exception lands in whatever Python code the thread runs at that moment:
    a ``__del__``, or a ``gc`` callback (Hypothesis registers one) that a collection in the
    spinning body calls. Python reports it there as unraisable, which pytest turns into a
    failure, and the body goes on; ``_fire`` raises again ``AGAIN_SECONDS`` later, so the lost
    one is no news for anyone. Installed once, by the first deadline with a limit; a hook
    installed later (pytest's, per session) is wrapped again by the next such deadline.
    """

    __slots__ = ("then",)

    def __init__(self, then: Callable[[sys.UnraisableHookArgs], object]) -> None:
        self.then = then

    def __call__(self, unraisable: sys.UnraisableHookArgs) -> None:
        kind = unraisable.exc_type
        if isinstance(kind, type) and issubclass(kind, RunTimedOut):
            return
        self.then(unraisable)


UNGUARDED: AbstractContextManager[None] = contextlib.nullcontext()
"""What ``user_code`` returns with no limit: nothing to guard (callers with no limit that
would rather not build the text naming the code use it directly)."""


class _UserCode:
    """``Deadline.user_code``'s guard: a class, not a generator-based context manager, as it
    is entered around every step of a workflow's code."""

    __slots__ = ("deadline", "where")

    def __init__(self, deadline: Deadline, where: str) -> None:
        self.deadline = deadline
        self.where = where

    def __enter__(self) -> None:
        deadline = self.deadline
        # Under the lock ``_fire`` takes: it either ran before (expired: raise here) or runs
        # after (``_inside`` is set: it raises in the code). Checked outside, a limit that
        # passed in between would let the code run with nothing left to interrupt it.
        with deadline._lock:
            if deadline.expired:
                deadline.where = deadline.where or self.where
                raise RunTimedOut
            deadline._inside = self.where

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        deadline = self.deadline
        fired = False
        with deadline._lock:
            if kind is not None and issubclass(kind, RunTimedOut):
                deadline._pending = False  # it fired inside the code: it propagates as is
            deadline._inside = None
            if deadline._pending:  # fired as the code returned: raise it here, not later
                deadline._clear_pending()
                fired = True
        if fired and kind is None:
            raise RunTimedOut


@dataclass(order=True, slots=True)
class _Armed:
    """A deadline waiting for the watchdog: due at ``due`` (``time.monotonic``); ``deadline``
    is None once cancelled."""

    due: float
    seq: int
    deadline: Deadline | None = field(compare=False)


#: Cancelled deadlines swept from the heap once they are more than this and half of it.
_SWEEP_AT = 256


class _Watchdog:
    """One daemon thread that fires each armed deadline when it is due.

    A ``threading.Timer`` per run started and joined a thread for every simulation, a third
    of a short memory run. Cancelled deadlines stay in the heap until they reach its top, or
    until they are half of it (``cancel`` sweeps them then).
    """

    def __init__(self) -> None:
        self._reset()
        # A forked explorer worker has no watchdog thread: it starts its own when it arms one.
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._condition = threading.Condition(threading.Lock())
        self._heap: list[_Armed] = []
        self._thread: threading.Thread | None = None
        self._seq = itertools.count()
        self._cancelled = 0
        """Deadlines cancelled since the last sweep (some may have left the heap already)."""

    def arm(self, deadline: Deadline, seconds: float) -> _Armed:
        """Fire ``deadline`` in ``seconds`` unless cancelled first."""
        armed = _Armed(time.monotonic() + seconds, next(self._seq), deadline)
        with self._condition:
            heapq.heappush(self._heap, armed)
            if self._thread is None or not self._thread.is_alive():
                # None yet, or gone: a thread that died (an exception delivered to it, say)
                # would leave every later deadline unfired and a spinning body running forever.
                self._thread = threading.Thread(
                    target=self._run, name="yieldstar-deadline", daemon=True
                )
                self._thread.start()
            elif self._heap[0] is armed:
                self._condition.notify()  # due before what the thread waits for
        return armed

    def cancel(self, armed: _Armed) -> None:
        """Forget an armed deadline (it may be firing already: ``_fire`` takes its lock)."""
        with self._condition:
            armed.deadline = None
            self._cancelled += 1
            if self._cancelled > _SWEEP_AT and self._cancelled * 2 > len(self._heap):
                # The thread sleeps until the first deadline is due, its seconds away, while
                # an exhaustive search cancels thousands: without a sweep they stayed in the
                # heap (36 bytes a run, a million runs in a search).
                self._heap = [entry for entry in self._heap if entry.deadline is not None]
                heapq.heapify(self._heap)
                self._cancelled = 0

    def _run(self) -> None:
        condition = self._condition
        while True:
            due: list[Deadline] = []
            with condition:
                heap = self._heap
                now = time.monotonic()
                while heap and (heap[0].deadline is None or heap[0].due <= now):
                    deadline = heapq.heappop(heap).deadline
                    if deadline is not None:
                        due.append(deadline)
                if not due:
                    condition.wait(heap[0].due - now if heap else None)
            for deadline in due:
                try:
                    deadline._fire()
                except Exception:  # one deadline that cannot fire must not stop the others'
                    continue


_WATCHDOG = _Watchdog()

#: The guard's own code: a ``SIGURG`` that lands there is left to the guard.
_GUARD_CODE = frozenset({_UserCode.__enter__.__code__, _UserCode.__exit__.__code__})
