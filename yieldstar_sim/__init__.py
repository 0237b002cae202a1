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

from yieldstar_sim.core.authoring import StepRunner, workflow
from yieldstar_sim.core.clock import ManualClock
from yieldstar_sim.core.codec import durable_value_codec
from yieldstar_sim.core.events import EventRequest, ReceivedEvent
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
from yieldstar_sim.core.profiles import DriverProfile
from yieldstar_sim.core.steps import Permanent, define_step
from yieldstar_sim.engine import Engine, WorldError
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
    Exhaustive,
    Fault,
    FaultPlanError,
    Pct,
    Prune,
    Random,
    Scenario,
    ScenarioError,
    SendEvent,
    Systematic,
    Trigger,
    at_most_once,
    expect,
    explore,
    load_scenario,
    replay,
    simulate,
)
from yieldstar_sim.widgets import Stepper

__version__ = "0.1.0"


def _compose() -> None:
    """The composition root: runs and exploration reports write, runs draw their timelines,
    reports say their summaries and state spaces draw, through the views, which the simulation
    layer never imports. They are handed over here, once, when the package loads: no module
    registers anything as a side effect of being imported."""
    from yieldstar_sim.simulation.exporters import register_drawer, register_exporter
    from yieldstar_sim.views.exploration import exploration_summary
    from yieldstar_sim.views.export import export_file
    from yieldstar_sim.views.figures import draw_focus
    from yieldstar_sim.views.grid import report_html
    from yieldstar_sim.views.review import write_review
    from yieldstar_sim.views.statespace import draw_state_graph, state_graph

    register_exporter("run", export_file)
    register_exporter("report", write_review)
    register_drawer("timeline", draw_focus)
    register_drawer("summary", exploration_summary)
    register_drawer("report_html", report_html)
    register_drawer("state_graph", state_graph)
    register_drawer("draw_state_graph", draw_state_graph)


_compose()

# The names the README, the notebooks, the docs and the bundled scenarios write as ``ys.X``, and
# the surface docs/decisions.md promises; tests/unit/test_public_api.py pins this list.
__all__ = [
    "Cancel",
    "ChildFailedError",
    "Client",
    "ClientRetry",
    "Completed",
    "Deploy",
    "DriverProfile",
    "DuckDBRuntime",
    "Engine",
    "EventRequest",
    "ExecutionAdmissionError",
    "ExecutionClient",
    "Exhaustive",
    "Fault",
    "FaultPlanError",
    "InvalidIDError",
    "ManualClock",
    "MemoryRuntime",
    "NondeterminismError",
    "Pct",
    "Permanent",
    "ProfileError",
    "Prune",
    "Random",
    "ReceivedEvent",
    "RequestId",
    "Scenario",
    "ScenarioError",
    "SendEvent",
    "StartRequest",
    "StepError",
    "StepRunner",
    "Stepper",
    "Systematic",
    "Trigger",
    "WorkflowCancelledError",
    "WorkflowStartClient",
    "WorkflowStartError",
    "WorkflowStartErrorCode",
    "WorldError",
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
