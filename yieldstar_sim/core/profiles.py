"""Driver profiles: the native rules of the engines a workflow may later run on.

The steps guide warns that native policies are not interchangeable: Temporal rejects
multi-attempt calls with zero initial backoff before scheduling work; Restate retry delays have
millisecond precision, and Restate rejects Child before submission. On Temporal, Spawn waits
for the start to be acknowledged within the parent's budget, and an error from that wait does
not prove no child started. A profile makes the simulator refuse (or round, or fail) the same
things, so a user can check a workflow's portability.

>>> from yieldstar_sim.core.steps import RetryPolicy
>>> TEMPORAL.check_policy("send", RetryPolicy(attempts=3, initial=0))
"step 'send': temporal-like engines reject multi-attempt steps with zero initial backoff"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from yieldstar_sim.core.steps import RetryPolicy


@dataclass(frozen=True, slots=True)
class DriverProfile:
    """What an engine refuses or changes, as rules the driver applies."""

    name: str
    allows_child: bool = True
    allows_zero_initial_backoff: bool = True
    delay_precision: float | None = None
    """Retry delays are rounded to this many seconds (``None``: kept exactly)."""
    spawn_waits_for_start: bool = False
    """Spawn waits for the start's acknowledgement within the parent's budget (its max
    duration) instead of returning at once."""
    group_ids: str = "call-site"
    """How replay finds a ``step.all`` member's record: ``"call-site"``, by its step key
    (this driver), or ``"completion-order"``, by position, the members numbered in the order
    they completed: the engines' shipped bug, for a scenario to show it (docs/decisions.md)."""

    def __post_init__(self) -> None:
        if self.group_ids not in GROUP_IDS:
            raise ValueError(
                f"group_ids must be one of {', '.join(GROUP_IDS)}, not {self.group_ids!r}"
            )

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

    def check_spawn_acknowledged(
        self, step: str, child_id: str, now: float, deadline: float | None
    ) -> str | None:
        """Why waiting at ``now`` for spawn ``child_id``'s start acknowledgement failed, or
        ``None``: on an engine that waits, the parent's budget ran out at ``deadline``."""
        if not self.spawn_waits_for_start or deadline is None or now < deadline:
            return None
        return (
            f"step {step!r}: {self.name}-like engines wait for Spawn's start acknowledgement "
            f"within the parent's budget, which ran out at t={deadline:g}; {child_id!r} may "
            "have started: reconcile the same ID before replacing work"
        )

    def round_delay(self, seconds: float) -> float:
        """A retry delay as this engine would schedule it."""
        if self.delay_precision is None:
            return seconds
        return round(seconds / self.delay_precision) * self.delay_precision


#: The ways a profile may identify the members of a ``step.all`` on replay.
GROUP_IDS = ("call-site", "completion-order")

MEMORY = DriverProfile("memory")
TEMPORAL = DriverProfile("temporal", allows_zero_initial_backoff=False, spawn_waits_for_start=True)
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
