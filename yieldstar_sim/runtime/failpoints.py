"""Named failure points at the commit boundaries of a runtime adapter.

Tests arm a point to make a runtime call fail exactly there, inside the adapter's real
transaction: ``before_commit`` points roll the transaction back, ``after_commit`` points lose
the response of a call whose writes committed.

>>> from yieldstar_sim import MemoryRuntime
>>> runtime = MemoryRuntime()
>>> runtime.failpoints.arm("start.after_commit")
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import TYPE_CHECKING

from yieldstar_sim.core.model import InjectedFailure

if TYPE_CHECKING:
    from collections.abc import Callable

#: Runtime calls that write, each with a point before and after its commit.
WRITE_OPERATIONS = (
    "trigger",
    "start",
    "start_child",
    "claim",
    "renew",
    "put_step",
    "record_wake",
    "wait_for",
    "acknowledge",
    "release",
    "prune",
    "cancel",
    "send_event",
    "wait_for_event",
    "complete_attempt",
)

FAILPOINT_NAMES = tuple(
    f"{operation}.{when}"
    for operation in WRITE_OPERATIONS
    for when in ("before_commit", "after_commit")
)


class FailPoints:
    """The armed failure points of one runtime adapter; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: dict[str, list[BaseException | Callable[[], None] | None]] = {}
        # A plain dict: a Counter's item stores and ``get`` skip the interpreter's fast paths
        # for dicts, and every runtime call passes two points.
        self._hits: dict[str, int] = {}

    def arm(
        self,
        name: str,
        *,
        error: BaseException | None = None,
        action: Callable[[], None] | None = None,
        times: int = 1,
    ) -> None:
        """Make the next ``times`` passes through ``name`` raise ``error`` or call ``action``.

        Without either an ``InjectedFailure`` naming the point is raised. An ``action`` runs at
        the point itself (inside the adapter's transaction for ``start.before_commit``), which
        lets a test interleave another call there.
        """
        if error is not None and action is not None:
            raise ValueError("arm a failure point with an error or an action, not both")
        if name not in FAILPOINT_NAMES:
            raise ValueError(
                f"unknown failure point {name!r}; the points are: {', '.join(FAILPOINT_NAMES)}"
            )
        if times < 1:
            raise ValueError(f"times must be at least 1, not {times}")
        with self._lock:
            self._armed.setdefault(name, []).extend([action or error] * times)

    def disarm(self, name: str | None = None) -> None:
        """Disarm one point, or every point."""
        with self._lock:
            if name is None:
                self._armed.clear()
            else:
                self._armed.pop(name, None)

    @property
    def armed(self) -> dict[str, int]:
        """How many more failures each armed point will raise."""
        with self._lock:
            return {name: len(errors) for name, errors in self._armed.items() if errors}

    @property
    def hits(self) -> Counter[str]:
        """How many times each point was reached, armed or not (a copy)."""
        with self._lock:
            return Counter(self._hits)

    def hit(self, name: str) -> None:
        """Pass through the point ``name``: raise if it is armed."""
        lock = self._lock
        lock.acquire()
        try:
            hits = self._hits
            hits[name] = hits.get(name, 0) + 1
            errors = self._armed.get(name) if self._armed else None
            if not errors:
                return
            armed = errors.pop(0)
        finally:
            lock.release()
        if armed is None:
            raise InjectedFailure(f"injected failure at {name}")
        if isinstance(armed, BaseException):
            raise armed
        armed()
