"""Attempt completion for the SQL adapters (DuckDB, PostgreSQL): ``complete_attempt``, the
``AttemptClient`` call, in one transaction of the dialect's named statements.

The transaction holds what the answer depends on: the lease still holds (``fence_holds``),
the step's log says the token's attempt is its current one (``step_log``), and the step is
recorded under the same fence (``put_step``), so no other write lands between the check and
the record.
"""

from __future__ import annotations

import yieldstar_sim.runtime._common as common
from yieldstar_sim.core.attempts import AttemptToken, attempt_refusal
from yieldstar_sim.runtime._sql_events import SqlEvents, _Abort, _wrote


class SqlAttempts(SqlEvents):
    """The attempt call of ``SqlCalls``, over the event calls' transaction."""

    def complete_attempt(self, token: AttemptToken, value: object = None) -> None:
        """Record ``token``'s attempt as the step's completion, if it is the current attempt
        under a lease that holds. Fenced by the lease and by the attempt."""
        if not isinstance(token, AttemptToken):
            raise TypeError(f"complete_attempt takes an AttemptToken, not {token!r}")
        lease = token.lease
        common.check_lease(lease)
        write, _ = common.check_put_step(token.step_key, "completed", value, token.attempt, None)

        def complete() -> None:
            now = self._clock.now()
            fence = {
                "execution_id": lease.execution_id, "incarnation": lease.incarnation,
                "owner": lease.owner, "token": lease.token, "now": now,
            }  # fmt: skip
            if not self._admits(lease.execution_id) or not _wrote(
                self._execute("fence_holds", fence)
            ):
                raise _Abort(common.lease_lost(lease, self.execution(lease.execution_id), now))
            rows = self._execute("step_log", {"execution_id": lease.execution_id})
            steps = common.parse_step_log(lease.execution_id, rows[0][0]) if rows else []
            recorded = next((step for step in steps if step.step_key == write.step_key), None)
            if attempt_refusal(token, recorded) is not None:
                # Made again where it is raised: a local naming the error would be held by its
                # context's traceback, a cycle that keeps a finished run alive.
                raise _Abort(attempt_refusal(token, recorded))
            entry = common.step_entry(write, now)
            if not _wrote(self._execute("put_step", {**fence, "entry": entry, "wake_at": None})):
                raise _Abort(common.lease_lost(lease, self.execution(lease.execution_id), now))

        self._transaction("complete_attempt", complete)
