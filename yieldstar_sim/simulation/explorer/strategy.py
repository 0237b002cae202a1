"""What every search strategy shares: its options (``SearchConfig``), the one shape a strategy
has (``Strategy``), the tally of what it ran and found (``Tally``), and the one place an
``ExplorationReport`` is built from them (``build_report``).

A strategy is a file of its own, as shuttle keeps one ``Scheduler`` per file behind one trait:
``systematic.py``, ``randomized.py`` (random and PCT) and ``exhaustive.py``. Each plans the
schedules it runs and hands every outcome to its ``Tally``; what only it knows (how much of the
bound it covered, the states it reached) it says in its ``coverage``. How a strategy runs a
schedule is its own detail: the plan strategies hand plans to the ``Runner`` (processes, prefix
sharing), the exhaustive one steers one simulator per path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from yieldstar_sim.simulation.explorer.report import ExplorationReport
from yieldstar_sim.simulation.faults import FAULT_KINDS, FaultKind, applies_at

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    from yieldstar_sim.simulation.explorer.plans import Outcome, Plan
    from yieldstar_sim.simulation.explorer.shards import Runner
    from yieldstar_sim.simulation.explorer.statespace import StateSpace

    Tick: TypeAlias = Callable[[int], None] | None
    """Progress: called with the number of schedules run after each one (or nothing)."""

#: The strategies ``explore`` knows, by name.
STRATEGIES = ("systematic", "random", "pct", "exhaustive")
#: The orders the exhaustive search can take: depth first, or shortest first (fewest faults,
#: then events).
ORDERS = ("dfs", "shortest")


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """A search's options, checked once: those every strategy reads (the seed, the fault
    bound and kinds, how long a freeze lasts, the schedule budget, whether to stop at the first
    violation) and those only one reads (``pct_depth``; the exhaustive search's
    ``time_budget``, ``max_depth``, ``order``, and its reduction: ``reduce`` for the sleep
    sets, ``cache`` for the state caching)."""

    seed: int = 0
    max_faults: int = 1
    kinds: tuple[FaultKind, ...] = tuple(FaultKind(kind) for kind in FAULT_KINDS)
    freeze: float = 40.0
    budget: int | None = None
    stop_at_first: bool = True
    pct_depth: int = 0
    time_budget: float | None = None
    max_depth: int | None = None
    order: str = "dfs"
    reduce: bool = True
    cache: bool = True

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {self.order!r}")
        depth = self.max_depth
        if depth is not None and (
            isinstance(depth, bool) or not isinstance(depth, int) or depth < 1
        ):
            raise ValueError(f"max_depth must be a whole number >= 1, not {depth!r}")
        if not isinstance(self.reduce, bool) or not isinstance(self.cache, bool):
            # reduction="no" is truthy: the reduced search ran where the naive one was asked for.
            wrong = self.reduce if not isinstance(self.reduce, bool) else self.cache
            raise TypeError(f"reduction is True or False, not {wrong!r}")
        if self.time_budget is not None and not self.time_budget > 0:
            raise ValueError(
                f"time_budget must be a positive number of seconds, not {self.time_budget!r}"
            )


@dataclass
class Tally:
    """What a search ran and found, in the order it ran it: every strategy hands each
    schedule's plan and outcome to ``take``, and the report's counts are read from here.

    ``failures`` holds (plan number, outcome, invariant): the first violation of each
    invariant, or with ``every_violation`` all of them (the shortest-first search picks among
    them). ``warnings`` are those every schedule gave (an invariant that watched nothing)."""

    stop_at_first: bool = True
    every_violation: bool = False
    faults_in_reasons: bool = True
    """Whether an incomplete schedule's reason names its faults (a plan strategy's, placed
    by hand) or only its number (the exhaustive search's, whose path the state space tells)."""
    tick: Tick = None
    """Called with the number of schedules run after each one (progress)."""
    plans: list[Plan] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    failures: list[tuple[int, Outcome, str]] = field(default_factory=list)
    warnings: set[str] | None = None
    incomplete: int = 0
    incomplete_reasons: list[str] = field(default_factory=list)
    done: bool = False
    """A violation was found with ``stop_at_first``: the strategy runs nothing more."""

    @property
    def schedules_run(self) -> int:
        """How many schedules ran to their end (or to their cut)."""
        return len(self.plans)

    def take(self, plan: Plan, outcome: Outcome) -> None:
        """Count one schedule run: its incompleteness, its warnings and its violations."""
        self.plans.append(plan)
        self.outcomes.append(outcome)
        if outcome.incomplete is not None and not outcome.violations:
            self.incomplete += 1
            if len(self.incomplete_reasons) < 3:
                faults = ", ".join(f.describe() for f in plan.faults) or "no faults"
                named = f" ({faults})" if self.faults_in_reasons else ""
                self.incomplete_reasons.append(
                    f"schedule #{plan.index}{named}: {outcome.incomplete}"
                )
        warnings = set(outcome.warnings)
        self.warnings = warnings if self.warnings is None else self.warnings & warnings
        if outcome.violations:
            seen = {name for *_, name in self.failures}
            for name, _ in outcome.violations:
                if name not in seen or self.every_violation:
                    seen.add(name)
                    self.failures.append((len(self.plans) - 1, outcome, name))
            if self.stop_at_first:
                self.done = True
        if self.tick is not None:
            self.tick(len(self.plans))


class Coverage(TypedDict, total=False):
    """What a strategy alone knows of what it covered: the report's fields it fills."""

    skipped_equivalent: int
    total_under_bound: int | None
    verdicts: dict[tuple[str, str], str]
    state_space: StateSpace | None
    state_paths: list[tuple[tuple[str, str | None], ...]]
    freeze_seconds: float | None
    distinct_states: int
    pruned_by_reduction: int
    pruned_by_cache: int
    pruned_by_symmetry: int
    search_progress: dict[str, Any]
    naive_schedules: int | None
    naive_how: str | None
    cut_by: list[str]
    order: str
    max_depth: int | None
    workers: int
    searched_to_the_end: bool


class Strategy(Protocol):
    """One way of searching a scenario's schedules (systematic, random, PCT, exhaustive).

    ``search`` runs schedules until the strategy has covered its bound, a budget cuts it, or
    ``tally.done`` (a violation, with ``stop_at_first``); a ``KeyboardInterrupt`` passes
    through, and what was run so far stays in ``tally``. ``coverage`` may be asked at any time
    after, an interrupted search included."""

    tally: Tally
    runner: Runner

    def search(self) -> None:
        """Run schedules until the bound is covered, cut, or a violation stops the search."""
        ...

    def coverage(self) -> Coverage:
        """What the search covered, as the report's fields."""
        ...


@dataclass(frozen=True, slots=True)
class Asked:
    """What an exploration was asked for: the report's header."""

    scenario: str
    strategy: str
    max_faults: int
    seed: int
    runtime: str
    budget: int | None = None
    stop_at_first: bool = True


def build_report(
    asked: Asked,
    tally: Tally,
    coverage: Coverage,
    *,
    adapter_failures: list[str],
    interrupted: bool,
) -> ExplorationReport:
    """The report of a search, built here only: what was asked, the tally's counts, the
    strategy's coverage, the adapter's failures and whether Ctrl-C stopped it (the violations,
    once shrunk, and the confirmation are added after)."""
    report = ExplorationReport(
        asked.scenario, asked.strategy, asked.max_faults, asked.seed, asked.runtime,
        budget=asked.budget, stopped_at_first=asked.stop_at_first,
        adapter_failures=adapter_failures, interrupted=interrupted,
        schedules_run=tally.schedules_run, incomplete_schedules=tally.incomplete,
        incomplete_reasons=list(tally.incomplete_reasons), warnings=sorted(tally.warnings or ()),
        **coverage,
    )  # fmt: skip
    if report.state_space is not None:
        report.state_space.cut_by[:] = _cut_by(report)
    return report


def _cut_by(report: ExplorationReport) -> list[str]:
    """What stopped an exhaustive search before its end, each a clause, for its state graph's
    pictures: a picture shown alone must not call the states a cut search reached all there
    are."""
    cut_by = [f"{why} cut the search" for why in report.cut_by]
    if report.interrupted:
        cut_by.append("Ctrl-C stopped it")
    if report.incomplete_schedules:
        count = report.incomplete_schedules
        cut_by.append(f"{count} schedule{'s' if count != 1 else ''} did not finish")
    if not cut_by and not report.searched_to_the_end:
        cut_by.append("it stopped at its first violation")
    return cut_by


class Sweeps:
    """Runs a plan strategy's batches of plans on the runner, in plan order, into the tally,
    until the tally is done; keeps the verdict of each single fault placed at a labelled point
    (the systematic search's grid)."""

    def __init__(self, runner: Runner, config: SearchConfig, tick: Tick) -> None:
        self.tally = Tally(config.stop_at_first, tick=tick)
        self.runner, self.budget = runner, config.budget
        self.verdicts: dict[tuple[str, str], str] = {}

    def room(self) -> int | None:
        """How many more schedules the budget allows (None: no budget)."""
        return None if self.budget is None else self.budget - len(self.tally.plans)

    def run(self, plans: list[Plan], *, expand: bool, share: bool = False) -> list[Outcome]:
        """Run ``plans`` in order, stopping once the tally is done; with ``share``, plans that
        extend one parent share its prefix where that pays. The outcomes of those run."""
        tally, results = self.tally, []

        def take(plan: Plan, outcome: Outcome) -> bool:
            results.append(outcome)
            if len(plan.faults) == 1 and plan.faults[0].label:
                self.verdicts[plan.faults[0].label, str(plan.faults[0].kind)] = outcome.verdict
            tally.take(plan, outcome)
            return not tally.done

        if not tally.done:
            self.runner.each(plans, expand=expand, take=take, share=share)
        return results


def applies(kind: FaultKind, outcome: Outcome, point: int) -> bool:
    """Whether the explorer places ``kind`` at ``point`` of the run ``outcome`` describes."""
    if point >= len(outcome.ops):
        return True  # a point past the run's end: no fault fires there anyway
    return applies_at(kind, outcome.ops[point], exploring=True)


def progress_bar(enabled: bool, total: int | None) -> Any:
    """A tqdm bar counting schedules (imported only when asked for)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="schedule", desc="exploring", disable=not enabled)
