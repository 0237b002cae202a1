"""The driver's control flow between a step and ``drive``: suspend the delivery, throw an error
into workflow code, or end it because the code left its recorded path. ``core.driver`` and
``core.driver_groups`` both raise them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from yieldstar_sim.core.model import NondeterminismError


class Suspend(Exception):
    """The unfinished step and its wake are recorded: end the delivery as suspended."""


class Throw(Exception):
    """Throw ``error`` into workflow code at the step it is waiting on."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class Diverged(Exception):
    """The code took another path than the record: end the delivery failed at once.

    Not thrown into workflow code: code that caught it would go on writing steps against a
    history that no longer matches it.
    """

    def __init__(self, error: NondeterminismError) -> None:
        super().__init__(str(error))
        self.error = error
