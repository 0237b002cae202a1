"""Attempt completion by token, as runtime-adapter cases (docs/decisions.md, "Activity-style
steps"): every adapter that implements ``runtime.protocol.AttemptClient`` passes them
(``check_attempt_adapter``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.core.attempts import AttemptToken, StaleAttemptError
from yieldstar_sim.core.model import LeaseLostError, Suspended
from yieldstar_sim.runtime.protocol import AttemptClient, attempts_of
from yieldstar_sim.testing._support import LEASE, Case, RuntimeFactory, _claimed, _expect, _raised

if TYPE_CHECKING:
    from yieldstar_sim.runtime.protocol import Runtime


def _attempts(runtime: Runtime) -> AttemptClient:
    return attempts_of(runtime)


def _step(runtime: Runtime, execution_id: str, step_key: str) -> tuple[str, object, int] | None:
    """The step's (status, value, attempt), or ``None`` with no record."""
    for step in runtime.steps(execution_id):
        if step.step_key == step_key:
            return str(step.status), step.value, step.attempt
    return None


def the_current_attempt_completes_its_step(make: RuntimeFactory) -> None:
    """An attempt completes its step by its token: attempt 1 of a step with no record, then,
    after attempt 1 failed and waits for its retry, attempt 2 of another."""
    runtime, _, caller, delivery = _claimed(make)
    attempts = _attempts(runtime)
    attempts.complete_attempt(AttemptToken(delivery.lease, "reserve", 1), "hold-1")
    got = _step(runtime, caller, "reserve")
    _expect(got == ("completed", "hold-1", 1), f"attempt 1's completion recorded {got}")
    runtime.put_step(delivery.lease, "pay", status="pending", value={"wake_at": 0}, attempt=1)
    attempts.complete_attempt(AttemptToken(delivery.lease, "pay", 2), {"paid": True})
    got = _step(runtime, caller, "pay")
    _expect(got == ("completed", {"paid": True}, 2), f"attempt 2's completion recorded {got}")


def a_stale_attempt_completion_is_refused(make: RuntimeFactory) -> None:
    """An attempt that is not the step's current one completes nothing: one whose lease
    another claim replaced (LeaseLostError), an earlier attempt under the lease that holds,
    and any attempt of a step already completed (StaleAttemptError); the record is left as
    it was."""
    runtime, clock, caller, first = _claimed(make)
    attempts = _attempts(runtime)
    # Attempt 1 failed (recorded by its worker) and the execution waits for its retry.
    runtime.put_step(
        first.lease, "reserve", status="pending", value={"wake_at": 1}, attempt=1, wake_at=1.0
    )
    _raised(
        StaleAttemptError,
        lambda: attempts.complete_attempt(AttemptToken(first.lease, "reserve", 1), "hold-1"),
        "attempt 1 completed its step after it was recorded failed (the step is at attempt 2)",
    )
    runtime.acknowledge(first.lease, Suspended())
    clock.advance(1)
    retry = runtime.claim("w2", lease_seconds=LEASE)
    _expect(retry is not None, "the retry was not claimed")
    assert retry is not None
    # The attempt its worker gave up on ends and completes by its token: refused.
    _raised(
        LeaseLostError,
        lambda: attempts.complete_attempt(AttemptToken(first.lease, "reserve", 2), "hold-1"),
        "an attempt under a lease another claim replaced completed its step",
    )
    got = _step(runtime, caller, "reserve")
    _expect(got is not None and got[0] == "pending", f"a refused completion wrote {got}")
    attempts.complete_attempt(AttemptToken(retry.lease, "reserve", 2), "hold-2")
    for attempt in (1, 2, 3):
        _raised(
            StaleAttemptError,
            lambda attempt=attempt: attempts.complete_attempt(  # type: ignore[misc]
                AttemptToken(retry.lease, "reserve", attempt), f"again-{attempt}"
            ),
            f"attempt {attempt} completed a step already completed",
        )
    got = _step(runtime, caller, "reserve")
    _expect(got == ("completed", "hold-2", 2), f"the completed step now reads {got}")


def a_completion_is_checked_before_anything_is_written(make: RuntimeFactory) -> None:
    """A completion that is no token, or whose value is no plain data, is refused before
    anything is written."""
    runtime, _, caller, delivery = _claimed(make)
    attempts = _attempts(runtime)
    _raised(TypeError, lambda: attempts.complete_attempt(("order-42", "a", 1), 1),  # type: ignore[arg-type]
            "a tuple was taken for an attempt token")  # fmt: skip
    _raised(ValueError, lambda: attempts.complete_attempt(AttemptToken(delivery.lease, "a", 1),
                                                          object()),
            "a value that is no plain data was recorded")  # fmt: skip
    _expect(runtime.steps(caller) == [], f"a refused completion wrote {runtime.steps(caller)}")


ATTEMPT_CASES: dict[str, Case] = {
    "The current attempt completes its step": the_current_attempt_completes_its_step,
    "A stale attempt's completion is refused": a_stale_attempt_completion_is_refused,
    "A completion is checked before anything is written": (
        a_completion_is_checked_before_anything_is_written
    ),
}


def check_attempt_adapter(make: RuntimeFactory) -> None:
    """Run every attempt case against runtimes made by ``make`` (an ``AttemptClient``).

    Raises ``AssertionError`` naming the first case that fails and why.

    >>> from yieldstar_sim import MemoryRuntime
    >>> check_attempt_adapter(lambda clock: MemoryRuntime(clock=clock))
    """
    for name, case in ATTEMPT_CASES.items():
        try:
            case(make)
        except AssertionError as error:
            raise AssertionError(f"{name}: {error}") from error
