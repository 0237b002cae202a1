"""Where a plan strategy's runs happen: here, on one ``Execution`` restored between them, or in
other processes (a pool of our own, or any ``concurrent.futures.Executor``), each running whole
sweeps and plans and sending their outcomes back, which come back in order; and the
confirmation's runs (``Replay``), answered with their traces' digests."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import multiprocessing.util
import pickle
import sys
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core import interrupts
from yieldstar_sim.engine.worker import frozen_heap
from yieldstar_sim.runtime.factory import BUNDLED, resolve_runtime
from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT
from yieldstar_sim.simulation.execution import Execution
from yieldstar_sim.simulation.explorer.runs import sweep
from yieldstar_sim.simulation.scenario_files import load_scenario

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.artifact import ReplayArtifact
    from yieldstar_sim.simulation.execution import SavedExecution
    from yieldstar_sim.simulation.explorer.runs import Outcome, Sweep
    from yieldstar_sim.simulation.moves import Move
    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.scenario import Scenario


@dataclass(frozen=True)
class Replay:
    """One confirmation run: an artifact replayed, or a search's run again, on ``runtime``;
    its answer is the trace's digest."""

    runtime: RuntimeChoice
    artifact: ReplayArtifact | None = None
    outcome: Outcome | None = None

    def digest(self, scenario: Scenario) -> str | None:
        """Run it on ``scenario`` and return the trace's digest: None, which is no trace's,
        when its schedule does not fit the run: another runtime may take another path, on which
        a move the first had never comes; that is what a confirmation reports, not an error."""
        from yieldstar_sim.simulation.artifact import ArtifactError
        from yieldstar_sim.simulation.moves import ScheduleMismatch

        try:
            again = self.run(scenario)
        except (ScheduleMismatch, ArtifactError) as error:
            # ys.replay says a mismatch as an ArtifactError caused by it.
            if isinstance(error, ScheduleMismatch) or isinstance(error.__cause__, ScheduleMismatch):
                return None
            raise
        try:
            return again.trace_digest()
        finally:
            again.runtime.close()

    def run(self, scenario: Scenario, timeout: float | None = None) -> SimulationRun:
        """Run it on ``scenario`` (its runtime left open)."""
        from yieldstar_sim.simulation.run import replay, simulate

        if self.artifact is not None:
            return replay(
                self.artifact, runtime=self.runtime, scenario=scenario, check_trace=False,
                timeout=timeout,
            )  # fmt: skip
        outcome = self.outcome
        assert outcome is not None
        return simulate(
            scenario, outcome.seed, runtime=self.runtime, schedule=outcome.schedule,
            scenario_faults=False, check_faults=False, timeout=timeout,
        )  # fmt: skip

    def crossing(self) -> Replay | None:
        """This replay as it crosses to another process: its runtime by name and its artifact
        without the factory object of the run it came from (unused: the runtime is given), or
        None when the runtime cannot be named there."""
        runtime = shipped(self.runtime)
        if runtime is None:
            return None
        artifact = self.artifact
        return replace(
            self,
            runtime=runtime,
            artifact=None if artifact is None else replace(artifact, runtime_choice=None),
        )


def shipped(choice: RuntimeChoice) -> RuntimeChoice | None:
    """``choice`` as another process opens it (by name), or None when it cannot: a factory
    object whose name does not import back."""
    label = resolve_runtime(choice)[0]
    return label if label in BUNDLED or ":" in label else None


#: Scenarios a process of a pool holds: the one its own pool handed over (key None), and those
#: it loaded by reference for other executors' tasks (a worker may serve several explorations).
_SHARD_SCENARIOS: dict[str | None, Scenario] = {}


#: Our own pool's process's runs of its scenario, by runtime, seed and timeout: kept until the
#: process ends with the pool.
_SHARD_RUNNERS: dict[tuple[RuntimeChoice, int, float | None], Runner] = {}


def _shard_init(scenario: Scenario | None, reference: str | None) -> None:
    _SHARD_SCENARIOS[None] = scenario if scenario is not None else load_scenario(str(reference))
    # A pool's process ends without running ``atexit``: as the pool ends it, its runs'
    # runtimes are closed here, and the PostgreSQL schemas they gave back dropped.
    multiprocessing.util.Finalize(None, _close_runners, exitpriority=0)


