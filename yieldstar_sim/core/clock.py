"""Virtual time. Nothing in yieldstar_sim reads the wall clock.

>>> clock = ManualClock()
>>> clock.advance(2.5)
>>> clock.now()
2.5
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Where a runtime reads the time: virtual seconds since the start of a run."""

    def now(self) -> float:
        """The current virtual time in seconds."""
        ...


class ManualClock:
    """A virtual clock that moves only when told to; a new one stands at ``start``."""

    __slots__ = ("_now",)

    def __init__(self, start: float = 0.0) -> None:
        self._now = _finite(start)

    def now(self) -> float:
        """The current virtual time in seconds."""
        return self._now

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` (never backwards)."""
        seconds = _finite(seconds)
        if seconds < 0:
            raise ValueError(f"time cannot move backwards (advance by {seconds})")
        self._now += seconds

    def set(self, when: float) -> None:
        """Move time forward to ``when``."""
        when = _finite(when)
        if when < self._now:
            raise ValueError(f"time cannot move backwards (from {self._now} to {when})")
        self._now = when

    def rewind(self, when: float) -> None:
        """Put time at ``when``, earlier or later: for a simulation that restores a state it
        saved (or makes an actor again from what it was told then), never for a run itself.

        >>> clock = ManualClock(5.0)
        >>> clock.rewind(2.0)
        >>> clock.now()
        2.0
        """
        self._now = _finite(when)

    def __repr__(self) -> str:
        return f"ManualClock(now={self._now})"


def _finite(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"virtual time must be a finite number of seconds, not {value!r}")
    return float(value)
