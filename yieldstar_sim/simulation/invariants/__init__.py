"""Invariants checked after every run, each violation explained in a sentence.

Built in: exactly one target per start request; every target has its request record and parent
link; at most one admitted execution per (caller, step key), counting non-durable triggers by
their provenance; every accepted start recorded once and consistently; outcomes acknowledged
only under the current lease; no execution lost; owned targets follow their owner; joined runs
keep their owner; one execution per client request, however many attempts it took; a
cancellation requested while its execution is live ends it cancelled; two attempts of one step
never run at the same time, unless the scenario declares the step overlap-safe; recorded history
(a final step record, a terminal outcome, a start request's target) never changes; every
external event the runtime accepted is consumed or reported undelivered; nothing is recovered
without end (past ``max_recovery_attempts`` an execution is dead-lettered). Users add
``at_most_once(effect, by=field)`` and plain callables over the run.

The built-in invariants live by what they watch: ``starts`` (requests, admissions, leases),
``ownership`` (owners and what they own), ``clients`` (clients' requests), ``outcomes`` (how
executions end), ``cancels`` (what a cancellation request ends), ``attempts`` (when a step's
attempts run) and ``effects`` (``at_most_once``), ``history`` (records written once),
``recoveries`` (claims after a lease ran out), ``events`` (external events); ``evidence``
reads the trace for their sentences.
"""

from __future__ import annotations

from yieldstar_sim.simulation.invariants.attempts import AttemptsNeverOverlap
from yieldstar_sim.simulation.invariants.cancels import CancelledLiveExecutionsEndCancelled
from yieldstar_sim.simulation.invariants.clients import OneExecutionPerClientRequest
from yieldstar_sim.simulation.invariants.effects import AtMostOnce, at_most_once
from yieldstar_sim.simulation.invariants.events import AcceptedEventsConsumedOrReported
from yieldstar_sim.simulation.invariants.history import RecordedHistoryNeverChanges
from yieldstar_sim.simulation.invariants.outcomes import ExecutionsEndAsExpected
from yieldstar_sim.simulation.invariants.ownership import (
    JoinedRunsKeepTheirOwner,
    OwnedChildrenEndWithTheirOwner,
    OwnedTargetsFollowTheirOwner,
)
from yieldstar_sim.simulation.invariants.protocol import (
    FunctionInvariant,
    Invariant,
    Violation,
    as_invariant,
)
from yieldstar_sim.simulation.invariants.recoveries import NothingRecoveredWithoutEnd
from yieldstar_sim.simulation.invariants.starts import (
    AcceptedStartsRecordedOnce,
    AcknowledgedUnderCurrentLease,
    NothingLost,
    OneAdmissionPerStep,
    OneTargetPerStartRequest,
    TargetsHaveRequestAndParent,
)

BUILT_IN: tuple[Invariant, ...] = (
    OneTargetPerStartRequest(),
    TargetsHaveRequestAndParent(),
    OneAdmissionPerStep(),
    AcceptedStartsRecordedOnce(),
    AcknowledgedUnderCurrentLease(),
    NothingLost(),
    OwnedChildrenEndWithTheirOwner(),
    OwnedTargetsFollowTheirOwner(),
    JoinedRunsKeepTheirOwner(),
    OneExecutionPerClientRequest(),
    RecordedHistoryNeverChanges(),
    AcceptedEventsConsumedOrReported(),
)
"""The invariants every run is checked against, in the order their violations are listed."""


__all__ = [
    "BUILT_IN",
    "AcceptedEventsConsumedOrReported",
    "AcceptedStartsRecordedOnce",
    "AcknowledgedUnderCurrentLease",
    "AtMostOnce",
    "AttemptsNeverOverlap",
    "CancelledLiveExecutionsEndCancelled",
    "ExecutionsEndAsExpected",
    "FunctionInvariant",
    "Invariant",
    "JoinedRunsKeepTheirOwner",
    "NothingLost",
    "NothingRecoveredWithoutEnd",
    "OneAdmissionPerStep",
    "OneExecutionPerClientRequest",
    "OneTargetPerStartRequest",
    "OwnedChildrenEndWithTheirOwner",
    "OwnedTargetsFollowTheirOwner",
    "RecordedHistoryNeverChanges",
    "TargetsHaveRequestAndParent",
    "Violation",
    "as_invariant",
    "at_most_once",
]
