"""The deterministic simulator: kernel, faults, scenarios, trace, invariants, replay."""

from __future__ import annotations

from yieldstar_sim.simulation.artifact import ArtifactError, ReplayArtifact
from yieldstar_sim.simulation.explorer import ExplorationReport, FoundViolation, explore
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
from yieldstar_sim.simulation.regression import replay
from yieldstar_sim.simulation.result import Regression, SimulationRun
from yieldstar_sim.simulation.run import simulate
from yieldstar_sim.simulation.scenario import (
    Cancel,
    Client,
    ClientRetry,
    Deploy,
    Expect,
    FaultPlanError,
    Prune,
    Scenario,
    ScenarioError,
    Trigger,
    expect,
)
from yieldstar_sim.simulation.scenario_files import bundled_scenarios, load_scenario
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
    "Expect",
    "ExplorationReport",
    "Fault",
    "FaultKind",
    "FaultPlan",
    "FaultPlanError",
    "FoundViolation",
    "Invariant",
    "PointInfo",
    "Prune",
    "Regression",
    "ReplayArtifact",
    "Scenario",
    "ScenarioError",
    "SimulationRun",
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
