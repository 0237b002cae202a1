"""The explorer: search faults and interleavings, shrink what fails, confirm it on DuckDB.

Strategies:

- ``systematic``: every fault kind at every choice point of the fault-free run
  (``max_faults=1``), then every further fault after each of those (``max_faults=2``...),
  skipping a fault whose point is *equivalent* to one already tried: same runtime records,
  ledger, clock, same call, and every other actor doing the same thing (a state fingerprint,
  so symmetric workers and repeated idle polls are tried once);
- ``random``: seeded random fault plans (and seeds, hence interleavings);
- ``pct``: PCT-style priority scheduling with ``depth`` priority change points, plus random
  faults;
- ``exhaustive``: every interleaving (which ready worker goes at each choice point) and every
  fault kind at every choice point up to ``max_faults``, by stateless depth-first search with
  sleep-set reduction and state caching (``exhaustive``); ``order="shortest"`` returns the
  violation with the fewest faults, then events, first.

A violation is shrunk by delta debugging over its faults (kept as descriptions, so removing one
does not move the others) to a minimal plan that violates the same invariant, saved as a replay
artifact, and compared with its nearest passing plan.

The package keeps each job in its own module: ``plans`` (plans, outcomes, state
fingerprints), ``strategy`` (what every strategy shares: its options, its shape, the tally the
report is built from), one module per strategy (``systematic``, ``randomized``,
``exhaustive``), ``shards`` (running plans in processes), ``prefix`` (plans forked from a
shared prefix), ``shrink``, ``confirm`` and ``report``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.filenames import file_stem
from yieldstar_sim.runtime.factory import open_runtime, resolve_runtime
from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT
from yieldstar_sim.simulation.explorer.confirm import confirm_on
from yieldstar_sim.simulation.explorer.exhaustive import ExhaustiveSearch
from yieldstar_sim.simulation.explorer.parallel import ParallelExhaustive
from yieldstar_sim.simulation.explorer.plans import Outcome, Plan, run_plan, simulate_plan
from yieldstar_sim.simulation.explorer.randomized import Randomized
from yieldstar_sim.simulation.explorer.report import ExplorationReport, FoundViolation
from yieldstar_sim.simulation.explorer.shards import Runner
from yieldstar_sim.simulation.explorer.shrink import shrink
from yieldstar_sim.simulation.explorer.strategy import (
    STRATEGIES,
    Asked,
    SearchConfig,
    Strategy,
    build_report,
    progress_bar,
)
from yieldstar_sim.simulation.explorer.systematic import Systematic
from yieldstar_sim.simulation.faults import FAULT_KINDS, FaultKind
from yieldstar_sim.simulation.run import simulate
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
    from yieldstar_sim.simulation.scenario import Scenario

__all__ = [
    "STRATEGIES",
    "ExplorationReport",
    "FoundViolation",
    "Outcome",
    "Plan",
    "explore",
    "run_plan",
    "simulate_plan",
]


def explore(
    scenario: Scenario,
    *,
    max_faults: int = 1,
    strategy: str = "systematic",
    budget: int | None = None,
    seed: int = 0,
    stop_at_first: bool = True,
    kinds: Sequence[FaultKind | str] = FAULT_KINDS,
    freeze_seconds: float | None = None,
    depth: int = 3,
    runtime: RuntimeChoice | None = None,
    confirm: RuntimeChoice | ByScenario | None = BY_SCENARIO,
    confirm_samples: int = 3,
    jobs: int = 1,
    executor: concurrent.futures.Executor | None = None,
    out: str | Path | None = None,
    progress: bool | Callable[[int], None] = False,
    timeout: float | None = DEFAULT_TIMEOUT,
    check_adapter: bool = False,
    max_depth: int | None = None,
    time_budget: float | None = None,
    order: str = "dfs",
    reduction: bool = True,
    prefix_sharing: bool | None = None,
    on_searched: Callable[[ExplorationReport], None] | None = None,
) -> ExplorationReport:
    """Search ``scenario``'s faults and interleavings for invariant violations.

    The scenario's own fault plan is left out: the explorer places faults itself. Faults of
    ``kinds`` go at every choice point (systematic) or at random ones; a freeze lasts
    ``freeze_seconds`` (default: the lease plus the redelivery delay, so the lease expires).
    ``budget`` bounds the schedules run. ``runtime`` (and ``confirm``) is ``"memory"``,
    ``"duckdb"`` or your own runtime's factory (called with ``clock=``) or its
    ``"package.module:factory"`` name; by default the scenario's own (``Scenario.runtime``),
    else memory. Violations are shrunk and, with ``confirm="duckdb"`` (the default, but for a
    scenario that names its runtime: its ``confirm_runtime``, else none), replayed on DuckDB
    with a sample of passing schedules; a trace that differs between the runtimes is reported
    as a runtime bug, unless the schedule run twice gives two traces: then the report says
    the scenario is not deterministic (``report.nondeterminism``). ``jobs`` > 1 runs shards in
    processes; any ``concurrent.futures.Executor`` may be given instead (e.g. a Dask
    client's). With ``out``, each violation's artifact is written there. ``timeout`` bounds
    each schedule's wall-clock seconds: a schedule it cuts counts as incomplete, apart from ok
    and violated ones. Ctrl-C stops the search cleanly: the report keeps (and shrinks, and
    saves) what was found, with ``interrupted`` set. ``check_adapter=True`` first runs the
    public runtime-adapter conformance cases on ``runtime``; each case it fails is in
    ``report.adapter_failures`` and makes the verdict ``violated``.

    ``strategy="exhaustive"`` covers every interleaving and every fault up to ``max_faults``
    (0: interleavings only), in this process, or with ``jobs`` > 1 (or an ``executor``) in
    that many processes that share the states they reach (the same states and verdict; each
    process's ``budget`` and ``time_budget`` its own). ``max_depth`` bounds the choice points it
    branches at, ``budget`` the schedules and ``time_budget`` the seconds; the report says which
    cut it, or that the bound was exhausted. ``order="shortest"`` finds the violation with the
    fewest faults, then events, first. ``reduction=False`` switches off the sleep sets and the
    state caching: the naive search, for comparison.

    ``prefix_sharing`` (systematic strategy, memory runtime, one process, POSIX): the plans
    that add one fault to the same parent share the parent's run up to their fault instead of
    replaying it: on the search's last level each goes on from the parent's state restored at
    its point; on a level whose points place the next level's faults, each is forked from the
    parent's run there, where the prefix takes longer to replay than a fork (None, the
    default: measured); ``False`` replays every plan, ``True`` forks at every point of those
    levels. The report is the same either way.

    ``on_searched`` is called with the report once the search is over and its violations are
    shrunk, before they are confirmed on another runtime and saved (the command line starts
    drawing the report's pictures in another process then, while the confirmation runs).

    >>> import yieldstar_sim as ys
    >>> report = ys.explore(ys.load_scenario("durable-start"), confirm=None)
    >>> report.ok, report.schedules_run > 0
    (True, True)
    """
    fault_kinds = _checked(strategy, max_faults, budget, kinds)
    runtime, confirm = runtime_for(scenario, runtime, "memory"), confirm_for(scenario, confirm)
    if on_searched is not None and not callable(on_searched):
        # Found out only after the whole search otherwise.
        raise TypeError(f"on_searched is a function of the report, not {on_searched!r}")
    freeze = freeze_seconds or scenario.lease_seconds + scenario.redelivery_delay
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
    runtime_name = resolve_runtime(runtime)[0]
    asked = Asked(scenario.name, strategy, max_faults, seed, runtime_name, budget, stop_at_first)
    started = time.perf_counter()
    adapter_failures: list[str] = []
    if check_adapter:
        adapter_failures = runtime_adapter_failures(
            lambda clock: open_runtime(runtime, clock, options=scenario.runtime_options)
        )
    runner = Runner(scenario, runtime, jobs, executor, timeout, prefix_sharing=prefix_sharing)
    bar = progress_bar(progress, budget) if progress is True else None
    tick = progress if callable(progress) else None
    if bar is not None:
        tick = lambda count: bar.update(1)  # noqa: E731
    config = _config(
        strategy, seed=seed, max_faults=max_faults, kinds=fault_kinds, freeze=freeze,
        budget=budget, stop_at_first=stop_at_first, depth=depth, time_budget=time_budget,
        max_depth=max_depth, order=order, reduction=reduction,
    )  # fmt: skip
    search = _strategy(strategy, runner, config, tick, bar, jobs=jobs)
    interrupted = False
    try:
        try:
            search.search()
        except KeyboardInterrupt:
            interrupted = True
            runner.close(cancel=True)
        report = build_report(
            asked, search.tally, search.coverage(), adapter_failures=adapter_failures,
            interrupted=interrupted,
        )  # fmt: skip
        tally = search.tally
        for index, outcome, invariant in tally.failures:
            report.violations.append(
                shrink(scenario, outcome, tally.plans[index], runtime, invariant, timeout=timeout)
            )
        if on_searched is not None and not report.interrupted:
            on_searched(report)
        if not report.interrupted:
            confirmed = confirm_on(
                scenario, runtime_name, report.violations, tally, runner, against=confirm or None,
                samples=confirm_samples,
            )  # fmt: skip
            if confirmed is not None:
                confirmed.file_into(report)
    except KeyboardInterrupt:
        report.interrupted = True  # a second Ctrl-C while shrinking: keep what is shrunk
    finally:
        runner.close()
        if bar is not None:
            bar.close()
    if out is not None:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        for number, found in enumerate(report.violations, 1):
            found.artifact_path = found.artifact.save(
                folder / f"{file_stem(scenario.name)}-violation-{number}.replay.json"
            )
    report.elapsed = time.perf_counter() - started
    return report


def _config(
    strategy: str,
    *,
    seed: int,
    max_faults: int,
    kinds: tuple[FaultKind, ...],
    freeze: float,
    budget: int | None,
    stop_at_first: bool,
    depth: int,
    time_budget: float | None,
    max_depth: int | None,
    order: str,
    reduction: bool,
) -> SearchConfig:
    """The search's options, checked (the exhaustive strategy's refused to the others)."""
    if strategy != "exhaustive" and (
        order != "dfs" or max_depth is not None or time_budget is not None
    ):
        raise ValueError(
            "order, max_depth and time_budget are options of strategy='exhaustive', not of "
            f"{strategy!r}"
        )
    return SearchConfig(
        seed=seed, max_faults=max_faults, kinds=kinds, freeze=freeze, budget=budget,
        stop_at_first=stop_at_first, pct_depth=depth if strategy == "pct" else 0,
        time_budget=time_budget, max_depth=max_depth, order=order,
        # Only the exhaustive search reduces: the others never read (nor checked) it.
        reduce=reduction if strategy == "exhaustive" else True,
        cache=reduction if strategy == "exhaustive" else True,
    )  # fmt: skip


def _postfix(bar: Any) -> Callable[[dict[str, Any]], None]:
    """Show an exhaustive search's progress beside its bar's count of schedules, as a model
    checker shows it: states found, states per second, the frontier, the depth and the peak
    memory."""

    def show(got: dict[str, Any]) -> None:
        bar.set_postfix(
            states=got["states"], per_s=got["states_per_second"], frontier=got["frontier"],
            depth=got["depth"], MB=got["peak_rss_mb"], refresh=False,
        )  # fmt: skip

    return show


def _strategy(
    name: str,
    runner: Runner,
    config: SearchConfig,
    tick: Callable[[int], None] | None,
    bar: Any = None,
    *,
    jobs: int = 1,
) -> Strategy:
    """The strategy of that name, over ``runner``, with ``config``; an exhaustive search shows
    its progress on ``bar`` (a tqdm bar) too."""
    if name == "exhaustive":
        if runner.jobs > 1 or runner.executor is not None:
            # As many processes as asked for, and two at least on an executor of someone
            # else's (a cluster's): its plan shards' minimum of four is about shipping plans.
            return ParallelExhaustive(runner, config, processes=max(2, jobs), tick=tick)
        search = ExhaustiveSearch(runner, config, tick=tick)
        if bar is not None:
            search.watch = _postfix(bar)
        return search
    if name == "systematic":
        return Systematic(runner, config, tick=tick, planned=None if bar is None else _total(bar))
    return Randomized(runner, config, tick=tick)


def _total(bar: Any) -> Callable[[int], None]:
    """Set ``bar``'s total to the schedules planned so far (and the budget's cut)."""

    def planned(count: int) -> None:
        bar.total = count
        bar.refresh()

    return planned


def _checked(
    strategy: str, max_faults: int, budget: int | None, kinds: Sequence[FaultKind | str]
) -> tuple[FaultKind, ...]:
    """The fault kinds, once the options are known to be sound (else a one-line error)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    if isinstance(max_faults, bool) or not isinstance(max_faults, int) or max_faults < 0:
        raise ValueError(f"max_faults must be a whole number >= 0, not {max_faults!r}")
    if budget is not None and budget < 1:
        raise ValueError(f"budget must be at least 1, not {budget!r}")
    unknown = [kind for kind in kinds if kind not in FAULT_KINDS]
    if unknown:
        raise ValueError(
            f"unknown fault kind {unknown[0]!r}; the kinds are {', '.join(FAULT_KINDS)}"
        )
    return tuple(FaultKind(kind) for kind in kinds)
