"""Driver profiles: the native rules of the engines a workflow may later run on.

The steps guide warns that native policies are not interchangeable: Temporal rejects
multi-attempt calls with zero initial backoff before scheduling work; Restate retry delays have
millisecond precision, and Restate rejects Child before submission. A profile makes the
simulator refuse (or round) the same things, so a user can check a workflow's portability.

>>> from yieldstar_sim.authoring import RetryPolicy
>>> TEMPORAL.check_policy("send", RetryPolicy(attempts=3, initial=0))
"step 'send': temporal-like engines reject multi-attempt steps with zero initial backoff"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from yieldstar_sim.authoring import RetryPolicy


@dataclass(frozen=True, slots=True)
class DriverProfile:
    """What an engine refuses or changes, as rules the driver applies."""

    name: str
    allows_child: bool = True
    allows_zero_initial_backoff: bool = True
    delay_precision: float | None = None
    """Retry delays are rounded to this many seconds (``None``: kept exactly)."""

    def check_policy(self, step: str, policy: RetryPolicy) -> str | None:
        """Why this engine refuses a step with ``policy``, or ``None``."""
        if not self.allows_zero_initial_backoff and policy.attempts > 1 and policy.initial == 0:
            return (
                f"step {step!r}: {self.name}-like engines reject multi-attempt steps with zero "
                "initial backoff"
            )
        return None

    def check_child(self, step: str) -> str | None:
        """Why this engine refuses ``step.child``, or ``None``."""
        if not self.allows_child:
            return f"step {step!r}: {self.name}-like engines reject Child before submission"
        return None

    def round_delay(self, seconds: float) -> float:
        """A retry delay as this engine would schedule it."""
        if self.delay_precision is None:
            return seconds
        return round(seconds / self.delay_precision) * self.delay_precision


MEMORY = DriverProfile("memory")
TEMPORAL = DriverProfile("temporal", allows_zero_initial_backoff=False)
RESTATE = DriverProfile("restate", allows_child=False, delay_precision=0.001)

PROFILES = {profile.name: profile for profile in (MEMORY, TEMPORAL, RESTATE)}


def driver_profile(profile: str | DriverProfile) -> DriverProfile:
    """The profile named ``profile`` (``memory``, ``temporal``, ``restate``), or itself."""
    if isinstance(profile, DriverProfile):
        return profile
    try:
        return PROFILES[profile]
    except KeyError:
        raise ValueError(
            f"unknown driver profile {profile!r}; the profiles are {', '.join(PROFILES)}"
        ) from None
