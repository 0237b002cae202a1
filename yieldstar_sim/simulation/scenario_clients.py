"""Who makes a scenario's requests when it is not the scenario itself: a ``ys.Client`` (an
API server, a CLI, a sender of external events) and its ``ys.ClientRetry`` policy."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ClientRetry:
    """How a client retries a request it got no answer to (an infrastructure error, a lost
    response): up to ``attempts`` attempts in all, ``backoff`` seconds apart.

    ``reuse_request_id`` (the default, what RFC 003 asks of every caller) sends each retry
    with the same request ID, so the runtime can tell it from a new request; ``False`` mints a
    fresh ID per retry (``order-42~retry-2``): the bug that admits a second execution.
    """

    attempts: int = 3
    backoff: float = 1.0
    reuse_request_id: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int):
            raise ValueError(f"a client's attempts are a whole number >= 1, not {self.attempts!r}")
        if self.attempts < 1:
            raise ValueError(f"a client's attempts are a whole number >= 1, not {self.attempts!r}")
        if (
            isinstance(self.backoff, bool)
            or not isinstance(self.backoff, int | float)
            or not 0 <= self.backoff < math.inf
        ):
            # An infinite backoff passed and left the run cut at max_time, saying nothing.
            raise ValueError(f"a client's backoff is finite seconds >= 0, not {self.backoff!r}")
        if not isinstance(self.reuse_request_id, bool):
            raise TypeError(f"reuse_request_id is True or False, not {self.reuse_request_id!r}")


@dataclass(frozen=True, slots=True)
class Client:
    """Who makes a trigger or a cancel when it is not the scenario itself: an actor of the
    simulation (an API server, a CLI) whose calls are choice points, so a fault plan can crash
    it, lose its response or fail its call, and whose ``retry`` policy decides what it does
    then. A fault names it as its ``worker``.

    >>> Client("api", ClientRetry(reuse_request_id=False)).retry.attempts
    3
    """

    name: str
    retry: ClientRetry = field(default_factory=ClientRetry)

    def __post_init__(self) -> None:
        from yieldstar_sim.core.ids import control_character

        if not isinstance(self.name, str) or not self.name or control_character(self.name):
            raise ValueError(
                f"a client's name is a non-empty string without control characters, not "
                f"{self.name!r}"
            )
        if not isinstance(self.retry, ClientRetry):
            raise TypeError(f"client {self.name!r}: retry is a ys.ClientRetry, not {self.retry!r}")


def fresh_request_id(request_id: str, attempt: int) -> str:
    """The ID a client that does not reuse its request ID sends on attempt ``attempt``.

    >>> fresh_request_id("order-42", 2)
    'order-42~retry-2'
    """
    return f"{request_id}~retry-{attempt}"
