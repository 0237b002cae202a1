"""The engine: dispatcher, invokers (in-process and worker process), world and ledger."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

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
from yieldstar_sim.engine.world import BodyContext, BodyWorld, Effect, EngineWorld, Ledger

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
    "WorkerProcessInvoker",
    "run_delivery",
]

if not TYPE_CHECKING:  # type checkers report the old name as missing, which is what we want

    def __getattr__(name: str) -> object:
        # The in-process invoker's first name, kept working with a warning for outside code.
        if name == "TestInvoker":
            warnings.warn(
                "TestInvoker is now InProcessInvoker (yieldstar_sim.engine.InProcessInvoker)",
                DeprecationWarning,
                stacklevel=2,
            )
            return InProcessInvoker
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
