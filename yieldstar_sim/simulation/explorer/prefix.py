"""Prefix sharing: plans that differ from their parent only after choice point k share the
parent's run up to k.

The systematic search's plans come in *sweeps*: one parent plan, and one more fault each at
increasing choice points past the parent's own faults. One run of the parent passes every
point of a sweep, and each plan goes on from the parent's run at its point (nothing before
that point could tell the two apart), in one of two ways:

* *Restoring* (``restoring.py``), where the runtime can save its records (the memory runtime)
  and the plans' points are not read (the search's last level, most of its plans): the
  parent's run saves its state at the point, runs each plan on, and puts the state back.
* *Forking* elsewhere (a level whose points are read to place the next level's faults): at
  each plan's point the parent forks a child process that installs the plan's faults, runs to
  the end and sends its outcome back over a pipe. Forking costs 5-8 ms here, more than a
  whole short schedule, so a plan whose prefix replays faster than that is replayed instead
  (the threshold is measured once per exploration, by timing the first sweep's first plan,
  which is replayed anyway). Like shards in other processes, a forked schedule's user code (an
  invariant that counts its calls in a module-level variable) changes that process's state,
  not the explorer's. Each child re-arms the run's wall-clock limit for what its prefix left
  of it, and the parent's limit stops while it waits.

Only on the memory runtime (DuckDB's connections and threads do not survive a fork, and a
runtime of your own may hold anything), on POSIX, in one process. A plan neither way
delivered (the parent's run ended first, a child failed) is replayed: the outcomes are always
the replaying explorer's.
"""

from __future__ import annotations

import gc
import math
import os
import pickle
import signal
import sys
import time
import warnings
from typing import TYPE_CHECKING, Any, NoReturn

from yieldstar_sim.runtime.factory import resolve_runtime
from yieldstar_sim.simulation.explorer.plans import (
    Plan,
    _simulator,
    keys_from,
    observe_points,
    outcome_of,
    run_plan,
)
from yieldstar_sim.simulation.explorer.restoring import serve as serve_restoring

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.explorer.plans import Outcome
    from yieldstar_sim.simulation.faults import FaultPlan
    from yieldstar_sim.simulation.kernel import Point
    from yieldstar_sim.simulation.scenario import Scenario
    from yieldstar_sim.simulation.simulator import Simulator

    Take = Callable[[Plan, Outcome], bool]
    """Takes each plan's outcome, in plan order; False stops the search."""

FORK_SECONDS = 0.006
"""What forking a child and collecting its outcome costs here (4.4-8 ms measured): a prefix
that replays in less is replayed."""


def threshold(seconds: float, points: int) -> int:
    """The first choice point worth forking at, for a run of ``points`` points that took
    ``seconds``: where replaying the prefix costs ``FORK_SECONDS``."""
    per_point = seconds / max(points, 1)
    return math.ceil(FORK_SECONDS / max(per_point, 1e-9))


def supported(runtime: RuntimeChoice) -> bool:
    """Whether runs on ``runtime`` may be forked here: the memory runtime, on POSIX."""
    return (
        hasattr(os, "fork")
        and sys.platform != "win32"
        and isinstance(runtime, str)
        and resolve_runtime(runtime)[0] == "memory"
    )


def sweeps(plans: Sequence[Plan]) -> list[tuple[Plan | None, list[Plan]]]:
    """``plans`` cut, in order, into runs of one parent and one more fault each (placed by
    index, at non-decreasing points past the parent's); a plan of no sweep is alone, with no
    parent (it is replayed)."""
    found: list[tuple[Plan | None, list[Plan]]] = []
    for plan in plans:
        parent = _parent(plan)
        if parent is not None and found:
            last_parent, group = found[-1]
            last = group[-1].faults[-1].at
            at = plan.faults[-1].at
            if last_parent == parent and last is not None and at is not None and at >= last:
                group.append(plan)
                continue
        found.append((parent, [plan]))
    return found


def _parent(plan: Plan) -> Plan | None:
    """The plan without its last fault, when every fault is placed by index and the last one
    comes after the others; None otherwise."""
    if not plan.faults or plan.priorities or plan.change_points or plan.schedule:
        return None
    points = [fault.at for fault in plan.faults]
    if any(at is None for at in points):
        return None
    if any(at >= points[-1] for at in points[:-1]):  # type: ignore[operator]
        return None
    return Plan(-1, plan.seed, plan.faults[:-1])


