"""The engine: dispatcher, invokers (in-process and worker process), world and ledger."""

from __future__ import annotations

from yieldstar_sim.engine.body_world import BodyWorld, Transaction, WorldError
from yieldstar_sim.engine.dispatcher import Dispatcher, DispatchResult
from yieldstar_sim.engine.engine import Engine
from yieldstar_sim.engine.invoker import (
    ExecutionEvent,
    InProcessInvoker,
    Invoker,
    Registry,
    run_delivery,
)
from yieldstar_sim.engine.worker import WorkerProcessInvoker
from yieldstar_sim.engine.world import BodyContext, Effect, EngineWorld, Ledger

__all__ = [
    "BodyContext",
    "BodyWorld",
    "DispatchResult",
    "Dispatcher",
    "Effect",
    "Engine",
    "EngineWorld",
    "ExecutionEvent",
    "InProcessInvoker",
    "Invoker",
    "Ledger",
    "Registry",
    "Transaction",
    "WorkerProcessInvoker",
    "WorldError",
    "run_delivery",
]
