"""Running plans here or in other processes: shards dealt round-robin to a process pool of
our own or to any ``concurrent.futures.Executor``, results put back in plan order."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import pickle
from typing import TYPE_CHECKING

from yieldstar_sim.engine.worker import frozen_heap
from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT
from yieldstar_sim.simulation.explorer.plans import Outcome, Plan, run_plan
from yieldstar_sim.simulation.explorer.prefix import PrefixSharing, supported
from yieldstar_sim.simulation.explorer.replays import shipped
from yieldstar_sim.simulation.scenario_files import load_scenario

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.explorer.replays import Replay
    from yieldstar_sim.simulation.scenario import Scenario

#: Scenarios a shard process holds: the one its own pool handed over (key None), and those it
#: loaded by reference for other executors' tasks (a worker may serve several explorations).
_SHARD_SCENARIOS: dict[str | None, Scenario] = {}


def _shard_init(scenario: Scenario | None, reference: str | None) -> None:
    _SHARD_SCENARIOS[None] = scenario if scenario is not None else load_scenario(str(reference))


def shard_scenario(reference: str | None) -> Scenario:
    """The scenario a task in a shard process runs: its own pool's, or loaded by reference."""
    scenario = _SHARD_SCENARIOS.get(reference)
    if scenario is None:
        scenario = _SHARD_SCENARIOS[reference] = load_scenario(str(reference))
    return scenario


