"""Every exception the package raises on purpose, in one place, with the codes some carry.

Most are defined beside what raises them (the records' module, the codec, the scenario loader,
replay artifacts); this module gathers them so that ``except`` clauses have one import:

>>> from yieldstar_sim.errors import InfrastructureError, LeaseLostError
>>> issubclass(LeaseLostError, InfrastructureError)
True

``YieldstarError`` is the base of the errors workflow code and callers see; infrastructure
errors (``InfrastructureError`` and its subclasses) are the runtime's refusals and injected
faults, which the engine turns into a redelivery rather than an outcome.
"""

from __future__ import annotations

from yieldstar_sim.core.attempts import StaleAttemptError
from yieldstar_sim.core.codec import DurableValueError
from yieldstar_sim.core.model import (
    AdmissionErrorCode,
    ChildFailedError,
    DeliveryRejectedError,
    ExecutionAdmissionError,
    ExecutionNotFoundError,
    ExecutionStateError,
    InfrastructureError,
    InjectedFailure,
    InvalidIDError,
    LeaseLostError,
    NondeterminismError,
    ProfileError,
    StepDeclarationError,
    StepError,
    StepKeyError,
    StepTimeoutError,
    TerminalCallerError,
    WorkflowCancelledError,
    WorkflowDefinitionError,
    WorkflowStartError,
    WorkflowStartErrorCode,
    YieldstarError,
)
from yieldstar_sim.core.steps import Permanent
from yieldstar_sim.simulation import ArtifactError, FaultPlanError, ScenarioError

__all__ = [
    "AdmissionErrorCode",
    "ArtifactError",
    "ChildFailedError",
    "DeliveryRejectedError",
    "DurableValueError",
    "ExecutionAdmissionError",
    "ExecutionNotFoundError",
    "ExecutionStateError",
    "FaultPlanError",
    "InfrastructureError",
    "InjectedFailure",
    "InvalidIDError",
    "LeaseLostError",
    "NondeterminismError",
    "Permanent",
    "ProfileError",
    "ScenarioError",
    "StaleAttemptError",
    "StepDeclarationError",
    "StepError",
    "StepKeyError",
    "StepTimeoutError",
    "TerminalCallerError",
    "WorkflowCancelledError",
    "WorkflowDefinitionError",
    "WorkflowStartError",
    "WorkflowStartErrorCode",
    "YieldstarError",
]