def _close_runners() -> None:
    while _SHARD_RUNNERS:
        _SHARD_RUNNERS.popitem()[1].close()
    schemas = sys.modules.get("yieldstar_sim.runtime.postgres_connections")
    if schemas is not None:  # only a process that opened a PostgreSQL runtime has a pool
        schemas.SCHEMAS.clear()


#: Between a scenario file's path and the hash of its bytes in a reference (``_reference``).
_PINNED = "|sha256:"


def shard_scenario(reference: str | None) -> Scenario:
    """The scenario a task in another process runs: its own pool's, or loaded by reference
    (a file's reference carries the hash of its bytes: a worker holding an older copy of the
    file, edited since, or another file at that path, refuses it instead of searching it)."""
    scenario = _SHARD_SCENARIOS.get(reference)
    if scenario is None:
        ref, pinned, digest = str(reference).rpartition(_PINNED)
        if not pinned:
            ref, digest = digest, ""
        scenario = load_scenario(ref, sha256=f"sha256:{digest}" if digest else None)
        _SHARD_SCENARIOS[reference] = scenario
    return scenario


def _shard_sweeps(
    reference: str | None, runtime: RuntimeChoice, seed: int, timeout: float | None,
    sweeps: list[Sweep],
) -> list[list[list[Outcome]]]:  # fmt: skip
    if reference is None:
        # Our own pool's process: its run of the scenario serves every task of the search
        # (making one is a few runs' work, and a search hands out hundreds of pieces).
        local = _SHARD_RUNNERS.get((runtime, seed, timeout))
        if local is None:
            local = Runner(shard_scenario(None), runtime, seed=seed, timeout=timeout)
            _SHARD_RUNNERS[runtime, seed, timeout] = local
        return [list(local.sweep(one)) for one in sweeps]
    local = Runner(shard_scenario(reference), runtime, seed=seed, timeout=timeout)
    try:
        return [list(local.sweep(one)) for one in sweeps]
    finally:
        local.close()


def _shard_run(
    reference: str | None, runtime: RuntimeChoice, timeout: float | None,
    run: Callable[[Scenario, RuntimeChoice, float | None], Outcome],
) -> Outcome:  # fmt: skip
    return run(shard_scenario(reference), runtime, timeout)


def _shard_digest(reference: str | None, replay: Replay) -> str | None:
    return replay.digest(shard_scenario(reference))


#: About the most moves a task of a sweep takes (a second's work or less): a task's answer comes
#: back whole, so a violation, a budget or a stop is heeded only as the tasks in flight end,
#: and a sweep at 1,000 orders has thousands of branches of thousands of moves each.
MOST_MOVES = 8_000


