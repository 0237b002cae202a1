"""bench_explorer's search-power section: schedules run until the first violation in
``trigger-in-step`` (``stop_at_first=True``, ``max_faults=2``, counting the fault-free base
run) for the systematic, random and PCT strategies, over several seeds (median), beside a
Hypothesis search (``hypothesis.find``, generate phase only, seeded) over lists of one or two
``ys.Fault(kind, at=index)`` drawn from the kinds and the choice points of the fault-free run,
each example a ``ys.simulate(..., faults=..., scenario_faults=False)``; its count also includes
the fault-free run it needed.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from _explorer_kit import FAULT_KINDS, explore, fault, timed_simulate
from _harness import median, show
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

import yieldstar_sim as ys

if TYPE_CHECKING:
    from collections.abc import Sequence


def hypothesis_search(scenario: ys.Scenario, seed: int, max_examples: int) -> int | None:
    """Schedules (the fault-free run, then examples) until Hypothesis finds a violation."""
    _, base = timed_simulate(scenario, seed=seed, runtime="memory", scenario_faults=False)
    calls = 0
    first: int | None = None

    def violates(faults: list[ys.Fault]) -> bool:
        nonlocal calls, first
        calls += 1
        # Two faults drawn at one choice point, or one a crash left unreached, cannot all
        # fire: the explorer would never run that plan, so it is not a violation either.
        run = ys.simulate(
            scenario, seed, runtime="memory", faults=faults, scenario_faults=False,
            check_faults=False,
        )  # fmt: skip
        run.runtime.close()
        # A violation, as the explorer counts one (a run cut short is no find).
        found = bool(run.violations)
        if found and first is None:
            first = calls
        return found

    placed = st.tuples(st.sampled_from(FAULT_KINDS), st.integers(0, max(base.points - 1, 0)))
    plans = st.lists(
        placed.map(lambda pair: fault(pair[0], pair[1], scenario)), min_size=1, max_size=2
    )
    options = settings(
        database=None,
        derandomize=False,
        max_examples=max_examples,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    try:
        find(plans, violates, settings=options, random=random.Random(seed))
    except NoSuchExample:
        return None
    return None if first is None else first + 1


@dataclass
class Search:
    """Schedules to the first violation, per seed, for one search method."""

    method: str
    counts: list[int | None] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    @property
    def found(self) -> list[int]:
        return [c for c in self.counts if c is not None]

    @property
    def median(self) -> float:
        return median(self.found) if self.found else float("inf")


def measure_search(scenario: ys.Scenario, seeds: Sequence[int], budget: int) -> list[Search]:
    searches = [Search(m) for m in ("systematic", "random", "pct", "hypothesis")]
    for seed in seeds:
        for search in searches:
            start = time.perf_counter()
            if search.method == "hypothesis":
                count = hypothesis_search(scenario, seed, budget)
            else:
                _, report = explore(
                    scenario, strategy=search.method, max_faults=2, seed=seed, budget=budget
                )
                # Not report.ok: a systematic search its budget cut is incomplete, not a find.
                count = report.schedules_run if report.violations else None
            search.counts.append(count)
            search.seconds.append(time.perf_counter() - start)
    return searches


def print_search(searches: Sequence[Search], scenario: ys.Scenario, budget: int) -> bool:
    seeds = len(searches[0].counts)
    print(
        f"\nSchedules to the first violation in {scenario.name} (max 2 faults, budget {budget}, "
        f"seeds 0-{seeds - 1}; counts include the fault-free run)"
    )
    rows = [["method", "found", "median", "min", "max", "per seed", "median s"]]
    for search in searches:
        found = search.found
        rows.append(
            [
                search.method,
                f"{len(found)}/{seeds}",
                f"{search.median:g}",
                str(min(found)) if found else "-",
                str(max(found)) if found else "-",
                " ".join("-" if c is None else str(c) for c in search.counts),
                f"{median(search.seconds):.3f}",
            ]
        )
    show(rows, [False, True, True, True, True, False, True], "  ")
    print(
        "  median s: seconds to the verdict per seed, the explorer's including its shrinking "
        "of what it found."
    )
    systematic, *others = searches
    return all(systematic.median < other.median for other in others)
