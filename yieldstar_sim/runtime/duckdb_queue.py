"""The queue as a DuckDB runtime's own writes left it: when each live execution becomes claimable.

An idle worker's claim and the simulator's ``next_wake_at`` were a third of the statements of a
search on DuckDB, and most of them only learned that nothing is claimable yet. A runtime that is
its database's one writer (a private in-memory database, one thread, no connection handed out
for queries of your own) starts from an empty table and sees every write, so it can follow the
three columns that decide when a row becomes claimable (``due_at``, the lease's expiry, and
``waiting_on``, which says whom a terminal acknowledgement wakes) as each of its writes sets
them, the way its statement does. ``DuckDBRuntime`` then answers a claim that would find
nothing, and ``next_wake_at``, from here without a statement; every claim that finds something
still reads and takes its row with SQL, and checks that the row it read becomes claimable when
this model says the queue does (any difference and the model is dropped).

The writes of a transaction (a start's or a child's insert, an event's wake, a run that
continues as new with its instance's next run) count once it commits, and not at all when it
rolls back. The runtime drops the model for good (``None``) on anything it does not follow: a
write statement it has no rule for, a statement that failed, a second thread, a connection
handed out. ``QueueModel.wrote`` holds the rules of the plain statements of ``queries.sql``;
``DuckDBRuntime`` applies the others (the claim and the fenced writes it composes itself).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


@dataclass(slots=True)
class _Row:
    """When one live execution becomes claimable: at ``due`` while free, at ``expires`` while
    leased (``expires`` is ``None`` when free); ``waiting_on`` is the execution whose terminal
    acknowledgement wakes it."""

    due: float | None
    expires: float | None
    waiting_on: str | None

    @property
    def ready(self) -> float | None:
        return self.due if self.expires is None else self.expires


#: The statements whose rule reads the row count DuckDB answers.
_COUNTED = frozenset({"continue_insert", "continue_end", "waiters_wake", "event_wake"})


def _woken(due: float | None, now: float) -> float:
    # least(coalesce(due_at, $now), $now): what a cancellation and a terminal acknowledgement
    # set for the executions they wake.
    return now if due is None else min(due, now)


class QueueModel:
    """The live executions of a runtime's database and when each becomes claimable, as the
    runtime's own writes set them. Each method follows one kind of write that went through;
    the ones that can meet a row they do not know answer ``False`` (the model is then wrong,
    and the runtime drops it)."""

    __slots__ = ("_pending", "_ready", "_rows", "_waiters")

    def __init__(self) -> None:
        self._rows: dict[str, _Row] = {}
        # (ready time, ID) pushed at every write that moves a row's ready time; an entry its
        # row has moved on from is dropped when it reaches the top. Finding the earliest by a
        # pass over every live row was 7% of a 1,000-order run.
        self._ready: list[tuple[float, str]] = []
        # Target ID -> the IDs that waited on it; one that waits no more is passed over.
        self._waiters: dict[str, set[str]] = {}
        # What the open transaction wrote, applied in order when it commits.
        self._pending: list[Callable[[], bool]] = []

    def _moved(self, execution_id: str, row: _Row) -> None:
        """``row`` was written: its ready time and its wait go into the indexes as they are."""
        ready = row.ready
        if ready is not None:
            heapq.heappush(self._ready, (ready, execution_id))
        if row.waiting_on is not None:
            self._waiters.setdefault(row.waiting_on, set()).add(execution_id)

    def next_ready(self) -> float | None:
        """When the first execution becomes claimable (``None``: none will without a write)."""
        ready, rows = self._ready, self._rows
        while ready:
            time, execution_id = ready[0]
            row = rows.get(execution_id)
            if row is not None and row.ready == time:
                return time
            heapq.heappop(ready)  # its row moved on or finished since
        return None

    def ready(self, execution_id: str) -> float | None:
        """When ``execution_id`` becomes claimable (``None``: it is not live, or never)."""
        row = self._rows.get(execution_id)
        return None if row is None else row.ready

    def admitted(self, execution_id: str, now: float) -> None:
        """A trigger inserted a row, due now."""
        self._rows[execution_id] = row = _Row(now, None, None)
        self._moved(execution_id, row)

    def wrote(
        self, name: str, params: Mapping[str, Any] | None, rows: list[tuple[Any, ...]]
    ) -> bool:
        """Follow the plain statement ``name`` that went through with ``params`` and answered
        ``rows`` (DuckDB answers an UPDATE's or an INSERT's row count); False where it met a
        row the model does not know, or where the transaction it committed did."""
        count = int(rows[0][0]) if rows and name in _COUNTED else 0
        if name == "commit":
            pending, self._pending = self._pending, []
            return all(change() for change in pending)
        if name in ("rollback", "start_find", "child_find"):
            self._pending.clear()  # its writes never happened (the finds end the transaction)
        elif name == "trigger" and rows:
            assert params is not None
            self._admitted(str(rows[0][0]), float(params["now"]))
        elif name in ("start_insert", "child_insert") and rows:
            assert params is not None
            self._pending.append(partial(self._admitted, str(rows[0][0]), float(params["now"])))
        elif name == "continue_insert" and count:
            assert params is not None
            self._pending.append(
                partial(self._admitted, str(params["new_id"]), float(params["now"]))
            )
        elif name == "continue_end" and count:
            assert params is not None
            self._pending.append(partial(self._ended, str(params["execution_id"])))
        elif name in ("waiters_wake", "event_wake"):
            assert params is not None
            wake = self._waiters_woken if name == "waiters_wake" else self._woken_now
            self._pending.append(
                partial(wake, str(params["execution_id"]), count, float(params["now"]))
            )
        return True

    def _admitted(self, execution_id: str, now: float) -> bool:
        """An insert (a trigger's, or a committed start's, child's or next run's) put a row in
        the queue, due now."""
        self._rows[execution_id] = row = _Row(now, None, None)
        self._moved(execution_id, row)
        return True

    def _set(
        self, execution_id: str, due: float | None, expires: float | None, waiting_on: str | None
    ) -> bool:
        """A write leased or freed the row: it sets all that decides when the row is ready."""
        row = self._rows.get(execution_id)
        if row is None:
            return False
        row.due, row.expires, row.waiting_on = due, expires, waiting_on
        self._moved(execution_id, row)
        return True

    def claimed(self, execution_id: str, expires: float) -> bool:
        """``claim_take`` leased the row until ``expires`` and cleared its wake and its wait."""
        return self._set(execution_id, None, expires, None)

    def renewed(self, execution_id: str, expires: float) -> bool:
        """``renew`` moved the lease's expiry."""
        row = self._rows.get(execution_id)
        if row is None or row.expires is None:
            return False
        row.expires = expires
        self._moved(execution_id, row)
        return True

    def released(self, execution_id: str, due: float) -> bool:
        """``release`` gave the lease up: the row is free, due at ``due``, and still waits on
        what it waited on."""
        row = self._rows.get(execution_id)
        return row is not None and self._set(execution_id, due, None, row.waiting_on)

    def waits(self, execution_id: str, target: str) -> bool:
        """``wait_for``: a terminal acknowledgement of ``target`` will wake the row."""
        row = self._rows.get(execution_id)
        if row is None:
            return False
        row.waiting_on = target
        self._moved(execution_id, row)
        return True

    def suspended(self, execution_id: str, due: float | None, waiting_on: str | None) -> bool:
        """A non-terminal acknowledgement freed the row (its record says its wake and wait)."""
        return self._set(execution_id, due, None, waiting_on)

    def finished(self, execution_id: str, woken: int, now: float) -> bool:
        """A terminal acknowledgement: the row leaves the queue, and the live rows waiting on
        it (the statement counted ``woken`` of them) are due now at the latest."""
        return self._ended(execution_id) and self._waiters_woken(execution_id, woken, now)

    def _ended(self, execution_id: str) -> bool:
        """The row reached a terminal status: it leaves the queue."""
        return self._rows.pop(execution_id, None) is not None

    def _waiters_woken(self, target: str, woken: int, now: float) -> bool:
        """The live rows waiting on ``target`` (a statement counted ``woken`` of them) are due
        now at the latest."""
        waiting = {
            waiter_id: row
            for waiter_id in self._waiters.pop(target, ())
            if (row := self._rows.get(waiter_id)) is not None and row.waiting_on == target
        }
        for waiter_id, row in waiting.items():
            row.due = _woken(row.due, now)
            self._moved(waiter_id, row)
        return len(waiting) == woken

    def _woken_now(self, execution_id: str, woken: int, now: float) -> bool:
        """An event for ``execution_id`` made it due now at the latest, leased or not (the
        statement counted ``woken`` rows: none where the run is no longer live)."""
        row = self._rows.get(execution_id)
        if row is None:
            return woken == 0
        row.due = _woken(row.due, now)
        self._moved(execution_id, row)
        return woken == 1

    def cancelled(self, execution_ids: list[str], now: float) -> bool:
        """A cancellation request reached these live rows: each is due now at the latest."""
        for execution_id in execution_ids:
            row = self._rows.get(execution_id)
            if row is None:
                return False
            row.due = _woken(row.due, now)
            self._moved(execution_id, row)
        return True
