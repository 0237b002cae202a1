"""What an SQL adapter supplies (``SqlPrimitives``) for the calls written once over it
(``_sql_calls.SqlCalls``, ``_sql_events.SqlEvents``, ``_sql_retries.SqlRetries``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping

    from yieldstar_sim.core.model import InfrastructureError

#: The rows a named statement returns (none for a statement that returns no rows).
Rows = list[tuple[Any, ...]]


class SqlPrimitives(Protocol):
    """What an SQL adapter supplies for ``SqlCalls`` besides its options (``AdapterOptions``):
    how it runs a named statement of its query file with bound parameters, and how it meets a
    lost race (what raises it, how often it tries again, how long it waits in between)."""

    #: What a statement that lost a race raises: the call is tried again.
    _RACE_ERRORS: ClassVar[tuple[type[Exception], ...]]
    #: The statement that opens an insert-or-find's transaction, and the one that ends it when
    #: the INSERT inserted nothing; ``None`` where the named statements do it themselves.
    _BEGIN: ClassVar[str | None]
    _END_UNUSED: ClassVar[str | None]

    @property
    def _race_retries(self) -> int:
        """How many races in a row one call may lose before it gives up."""
        ...

    def _execute(self, name: str, params: Mapping[str, object] | None = None) -> Rows:
        """Run the named statement once and return its rows."""
        ...

    def _read(self, name: str, params: Mapping[str, object] | None = None) -> Rows:
        """Run the named read and return its rows."""
        ...

    def _rollback_quietly(self) -> None:
        """End the transaction a failed statement left, if any."""
        ...

    def _backoff(self, attempt: int) -> None:
        """Wait, if at all, before the try after ``attempt`` lost its race."""
        ...

    def _gave_up(self, name: str, error: BaseException | None) -> InfrastructureError:
        """The error of a call that lost ``_race_retries`` races in a row (``error``: the last)."""
        ...

    def _admits(self, text: str | None) -> bool:
        """Whether the database can hold ``text`` (an ID the caller gave): a lookup of one it
        cannot hold finds nothing, as in the other adapters, without a statement."""
        ...
