"""How the command stops on a signal: Ctrl-C (SIGINT) and SIGTERM alike, keeping what it found.

Both raise ``KeyboardInterrupt`` in the main thread, the stop the explorer already keeps its
findings through (the search ends, what it found is shrunk, saved and printed), and the command
exits 128 + the signal's number: 130 for Ctrl-C, 143 for SIGTERM. A signal is noted before it is
raised (``core.interrupts``), so a ``KeyboardInterrupt`` that user code raises itself is told
apart from one a signal caused, and an error a signal caused on its way out (DuckDB's
"Interrupted!", a worker pool that broke) ends the command as the signal would.

SIGTERM is what a supervisor sends before it kills, to the command alone: the worker processes of
``--jobs`` and the picture process never see it. So the command ends them itself, at once, and
again before it exits (``end_children``): nothing it started is left running. While the command
writes what it found (``deferred``), a signal waits until the files are whole.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
from typing import TYPE_CHECKING, NoReturn

from yieldstar_sim.core import interrupts

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType

#: Seconds a child process has to go after SIGTERM before it is killed.
CHILD_GRACE = 2.0

#: How many of each signal it takes to end the command at once, keeping nothing more: user code
#: may catch the ``KeyboardInterrupt`` the first ones raise (a second Ctrl-C already stops the
#: explorer's shrinking, so it is the third).
AT_ONCE: dict[int, int] = {signal.SIGINT: 3, signal.SIGTERM: 2}

_command: list[int] = []
"""The command's process (its children, forked, inherit the handler)."""
_received: dict[int, int] = {}
"""How many of each signal the command received."""
_deferring = [0]
"""How many ``deferred`` blocks the main thread is in."""
_held: list[int] = []
"""Signals that arrived in a ``deferred`` block, raised when it ends."""


def watch() -> None:
    """As a command: SIGINT and SIGTERM stop it as Ctrl-C does (``KeyboardInterrupt``), noted
    first; SIGTERM also ends the command's child processes at once. User code that outlives its
    wall-clock limit, catching every interrupt, ends the command (``give_up``)."""
    from yieldstar_sim.simulation import deadline

    _command[:] = [os.getpid()]
    interrupts.stop_signals_watched()
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    deadline.last_resort.append(give_up)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    interrupts.note_stop_signal(signum)
    if _command != [os.getpid()]:
        # A child (a worker, the picture process). SIGTERM is the command ending it: at once,
        # as by default. Ctrl-C (the terminal sends it to every process of the command) stops
        # a worker's task, which hands the KeyboardInterrupt back to the command; a worker
        # that waits for a task lets it pass (the command shuts it down), where a raise
        # printed a traceback of multiprocessing's.
        if signum == signal.SIGTERM:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        if not _waiting_for_a_task(frame):
            raise KeyboardInterrupt
        return
    _received[signum] = _received.get(signum, 0) + 1
    if signum == signal.SIGTERM:
        end_children(wait=False)
    if _received[signum] >= AT_ONCE.get(signum, 1):
        _end_now("interrupted", 128 + signum)
    if _deferring[0]:
        _held.append(signum)
        return
    raise KeyboardInterrupt


_POOL_WORKER = os.path.join("concurrent", "futures", "process.py")
_MULTIPROCESSING = f"{os.sep}multiprocessing{os.sep}"


def _waiting_for_a_task(frame: FrameType | None) -> bool:
    """Whether ``frame`` is a process pool's worker waiting for its next task: nothing but
    multiprocessing's own code between it and the worker's loop."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_process_worker" and code.co_filename.endswith(_POOL_WORKER):
            return True
        if _MULTIPROCESSING not in code.co_filename:
            return False
        frame = frame.f_back
    return False


def give_up(where: str) -> None:
    """The deadline's last resort (from its watchdog thread): ``where`` still runs well past the
    wall-clock limit, catching every interrupt or waiting where none reaches. The command ends,
    incomplete, as a run the limit cuts is; what it had not written yet is lost, said so."""
    from yieldstar_sim.simulation.deadline import GIVE_UP_SECONDS

    _end_now(
        f"incomplete: {where} still ran {GIVE_UP_SECONDS:g}s past the wall-clock limit "
        "(--timeout), no interrupt stopped it; the command stops here, its files unwritten",
        3,
    )


def _end_now(words: str, code: int) -> NoReturn:
    """End the command at once: its children, one line, ``code``."""
    end_children(wait=False)
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        print(f"yieldstar-sim: {words}", file=sys.stderr, flush=True)
    os._exit(code)


def exit_code() -> int:
    """The exit code of a command a signal stopped: 128 + the signal (130 for Ctrl-C, and for a
    ``KeyboardInterrupt`` no signal caused)."""
    return 128 + (interrupts.stop_requested() or signal.SIGINT)


def stopped() -> bool:
    """Whether a signal asked the command to stop."""
    return interrupts.stop_requested() is not None


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Write files and print whole: a signal that arrives meanwhile stops the command when the
    block ends, not in it."""
    _deferring[0] += 1
    try:
        yield
    finally:
        _deferring[0] -= 1
    if not _deferring[0] and _held:
        _held.clear()
        raise KeyboardInterrupt


def end_children(*, wait: bool = True) -> None:
    """Terminate every child process this one started (worker pools, the picture process, a
    local cluster's processes) that is still running; with ``wait``, kill any that has not gone
    ``CHILD_GRACE`` seconds later."""
    children = multiprocessing.active_children()
    for child in children:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            child.terminate()
    if not wait:
        return
    for child in children:
        with contextlib.suppress(OSError, ValueError, AttributeError, AssertionError):
            child.join(CHILD_GRACE)
            if child.is_alive():
                child.kill()
                child.join(CHILD_GRACE)


def done() -> None:
    """The command's work is over (its files written, its words printed): end any child still
    running, and let a signal that arrives while Python shuts down end it at once, quietly,
    with that signal's code (a traceback of the interpreter's exit handlers otherwise)."""
    end_children()
    _stop_resource_tracker()
    signal.signal(signal.SIGINT, _exit_now)
    signal.signal(signal.SIGTERM, _exit_now)


def leave(code: int) -> None:
    """End the command with ``code`` now if a thread user code started is still running (its
    files written, its words printed): Python waits for such a thread at exit, and a body that
    started one that sleeps kept the command from ever ending. Returns when none is left."""
    import threading

    main = threading.main_thread()
    if any(t is not main and t.is_alive() and not t.daemon for t in threading.enumerate()):
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _stop_resource_tracker() -> None:
    """Stop and reap multiprocessing's resource tracker, if the command started one (the
    shared memory of ``--jobs N``): left to end with the command, it lingered as a process
    nobody waited for."""
    from multiprocessing import resource_tracker

    tracker = getattr(resource_tracker, "_resource_tracker", None)
    stop = getattr(tracker, "_stop", None)
    if callable(stop):
        with contextlib.suppress(Exception):
            stop()


def _exit_now(signum: int, frame: FrameType | None) -> NoReturn:
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    os._exit(128 + signum)
