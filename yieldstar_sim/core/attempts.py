"""Attempt tokens: a step attempt that completes through its own runtime call.

A step declared ``completes_by_token()`` records its result with ``complete_attempt(token,
value)`` instead of the worker's ``put_step``. The token names the attempt: the execution and
the lease it was started under (``Lease``), the step key and the attempt number. A runtime
accepts a completion only from the step's current attempt: under a lease that still holds,
with the attempt number the step is at, and only while the step is open. Temporal's activity
task tokens carry the same (the workflow, the activity, the attempt), and its server refuses
an earlier attempt's completion (temporalio/sdk-java#84: a token without the attempt let a
previous attempt complete the next one).

>>> from yieldstar_sim.core.model import Lease, StepRecord
>>> token = AttemptToken(Lease("order-42", "w1", 2, 30.0, 1), "reserve", 2)
>>> token.execution_id
'order-42'
>>> pending = StepRecord("order-42", "reserve", 0, "pending", {}, 1, 20.0)
>>> current_attempt(pending), attempt_refusal(token, pending) is None
(2, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from yieldstar_sim.core.model import LeaseLostError

if TYPE_CHECKING:
    from yieldstar_sim.core.model import Lease, StepRecord


@dataclass(frozen=True, slots=True)
class AttemptToken:
    """One attempt of one step: the lease it was started under (the execution, its
    incarnation and fencing token), the step key and the attempt number (from 1)."""

    lease: Lease
    step_key: str
    attempt: int

    @property
    def execution_id(self) -> str:
        """The execution whose step this attempt is."""
        return self.lease.execution_id


class StaleAttemptError(LeaseLostError):
    """``complete_attempt`` refused: the token's attempt is not the step's current one (an
    earlier attempt, or a step already completed or failed). A fenced write refused, as a
    stale lease's is: the delivery rejects."""


def current_attempt(recorded: StepRecord | None) -> int | None:
    """The attempt a step is at, from its record: 1 with none, the one after a failed
    attempt waiting for its retry (``pending``), ``None`` once it is completed or failed."""
    if recorded is None:
        return 1
    if recorded.status == "pending":
        return recorded.attempt + 1
    return None


def attempt_refusal(token: AttemptToken, recorded: StepRecord | None) -> StaleAttemptError | None:
    """Why ``token``'s completion is refused given the step's record (its lease checked
    apart), or ``None`` when its attempt is the current one."""
    current = current_attempt(recorded)
    if current == token.attempt:
        return None
    what = f"attempt {token.attempt} of step {token.step_key} of {token.execution_id}"
    if current is None:
        assert recorded is not None
        why = f"the step is already {recorded.status} (by attempt {recorded.attempt})"
    else:
        why = f"the step is at attempt {current}"
    return StaleAttemptError(f"completion refused: {what} is stale: {why}")
