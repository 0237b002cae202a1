"""The recovery limit: an execution recovered more than ``max_recovery_attempts`` times is
set aside, dead-lettered, instead of being run again (DBOS's ``max_recovery_attempts``).

A recovery is a claim that took the execution over from a holder whose lease ran out (a
worker that crashed, froze or stalled while it held it); the runtime counts them
(``ExecutionRecord.recoveries``). A workflow whose own code crashes its worker on every
attempt, a poison workflow, is otherwise recovered without end. The engine decides, not the
runtime: the limit is the engine's setting, and a runtime only counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.core.model import MAX_RECOVERY_ATTEMPTS_EXCEEDED, DeadLettered, ErrorInfo

if TYPE_CHECKING:
    from yieldstar_sim.core.model import Delivery


def dead_letter(delivery: Delivery, max_recovery_attempts: int | None) -> DeadLettered | None:
    """The outcome that sets ``delivery``'s execution aside when it has been recovered more
    than ``max_recovery_attempts`` times (None: no limit); else None, and it runs."""
    recoveries = delivery.execution.recoveries
    if max_recovery_attempts is None or recoveries <= max_recovery_attempts:
        return None
    times = "once" if recoveries == 1 else f"{recoveries} times"
    return DeadLettered(
        ErrorInfo(
            "MaxRecoveryAttemptsExceeded",
            f"{delivery.execution.execution_id} was recovered {times} (each time its worker "
            f"died or lost its lease while running it), more than max_recovery_attempts="
            f"{max_recovery_attempts}: set aside, never run again",
            MAX_RECOVERY_ATTEMPTS_EXCEEDED,
        )
    )


def check_max_recovery_attempts(value: object, owner: str) -> int | None:
    """``value`` as a recovery limit (a whole number from 1, or None), or a ``ValueError``
    naming ``owner`` and what is wrong."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"{owner}: max_recovery_attempts must be a whole number >= 1 (how many times an "
            f"execution may be recovered before it is dead-lettered) or None (no limit), not "
            f"{value!r}"
        )
    return value