def pieces(sweeps: Sequence[Sweep], jobs: int) -> list[list[tuple[Sweep, int, Sweep]]]:
    """``sweeps`` cut into tasks for ``jobs`` processes: four tasks each or more when there
    is work enough, and about ``MOST_MOVES`` moves a task at most. A branch costs the parent's
    moves after its point, and the walk along the parent from the piece's last branch (from
    the start, for a piece's first). A task is a list of (the sweep, the number of its piece's
    first branch, the piece: the same sweep with some of its branches, in order)."""
    steps = [
        [len(one.parent) - (one.branches[b - 1][0] if b else 0) for b in range(len(one.branches))]
        for one in sweeps
    ]
    most = max(1, min(MOST_MOVES, sum(map(sum, steps)) // (jobs * 4)))
    tasks: list[list[tuple[Sweep, int, Sweep]]] = []
    task: list[tuple[Sweep, int, Sweep]] = []
    spent = 0
    for one, costs in zip(sweeps, steps, strict=True):
        start = 0
        for end, step in enumerate(costs):
            if spent and spent + step > most:
                if start < end:
                    task.append((one, start, _piece(one, start, end)))
                tasks.append(task)
                task, spent, start = [], len(one.parent) - step, end  # walked from the start
            spent += step
        if start < len(costs):
            task.append((one, start, _piece(one, start, len(costs))))
    return [*tasks, task] if task else tasks


def _piece(one: Sweep, start: int, end: int) -> Sweep:
    return replace(one, branches=one.branches[start:end], labels=one.labels[start:end])


class Runner:
    """Runs a plan strategy's sweeps and runs, here or in other processes; results come back
    in the order asked."""

    def __init__(
        self,
        scenario: Scenario,
        runtime: RuntimeChoice,
        *,
        seed: int = 0,
        jobs: int = 1,
        executor: concurrent.futures.Executor | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        self.scenario, self.runtime, self.seed, self.timeout = scenario, runtime, seed, timeout
        # What crosses to another process names the runtime when it can ("module:factory"):
        # a factory object there would have to pickle.
        self.shipped: RuntimeChoice = shipped(runtime) or runtime
        # An executor of someone else's (a cluster's) gets several tasks at once even with
        # jobs=1: one task per schedule would cost more in scheduling than in simulating.
        self.jobs = max(1, jobs) if executor is None else max(4, jobs)
        self.executor = executor
        self._own: concurrent.futures.Executor | None = None
        self._here: Execution | None = None
        self._root: SavedExecution | None = None
        self._footprints = False

    def execution(self, *, footprints: bool = False) -> Execution:
        """This process's run of the scenario, at its start (made once, then restored); with
        ``footprints``, one that records what each move touches."""
        here = self._here
        if here is None or self._root is None or self._footprints != footprints:
            self._footprints = footprints
            here = self._here = Execution(
                self.scenario, seed=self.seed, runtime=self.runtime, scenario_faults=False,
                timeout=self.timeout, saving=True, footprints=footprints,
            )  # fmt: skip
            self._root = here.save()
        else:
            here.restore(self._root)
        return here

    def sweep(self, one: Sweep) -> Iterator[list[Outcome]]:
        """One sweep (``runs.sweep``), here: each branch's outcomes as it ends."""
        return sweep(self.execution(), one.parent, one.branches, expand=one.expand)

    def sweeps(self, sweeps: Sequence[Sweep]) -> Iterator[tuple[Sweep, int, list[Outcome]]]:
        """Each branch of each sweep with its outcomes, in order (the sweep, the branch's
        number in it, its outcomes): here, as each ends, or from the pool in pieces of about
        ``MOST_MOVES`` moves (those not yet asked for are dropped when the caller stops
        asking)."""
        if self.jobs == 1 and self.executor is None:
            for one in sweeps:
                for number, outcomes in enumerate(self.sweep(one)):
                    yield one, number, outcomes
            return
        tasks = pieces(sweeps, self.jobs)
        reference = self._pool(len(tasks))
        done = self._ordered(
            _shard_sweeps, reference, self.shipped, self.seed, self.timeout,
            [[piece for _, _, piece in task] for task in tasks],
        )  # fmt: skip
        for task, results in zip(tasks, done, strict=False):
            for (one, first, _), branches in zip(task, results, strict=True):
                for number, outcomes in enumerate(branches, start=first):
                    yield one, number, outcomes

    def runs(
        self, runs: Sequence[Callable[[Scenario, RuntimeChoice, float | None], Outcome]]
    ) -> Iterator[Outcome]:
        """Each run's outcome, in order (a run is a module-level function of the scenario,
        the runtime and the timeout: a random or PCT schedule)."""
        if self.jobs == 1 and self.executor is None:
            for run in runs:
                yield run(self.scenario, self.runtime, self.timeout)
            return
        reference = self._pool(len(runs))
        yield from self._ordered(_shard_run, reference, self.shipped, self.timeout, runs)

    def _ordered(self, task: Callable[..., Any], *args: Any) -> Iterator[Any]:
        """``task(*args[:-1], item)`` for each item of ``args[-1]`` on the pool, a window of
        twice its processes ahead, each answer in order."""
        executor = self.executor
        assert executor is not None
        *fixed, items = args
        pending: list[concurrent.futures.Future[Any]] = []
        queue = iter(items)
        try:
            while True:
                with frozen_heap():  # submitting may fork the pool's processes
                    pending += [
                        executor.submit(task, *fixed, item)
                        for item in islice(queue, self.jobs * 2 - len(pending))
                    ]
                if not pending:
                    return
                try:
                    yield pending.pop(0).result()
                except (pickle.PicklingError, AttributeError, TypeError) as error:
                    if self.shipped is self.runtime and not isinstance(self.runtime, str):
                        raise ValueError(
                            "runs in other processes need a runtime factory they can import: "
                            "a module-level function or class, or its 'package.module:factory' "
                            f"name, not {self.shipped!r} ({error})"
                        ) from None
                    raise
        except GeneratorExit:
            # The caller stopped asking (or let go on its way out of a stop signal's
            # ``KeyboardInterrupt``).
            self._drop(pending, ended=interrupts.stop_requested() is not None)
            raise
        except (KeyboardInterrupt, BrokenProcessPool):  # a stop signal, a worker that ended
            self._drop(pending, ended=True)
            raise
        except BaseException:
            # A task's own error (one that would not pickle...): the pool is sound, and shutting
            # it down from here, after a task failed to pickle, can wait on its thread for ever
            # (Python 3.11): its tasks are cancelled, and ``close`` ends it.
            self._drop(pending, ended=False)
            raise

    def _drop(self, pending: list[concurrent.futures.Future[Any]], *, ended: bool) -> None:
        """Drop the tasks ``pending`` that no one asked for yet: cancelled one by one, or, when
        the wait ``ended`` on a stop or an error and the pool is our own, by shutting the pool
        down."""
        if ended and self._own is not None:
            # Our pool's processes may be gone (the command ends them on SIGTERM, the system
            # may kill one): the pool's own thread then fails every task it still holds, and
            # before Python 3.12 it dies with a traceback on a task cancelled from here
            # meanwhile (InvalidStateError, printed as "Exception in thread"). Shut down with
            # ``cancel_futures``, the pool drops them from that thread instead.
            self._shut_down(cancel=True)
            return
        for future in pending:
            future.cancel()

    def _pool(self, tasks: int) -> str | None:
        """Our own pool of ``jobs`` processes (never more than ``tasks``), unless an executor
        was given; returns what a task loads the scenario by (None: our pool holds it)."""
        if self.executor is not None and self._own is None:
            return self._reference()
        if self._own is None:
            # fork hands the scenario (lambdas and all) to the processes without pickling it
            fork = "fork" in multiprocessing.get_all_start_methods()
            self._own = self.executor = concurrent.futures.ProcessPoolExecutor(
                max(1, min(self.jobs, tasks)),
                mp_context=multiprocessing.get_context("fork") if fork else None,
                initializer=_shard_init,
                initargs=(self.scenario, None) if fork else (None, self._reference()),
            )
        return None

    def _reference(self) -> str:
        if not self.scenario.ref:
            raise ValueError(
                "running schedules in other processes needs a scenario loaded from a file or "
                "by name (ys.load_scenario), so that each process can load it"
            )
        ref, digest = self.scenario.ref, self.scenario.source_sha256
        if not Path(ref).is_file():
            return ref
        # A file named here relative to this directory is found from any other (a Dask
        # worker's), where the path is the same; its hash keys what a worker loaded.
        path = str(Path(ref).resolve())
        return path if digest is None else f"{path}{_PINNED}{digest.removeprefix('sha256:')}"

    def digests(self, replays: Sequence[Replay]) -> list[str | None]:
        """The trace digest of each confirmation replay, in order: on the pool, when there is
        one and each replay's runtime can be named in another process; else here."""
        crossing = [c for c in (replay.crossing() for replay in replays) if c is not None]
        if self.executor is None or len(replays) < 2 or len(crossing) < len(replays):
            return [replay.digest(self.scenario) for replay in replays]
        reference = self._pool(len(replays))
        return list(self._ordered(_shard_digest, reference, crossing))

    def release(self) -> None:
        """Close this process's run: the search is over, and the runs that shrink and confirm
        open runtimes of their own (on PostgreSQL, the schema goes back to the pool for them)."""
        if self._here is not None:
            self._here.close()
            self._here = self._root = None

    def close(self, *, cancel: bool = False) -> None:
        """Close this process's run, and shut down our own pool (``cancel`` drops what is
        queued)."""
        self.release()
        self._shut_down(cancel=cancel)

    def _shut_down(self, *, cancel: bool) -> None:
        """Shut down our own pool, if we started one, once its thread has ended."""
        if self._own is not None:
            self._own.shutdown(cancel_futures=cancel)
            self._own = self.executor = None


def turned(moves: list[Move], key: str, part: int) -> list[Move]:
    """``moves`` in the order the process searching as ``part`` takes them: the first
    process's own order, the others' turned by an amount each state and part give, so that
    processes sharing their visited states spread over the tree instead of racing down one
    path."""
    if part == 0 or len(moves) < 2:
        return moves
    turn = (int(key[:8], 16) + part) % len(moves)
    return moves[turn:] + moves[:turn]
