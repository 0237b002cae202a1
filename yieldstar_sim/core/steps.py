"""Declared steps: ``define_step``, a step's retry policy as the workflow steps guide sets it,
and ``Permanent`` for a failure another attempt cannot mend.

>>> send = define_step("send", lambda: "sent", lambda s: s.retry(5).backoff(1, 2, 60))
>>> send.policy.attempts, send.policy.delay_after(3)
(5, 4.0)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

from yieldstar_sim.core.model import StepDeclarationError

DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many attempts a step gets, how long it waits between them, and each one's limit.

    The defaults are the workflow steps guide's: one attempt, a one-minute timeout per attempt,
    and (once retries are enabled) delays from one second, doubling, capped at 30 seconds.
    ``cap`` and ``timeout`` of ``None`` mean no limit. ``completes_by_token``: each attempt
    records its result through its own runtime call under its attempt token
    (``StepBuilder.completes_by_token``); not in the repr, which shows the guide's settings.

    >>> policy = RetryPolicy(attempts=5, initial=1, factor=2, cap=60)
    >>> [policy.delay_after(attempt) for attempt in range(1, 5)]
    [1.0, 2.0, 4.0, 8.0]
    """

    attempts: int = 1
    initial: float = 1.0
    factor: float = 2.0
    cap: float | None = 30.0
    timeout: float | None = DEFAULT_TIMEOUT
    completes_by_token: bool = field(default=False, repr=False)

    def delay_after(self, attempt: int) -> float:
        """The delay before the attempt that follows failed attempt number ``attempt``.

        A delay too large for a float stays at the cap, or at the largest float without one.
        """
        try:
            delay = self.initial * self.factor ** (attempt - 1)
        except OverflowError:
            delay = math.inf
        if self.cap is not None:
            delay = min(delay, self.cap)
        return float(min(delay, sys.float_info.max))


class StepBuilder:
    """Edits a step's policy inside ``define_step`` or ``derive``, with the guide's rules.

    Invalid values do not raise here: the first one becomes the declaration's error, which
    registration reports and which fails the step without running it.
    """

    def __init__(self, policy: RetryPolicy, error: StepDeclarationError | None) -> None:
        self.policy = policy
        self.error = error

    def _fail(self, message: str) -> StepBuilder:
        if self.error is None:
            self.error = StepDeclarationError(message)
        return self

    def retry(self, attempts: int) -> StepBuilder:
        """Allow ``attempts`` executions in total; values below one become one."""
        if isinstance(attempts, bool) or not isinstance(attempts, int):
            return self._fail(f"retry takes a whole number of attempts, not {attempts!r}")
        self.policy = replace(self.policy, attempts=max(1, attempts))
        return self

    def backoff(self, initial: float, factor: float, cap: float) -> StepBuilder:
        """Delays of ``initial * factor**n`` seconds, capped at ``cap`` (0: no cap).

        A zero initial delay asks for no deliberate delay; a factor below one or not finite
        becomes one; a negative initial delay or cap is a declaration error.
        """
        if not _is_number(initial) or not math.isfinite(initial) or initial < 0:
            return self._fail(
                f"backoff initial delay must be a non-negative number, not {initial!r}"
            )
        if not _is_number(cap) or math.isnan(cap) or cap < 0:
            return self._fail(f"backoff cap must be a non-negative number, not {cap!r}")
        if not _is_number(factor) or not math.isfinite(factor) or factor < 1:
            factor = 1.0
        self.policy = replace(
            self.policy,
            initial=float(initial),
            factor=float(factor),
            cap=None if cap == 0 or math.isinf(cap) else float(cap),
        )
        return self

    def timeout(self, seconds: float) -> StepBuilder:
        """Bound each attempt to ``seconds`` of virtual time (0: no per-attempt limit)."""
        if not _is_number(seconds) or math.isnan(seconds) or seconds < 0:
            return self._fail(f"timeout must be a non-negative number of seconds, not {seconds!r}")
        self.policy = replace(
            self.policy, timeout=None if seconds == 0 or math.isinf(seconds) else float(seconds)
        )
        return self

    def completes_by_token(self) -> StepBuilder:
        """Each attempt completes through its own runtime call, ``complete_attempt``, under
        its attempt token (the lease it started under, the step key, the attempt number), as
        a Temporal activity completes by its task token: the runtime takes a result only from
        the step's current attempt. Failures and timeouts are still recorded by the worker."""
        self.policy = replace(self.policy, completes_by_token=True)
        return self


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


StepConfigure: TypeAlias = Callable[[StepBuilder], object]


@dataclass(frozen=True, slots=True)
class StepDefinition:
    """A reusable step: a name, a body and a retry policy (``define_step``).

    ``error`` is the first declaration error, if any: registration refuses such a definition,
    and calling it fails the step without running the body.
    """

    name: str
    body: Callable[..., Any] = field(repr=False)
    policy: RetryPolicy = RetryPolicy()
    error: StepDeclarationError | None = None

    def derive(self, configure: StepConfigure) -> StepDefinition:
        """A variant for one call: same name, body, inherited policy and first error.

        Defaults are not applied again and this definition does not change.

        >>> send = define_step("send", lambda: None, lambda s: s.retry(5))
        >>> once = send.derive(lambda s: s.retry(1))
        >>> send.policy.attempts, once.policy.attempts
        (5, 1)
        """
        builder = StepBuilder(self.policy, self.error)
        configure(builder)
        return replace(self, policy=builder.policy, error=builder.error)


def define_step(
    name: str, body: Callable[..., Any], configure: StepConfigure | None = None
) -> StepDefinition:
    """Declare a reusable step with a policy built by ``configure``.

    >>> send_welcome = define_step(
    ...     "send-welcome", lambda user: f"msg-{user}",
    ...     lambda s: s.retry(5).backoff(1, 2, 60).timeout(30))
    >>> send_welcome.policy
    RetryPolicy(attempts=5, initial=1.0, factor=2.0, cap=60.0, timeout=30.0)
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"a step name must be a non-empty string, not {name!r}")
    if not callable(body):
        raise TypeError(f"step {name!r}: the body must be callable, not {body!r}")
    definition = StepDefinition(name, body)
    return definition.derive(configure) if configure is not None else definition


class Permanent(Exception):
    """Raise ``Permanent(error)`` from a step body when another attempt cannot succeed.

    >>> def charge():
    ...     raise Permanent(ValueError("card declined"))
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error
