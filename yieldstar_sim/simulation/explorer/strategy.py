"""What every strategy shares: its options (a small dataclass each), the one shape a strategy
has (``Strategy``, as shuttle's ``Scheduler`` trait), why a search stopped (``StopReason``), and
the tally of what it ran and found (``Tally``), which the report is built from, and the
cyclic collector's pace while one runs (``paced_collector``).
"""

from __future__ import annotations

import contextlib
import enum
import gc
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from yieldstar_sim.simulation.faults import FAULT_KINDS, FaultKind, explored_seconds

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import TypeAlias

    from yieldstar_sim.simulation.explorer.runs import Outcome

    Tick: TypeAlias = Callable[[int], None] | None
    """Progress: called with the number of schedules run after each one (or nothing)."""


class StopReason(enum.StrEnum):
    """Why a search stopped (``describe`` says it as a coverage statement does)."""

    COVERED = "covered"
    """It covered everything its bound holds."""
    SAMPLED = "sampled"
    """A sampling strategy ran the schedules it meant to."""
    VIOLATION = "violation"
    """It stopped at its first violation (``stop_at_first``)."""
    BUDGET = "budget"
    """The budget of schedules cut it."""
    TIME_BUDGET = "time_budget"
    """The time budget cut it."""
    DEPTH = "depth"
    """The depth bound cut some path (the exhaustive search's ``max_depth``)."""
    INTERRUPTED = "interrupted"
    """Ctrl-C (or, for the command, SIGTERM) stopped it."""
    LOST = "lost"
    """A process of a search on a cluster was lost (its worker died): what it searched is
    gone."""

    def describe(self) -> str:
        """The reason in words, as a coverage statement says it."""
        return _REASONS[self]


_REASONS = {
    StopReason.COVERED: "it covered its bound",
    StopReason.SAMPLED: "it ran its sample",
    StopReason.VIOLATION: "it stopped at the first violation",
    StopReason.BUDGET: "the budget of schedules cut it",
    StopReason.TIME_BUDGET: "the time budget cut it",
    StopReason.DEPTH: "the depth bound cut it",
    StopReason.INTERRUPTED: "Ctrl-C stopped it",
    StopReason.LOST: "a worker of the cluster was lost mid-search",
}


@dataclass(frozen=True, slots=True)
class Systematic:
    """The systematic strategy: every fault kind at every choice point of the seed's run, and
    every option of each draw and completion order, level by level up to ``max_faults``."""

    name = "systematic"


@dataclass(frozen=True, slots=True)
class Random:
    """Seeded random schedules: random faults at random points, random interleavings."""

    name = "random"


@dataclass(frozen=True, slots=True)
class Pct:
    """PCT: priority scheduling with ``depth`` priority change points, plus random faults."""

    depth: int = 3
    name = "pct"

    def __post_init__(self) -> None:
        if isinstance(self.depth, bool) or not isinstance(self.depth, int) or self.depth < 1:
            raise ValueError(f"PCT's depth is a whole number >= 1, not {self.depth!r}")


@dataclass(frozen=True, slots=True)
class Exhaustive:
    """Every move at every choice point up to ``max_faults``: depth first (``order="dfs"``)
    or shortest first (``"shortest"``: the violation with the fewest faults, then events);
    ``max_depth`` bounds the choice points it branches at. ``cache=False`` searches without
    state caching: the naive search, for comparison. ``reduction=False`` takes every move at
    every state, where partial-order reduction would take one worker's alone
    (``simulation.persistent``)."""

    max_depth: int | None = None
    order: str = "dfs"
    cache: bool = True
    reduction: bool = True
    name = "exhaustive"

    def __post_init__(self) -> None:
        if self.order not in ("dfs", "shortest"):
            raise ValueError(f"order must be one of dfs, shortest, not {self.order!r}")
        depth = self.max_depth
        if depth is not None and (
            isinstance(depth, bool) or not isinstance(depth, int) or depth < 1
        ):
            raise ValueError(f"max_depth must be a whole number >= 1, not {depth!r}")
        if not isinstance(self.cache, bool):
            raise TypeError(f"cache is True or False, not {self.cache!r}")
        if not isinstance(self.reduction, bool):
            raise TypeError(f"reduction is True or False, not {self.reduction!r}")


