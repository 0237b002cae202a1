"""How the SQL adapters' writes meet a lost race, written once: one statement
(``SqlRetries._write``), an insert-or-find (``_sql_calls``) and an event call's transaction
(``_sql_events``) all run through ``SqlRetries._retried``.

A lost race is either a database error (``SqlPrimitives._RACE_ERRORS``: a conflict, a
serialization failure, a key committed first), after which the transaction it left is ended
and the adapter backs off, or something the call saw in the rows it read (``TryAgain``: the row
it looked for was gone, an event was taken meanwhile), after which it runs again at once, since
nothing in the database is contended any more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from yieldstar_sim.runtime._sql_primitives import Rows, SqlPrimitives

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

R = TypeVar("R")


class TryAgain(Exception):
    """A race the call saw in the rows it read: it has ended its transaction, and runs again
    at once."""


class SqlRetries(SqlPrimitives):
    """The retry loop of an SQL adapter's writes, over the adapter's ``SqlPrimitives``."""

    def _retried(self, operation: str, once: Callable[[], R], *, transaction: bool = False) -> R:
        """``once()``, run again while it loses a race, ``_race_retries`` times at most (then
        ``_gave_up``). ``transaction``: ``once`` opens a transaction of its own, which any
        other error ends before it is raised (a single statement leaves none open)."""
        last: BaseException | None = None
        for attempt in range(self._race_retries):
            try:
                return once()
            except TryAgain as error:
                last = error
            except self._RACE_ERRORS as error:
                last = error
                self._rollback_quietly()
                self._backoff(attempt)
            except BaseException:
                if transaction:
                    self._rollback_quietly()
                raise
        raise self._gave_up(operation, last)

    def _write(self, name: str, params: Mapping[str, object] | None = None) -> Rows:
        """Run one statement in a transaction of its own, again after a lost race."""
        return self._retried(name, lambda: self._execute(name, params))