class PrefixSharing:
    """Runs the plans of a level, sweep by sweep, forking where the prefix is long enough."""

    def __init__(
        self, scenario: Scenario, runtime: RuntimeChoice, timeout: float | None, *, forced: bool
    ) -> None:
        self.scenario = scenario
        self.runtime = runtime
        self.timeout = timeout
        self.forced = forced
        """Fork at every point, however short the prefix (for tests: every point is shared)."""
        self.threshold: int | None = 0 if forced else None
        """The first choice point worth forking at (measured on the first sweep)."""

    def _replay(self, plan: Plan, expand: bool) -> Outcome:
        return run_plan(self.scenario, plan, self.runtime, expand=expand, timeout=self.timeout)

    def run(self, plans: Sequence[Plan], *, expand: bool, take: Take) -> None:
        """Run ``plans``, handing each outcome to ``take`` in plan order until it says stop."""
        for parent, group in sweeps(plans):
            rest: Sequence[Plan] = group
            if parent is not None and not expand and len(group) > 1:
                served = serve_restoring(
                    self.scenario, self.runtime, self.timeout, parent, group, take=take
                )
                if served is not None:
                    delivered, stopped = served
                    if stopped:
                        return
                    # Left to forking: points where the actors' logs grew too long to rebuild
                    # for less than a fork, or a restored run that went wrong.
                    rest = group[delivered:]
            if parent is not None and len(rest) > 1 and self.threshold is None:
                # The first plan left is replayed anyway (of those left, its prefix is the
                # shortest): timed, it tells where forking starts to pay. No run is added for it, so
                # user code (an invariant counting its calls) sees the runs replaying makes.
                started = time.perf_counter()
                outcome = self._replay(rest[0], expand)
                self.threshold = threshold(time.perf_counter() - started, outcome.points)
                if not take(rest[0], outcome):
                    return
                rest = rest[1:]
            forked: list[Plan] = []
            if parent is not None and len(rest) > 1:
                at = self.threshold or 0
                forked = [plan for plan in rest if (plan.faults[-1].at or 0) >= at]
            for plan in rest[: len(rest) - len(forked)]:
                if not take(plan, self._replay(plan, expand)):
                    return
            if parent is not None and forked and not self._serve(parent, forked, expand, take):
                return

    def _serve(self, parent: Plan, plans: list[Plan], expand: bool, take: Take) -> bool:
        """Run ``parent``, forking each of ``plans`` at its point; False when ``take`` said
        stop."""
        simulator = _simulator(self.scenario, parent, self.runtime, self.timeout)
        seen = observe_points(simulator, expand=expand, first_key=keys_from(parent))
        forks = _Forks(simulator, plans, take)
        simulator.kernel.faults = forks
        try:
            simulator.run()
        except _SweepDone:
            pass
        except BaseException:
            if forks.child is not None:
                os._exit(1)  # the parent replays this plan: the error comes back there
            raise
        if forks.child is not None:
            forks.send(outcome_of_child(simulator, forks.child, seen))
        simulator.runtime.close()
        if forks.stopped:
            return False
        # Plans the parent's run never reached (it ended first) or no child delivered.
        return all(take(plan, self._replay(plan, expand)) for plan in plans[forks.delivered :])


def outcome_of_child(simulator: Simulator, plan: Plan, seen: Any) -> Outcome | None:
    """The forked child's outcome (None if making it failed: the parent replays the plan)."""
    try:
        return outcome_of(simulator, plan.index, seen)
    except BaseException:
        return None


class _SweepDone(BaseException):
    """Ends the parent's run: every plan of the sweep is forked, or the search stops."""


class _Forks:
    """The parent run's fault source: forks a child at each plan's point, else the parent's
    own faults."""

    def __init__(self, simulator: Simulator, plans: list[Plan], take: Take) -> None:
        self.simulator = simulator
        self.own: FaultPlan = simulator.plan
        self.plans = plans
        self.take = take
        self.delivered = 0
        """How many plans' outcomes went to ``take``."""
        self.stopped = False
        self.child: Plan | None = None
        """In a forked child: the plan it runs."""
        self._pipe = -1

    def fault_at(self, index: int, actor: str, point: Point) -> Any:
        """The fault at choice point ``index``: forked children first, then the parent's."""
        plans = self.plans
        while self.delivered < len(plans) and plans[self.delivered].faults[-1].at == index:
            plan = plans[self.delivered]
            outcome = self._fork(plan)
            if self.child is not None:
                return self.simulator.plan.fault_at(index, actor, point)
            if outcome is None:
                raise _SweepDone  # replay it, and the rest, after the parent's run
            self.delivered += 1
            if not self.take(plan, outcome):
                self.stopped = True
                raise _SweepDone
        if self.delivered == len(plans):
            raise _SweepDone  # nothing left to fork: the rest of the parent's run is not needed
        return self.own.fault_at(index, actor, point)

    def _fork(self, plan: Plan) -> Outcome | None:
        simulator = self.simulator
        # Python 3.12 warns on forking with threads alive (the deadline's watchdog): the child
        # takes no lock another thread may hold (the deadline's is made anew) and exits with
        # os._exit. The child never collects what it inherited (``frozen_heap``: garbage of
        # DuckDB's left by earlier runs would crash it), so the parent freezes the heap for the
        # fork and unfreezes it at once; the child keeps it frozen.
        read, write = os.pipe()
        gc.freeze()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except OSError:  # out of processes or memory: replay instead
            gc.unfreeze()
            os.close(read)
            os.close(write)
            return None
        if pid != 0:
            gc.unfreeze()
        else:
            os.close(read)
            self.child, self._pipe = plan, write
            simulator.plan = self.own.extended(plan.faults[len(self.own.faults) :])
            simulator.kernel.faults = simulator.plan
            simulator.deadline.after_fork()
            return None
        os.close(write)
        reaped = False
        try:
            with simulator.deadline.paused():
                chunks = []
                while chunk := os.read(read, 1 << 16):
                    chunks.append(chunk)
                os.waitpid(pid, 0)
                reaped = True
        finally:
            os.close(read)
            if not reaped:  # interrupted (Ctrl-C): the child must not outlive the search
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        data = b"".join(chunks)
        outcome: Outcome | None = pickle.loads(data) if data else None
        return outcome

    def send(self, outcome: Outcome | None) -> NoReturn:
        """In the child: send the outcome to the parent and exit (no atexit, no flushing of
        buffers the parent owns)."""
        try:
            if outcome is not None:
                data = memoryview(pickle.dumps(outcome))
                while data:
                    data = data[os.write(self._pipe, data) :]
        finally:
            os._exit(0)