StrategyOptions = Systematic | Random | Pct | Exhaustive
#: The strategies ``explore`` knows, by name.
STRATEGIES: dict[str, type[StrategyOptions]] = {
    "systematic": Systematic, "random": Random, "pct": Pct, "exhaustive": Exhaustive,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """What every strategy reads: ``explore``'s arguments, and the strategy's own options."""

    strategy: StrategyOptions = field(default_factory=Systematic)
    seed: int = 0
    max_faults: int = 1
    kinds: tuple[FaultKind, ...] = tuple(FaultKind(kind) for kind in FAULT_KINDS)
    freeze: float = 40.0
    budget: int | None = None
    time_budget: float | None = None
    stop_at_first: bool = True

    def __post_init__(self) -> None:
        if self.time_budget is not None and not self.time_budget > 0:
            raise ValueError(
                f"time_budget must be a positive number of seconds, not {self.time_budget!r}"
            )

    def seconds(self) -> dict[FaultKind, float]:
        """How long each timed kind lasts in this search (``faults.explored_seconds``)."""
        made = {kind: explored_seconds(kind, self.freeze) for kind in self.kinds}
        return {kind: seconds for kind, seconds in made.items() if seconds is not None}


@dataclass
class Tally:
    """What a search ran and found, in the order it ran it (every strategy hands each run's
    outcome to ``take``). ``failures`` holds (outcome number, invariant): the first violation
    of each invariant, or with ``every_violation`` all of them (the shortest-first search picks
    among them); ``warnings`` are those every run gave (an invariant that watched nothing)."""

    config: SearchConfig
    every_violation: bool = False
    tick: Tick = None
    outcomes: list[Outcome] = field(default_factory=list)
    failures: list[tuple[int, str]] = field(default_factory=list)
    warnings: set[str] | None = None
    incomplete: int = 0
    incomplete_reasons: list[str] = field(default_factory=list)
    unfair: int = 0
    """The exhaustive search's schedules cut on a loop only an unfair scheduler keeps up
    (``Outcome.unfair``): not incomplete, since the search also ran the fair turns."""
    unfair_reasons: list[str] = field(default_factory=list)
    stopped: StopReason | None = None
    """Why the search stopped before covering its bound (None: it did not, yet)."""
    started: float = field(default_factory=time.perf_counter)

    @property
    def runs(self) -> int:
        """How many schedules ran to their end (or to their cut)."""
        return len(self.outcomes)

    @property
    def done(self) -> bool:
        """Whether the search must run nothing more."""
        return self.stopped is not None

    def take(self, outcome: Outcome) -> Outcome:
        """Count one run: its incompleteness, its warnings and its violations; returns it,
        numbered."""
        outcome.index = len(self.outcomes)
        self.outcomes.append(outcome)
        if outcome.incomplete is not None and not outcome.violations:
            faults = ", ".join(f.describe() for f in outcome.faults) or "no faults"
            unfair = outcome.unfair is not None and self._runs_every_fair_turn()
            if unfair:
                self.unfair += 1
            else:
                self.incomplete += 1
            reasons = self.unfair_reasons if unfair else self.incomplete_reasons
            if len(reasons) < 3:
                why = outcome.unfair if unfair else outcome.incomplete
                reasons.append(f"schedule #{outcome.index} ({faults}): {why}")
        warnings = set(outcome.warnings)
        self.warnings = warnings if self.warnings is None else self.warnings & warnings
        if outcome.violations:
            seen = {name for _, name in self.failures}
            for name, _ in outcome.violations:
                if name not in seen or self.every_violation:
                    seen.add(name)
                    self.failures.append((outcome.index, name))
            if self.config.stop_at_first and not self.every_violation:
                self.stopped = StopReason.VIOLATION
        if self.tick is not None:
            self.tick(len(self.outcomes))
        return outcome

    def _runs_every_fair_turn(self) -> bool:
        """Whether the search also runs, off a schedule, every move it did not take: the
        exhaustive search with no depth bound. Only then is a schedule kept going by an unfair
        scheduler alone no gap in what it covered."""
        strategy = self.config.strategy
        return isinstance(strategy, Exhaustive) and strategy.max_depth is None

    def out_of_budget(self) -> bool:
        """Whether a budget stops the search now (and say which)."""
        config = self.config
        if self.stopped is not None:
            return True
        if config.budget is not None and len(self.outcomes) >= config.budget:
            self.stopped = StopReason.BUDGET
        elif (
            config.time_budget is not None
            and time.perf_counter() - self.started > config.time_budget
        ):
            self.stopped = StopReason.TIME_BUDGET
        return self.stopped is not None


class Strategy(Protocol):
    """One way of searching a scenario's schedules. A ``KeyboardInterrupt`` passes through
    ``search``, what was run so far staying in ``tally``; ``section`` may be asked after it, an
    interrupted search included."""

    tally: Tally

    def search(self) -> None:
        """Run schedules until the bound is covered, a budget cuts it, or a violation stops
        it (``stop_at_first``)."""
        ...

    def section(self) -> dict[str, Any]:
        """What this strategy covered, as the report's per-strategy section."""
        ...


def keep_shortest(tally: Tally, start: int = 0) -> None:
    """Keep, per invariant, the violation from ``start`` on with the fewest faults, then
    events (the shortest-first search keeps every violating run of a level)."""

    def rank(failure: tuple[int, str]) -> tuple[int, int]:
        outcome = tally.outcomes[failure[0]]
        return len(outcome.faults), outcome.length

    best: dict[str, tuple[int, str]] = {}
    for failure in tally.failures[start:]:
        held = best.get(failure[1])
        if held is None or rank(failure) < rank(held):
            best[failure[1]] = failure
    tally.failures[start:] = sorted(best.values(), key=rank)


#: The cyclic collector's young-generation threshold while a search runs (CPython's default
#: is 700).
SEARCH_YOUNG_THRESHOLD = 50_000


@contextlib.contextmanager
def paced_collector() -> Iterator[None]:
    """The cyclic collector run less often while the search runs, as it was set after.

    A search restores a state thousands of times, and what a run built since then is freed by
    reference counting at each restore; but the collector counts objects made less objects
    freed, and a run longer than 700 new containers (a trace event and its payload are
    several) set off a young collection, which promoted what the run still held, whose growth
    set off full collections of the whole heap (docs/decisions.md, "The search rebuilt
    around one Execution"). With the threshold raised, a run's objects are mostly freed
    before any collection sees them; cycles are still collected, after at most this many net
    new containers."""
    young, *older = gc.get_threshold()
    gc.set_threshold(max(young, SEARCH_YOUNG_THRESHOLD), *older)
    try:
        yield
    finally:
        gc.set_threshold(young, *older)
