"""Runtime adapters: one Protocol (``ExecutionClient`` + ``WorkflowStartClient``), two adapters."""

from __future__ import annotations

from yieldstar_sim.runtime._common import encode_start_params
from yieldstar_sim.runtime.duckdb_runtime import DuckDBRuntime
from yieldstar_sim.runtime.failpoints import FAILPOINT_NAMES, FailPoints
from yieldstar_sim.runtime.memory import MemoryRuntime
from yieldstar_sim.runtime.protocol import (
    ExecutionClient,
    ReportsActions,
    Runtime,
    RuntimeAction,
    WorkflowStartClient,
)

__all__ = [
    "FAILPOINT_NAMES",
    "DuckDBRuntime",
    "ExecutionClient",
    "FailPoints",
    "MemoryRuntime",
    "ReportsActions",
    "Runtime",
    "RuntimeAction",
    "WorkflowStartClient",
    "encode_start_params",
]