def _shard_run(
    plans: list[Plan],
    runtime: RuntimeChoice,
    expand: bool,
    reference: str | None,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> list[Outcome]:
    scenario = shard_scenario(reference)
    return [run_plan(scenario, plan, runtime, expand=expand, timeout=timeout) for plan in plans]


def _shard_digest(replay: Replay, reference: str | None) -> str | None:
    return replay.digest(shard_scenario(reference))


class Runner:
    """Runs plans in order, here or on an executor; results come back in plan order."""

    def __init__(
        self,
        scenario: Scenario,
        runtime: RuntimeChoice,
        jobs: int,
        executor: concurrent.futures.Executor | None,
        timeout: float | None = DEFAULT_TIMEOUT,
        *,
        prefix_sharing: bool | None = None,
    ) -> None:
        self.scenario = scenario
        self.runtime = runtime
        # What crosses to another process names the runtime when it can ("module:factory"):
        # a factory object there would have to pickle.
        self.shipped: RuntimeChoice = shipped(runtime) or runtime
        self.timeout = timeout
        # An executor of someone else's (a cluster's) gets several shards per chunk even with
        # jobs=1: one task per schedule would cost more in scheduling than in simulating.
        self.jobs = max(1, jobs) if executor is None else max(4, jobs)
        self._asked = self.jobs
        self._own: concurrent.futures.Executor | None = None
        self.executor = executor
        self.sharing: PrefixSharing | None = None
        """Runs sweeps of plans by forking one run where prefixes are long (one process,
        the memory runtime, POSIX; ``prefix_sharing=False`` switches it off)."""
        if (
            prefix_sharing is not False
            and executor is None
            and self.jobs == 1
            and supported(runtime)
        ):
            self.sharing = PrefixSharing(scenario, runtime, timeout, forced=prefix_sharing is True)

    def each(
        self,
        plans: Sequence[Plan],
        *,
        expand: bool,
        take: Callable[[Plan, Outcome], bool],
        share: bool = False,
    ) -> None:
        """Run ``plans``, handing each outcome to ``take`` in plan order until it returns
        False; with ``share``, sweeps of plans share their prefixes where that pays."""
        if share and self.sharing is not None:
            self.sharing.run(plans, expand=expand, take=take)
            return
        chunk = 1 if self.jobs == 1 else self.jobs * 64
        for start in range(0, len(plans), chunk):
            batch = plans[start : start + chunk]
            for plan, outcome in zip(batch, self.run(batch, expand=expand), strict=True):
                if not take(plan, outcome):
                    return

    def _size_pool(self, plans: int) -> None:
        """Size our own process pool for a batch of ``plans``: never more processes than plans
        (``jobs=1000`` for 20 plans forks 20, not 1000); a bigger batch later grows it."""
        wanted = min(self._asked, plans)
        if self._own is not None and wanted <= self.jobs:
            return
        self.close()
        self.jobs = wanted
        methods = multiprocessing.get_all_start_methods()
        if "fork" in methods:
            # fork hands the scenario (lambdas and all) to the workers without pickling it
            context = multiprocessing.get_context("fork")
            self._own = concurrent.futures.ProcessPoolExecutor(
                self.jobs,
                mp_context=context,
                initializer=_shard_init,
                initargs=(self.scenario, None),
            )
        else:
            self._own = concurrent.futures.ProcessPoolExecutor(
                self.jobs, initializer=_shard_init, initargs=(None, self._reference())
            )
        self.executor = self._own

    def own_pool(self, size: int) -> str | None:
        """Make room for ``size`` tasks at once: our own pool of that many processes, unless
        an executor was given. Returns what a task loads the scenario by (None: our own
        pool's processes hold it already)."""
        if self._own is None and self.executor is not None:
            return self._reference()
        self._asked = max(self._asked, size)
        self._size_pool(size)
        return None

    def _reference(self) -> str:
        if not self.scenario.ref:
            raise ValueError(
                "running shards in other processes needs a scenario loaded from a file or by "
                "name (ys.load_scenario), so that each process can load it"
            )
        return self.scenario.ref

    def run(self, plans: Sequence[Plan], *, expand: bool = False) -> list[Outcome]:
        """Run ``plans`` (here, or in shards on the executor); outcomes in plan order."""
        if self.executor is self._own and self._asked > 1 and len(plans) > 1:
            self._size_pool(len(plans))
        if self.executor is None or (self.executor is self._own and len(plans) == 1):
            return [
                run_plan(self.scenario, plan, self.runtime, expand=expand, timeout=self.timeout)
                for plan in plans
            ]
        reference = self.scenario.ref if self._own is None else None
        if self._own is None:
            self._reference()
        # One shard per job, plans dealt round-robin: a schedule costs about a millisecond, too
        # little to ship one at a time. Results are put back in plan order.
        shards = [list(plans[job :: self.jobs]) for job in range(self.jobs)]
        # Submitting may fork the pool's processes: they must not collect inherited garbage.
        with frozen_heap():
            futures = [
                self.executor.submit(
                    _shard_run, shard, self.shipped, expand, reference, self.timeout
                )
                for shard in shards
                if shard
            ]
        try:
            done = [future.result() for future in futures]
        except (pickle.PicklingError, AttributeError, TypeError) as error:
            if self.shipped is self.runtime and not isinstance(self.runtime, str):
                raise ValueError(
                    "shards in other processes need a runtime factory they can import: a "
                    "module-level function or class, or its 'package.module:factory' name, "
                    f"not {self.shipped!r} ({error})"
                ) from None
            raise
        return [done[i % self.jobs][i // self.jobs] for i in range(len(plans))]

    def digests(self, replays: Sequence[Replay]) -> list[str | None]:
        """The trace digest of each confirmation replay, in order: on the executor, one task
        per replay (the ones off the memory runtime, the slow ones, handed out first), when
        there is more than one and each runtime can be named in another process; else here."""
        if self.executor is self._own and self._asked > 1 and len(replays) > 1:
            self._size_pool(len(replays))
        crossing = [c for c in (replay.crossing() for replay in replays) if c is not None]
        if self.executor is None or len(replays) < 2 or len(crossing) < len(replays):
            return [replay.digest(self.scenario) for replay in replays]
        reference = self.scenario.ref if self._own is None else None
        if self._own is None:
            self._reference()
        slowest_first = sorted(range(len(replays)), key=lambda i: replays[i].runtime == "memory")
        futures: dict[int, concurrent.futures.Future[str | None]] = {}
        with frozen_heap():  # submitting may fork the pool's processes (see run)
            for i in slowest_first:
                futures[i] = self.executor.submit(_shard_digest, crossing[i], reference)
        return [futures[i].result() for i in range(len(replays))]

    def close(self, *, cancel: bool = False) -> None:
        """Shut down our own process pool, if any (``cancel`` drops queued shards)."""
        if self._own is not None:
            self._own.shutdown(cancel_futures=cancel)
            self._own = self.executor = None
