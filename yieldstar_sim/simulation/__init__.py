"""The deterministic simulator: kernel, faults, scenarios, trace, invariants, replay."""

from __future__ import annotations

from yieldstar_sim.simulation.artifact import ArtifactError, ReplayArtifact
from yieldstar_sim.simulation.execution import Execution
from yieldstar_sim.simulation.explorer import (
    Exhaustive,
    ExplorationReport,
    FoundViolation,
    Pct,
    Random,
    StopReason,
    Systematic,
    explore,
)
from yieldstar_sim.simulation.faults import (
    CHOICE_POINT_OPS,
    FAULT_KINDS,
    KIND_EFFECTS,
    Fault,
    FaultKind,
    FaultPlan,
    PointInfo,
)
from yieldstar_sim.simulation.invariants import Invariant, Violation, at_most_once
from yieldstar_sim.simulation.moves import Move, ScheduleMismatch
from yieldstar_sim.simulation.regression import replay
from yieldstar_sim.simulation.restore_check import RestoreMismatch
from yieldstar_sim.simulation.result import Regression, SimulationRun
from yieldstar_sim.simulation.run import simulate
from yieldstar_sim.simulation.scenario import (
    Cancel,
    Deploy,
    Expect,
    FaultPlanError,
    Prune,
    Scenario,
    ScenarioError,
    Trigger,
    expect,
)
from yieldstar_sim.simulation.scenario_clients import Client, ClientRetry
from yieldstar_sim.simulation.scenario_files import bundled_scenarios, load_scenario
from yieldstar_sim.simulation.sends import SendEvent
from yieldstar_sim.simulation.totals import Totals
from yieldstar_sim.simulation.trace import Trace, TraceEvent

__all__ = [
    "CHOICE_POINT_OPS",
    "FAULT_KINDS",
    "KIND_EFFECTS",
    "ArtifactError",
    "Cancel",
    "Client",
    "ClientRetry",
    "Deploy",
    "Execution",
    "Exhaustive",
    "Expect",
    "ExplorationReport",
    "Fault",
    "FaultKind",
    "FaultPlan",
    "FaultPlanError",
    "FoundViolation",
    "Invariant",
    "Move",
    "Pct",
    "PointInfo",
    "Prune",
    "Random",
    "Regression",
    "ReplayArtifact",
    "RestoreMismatch",
    "Scenario",
    "ScenarioError",
    "ScheduleMismatch",
    "SendEvent",
    "SimulationRun",
    "StopReason",
    "Systematic",
    "Totals",
    "Trace",
    "TraceEvent",
    "Trigger",
    "Violation",
    "at_most_once",
    "bundled_scenarios",
    "expect",
    "explore",
    "load_scenario",
    "replay",
    "simulate",
]
