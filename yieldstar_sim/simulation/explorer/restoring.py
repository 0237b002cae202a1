"""A sweep served by restoring states: one run of the sweep's parent stops at each plan's
choice point, saves the run's state there (``checkpoint.py``), runs each plan placed at that
point on from it, and puts the state back to go on to the next point.

The exhaustive search restores states the same way. Against forking a child per plan (what
``prefix.py`` does where it cannot restore), nothing is copied by the operating system: a
plan costs its own suffix, the rebuilding of the actors that moved in it (from what each was
told) and the checks of its outcome. Only on a runtime that can save its records (the memory
runtime) and for plans whose points are not read (``expand`` off: the search's last level,
most of its plans). A run that cannot be restored, that went wrong while restored, or whose
actors' logs grew too long to rebuild for less than a fork (``MAX_LOG``) leaves the plans not
delivered to the caller.

Each plan's run from its point has the whole wall-clock limit (``timeout``), as each move of
the exhaustive search has; its prefix was run once, under the parent's.
"""

from __future__ import annotations

import contextlib
from itertools import groupby
from typing import TYPE_CHECKING

from yieldstar_sim.simulation.checkpoint import restorable
from yieldstar_sim.simulation.explorer.plans import _simulator, observe_points, outcome_of

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.explorer.plans import Outcome, Plan
    from yieldstar_sim.simulation.faults import FaultPlan
    from yieldstar_sim.simulation.kernel import Kernel
    from yieldstar_sim.simulation.scenario import Scenario
    from yieldstar_sim.simulation.simulator import Simulator


MAX_LOG = 400
"""The longest actor log (resumptions and answers since its last ``reset``: a worker's current
delivery) worth rebuilding after each plan instead of forking one: about 10 us an entry here,
against ``prefix.FORK_SECONDS`` for a fork. A plan past such a point is left to the caller
(at 1,000 steps of one delivery, restoring at every point took 48 s, forking 41 s)."""


class _AtPoint(Exception):
    """The parent's run reached the choice point of the next plans (raised by the chooser,
    which leaves the kernel where it was asked)."""


class _StopAt:
    """The parent run's chooser: stops the run at choice point ``at``, and elsewhere chooses
    as the kernel does with no chooser (the only one ready, else from the kernel's random
    numbers), so the run is the one a replay makes."""

    __slots__ = ("at", "kernel")

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.at = -1

    def __call__(self, index: int, ready: list[str]) -> str:
        if index == self.at:
            raise _AtPoint
        if len(ready) == 1:
            return ready[0]
        return self.kernel.rng.choice(ready)


def serve(
    scenario: Scenario,
    runtime: RuntimeChoice,
    timeout: float | None,
    parent: Plan,
    plans: Sequence[Plan],
    *,
    take: Callable[[Plan, Outcome], bool],
) -> tuple[int, bool] | None:
    """Run ``plans`` (each ``parent`` with one more fault, at non-decreasing choice points)
    from one run of ``parent``, handing each outcome to ``take`` in order.

    Returns how many plans were delivered and whether ``take`` said stop; None when the run
    cannot be restored (nothing was delivered)."""
    simulator = _simulator(scenario, parent, runtime, timeout, restorable=True)
    if not restorable(simulator.state):
        simulator.runtime.close()
        return None
    seen = observe_points(simulator, expand=False)
    ops = seen[2]
    kernel = simulator.kernel
    stop = _StopAt(kernel)
    own = simulator.plan
    delivered = 0
    try:
        simulator.start()
        for at, group in groupby(plans, key=lambda plan: plan.faults[-1].at):
            kernel.chooser, kernel.always_choose = stop, True
            stop.at = -1 if at is None else at
            try:
                simulator.advance(close=False)
            except _AtPoint:
                pass
            else:
                break  # the parent's run ended before this point: the caller runs the rest
            # Saved with no chooser of ours, so that the kernel's random state is saved too.
            kernel.chooser, kernel.always_choose = None, False
            if _longest_log(simulator) > MAX_LOG:
                break  # each plan would rebuild an actor for more than a fork costs
            saved = simulator.checkpoint()
            passed = len(ops)
            for plan in group:
                _use(simulator, own.extended(plan.faults[len(own.faults) :]))
                try:
                    with _unrecorded(simulator):
                        simulator.advance(close=False)
                    outcome = outcome_of(simulator, plan.index, seen, close=False)
                except Exception:
                    # Left to the caller's replay: an error of the scenario's comes back
                    # there, with nothing of a restored run's state in it.
                    return delivered, False
                _use(simulator, own)
                simulator.restore(saved)
                del ops[passed:]
                delivered += 1
                if not take(plan, outcome):
                    return delivered, True
    finally:
        _close(simulator)
    return delivered, False


@contextlib.contextmanager
def _unrecorded(simulator: Simulator) -> Iterator[None]:
    """Run a plan on from a saved state without recording its actors: it is never saved, and
    recording costs a sixth of a run. What the restore after it needs is which actors moved
    (resumed, ended, replaced): their logs are dropped, so that it makes them again from the
    saved ones. Actors made again lazily (``Deferred``) are made first, while the recorder can
    feed them."""
    state, kernel = simulator.state, simulator.kernel
    recorder, on_resume = state.recorder, kernel.on_resume
    assert recorder is not None, "a restorable run records its actors"
    kernel.make_deferred()
    before = kernel.generators()
    moved: set[str] = set()
    state.recorder, kernel.on_resume = None, lambda name, value: moved.add(name)
    try:
        yield
    finally:
        state.recorder, kernel.on_resume = recorder, on_resume
        after = kernel.generators()
        for name, actor in before.items():
            if name in moved or after.get(name) is not actor:
                recorder.logs.pop(name, None)


def _longest_log(simulator: Simulator) -> int:
    recorder = simulator.state.recorder
    assert recorder is not None, "a restorable run records its actors"
    return max((len(log.entries) for log in recorder.logs.values()), default=0)


def _use(simulator: Simulator, plan: FaultPlan) -> None:
    """Make ``plan`` the run's fault plan: the one the kernel asks, the one saved and restored
    with the run's state, and the one its outcome reads."""
    simulator.plan = simulator.state.plan = simulator.kernel.faults = plan


def _close(simulator: Simulator) -> None:
    try:
        simulator.kernel.close()
    finally:
        simulator.runtime.close()
