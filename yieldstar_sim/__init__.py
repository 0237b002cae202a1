"""yieldstar_sim: see durable-workflow semantics fail and hold.

RFC 003's durable start on a real runtime (DuckDB, or the memory reference), with failure points
at every commit boundary.

>>> import yieldstar_sim as ys
>>> runtime = ys.DuckDBRuntime()
>>> caller = runtime.trigger("charge-order", {"order": 42}, execution_id="order-42")
>>> request = ys.StartRequest(ys.RequestId(caller, "ship"), "ship-order", {"order": 42})
>>> first = runtime.start(request)
>>> runtime.start(request) == first          # a repeat returns the first target
True
>>> runtime.execution(first.execution_id).parent
ParentLink(execution_id='order-42', step_key='ship', detached=False)
"""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import TYPE_CHECKING

from yieldstar_sim.core.authoring import Permanent, StepRunner, define_step, workflow
from yieldstar_sim.core.clock import ManualClock
from yieldstar_sim.core.codec import durable_value_codec
from yieldstar_sim.core.model import (
    ChildFailedError,
    Completed,
    ExecutionAdmissionError,
    InvalidIDError,
    NondeterminismError,
    ProfileError,
    RequestId,
    StartRequest,
    StepError,
    WorkflowCancelledError,
    WorkflowStartError,
    WorkflowStartErrorCode,
)
from yieldstar_sim.engine import Engine
from yieldstar_sim.runtime import (
    DuckDBRuntime,
    ExecutionClient,
    MemoryRuntime,
    WorkflowStartClient,
)
from yieldstar_sim.simulation import (
    Cancel,
    Client,
    ClientRetry,
    Deploy,
    Fault,
    FaultPlanError,
    Prune,
    Scenario,
    ScenarioError,
    Trigger,
    at_most_once,
    expect,
    explore,
    load_scenario,
    replay,
    simulate,
)
from yieldstar_sim.widgets import Stepper

# The core's modules were top-level before yieldstar_sim/core/ (``import yieldstar_sim.model``):
# those paths stay importable, as the same module objects, so patches and isinstance agree.
for _core_module in (
    "authoring",
    "clock",
    "codec",
    "commands",
    "driver",
    "filenames",
    "model",
    "profiles",
):
    globals()[_core_module] = sys.modules.setdefault(
        f"{__name__}.{_core_module}", importlib.import_module(f"{__name__}.core.{_core_module}")
    )
del _core_module

__version__ = "0.1.0"

# The names the README, the notebooks, the docs and the bundled scenarios write as ``ys.X``, and
# the surface docs/decisions.md promises; tests/unit/test_public_api.py pins this list.
__all__ = [
    "Cancel",
    "ChildFailedError",
    "Client",
    "ClientRetry",
    "Completed",
    "Deploy",
    "DuckDBRuntime",
    "Engine",
    "ExecutionAdmissionError",
    "ExecutionClient",
    "Fault",
    "FaultPlanError",
    "InvalidIDError",
    "ManualClock",
    "MemoryRuntime",
    "NondeterminismError",
    "Permanent",
    "ProfileError",
    "Prune",
    "RequestId",
    "Scenario",
    "ScenarioError",
    "StartRequest",
    "StepError",
    "StepRunner",
    "Stepper",
    "Trigger",
    "WorkflowCancelledError",
    "WorkflowStartClient",
    "WorkflowStartError",
    "WorkflowStartErrorCode",
    "__version__",
    "at_most_once",
    "define_step",
    "durable_value_codec",
    "expect",
    "explore",
    "load_scenario",
    "replay",
    "simulate",
    "workflow",
]

_ERRORS = "yieldstar_sim.errors"
_ENGINE = "yieldstar_sim.engine"
_MODEL = "yieldstar_sim.core.model"

#: Names that were exported here before the public surface shrank, and where they live now.
#: ``ys.<name>`` still works for them, with a DeprecationWarning naming the new home.
_MOVED: dict[str, str] = {
    **dict.fromkeys(
        (
            "AdmissionErrorCode",
            "ArtifactError",
            "DeliveryRejectedError",
            "DurableValueError",
            "ExecutionNotFoundError",
            "ExecutionStateError",
            "InfrastructureError",
            "InjectedFailure",
            "LeaseLostError",
            "StepDeclarationError",
            "StepKeyError",
            "StepTimeoutError",
            "TerminalCallerError",
            "WorkflowDefinitionError",
            "YieldstarError",
        ),
        _ERRORS,
    ),
    **dict.fromkeys(
        (
            "Cancelled",
            "ChildAccepted",
            "ChildRequest",
            "Delivery",
            "ErrorInfo",
            "ExecutionRecord",
            "ExecutionStatus",
            "Failed",
            "Lease",
            "ParentLink",
            "StartAccepted",
            "StartRejected",
            "StartRequestRecord",
            "StartResult",
            "StepRecord",
            "Suspended",
            "WorkflowRunOutcome",
        ),
        _MODEL,
    ),
    **dict.fromkeys(
        (
            "RetryPolicy",
            "StartedExecution",
            "StepBuilder",
            "StepDefinition",
            "Workflow",
            "World",
        ),
        "yieldstar_sim.core.authoring",
    ),
    **dict.fromkeys(
        (
            "DurableObject",
            "DurableValue",
            "DurableValueCodec",
            "DurableValueEncoding",
            "EncodedValue",
            "InvalidValue",
        ),
        "yieldstar_sim.core.codec",
    ),
    "Clock": "yieldstar_sim.core.clock",
    "DriverProfile": "yieldstar_sim.core.profiles",
    "PROFILES": "yieldstar_sim.core.profiles",
    **dict.fromkeys(
        (
            "DispatchResult",
            "Effect",
            "ExecutionEvent",
            "Ledger",
            "Registry",
            "WorkerProcessInvoker",
        ),
        _ENGINE,
    ),
    **dict.fromkeys(("FAILPOINT_NAMES", "FailPoints", "Runtime"), "yieldstar_sim.runtime"),
    **dict.fromkeys(
        (
            "Expect",
            "ExplorationReport",
            "FaultKind",
            "ReplayArtifact",
            "SimulationRun",
            "Trace",
            "TraceEvent",
            "Violation",
        ),
        "yieldstar_sim.simulation",
    ),
}

#: Names that moved and were renamed on the way: old name -> (new home, new name).
_RENAMED: dict[str, tuple[str, str]] = {"TestInvoker": (_ENGINE, "InProcessInvoker")}


if not TYPE_CHECKING:  # type checkers report a moved name as missing: the nudge we want there

    def __getattr__(name: str) -> object:
        # Outside suites written against the old, larger surface keep running; the warning
        # tells them where each name lives now.
        if name in _MOVED:
            home, new_name = _MOVED[name], name
            message = f"yieldstar_sim.{name} moved: import it from {home}"
        elif name in _RENAMED:
            home, new_name = _RENAMED[name]
            message = f"yieldstar_sim.{name} is now {home}.{new_name}"
        else:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(home), new_name)
