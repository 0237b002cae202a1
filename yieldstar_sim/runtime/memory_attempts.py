"""The memory runtime's attempt completion (``runtime.protocol.AttemptClient``): a part of
``MemoryRuntime`` of its own, which it inherits."""

from __future__ import annotations

from typing import TYPE_CHECKING

import yieldstar_sim.runtime._common as common
from yieldstar_sim.core.attempts import AttemptToken, StaleAttemptError, attempt_refusal

if TYPE_CHECKING:
    import threading

    from yieldstar_sim.core.model import Lease, StepRecord
    from yieldstar_sim.runtime.failpoints import FailPoints
    from yieldstar_sim.runtime.memory_rows import Row


def _refused(token: AttemptToken, old: StepRecord | None) -> StaleAttemptError:
    refusal = attempt_refusal(token, old)
    assert refusal is not None
    return refusal


class MemoryAttempts:
    """``complete_attempt`` over the memory runtime's rows (its other attributes are declared
    here for the type checker)."""

    if TYPE_CHECKING:
        _lock: threading.RLock
        _failpoints: FailPoints

        def _touch(self, row: Row) -> Row: ...
        def _fenced(self, operation: str, lease: Lease) -> tuple[Row, float]: ...

    def complete_attempt(self, token: AttemptToken, value: object = None) -> None:
        """Record ``token``'s attempt as the step's completion, if it is the current attempt
        under a lease that holds. Fenced by the lease and by the attempt."""
        if not isinstance(token, AttemptToken):
            raise TypeError(f"complete_attempt takes an AttemptToken, not {token!r}")
        write, _ = common.check_put_step(token.step_key, "completed", value, token.attempt, None)
        with self._lock:
            row, now = self._fenced("complete_attempt", token.lease)
            old = row.steps.get(write.step_key)
            if attempt_refusal(token, old) is not None:
                # Made again where it is raised: a local naming the error would be held by its
                # own traceback's frame, a cycle that keeps a finished run alive.
                raise _refused(token, old)
            self._touch(row).write_step(write, now)
        self._failpoints.hit("complete_attempt.after_commit")
