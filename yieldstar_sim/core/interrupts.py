"""What a ``BaseException`` that comes out of user code is: the code's own doing, to report as
its failure, or a stop the toolkit passes on (its own control flow, or the user's Ctrl-C).

User code (a step body, workflow code, an invariant, a scenario file's import) may raise
``GeneratorExit``, a ``KeyboardInterrupt`` of its own or a class of its own deriving from
``BaseException``: each is that code failing, never a reason for the simulator or the command
line to end with a traceback. The toolkit's own ways out of user code (a wall-clock limit, a draw
not decided yet, a simulated crash) are ``BaseException`` classes of this package, and pass.

A ``KeyboardInterrupt`` is the code's own only when the toolkit can tell it from Ctrl-C: when
the command line handles SIGINT and SIGTERM itself (``stop_signals_watched``) and neither has
arrived (``stop_requested``). Anywhere else (a notebook, your own program) it is taken for
Ctrl-C and stops the run, as Python's own would.

>>> raised_by_code(GeneratorExit()), raised_by_code(ValueError())
(True, True)
>>> raised_by_code(KeyboardInterrupt())  # nothing watches SIGINT here: it is Ctrl-C
False
"""

from __future__ import annotations

import signal

_watched = False
_requested: int | None = None


def stop_signals_watched() -> None:
    """Say that this process handles SIGINT and SIGTERM through ``note_stop_signal`` (the
    command line does): from now on a ``KeyboardInterrupt`` that no signal caused is user
    code's own."""
    global _watched  # noqa: PLW0603 - the process's one answer, set once by its entry point
    _watched = True


def note_stop_signal(signum: int) -> None:
    """Record that signal ``signum`` asked this process to stop (called by the handler, which
    then raises ``KeyboardInterrupt``)."""
    global _requested  # noqa: PLW0603 - the process's one answer
    if _requested is None:
        _requested = signum


def stop_requested() -> int | None:
    """The first signal that asked this process to stop, if one did."""
    return _requested


def raised_by_code(error: BaseException) -> bool:
    """Whether ``error``, raised out of user code, is the code's own doing (to report as its
    failure) rather than a stop to pass on: a class of this package's (its control flow), or a
    ``KeyboardInterrupt`` the toolkit cannot tell from Ctrl-C."""
    if isinstance(error, Exception):
        return True
    if _ours(type(error)):
        return False
    if isinstance(error, KeyboardInterrupt):
        return _watched and _requested is None
    return True


_MODULE = type.__dict__["__module__"]


def _ours(kind: type) -> bool:
    """Whether ``kind`` is defined by this package (read through ``type``'s own descriptor: a
    user metaclass may make ``__module__`` anything, a property that raises included)."""
    try:
        module = _MODULE.__get__(kind, type)
    except Exception:
        return False
    return isinstance(module, str) and module.startswith("yieldstar_sim.")


def stop_words() -> str:
    """What stopped this process, in words, for a report it writes: the signal noted (SIGTERM),
    else Ctrl-C (a ``KeyboardInterrupt``, in a notebook or a program of your own)."""
    if _requested is None or _requested == signal.SIGINT:
        return "Ctrl-C"
    try:
        return signal.Signals(_requested).name
    except ValueError:
        return f"signal {_requested}"
