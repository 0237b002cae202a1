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

from yieldstar_sim.clock import Clock, ManualClock
from yieldstar_sim.codec import (
    DurableObject,
    DurableValue,
    DurableValueCodec,
    DurableValueEncoding,
    DurableValueError,
    EncodedValue,
    InvalidValue,
    durable_value_codec,
)
from yieldstar_sim.model import (
    AdmissionErrorCode,
    Cancelled,
    Completed,
    Delivery,
    ErrorInfo,
    ExecutionAdmissionError,
    ExecutionNotFoundError,
    ExecutionRecord,
    ExecutionStateError,
    ExecutionStatus,
    Failed,
    InfrastructureError,
    InjectedFailure,
    InvalidIDError,
    Lease,
    LeaseLostError,
    ParentLink,
    RequestId,
    StartAccepted,
    StartRejected,
    StartRequest,
    StartRequestRecord,
    StartResult,
    StepRecord,
    Suspended,
    WorkflowRunOutcome,
    WorkflowStartError,
    WorkflowStartErrorCode,
    YieldstarError,
)
from yieldstar_sim.runtime import (
    FAILPOINT_NAMES,
    DuckDBRuntime,
    ExecutionClient,
    FailPoints,
    MemoryRuntime,
    Runtime,
    WorkflowStartClient,
)

__version__ = "0.1.0"

__all__ = [
    "FAILPOINT_NAMES",
    "AdmissionErrorCode",
    "Cancelled",
    "Clock",
    "Completed",
    "Delivery",
    "DuckDBRuntime",
    "DurableObject",
    "DurableValue",
    "DurableValueCodec",
    "DurableValueEncoding",
    "DurableValueError",
    "EncodedValue",
    "ErrorInfo",
    "ExecutionAdmissionError",
    "ExecutionClient",
    "ExecutionNotFoundError",
    "ExecutionRecord",
    "ExecutionStateError",
    "ExecutionStatus",
    "FailPoints",
    "Failed",
    "InfrastructureError",
    "InjectedFailure",
    "InvalidIDError",
    "InvalidValue",
    "Lease",
    "LeaseLostError",
    "ManualClock",
    "MemoryRuntime",
    "ParentLink",
    "RequestId",
    "Runtime",
    "StartAccepted",
    "StartRejected",
    "StartRequest",
    "StartRequestRecord",
    "StartResult",
    "StepRecord",
    "Suspended",
    "WorkflowRunOutcome",
    "WorkflowStartClient",
    "WorkflowStartError",
    "WorkflowStartErrorCode",
    "YieldstarError",
    "__version__",
    "durable_value_codec",
]
