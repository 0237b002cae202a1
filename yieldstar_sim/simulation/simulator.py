"""The simulator: builds a run's state, spawns its actors and runs the kernel.

The state is plain data (``state.RunState``); the actors that act on it are the workers
(``workers.py``), step attempts that take time (``attempts.py``), clients (``clients.py``) and
the scenario's own actor (``scheduled.py``). Every runtime call they make is a choice point
(``points.py``), where the fault plan may crash a worker, freeze it, lose the call's response,
fail the call or end its child process.
"""

from __future__ import annotations

import random
from functools import partial
from typing import TYPE_CHECKING

from yieldstar_sim.core.clock import ManualClock
from yieldstar_sim.engine.invoker import Registry
from yieldstar_sim.engine.world import Ledger, WorldStore
from yieldstar_sim.runtime.factory import RuntimeChoice, open_runtime, resolve_runtime
from yieldstar_sim.simulation.checkpoint import put_back, take
from yieldstar_sim.simulation.clients import client_actor, client_requests
from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT, Deadline, RunTimedOut
from yieldstar_sim.simulation.faults import Fault, FaultPlan
from yieldstar_sim.simulation.kernel import Kernel
from yieldstar_sim.simulation.recorder import Recorder
from yieldstar_sim.simulation.scheduled import SCHEDULED, scheduled_actor
from yieldstar_sim.simulation.state import RunState, WorkerClocks
from yieldstar_sim.simulation.trace import Trace
from yieldstar_sim.simulation.workers import worker

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from yieldstar_sim.simulation.checkpoint import Checkpoint
    from yieldstar_sim.simulation.scenario import Scenario


class Simulator:
    """One simulation run of a scenario: build it, ``run()`` it, read its parts.

    Its parts are the run's state (``state``, a ``RunState``), also reachable one by one:
    ``clock``, ``runtime``, ``kernel``, ``plan``, ``trace``, ``ledger``, ``store``, ``clocks``,
    ``lease_ends``, ``admissions``.
    """

    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int = 0,
        runtime: RuntimeChoice = "duckdb",
        db: str | Path | None = None,
        schedule: Sequence[str] = (),
        faults: Sequence[Fault] = (),
        scenario_faults: bool = True,
        chooser: Callable[[int, list[str]], str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        restorable: bool = False,
    ) -> None:
        self.scenario = scenario
        self.seed = seed
        self.runtime_choice = runtime
        """What the run was asked to run on (a name or a factory): a re-run uses it again."""
        self.runtime_kind = resolve_runtime(runtime)[0]
        clock = ManualClock()
        made = open_runtime(runtime, clock, db, scenario.runtime_options)
        plan = FaultPlan([*(scenario.faults if scenario_faults else ()), *faults])
        kernel = Kernel(
            clock,
            random.Random(seed),
            schedule=schedule,
            faults=plan,
            next_wake=made.next_wake_at,
            chooser=chooser,
        )
        profile = scenario.profile
        self.state = RunState(
            scenario=scenario,
            seed=seed,
            clock=clock,
            runtime=made,
            kernel=kernel,
            plan=plan,
            trace=Trace(),
            ledger=Ledger(),
            store=WorldStore(),
            deadline=Deadline(timeout),
            registries=[(0.0, Registry(scenario.workflows, scenario.steps, profile))]
            + [
                (deploy.at, Registry(deploy.workflows, scenario.steps, profile))
                for deploy in scenario.deploys
            ],
            clocks=WorkerClocks(clock.now),
        )
        state = self.state
        if restorable:
            state.recorder = Recorder(kernel, clock)
            state.recorder.mutes.append(state.trace.mute)
        # The state's parts by name: the same objects, for readers of a finished run.
        self.clock, self.runtime, self.kernel, self.plan = clock, made, kernel, plan
        self.trace, self.ledger, self.store = state.trace, state.ledger, state.store
        self.deadline, self.clocks, self.lease_ends = state.deadline, state.clocks, state.lease_ends
        self.admissions = state.admissions
        self.finished = False
        self.stopped = "quiescent"
        """Why the run ended: ``quiescent`` (it finished), ``max_time``, ``max_points`` or
        ``timeout`` (the wall-clock limit)."""

    def run(self) -> None:
        """Run the scenario until nothing is left to do, or its time or point budget ends."""
        self.start()
        self.advance(close=True)

    def start(self) -> None:
        """Spawn the scenario's actors: its own, each worker, each client."""
        state, scenario = self.state, self.scenario
        state.spawn(SCHEDULED, partial(scheduled_actor, state))
        for name in scenario.worker_names:
            state.spawn(name, partial(worker, state, name))
        for name, requests in client_requests(scenario).items():
            state.spawn(name, partial(client_actor, state, name, requests))

    def advance(self, *, close: bool) -> None:
        """Run the kernel until nothing is left to do, or the time or point budget ends (an
        exception from the kernel's chooser leaves it where it was asked); with ``close``,
        close every actor after."""
        kernel, deadline, scenario = self.kernel, self.deadline, self.scenario
        with deadline:
            try:
                stopped = kernel.run(
                    until=scenario.max_time,
                    max_points=scenario.point_limit,
                    # No limit, nothing to ask before each point.
                    stop=None if deadline.seconds is None else lambda: deadline.expired,
                )
                self.stopped = {"until": "max_time", "stopped": "timeout"}.get(stopped, stopped)
                self.finished = True
            except RunTimedOut:
                self.stopped = "timeout"
                self.finished = True
            finally:
                if close:
                    try:
                        kernel.close()
                    except RunTimedOut:
                        self.stopped = "timeout"  # workflow code that spins as it is abandoned
                    self.finished = True

    def checkpoint(self) -> Checkpoint:
        """The run's state now, to ``restore`` later (a run made ``restorable``)."""
        return take(self.state)

    def restore(self, saved: Checkpoint) -> int:
        """Put the run back as ``checkpoint`` saved it, to go on from there; returns how many
        actors were made again."""
        made = put_back(self.state, saved)
        self.deadline.expired, self.deadline.where = False, None
        self.finished, self.stopped = False, "quiescent"
        return made

    def incomplete_reason(self) -> str | None:
        """Why the run did not finish, in words (None when it did)."""
        scenario = self.scenario
        now = self.clock.now()
        if self.stopped == "max_time":
            return (
                f"cut at max_time={scenario.max_time:g}s of virtual time with work still due "
                f"(after {self.kernel.points} choice points; a longer story raises it: "
                "ys.Scenario(..., max_time=...))"
            )
        if self.stopped == "max_points":
            return (
                f"cut after max_points={scenario.point_limit} choice points at t={now:g} (a "
                "bound against a run that never settles; a longer one raises it: "
                "ys.Scenario(..., max_points=...))"
            )
        if self.stopped == "timeout":
            where = self.deadline.where or f"the simulator at choice point {self.kernel.points}"
            return f"timed out after {self.deadline.seconds:g}s of wall-clock time in {where}"
        return None
