"""bench_explorer's restoring section (``--restoring-only``): a search that puts saved states
back against the same search replaying the path to each, in one run.

Every search saves the run's state where it will come back (a systematic sweep at each fault's
point, the exhaustive search at each state with a move left) and comes back with
``Execution.restore``: on a runtime that snapshots itself (the memory runtime) the state is put
back (``saving.restore``), on any other the run is made again and the path replayed from the
start. The same search is run both ways on the memory runtime, the second behind
``Unsnapshotted``: the memory runtime with every call but ``snapshot`` and ``restore``, so that
the only difference is how a state comes back (the state keys still read only the rows written
since the last point). Alternating, medians of repetitions; the two reports must be identical.

Cases: one workflow of N ``step.run`` steps, 2 workers, the systematic search with one fault,
crashes at every point, no budget; bundled scenarios, the systematic search with two faults,
every kind, the first 3,000 schedules; durable-start's exhaustive search with one fault.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from _explorer_kit import chain_scenario, essentials, explore
from _harness import median, progress, show, target

import yieldstar_sim as ys
from yieldstar_sim.runtime.memory import MemoryRuntime

if TYPE_CHECKING:
    from yieldstar_sim.simulation import ExplorationReport

MAX_RATIO = 1.0
"""Restored over replayed, every case: putting a state back is never slower than replaying
the path to it."""

MODES = ("replayed", "restored")
SCENARIOS = ("durable-start", "lost-response", "zombie-attempt")


class Unsnapshotted:
    """A runtime that does not say it can snapshot itself: the memory runtime behind a door
    that shows every call but ``snapshot`` and ``restore`` (``tests/simulation/test_restore.py``
    has the same door, which hides the rows' changes too). Its calls are the memory runtime's
    own bound methods, set on the instance, so that a call costs what it costs unwrapped."""

    HIDDEN = frozenset({"snapshot", "restore"})

    def __init__(self, clock: Any, **options: Any) -> None:
        self._inner = inner = MemoryRuntime(clock=clock, **options)
        for name in dir(type(inner)):
            if name.startswith("_") or name in self.HIDDEN:
                continue
            value = getattr(inner, name)
            if callable(value):
                setattr(self, name, value)

    def __getattr__(self, name: str) -> Any:
        if name in self.HIDDEN:
            raise AttributeError(name)
        return getattr(self._inner, name)


@dataclass
class RestoreCost:
    case: str
    schedules: int = 0
    times: dict[str, list[float]] = field(default_factory=lambda: {mode: [] for mode in MODES})
    identical: bool = True
    restores: int | None = None
    replayed_moves: int | None = None

    def ratio(self) -> float:
        """Restoring's time over replaying's."""
        return median(self.times["restored"]) / median(self.times["replayed"])


def _summary(report: ExplorationReport) -> tuple[Any, ...]:
    """What the two ways must agree on."""
    covered = report.exhaustive
    states = None if covered is None else (covered.distinct_states, covered.pruned_by_cache)
    return (essentials(report), report.verdicts, report.warnings, states)


def measure(case: str, scenario: ys.Scenario, reps: int, **options: Any) -> RestoreCost:
    """Both ways' explorations of ``scenario``, alternating."""
    result = RestoreCost(case)
    reports = {}
    for rep in range(reps):
        for mode in MODES if rep % 2 == 0 else MODES[::-1]:
            progress(f"restoring, {case}, {mode}, repetition {rep + 1}/{reps}")
            runtime = Unsnapshotted if mode == "replayed" else "memory"
            seconds, report = explore(scenario, stop_at_first=False, runtime=runtime, **options)
            result.times[mode].append(seconds)
            reports[mode] = _summary(report)
            result.schedules = report.schedules_run
            covered = report.exhaustive
            if covered is not None and mode == "replayed":
                result.restores = covered.progress["restores"]
                result.replayed_moves = covered.progress["replayed_moves"]
    result.identical = reports["replayed"] == reports["restored"]
    return result


def restoring_section(quick: bool, smoke: bool = False) -> bool:
    """Measure and print what restoring spares; True when the target is met (smoke: 20 steps,
    one scenario and a small exhaustive search, once)."""
    steps, reps = (20, 1) if smoke else (300, 3) if quick else (1000, 3)
    chain = chain_scenario(steps)
    costs = [measure(f"chain-{steps}, systematic", chain, reps, max_faults=1, kinds=("crash",))]
    for name in SCENARIOS[:1] if smoke else SCENARIOS:
        budget = 100 if smoke else 3000
        costs.append(
            measure(f"{name}, systematic", ys.load_scenario(name), reps, max_faults=2,
                    budget=budget)
        )  # fmt: skip
    costs.append(
        measure(
            "durable-start, exhaustive", ys.load_scenario("durable-start"), reps,
            strategy="exhaustive", max_faults=0 if smoke else 1,
        )
    )  # fmt: skip
    print(
        "\nRestoring: searches that put saved states back against the same searches replaying "
        f"the path to each (the memory runtime behind a door without snapshot); medians of "
        f"{reps}, alternating. The chain: one workflow of N step.run steps, 2 workers, crashes "
        "at every point; the scenarios: two faults, every kind, at most 3,000 schedules"
    )
    rows = [["case", "schedules", "replayed s", "restored s", "restored / replayed", "same report"]]
    rows.extend(
        [
            cost.case,
            f"{cost.schedules:,}",
            *(f"{median(cost.times[mode]):.2f}" for mode in MODES),
            f"{cost.ratio():.2f}x",
            "yes" if cost.identical else "NO",
        ]
        for cost in costs
    )
    show(rows, [False] + [True] * 4 + [False], "  ")
    for cost in costs:
        if cost.restores is not None:
            print(
                f"  {cost.case}: {cost.restores:,} states come back to, replaying "
                f"{cost.replayed_moves:,} moves in all"
            )
    ok = all(cost.identical and cost.ratio() <= MAX_RATIO for cost in costs)
    target(ok, f"restoring at most {MAX_RATIO}x of replaying on every case, same reports")
    return ok
