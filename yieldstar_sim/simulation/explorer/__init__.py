"""The explorer: search faults, interleavings and draws; shrink what fails; confirm it on
DuckDB. Every strategy is a client of one ``execution.Execution``, in a file of its own;
docs/architecture.md ("The explorer's parts") says which module holds what.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core import interrupts
from yieldstar_sim.runtime.factory import open_runtime, resolve_runtime
from yieldstar_sim.simulation.artifact import violation_file
from yieldstar_sim.simulation.cluster import DaskCluster, on_dask
from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT
from yieldstar_sim.simulation.determinism import CAUSE
from yieldstar_sim.simulation.explorer.confirm import confirm_on
from yieldstar_sim.simulation.explorer.exhaustive import ExhaustiveSearch, ParallelExhaustive
from yieldstar_sim.simulation.explorer.randomized import RandomizedSearch
from yieldstar_sim.simulation.explorer.report import ExplorationReport, FoundViolation
from yieldstar_sim.simulation.explorer.shards import Runner
from yieldstar_sim.simulation.explorer.shrink import shrink
from yieldstar_sim.simulation.explorer.strategy import (
    STRATEGIES,
    Exhaustive,
    Pct,
    Random,
    SearchConfig,
    StopReason,
    Strategy,
    StrategyOptions,
    Systematic,
    paced_collector,
)
from yieldstar_sim.simulation.explorer.systematic import SystematicSearch
from yieldstar_sim.simulation.faults import FAULT_KINDS, FaultKind
from yieldstar_sim.simulation.moves import ScheduleMismatch
from yieldstar_sim.simulation.run import simulate
from yieldstar_sim.simulation.scenario import ScenarioError, given_scenario
from yieldstar_sim.simulation.scenario_runtime import (
    BY_SCENARIO,
    ByScenario,
    confirm_for,
    runtime_for,
)
from yieldstar_sim.testing import runtime_adapter_failures

if TYPE_CHECKING:
    import concurrent.futures
    from collections.abc import Callable, Sequence

    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.cluster import DaskClient
    from yieldstar_sim.simulation.explorer.exhaustive import Cluster
    from yieldstar_sim.simulation.scenario import Scenario

__all__ = [
    "STRATEGIES",
    "Exhaustive",
    "ExplorationReport",
    "FoundViolation",
    "Pct",
    "Random",
    "StopReason",
    "Systematic",
    "explore",
]


def explore(
    scenario: Scenario,
    *,
    max_faults: int = 1,
    strategy: str | StrategyOptions = "systematic",
    budget: int | None = None,
    time_budget: float | None = None,
    seed: int = 0,
    stop_at_first: bool = True,
    kinds: Sequence[FaultKind | str] = FAULT_KINDS,
    runtime: RuntimeChoice | None = None,
    confirm: RuntimeChoice | ByScenario | None = BY_SCENARIO,
    jobs: int = 1,
    executor: concurrent.futures.Executor | DaskClient | None = None,
    out: str | Path | None = None,
    progress: bool | Callable[[int], None] = False,
    timeout: float | None = DEFAULT_TIMEOUT,
    check_adapter: bool = False,
    on_searched: Callable[[ExplorationReport], None] | None = None,
) -> ExplorationReport:
    """Search ``scenario``'s faults, interleavings and draws for invariant violations.

    ``strategy`` is a strategy's name (``"systematic"``, ``"random"``, ``"pct"``,
    ``"exhaustive"``) or its options (``Pct(depth=5)``, ``Exhaustive(max_depth=40,
    order="shortest")``). The scenario's own fault plan is left out: the explorer places faults
    itself, of ``kinds``, at most ``max_faults`` in a schedule (a freeze lasts the lease plus
    the redelivery delay, so the lease expires). ``budget`` bounds the schedules run and
    ``time_budget`` the seconds; the report says what cut it. ``runtime`` (and ``confirm``) is
    ``"memory"``, ``"duckdb"`` or your own runtime's factory (called with ``clock=``) or its
    ``"package.module:factory"`` name; by default the scenario's own (``Scenario.runtime``),
    else memory. Violations are shrunk and, with ``confirm="duckdb"`` (the default, but for a
    scenario that names its runtime: its ``confirm_runtime``, else none), replayed on DuckDB
    with a sample of passing schedules; a trace that differs between the runtimes is reported
    as a runtime bug, unless the schedule run twice gives two traces: then the report says the
    scenario is not deterministic (``report.nondeterminism``). ``jobs`` > 1 runs schedules in
    processes (an exhaustive search: that many processes sharing the states they reach); any
    ``concurrent.futures.Executor`` may be given instead, or a ``distributed.Client``: an
    exhaustive search then runs one process a Dask worker, sharing the states they searched
    through a table partitioned over the workers (``simulation.cluster``). With ``out``,
    each violation's artifact is written there. ``timeout`` bounds each schedule's wall-clock
    seconds: a schedule it cuts counts as incomplete. Ctrl-C stops the search cleanly: the
    report keeps (and shrinks, and saves) what was found. ``check_adapter=True`` first runs the
    public runtime-adapter conformance cases on ``runtime``; each case it fails is in
    ``report.adapter_failures`` and makes the verdict ``violated``. ``on_searched`` is called
    with the report once the search is over and its violations are shrunk, before they are
    confirmed and saved.

    >>> import yieldstar_sim as ys
    >>> report = ys.explore(ys.load_scenario("durable-start"), confirm=None)
    >>> report.ok, report.schedules_run > 0
    (True, True)
    """
    scenario = given_scenario(scenario, "explore")
    options = _options(strategy, max_faults, budget, kinds)
    runtime, confirm = runtime_for(scenario, runtime, "memory"), confirm_for(scenario, confirm)
    if on_searched is not None and not callable(on_searched):
        # Found out only after the whole search otherwise.
        raise TypeError(f"on_searched is a function of the report, not {on_searched!r}")
    if (
        scenario.faults
        or any(cancel.client is not None for cancel in scenario.cancels)
        or scenario.expected
        or scenario.overlap_safe
        or any(callable(getattr(i, "misnamed", None)) for i in scenario.invariants)
    ):
        # The explorer leaves the scenario's own fault plan out, but a plan that cannot fire is
        # a mistake in the scenario all the same (FaultPlanError names it); so is a client's
        # cancel of an execution the run never has, which the search would take for an answer,
        # and an invariant that watches a name the run has only misspelt, which would hold in
        # every schedule and come back green.
        simulate(scenario, seed, runtime=runtime, timeout=timeout).runtime.close()
    config = SearchConfig(
        strategy=options, seed=seed, max_faults=max_faults,
        kinds=tuple(FaultKind(kind) for kind in kinds),
        freeze=scenario.lease_seconds + scenario.redelivery_delay,
        budget=budget, time_budget=time_budget, stop_at_first=stop_at_first,
    )  # fmt: skip
    runtime_name = resolve_runtime(runtime)[0]
    started = time.perf_counter()
    adapter_failures: list[str] = []
    if check_adapter:
        adapter_failures = runtime_adapter_failures(
            lambda clock: open_runtime(runtime, clock, options=scenario.runtime_options)
        )
    pool, client = on_dask(executor)
    # Its workers read once, and none is an error for every strategy (each would wait for one).
    cluster = None if client is None else DaskCluster(client)
    runner = Runner(scenario, runtime, seed=seed, jobs=jobs, executor=pool, timeout=timeout)
    tick = progress if callable(progress) else None
    bar = None
    if progress is True:
        from tqdm.auto import tqdm  # only when asked for

        bar = tqdm(total=budget, unit="schedule", desc="exploring")
        tick = lambda count: bar.update(1)  # noqa: E731
    search = _strategy(config, runner, tick, bar, jobs=jobs, cluster=cluster)
    report = ExplorationReport(
        scenario.name, options.name, max_faults, seed, runtime_name, budget=budget,
        time_budget=time_budget, adapter_failures=adapter_failures,
    )  # fmt: skip
    try:
        _search(search, runner)
        runner.release()
        _fill(report, search)
        tally = search.tally
        for index, invariant in tally.failures:
            outcome = tally.outcomes[index]
            report.violations.append(shrink(scenario, outcome, runtime, invariant, timeout=timeout))
        if on_searched is not None and not report.interrupted:
            on_searched(report)
        if not report.interrupted:
            confirm_on(scenario, report, tally, runner, against=confirm or None)
    except KeyboardInterrupt:
        report.stopped = StopReason.INTERRUPTED  # a second Ctrl-C while shrinking
    finally:
        runner.close()
        if bar is not None:
            bar.close()
    if out is not None:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        for number, found in enumerate(report.violations, 1):
            found.artifact_path = found.artifact.save(violation_file(folder, scenario.name, number))
    report.elapsed = time.perf_counter() - started
    return report


def _search(search: Strategy, runner: Runner) -> None:
    """Run the search: a Ctrl-C ends it where it is (the report keeps what it found), and a run
    made again that does not fit its path ends it with a ``ScenarioError``."""
    try:
        with paced_collector():
            search.search()
    except KeyboardInterrupt:
        search.tally.stopped = StopReason.INTERRUPTED
        runner.close(cancel=True)
    except ScheduleMismatch as error:
        # A run made again (restored, or replayed to a state) that does not offer the move it
        # offered when the state was saved: no count after it would mean anything.
        raise ScenarioError(
            f"the search cannot go on: a run made again did not offer the move it offered "
            f"before ({error}); the scenario is not deterministic, or its runtime adapter does "
            f"not save what it keeps; {CAUSE}"
        ) from error


def _fill(report: ExplorationReport, search: Strategy) -> None:
    """The report's counts from the search's tally, and its section."""
    tally, section = search.tally, search.section()
    report.stopped = section["stopped"]  # the tally's reason, if it has one (Ctrl-C...)
    report.schedules_run = tally.runs
    report.incomplete_schedules = tally.incomplete
    report.incomplete_reasons = list(tally.incomplete_reasons)
    report.unfair_schedules = tally.unfair
    report.unfair_reasons = list(tally.unfair_reasons)
    report.warnings = sorted(tally.warnings or ())
    report.systematic = section.get("systematic")
    report.exhaustive = section.get("exhaustive")
    space = report.state_space
    if space is not None:
        space.cut_by[:] = _cut_by(report)


def _cut_by(report: ExplorationReport) -> list[str]:
    """What stopped an exhaustive search before its end, each a clause, for its state graph's
    pictures: a picture shown alone must not call the states a cut search reached all there
    are."""
    cut_by = [f"{bound} cut the search" for bound in report.cut_by]
    if report.interrupted:
        cut_by.append(f"{interrupts.stop_words()} stopped it")
    elif report.stopped is StopReason.VIOLATION:
        cut_by.append("it stopped at its first violation")
    if report.incomplete_schedules:
        count = report.incomplete_schedules
        cut_by.append(f"{count} schedule{'s' if count != 1 else ''} did not finish")
    return cut_by


def _options(
    strategy: str | StrategyOptions,
    max_faults: int,
    budget: int | None,
    kinds: Sequence[FaultKind | str],
) -> StrategyOptions:
    """The strategy's options, once everything asked is known to be sound (else a one-line
    error)."""
    if isinstance(strategy, str):
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
        options: StrategyOptions = STRATEGIES[strategy]()
    elif isinstance(strategy, Systematic | Random | Pct | Exhaustive):
        options = strategy
    else:
        raise TypeError(
            f"strategy is a name ({', '.join(STRATEGIES)}) or a strategy's options "
            f"(ys.Exhaustive(max_depth=40)...), not {strategy!r}"
        )
    if isinstance(max_faults, bool) or not isinstance(max_faults, int) or max_faults < 0:
        raise ValueError(f"max_faults must be a whole number >= 0, not {max_faults!r}")
    if budget is not None and budget < 1:
        raise ValueError(f"budget must be at least 1, not {budget!r}")
    unknown = [kind for kind in kinds if kind not in FAULT_KINDS]
    if unknown:
        raise ValueError(
            f"unknown fault kind {unknown[0]!r}; the kinds are {', '.join(FAULT_KINDS)}"
        )
    return options


def _strategy(
    config: SearchConfig,
    runner: Runner,
    tick: Any,
    bar: Any = None,
    *,
    jobs: int = 1,
    cluster: Cluster | None = None,
) -> Strategy:
    """The search ``config`` asks for, over ``runner`` (an exhaustive one on ``cluster``,
    if given), showing its progress on ``bar`` (a tqdm bar), if any."""
    options = config.strategy
    if isinstance(options, Exhaustive):
        search: ExhaustiveSearch | ParallelExhaustive
        if cluster is not None or runner.jobs > 1 or runner.executor is not None:
            # As many processes as asked for, and two at least on an executor of someone
            # else's; on a cluster, one a worker.
            search = ParallelExhaustive(
                runner, config, processes=max(2, jobs), tick=tick, cluster=cluster
            )
        else:
            search = ExhaustiveSearch(runner, config, tick=tick)
        if bar is not None:
            # Beside the bar's count of schedules, as a model checker shows its progress (the
            # processes of a cluster count schedules only as they end: it is shown at once).
            search.watch = lambda got: bar.set_postfix(
                states=got["states"], per_s=got["states_per_second"], frontier=got["frontier"],
                depth=got["depth"], MB=got["peak_rss_mb"], refresh=cluster is not None,
            )  # fmt: skip
        return search
    if isinstance(options, Systematic):
        planned = None
        if bar is not None:

            def planned(count: int) -> None:
                bar.total = count
                bar.refresh()

        return SystematicSearch(runner, config, tick=tick, planned=planned)
    return RandomizedSearch(runner, config, tick=tick)
