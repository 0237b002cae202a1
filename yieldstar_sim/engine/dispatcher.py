"""The dispatcher: claim due work under a lease, deliver it, acknowledge or release.

Only the dispatcher delivers an execution (RFC 003). An outcome is acknowledged under the
delivery's lease; a delivery that rejects (an infrastructure error, a worker that replied retry
or exited) records no outcome, and its lease is released so that the execution is delivered
again after the redelivery delay. An execution recovered more than ``max_recovery_attempts``
times is acknowledged dead-lettered without being delivered (``engine.recovery``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from yieldstar_sim.core.model import LeaseLostError
from yieldstar_sim.engine.invoker import ExecutionEvent, Invoker
from yieldstar_sim.engine.recovery import check_max_recovery_attempts, dead_letter
from yieldstar_sim.engine.world import WorkerCrashRequested

if TYPE_CHECKING:
    from yieldstar_sim.core.model import ExecutionRecord, Lease, WorkflowRunOutcome
    from yieldstar_sim.runtime.protocol import Runtime


@dataclass(frozen=True, slots=True)
class DispatchResult:
    """What one dispatch did, claimed at virtual time ``at``.

    ``outcome`` is the delivery's outcome, or ``None`` when it rejected (``rejection`` says
    why). ``acknowledged`` tells whether the outcome was recorded; ``record`` is the
    acknowledged record. An outcome can be refused at acknowledgement when the lease was lost
    meanwhile (``ack_error``); the execution is then delivered again.
    """

    execution_id: str
    worker: str
    lease: Lease
    at: float
    outcome: WorkflowRunOutcome | None
    rejection: BaseException | None = None
    acknowledged: bool = False
    record: ExecutionRecord | None = None
    ack_error: BaseException | None = None


class Dispatcher:
    """Claims due executions and delivers them through an invoker; with
    ``max_recovery_attempts``, one recovered more often is dead-lettered instead."""

    def __init__(
        self,
        runtime: Runtime,
        invoker: Invoker,
        *,
        lease_seconds: float = 30.0,
        redelivery_delay: float = 5.0,
        max_recovery_attempts: int | None = None,
    ) -> None:
        self.runtime = runtime
        self.invoker = invoker
        self.lease_seconds = lease_seconds
        self.redelivery_delay = redelivery_delay
        self.max_recovery_attempts = check_max_recovery_attempts(
            max_recovery_attempts, "Dispatcher"
        )

    def dispatch(self, worker: str, execution_id: str | None = None) -> DispatchResult | None:
        """Claim one due execution (or the named one) for ``worker`` and deliver it."""
        delivery = self.runtime.claim(
            worker, lease_seconds=self.lease_seconds, execution_id=execution_id
        )
        if delivery is None:
            return None
        lease = delivery.lease
        at = self.runtime.clock.now()
        outcome: WorkflowRunOutcome | None = dead_letter(delivery, self.max_recovery_attempts)
        try:
            if outcome is None:
                outcome = self.invoker.deliver(ExecutionEvent(delivery, worker))
        except WorkerCrashRequested as crash:
            # The worker died: it neither acknowledges nor releases, and its lease runs out.
            return DispatchResult(lease.execution_id, worker, lease, at, None, rejection=crash)
        except Exception as error:  # any rejection, not only an InfrastructureError (RFC 003)
            # A lost lease needs no release: it ran out, or someone else holds it now.
            with contextlib.suppress(LeaseLostError):
                self.runtime.release(lease, delay=self.redelivery_delay)
            return DispatchResult(lease.execution_id, worker, lease, at, None, rejection=error)
        try:
            record = self.runtime.acknowledge(lease, outcome)
        except LeaseLostError as error:
            return DispatchResult(lease.execution_id, worker, lease, at, outcome, ack_error=error)
        return DispatchResult(
            lease.execution_id, worker, lease, at, outcome, acknowledged=True, record=record
        )
