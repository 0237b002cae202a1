"""The explorer: search faults and interleavings, shrink what fails, confirm it on DuckDB.

Strategies:

- ``systematic``: every fault kind at every choice point of the fault-free run
  (``max_faults=1``), then every further fault after each of those (``max_faults=2``...),
  skipping a fault whose point is *equivalent* to one already tried: same runtime records,
  ledger, clock, same call, and every other actor doing the same thing (a state fingerprint,
  so symmetric workers and repeated idle polls are tried once);
- ``random``: seeded random fault plans (and seeds, hence interleavings);
- ``pct``: PCT-style priority scheduling with ``depth`` priority change points, plus random
  faults.

A violation is shrunk by delta debugging over its faults (kept as descriptions, so removing one
does not move the others) to a minimal plan that violates the same invariant, saved as a replay
artifact, and compared with its nearest passing plan.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import html
import multiprocessing
import random
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yieldstar_sim.engine.worker import frozen_heap
from yieldstar_sim.filenames import file_stem
from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT
from yieldstar_sim.simulation.faults import FAULT_KINDS, Fault, FaultKind, PointInfo
from yieldstar_sim.simulation.run import SimulationRun, finish, simulate
from yieldstar_sim.simulation.scenario import load_scenario
from yieldstar_sim.simulation.simulator import Simulator

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from yieldstar_sim.simulation.artifact import ReplayArtifact
    from yieldstar_sim.simulation.kernel import Point
    from yieldstar_sim.simulation.scenario import Scenario

STRATEGIES = ("systematic", "random", "pct")


# --------------------------------------------------------------------------- plans and results


@dataclass(frozen=True, slots=True)
class Plan:
    """One schedule to run: a seed, faults placed at choice points, and (PCT) priorities."""

    index: int
    seed: int
    faults: tuple[Fault, ...] = ()
    priorities: tuple[str, ...] = ()
    change_points: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Outcome:
    """What running a plan gave, small enough to cross a process boundary.

    ``ok`` is true only when the run finished and every invariant held; ``incomplete`` says
    why a run did not finish (a budget, the wall-clock limit).
    """

    index: int
    ok: bool
    violations: tuple[tuple[str, str], ...]
    digest: str
    points: int
    faults: tuple[Fault, ...]
    labels: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    incomplete: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        """``ok``, ``violated`` or ``incomplete``, as for a run."""
        if self.violations:
            return "violated"
        return "incomplete" if self.incomplete is not None else "ok"

    def violates(self, invariant: str) -> bool:
        """Whether this run violated the invariant named ``invariant``."""
        return any(name == invariant for name, _ in self.violations)


class _PctChooser:
    """PCT: the ready actor with the highest priority goes; at each change point the actor that
    goes drops to the lowest priority."""

    def __init__(self, priorities: Sequence[str], change_points: Sequence[int]) -> None:
        self.rank = {name: len(priorities) - i for i, name in enumerate(priorities)}
        self.change_points = set(change_points)
        self.lowest = 0

    def __call__(self, index: int, ready: list[str]) -> str:
        chosen = max(ready, key=lambda name: (self.rank.get(name, 0), name))
        if index in self.change_points:
            self.lowest -= 1
            self.rank[chosen] = self.lowest
        return chosen


def _state_key(simulator: Simulator, name: str, point: Point) -> str:
    """A fingerprint of the state at a choice point, blind to which worker is which."""
    runtime = simulator.runtime
    records = []
    for record in runtime.executions():
        lease = record.lease
        records.append(
            (
                record.execution_id,
                str(record.status),
                record.due_at,
                record.lease_token,
                None if lease is None else lease.expires_at,
                record.cancel_requested,
                record.waiting_on,
                tuple(
                    (s.step_key, s.status, s.attempt) for s in runtime.steps(record.execution_id)
                ),
            )
        )
    others = sorted(
        state.replace(other, "~") for other, state in simulator.kernel.waiting() if other != name
    )
    info: PointInfo = point.info
    ledger = [
        (e.name, sorted(e.data.items()), e.execution_id, e.step_key)
        for e in simulator.ledger.effects
    ]
    text = repr(
        (records, simulator.clock.now(), ledger, others, info.op, info.execution_id, info.step_key)
    )
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def run_plan(
    scenario: Scenario,
    plan: Plan,
    runtime: str = "memory",
    *,
    expand: bool = False,
    digest: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> Outcome:
    """Run one plan; with ``expand``, also record each choice point's label and state key;
    with ``digest``, the trace's digest (serialising a trace costs a fifth of a schedule, so
    the search leaves it out and confirmation asks for it)."""
    simulator = _simulator(scenario, plan, runtime, timeout)
    labels: list[str] = []
    keys: list[str] = []
    if expand:

        def observe(index: int, name: str, point: Point, fault: Any) -> None:
            labels.append(point.label)
            keys.append(_state_key(simulator, name, point))

        simulator.kernel.observers.append(observe)
    simulator.run()
    run = finish(simulator)
    outcome = Outcome(
        index=plan.index,
        ok=run.ok,
        violations=tuple((v.invariant, v.message) for v in run.violations),
        digest=run.trace_digest() if digest else "",
        points=run.points,
        faults=tuple(run.faults),
        labels=tuple(labels),
        keys=tuple(keys),
        incomplete=run.incomplete,
        warnings=tuple(run.warnings),
    )
    run.runtime.close()
    return outcome


def _simulator(
    scenario: Scenario, plan: Plan, runtime: str, timeout: float | None = DEFAULT_TIMEOUT
) -> Simulator:
    chooser = _PctChooser(plan.priorities, plan.change_points) if plan.priorities else None
    return Simulator(
        scenario, seed=plan.seed, runtime=runtime, faults=plan.faults, scenario_faults=False,
        chooser=chooser, timeout=timeout,
    )  # fmt: skip


def simulate_plan(
    scenario: Scenario, plan: Plan, runtime: str = "memory", timeout: float | None = None
) -> SimulationRun:
    """Run one plan and keep the whole run (trace, records) for reading."""
    simulator = _simulator(scenario, plan, runtime, timeout)
    simulator.run()
    return finish(simulator)


# --------------------------------------------------------------------------- parallel shards

#: Scenarios a shard process holds: the one its own pool handed over (key None), and those it
#: loaded by reference for other executors' tasks (a worker may serve several explorations).
_SHARD_SCENARIOS: dict[str | None, Scenario] = {}


def _shard_init(scenario: Scenario | None, reference: str | None) -> None:
    _SHARD_SCENARIOS[None] = scenario if scenario is not None else load_scenario(str(reference))


def _shard_run(
    plans: list[Plan],
    runtime: str,
    expand: bool,
    reference: str | None,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> list[Outcome]:
    scenario = _SHARD_SCENARIOS.get(reference)
    if scenario is None:
        scenario = _SHARD_SCENARIOS[reference] = load_scenario(str(reference))
    return [run_plan(scenario, plan, runtime, expand=expand, timeout=timeout) for plan in plans]


class _Runner:
    """Runs plans in order, here or on an executor; results come back in plan order."""

    def __init__(
        self,
        scenario: Scenario,
        runtime: str,
        jobs: int,
        executor: concurrent.futures.Executor | None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        self.scenario = scenario
        self.runtime = runtime
        self.timeout = timeout
        # An executor of someone else's (a cluster's) gets several shards per chunk even with
        # jobs=1: one task per schedule would cost more in scheduling than in simulating.
        self.jobs = max(1, jobs) if executor is None else max(4, jobs)
        self._asked = self.jobs
        self._own: concurrent.futures.Executor | None = None
        self.executor = executor

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

    def _reference(self) -> str:
        if not self.scenario.ref:
            raise ValueError(
                "running shards in other processes needs a scenario loaded from a file or by "
                "name (ys.load_scenario), so that each process can load it"
            )
        return self.scenario.ref

    def run(self, plans: Sequence[Plan], *, expand: bool = False) -> list[Outcome]:
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
                    _shard_run, shard, self.runtime, expand, reference, self.timeout
                )
                for shard in shards
                if shard
            ]
        done = [future.result() for future in futures]
        return [done[i % self.jobs][i // self.jobs] for i in range(len(plans))]

    def close(self, *, cancel: bool = False) -> None:
        if self._own is not None:
            self._own.shutdown(cancel_futures=cancel)
            self._own = self.executor = None


# --------------------------------------------------------------------------- the report


@dataclass
class FoundViolation:
    """A violation the explorer found, shrunk, and compared with its nearest passing plan."""

    invariant: str
    message: str
    artifact: ReplayArtifact
    faults: list[str]
    found_at: int
    nearest_passing: list[str] | None = None
    divergence: str | None = None
    divergence_at: int | None = None
    """The sequence number of the first trace event where the nearest passing run differs."""
    nearest_artifact: ReplayArtifact | None = None
    artifact_path: Path | None = None


@dataclass
class ExplorationReport:
    """What an exploration covered and found.

    ``verdict`` is ``"violated"`` when a schedule violated an invariant (or the runtimes
    disagreed), ``"incomplete"`` when something cut the search or a schedule (a budget, the
    wall-clock limit, Ctrl-C) and nothing was violated, else ``"ok"``; ``ok`` is true only for
    ``"ok"``. ``exhausted`` says whether every schedule under the bound was covered (run, or
    skipped as equivalent to one run). ``counterexample`` is the first violation's shrunk replay
    artifact. ``schedules_run`` counts schedules in plan order up to the first violation (or all
    of them with ``stop_at_first=False``): it does not depend on how many shards ran them.
    """

    scenario: str
    strategy: str
    max_faults: int
    seed: int
    runtime: str
    schedules_run: int = 0
    skipped_equivalent: int = 0
    total_under_bound: int | None = None
    violations: list[FoundViolation] = field(default_factory=list)
    verdicts: dict[tuple[str, str], str] = field(default_factory=dict)
    confirmations: list[str] = field(default_factory=list)
    runtime_mismatches: list[str] = field(default_factory=list)
    elapsed: float = 0.0
    incomplete_schedules: int = 0
    """Schedules a budget or the wall-clock limit cut: neither ok nor violated."""
    incomplete_reasons: list[str] = field(default_factory=list)
    """Why the first few incomplete schedules were cut."""
    warnings: list[str] = field(default_factory=list)
    """Invariants and expectations that watched nothing in any schedule run."""
    budget: int | None = None
    stopped_at_first: bool = False
    """The search stopped at its first violation (``stop_at_first``)."""
    interrupted: bool = False
    """Ctrl-C stopped the search; what it had found is kept."""

    @property
    def exhausted(self) -> bool:
        """Whether every schedule under the bound was covered, up to equivalence."""
        return (
            self.strategy == "systematic"
            and not self.interrupted
            and self.total_under_bound is not None
            and self.schedules_run + self.skipped_equivalent >= self.total_under_bound
        )

    @property
    def verdict(self) -> str:
        """``"ok"``, ``"violated"`` or ``"incomplete"``."""
        if self.violations or self.runtime_mismatches:
            return "violated"
        if self.interrupted or self.incomplete_schedules:
            return "incomplete"
        if self.strategy == "systematic" and not self.exhausted:
            return "incomplete"
        return "ok"

    @property
    def ok(self) -> bool:
        """Whether the search covered what it set out to and nothing was violated."""
        return self.verdict == "ok"

    @property
    def counterexample(self) -> ReplayArtifact | None:
        """The first violation's shrunk replay artifact, if any."""
        return self.violations[0].artifact if self.violations else None

    def coverage(self) -> str:
        """What the search covered, in one sentence that claims no more than it did."""
        bound = f"max {self.max_faults} fault{'s' if self.max_faults != 1 else ''}"
        run = f"{self.schedules_run} schedule{'s' if self.schedules_run != 1 else ''} run"
        skipped = (
            f", {self.skipped_equivalent} skipped as equivalent to one run"
            if self.skipped_equivalent
            else ""
        )
        if self.strategy != "systematic":
            return f"{run} ({self.strategy}, {bound}): a sample of the schedules, not all of them"
        total = self.total_under_bound
        if self.interrupted:
            of = f" of {total}" if total is not None else ""
            return f"interrupted (Ctrl-C) after {self.schedules_run}{of} schedules under {bound}"
        if self.exhausted:
            return (
                f"exhausted the bound: all {total} schedules under {bound} covered: {run}"
                f"{skipped} (every fault kind at every choice point of seed {self.seed}'s "
                "interleaving; other interleavings are sampled only by other seeds)"
            )
        if self.violations and self.stopped_at_first:
            return (
                f"stopped at the first violation after {self.schedules_run} of {total} "
                f"schedules under {bound}{skipped}"
            )
        if self.budget is not None and total is not None:
            return (
                f"the budget of {self.budget} schedules cut the search: {run}{skipped} of "
                f"{total} under {bound}"
            )
        return f"{run}{skipped} of {total} under {bound}"

    def export(self, path: str | Path, *, scenario: Scenario | None = None) -> Path:
        """Write the design-review page of this exploration to ``path`` (one self-contained
        HTML file: verdict, coverage, grid, and per violation its divergence and a stepper over
        its replay). ``scenario``: the explored one, when it is not bundled. Returns the path."""
        from yieldstar_sim.views.review import write_review

        return write_review(self, path, scenario=scenario)

    def summary(self) -> str:
        """A few lines for people: verdict, coverage, and each violation explained."""
        lines = [
            f"{self.scenario}: {self.strategy} exploration, max {self.max_faults} fault(s), seed "
            f"{self.seed}, {self.runtime}: {self.verdict}",
            f"  {self.coverage()}, in {self.elapsed:.1f}s",
        ]
        if self.incomplete_schedules:
            lines.append(
                f"  {self.incomplete_schedules} schedule(s) did not finish (neither ok nor "
                f"violated): {'; '.join(self.incomplete_reasons)}"
            )
        if not self.violations and not self.runtime_mismatches:
            lines.append("  no invariant was violated")
        for found in self.violations:
            lines.append(f"  VIOLATED {found.invariant}: {found.message}")
            if found.faults:
                lines.append(
                    f"    shrunk to {len(found.faults)} fault(s): {'; '.join(found.faults)}"
                )
            else:
                lines.append(
                    "    shrunk to no fault: the schedule violates it without any fault (the "
                    f"interleaving of seed {found.artifact.seed} alone, as the sentence says)"
                )
            if found.nearest_passing is not None:
                lines.append(
                    f"    nearest passing: {'; '.join(found.nearest_passing) or 'no faults'}"
                )
            if found.divergence:
                lines.append(f"    first divergence: {found.divergence}")
            if found.artifact_path is not None:
                lines.append(f"    replay artifact: {found.artifact_path}")
        broken = self.broken_by()
        if broken and not self.stopped_at_first:
            lines.append("  single faults that break it:")
            lines += [f"    {kind} at {', '.join(labels)}" for kind, labels in broken.items()]
        lines += [f"  runtime mismatch: {m}" for m in self.runtime_mismatches]
        lines += [f"  {c}" for c in self.confirmations]
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def broken_by(self) -> dict[str, list[str]]:
        """For each fault kind, the choice points where that single fault broke an invariant
        (the grid's red cells)."""
        broken: dict[str, list[str]] = {}
        for (label, kind), verdict in self.verdicts.items():
            if verdict == "violated":
                broken.setdefault(kind, []).append(label)
        return broken

    def by_point(self) -> tuple[list[str], list[str], dict[tuple[str, str], str]]:
        """Single-fault verdicts as a table: choice-point labels (rows, in run order), fault
        kinds (columns) and ``{(label, kind): "ok" | "violated" | "equivalent"}``."""
        labels = list(dict.fromkeys(label for label, _ in self.verdicts))
        kinds = [str(kind) for kind in FAULT_KINDS if any(k == kind for _, k in self.verdicts)]
        return labels, kinds, dict(self.verdicts)

    def per_kind(self) -> dict[str, dict[str, int]]:
        """For each fault kind, how many single-fault schedules ended ok, violated, incomplete,
        equivalent."""
        counts: dict[str, dict[str, int]] = {}
        for (_, kind), verdict in self.verdicts.items():
            empty = {"ok": 0, "violated": 0, "incomplete": 0, "equivalent": 0}
            counts.setdefault(kind, empty)[verdict] += 1
        return counts

    def _repr_html_(self) -> str:
        """Jupyter: the verdict, each violation, and the choice point x fault kind table."""
        colour = {
            "ok": "#d9f2e3", "violated": "#f8d0d0", "incomplete": "#fbe8b0",
            "equivalent": "#eeeeee",
        }  # fmt: skip
        mark = {"ok": "ok", "violated": "✗", "incomplete": "…", "equivalent": "≡"}
        labels, kinds, verdicts = self.by_point()
        head = "".join(f"<th>{html.escape(kind)}</th>" for kind in kinds)
        rows = []
        for label in labels:
            cells = []
            for kind in kinds:
                verdict = verdicts.get((label, kind))
                cells.append(
                    "<td></td>"
                    if verdict is None
                    else f'<td style="background:{colour[verdict]}">{mark[verdict]}</td>'
                )
            rows.append(f"<tr><td><code>{html.escape(label)}</code></td>{''.join(cells)}</tr>")
        summary = html.escape(self.summary()).replace("\n", "<br>")
        table = (
            f"<table><tr><th>choice point</th>{head}</tr>{''.join(rows)}</table>" if rows else ""
        )
        return f"<div><p style='font-family:monospace'>{summary}</p>{table}</div>"

    def to_json(self) -> dict[str, Any]:
        """The report as plain data (the CLI's --json)."""
        return {
            "scenario": self.scenario,
            "strategy": self.strategy,
            "max_faults": self.max_faults,
            "seed": self.seed,
            "runtime": self.runtime,
            "ok": self.ok,
            "verdict": self.verdict,
            "coverage": self.coverage(),
            "exhausted": self.exhausted,
            "interrupted": self.interrupted,
            "schedules_run": self.schedules_run,
            "skipped_equivalent": self.skipped_equivalent,
            "total_under_bound": self.total_under_bound,
            "incomplete_schedules": self.incomplete_schedules,
            "incomplete_reasons": self.incomplete_reasons,
            "warnings": self.warnings,
            "broken_by": self.broken_by(),
            "single_faults": [
                {"choice_point": label, "fault": kind, "verdict": verdict}
                for (label, kind), verdict in self.verdicts.items()
            ],
            "violations": [
                {
                    "invariant": v.invariant,
                    "message": v.message,
                    "faults": v.faults,
                    "nearest_passing": v.nearest_passing,
                    "first_divergence": v.divergence,
                    "artifact": None if v.artifact_path is None else str(v.artifact_path),
                }
                for v in self.violations
            ],
            "runtime_mismatches": self.runtime_mismatches,
            "confirmations": self.confirmations,
            "elapsed_seconds": round(self.elapsed, 3),
        }


# --------------------------------------------------------------------------- the explorer


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
    runtime: str = "memory",
    confirm: str | None = "duckdb",
    confirm_samples: int = 3,
    jobs: int = 1,
    executor: concurrent.futures.Executor | None = None,
    out: str | Path | None = None,
    progress: bool | Callable[[int], None] = False,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> ExplorationReport:
    """Search ``scenario``'s faults and interleavings for invariant violations.

    The scenario's own fault plan is left out: the explorer places faults itself. Faults of
    ``kinds`` go at every choice point (systematic) or at random ones; a freeze lasts
    ``freeze_seconds`` (default: the lease plus the redelivery delay, so the lease expires).
    ``budget`` bounds the schedules run. Violations are shrunk and, with ``confirm="duckdb"``,
    replayed on DuckDB with a sample of passing schedules; a trace that differs between the
    runtimes is reported as a runtime bug. ``jobs`` > 1 runs shards in processes; any
    ``concurrent.futures.Executor`` may be given instead (e.g. a Dask client's). With ``out``,
    each violation's artifact is written there. ``timeout`` bounds each schedule's wall-clock
    seconds: a schedule it cuts counts as incomplete, apart from ok and violated ones. Ctrl-C
    stops the search cleanly: the report keeps (and shrinks, and saves) what was found, with
    ``interrupted`` set.

    >>> import yieldstar_sim as ys
    >>> report = ys.explore(ys.load_scenario("durable-start"), confirm=None)
    >>> report.ok, report.schedules_run > 0
    (True, True)
    """
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
    fault_kinds = tuple(FaultKind(kind) for kind in kinds)
    freeze = freeze_seconds or scenario.lease_seconds + scenario.redelivery_delay
    if scenario.faults:
        # The explorer leaves the scenario's own fault plan out, but a plan that cannot fire is
        # a mistake in the scenario all the same (FaultPlanError names it).
        simulate(scenario, seed, runtime=runtime, timeout=timeout).runtime.close()
    report = ExplorationReport(
        scenario.name, strategy, max_faults, seed, runtime, budget=budget,
        stopped_at_first=stop_at_first,
    )  # fmt: skip
    started = time.perf_counter()
    runner = _Runner(scenario, runtime, jobs, executor, timeout)
    tick = progress if callable(progress) else None
    bar = _progress_bar(progress, budget) if progress is True else None
    search = _Search(
        report, runner, seed=seed, budget=budget, stop_at_first=stop_at_first, tick=tick, bar=bar
    )
    try:
        try:
            if strategy == "systematic":
                search.systematic(max_faults, fault_kinds, freeze)
            else:
                search.randomized(
                    max_faults, fault_kinds, freeze, pct_depth=depth if strategy == "pct" else 0
                )
        except KeyboardInterrupt:
            report.interrupted = True
            runner.close(cancel=True)
        report.warnings = sorted(search.warnings or ())
        for index, outcome, invariant in search.failures:
            report.violations.append(
                _shrink(scenario, outcome, search.plans[index], runtime, invariant, timeout=timeout)
            )
        if confirm and not report.interrupted:
            _confirm(scenario, report, search, against=confirm, samples=confirm_samples)
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


def _progress_bar(enabled: bool, total: int | None) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="schedule", desc="exploring", disable=not enabled)


class _Search:
    """Plans schedules strategy by strategy and runs them in order."""

    def __init__(
        self,
        report: ExplorationReport,
        runner: _Runner,
        *,
        seed: int,
        budget: int | None,
        stop_at_first: bool,
        tick: Callable[[int], None] | None,
        bar: Any,
    ) -> None:
        self.report = report
        self.runner = runner
        self.seed = seed
        self.budget = budget
        self.stop_at_first = stop_at_first
        self.tick = tick
        self.bar = bar
        self.plans: list[Plan] = []
        self.outcomes: list[Outcome] = []
        self.failures: list[tuple[int, Outcome, str]] = []
        self.seen_invariants: set[str] = set()
        self.warnings: set[str] | None = None
        """The warnings every schedule run so far gave (an invariant that watched nothing)."""
        self.done = False

    def _room(self) -> int | None:
        return None if self.budget is None else self.budget - len(self.plans)

    def _run(self, plans: list[Plan], *, expand: bool) -> list[Outcome]:
        """Run plans in chunks, in order; stop after the chunk holding the first violation."""
        results: list[Outcome] = []
        chunk = 1 if self.runner.jobs == 1 else self.runner.jobs * 64
        for start in range(0, len(plans), chunk):
            if self.done:
                break
            batch = plans[start : start + chunk]
            outcomes = self.runner.run(batch, expand=expand)
            for plan, outcome in zip(batch, outcomes, strict=True):
                if self.done:
                    break
                self.plans.append(plan)
                self.outcomes.append(outcome)
                results.append(outcome)
                self.report.schedules_run += 1
                self._record(plan, outcome)
                if self.bar is not None:
                    self.bar.update(1)
                if self.tick is not None:
                    self.tick(self.report.schedules_run)
                if outcome.violations and self.stop_at_first:
                    self.done = True
        return results

    def _record(self, plan: Plan, outcome: Outcome) -> None:
        if len(plan.faults) == 1 and plan.faults[0].label:
            key = (plan.faults[0].label, str(plan.faults[0].kind))
            self.report.verdicts[key] = outcome.verdict
        if outcome.incomplete is not None and not outcome.violations:
            self.report.incomplete_schedules += 1
            if len(self.report.incomplete_reasons) < 3:
                faults = ", ".join(f.describe() for f in plan.faults) or "no faults"
                self.report.incomplete_reasons.append(
                    f"schedule #{plan.index} ({faults}): {outcome.incomplete}"
                )
        warnings = set(outcome.warnings)
        self.warnings = warnings if self.warnings is None else self.warnings & warnings
        for name, _ in outcome.violations:
            if name not in self.seen_invariants:
                self.seen_invariants.add(name)
                self.failures.append((len(self.plans) - 1, outcome, name))

    def systematic(self, max_faults: int, kinds: tuple[FaultKind, ...], freeze: float) -> None:
        base = Plan(0, self.seed)
        (parent,) = self._run([base], expand=max_faults > 0)
        seen: set[tuple[str, FaultKind]] = set()
        level = [(base, parent)]
        total = 1
        for remaining in range(max_faults, 0, -1):
            plans: list[Plan] = []
            for plan, outcome in level:
                first = plan.faults[-1].at + 1 if plan.faults else 0  # type: ignore[operator]
                # Kind by kind, each over every point: the commonest fault (a crash) is tried
                # everywhere before the rarer ones, which finds the usual violations soonest.
                for kind, point in (
                    (kind, point) for kind in kinds for point in range(first, outcome.points)
                ):
                    total += 1
                    key = (outcome.keys[point], kind)
                    if key in seen:
                        self.report.skipped_equivalent += 1
                        self.report.verdicts.setdefault(
                            (outcome.labels[point], str(kind)), "equivalent"
                        )
                        continue
                    seen.add(key)
                    fault = Fault(
                        kind, at=point, seconds=freeze if kind == FaultKind.FREEZE else None,
                        label=outcome.labels[point],
                    )  # fmt: skip
                    plans.append(
                        Plan(len(self.plans) + len(plans), self.seed, (*plan.faults, fault))
                    )
            # Known before the level runs, so that an interrupted search can say "of how many".
            self.report.total_under_bound = total
            room = self._room()
            if room is not None:
                plans = plans[:room]
            outcomes = self._run(plans, expand=remaining > 1)
            level = list(zip(plans, outcomes, strict=False))
            if self.done or (room is not None and self._room() == 0):
                break
        self.report.total_under_bound = total

    def randomized(
        self, max_faults: int, kinds: tuple[FaultKind, ...], freeze: float, *, pct_depth: int
    ) -> None:
        rng = random.Random(self.seed)
        (base,) = self._run([Plan(0, self.seed)], expand=False)
        budget = self.budget if self.budget is not None else 200
        workers = self.runner.scenario.worker_names
        while len(self.plans) < budget and not self.done:
            batch: list[Plan] = []
            for _ in range(min(budget - len(self.plans), max(1, self.runner.jobs * 64))):
                count = rng.randint(1, max_faults) if max_faults else 0
                points = sorted(
                    rng.sample(range(max(base.points, 1)), min(count, max(base.points, 1)))
                )
                faults = []
                for point in points:
                    kind = rng.choice(kinds)
                    faults.append(
                        Fault(kind, at=point, seconds=freeze if kind == FaultKind.FREEZE else None)
                    )
                priorities: tuple[str, ...] = ()
                changes: tuple[int, ...] = ()
                if pct_depth:
                    order = list(workers)
                    rng.shuffle(order)
                    priorities = tuple(order)
                    span = max(base.points * 2, 2)
                    changes = tuple(sorted(rng.sample(range(span), min(pct_depth - 1, span))))
                batch.append(
                    Plan(
                        len(self.plans) + len(batch),
                        rng.randrange(2**32),
                        tuple(faults),
                        priorities,
                        changes,
                    )
                )
            self._run(batch, expand=False)


# --------------------------------------------------------------------------- shrinking


def _described(run: SimulationRun) -> list[Fault]:
    """The run's faults as descriptions (worker, call, step, occurrence) instead of indices."""
    labels: dict[int, PointInfo] = {}
    for event in run.trace:
        if event.point is not None and event.worker is not None and event.op is not None:
            labels.setdefault(
                event.point,
                PointInfo(
                    event.worker,
                    event.op,
                    event.execution_id if event.op != "claim" else None,
                    event.step_key,
                ),
            )
    counts: dict[str, int] = {}
    occurrence_at: dict[int, int] = {}
    for point in sorted(labels):
        label = labels[point].label
        counts[label] = counts.get(label, 0) + 1
        occurrence_at[point] = counts[label]
    described = []
    for fault in run.faults:
        assert fault.at is not None
        info = labels.get(fault.at)
        if info is None:
            described.append(fault)
            continue
        described.append(
            Fault(
                fault.kind, worker=info.worker, op=info.op, execution_id=info.execution_id,
                step_key=info.step_key, occurrence=occurrence_at[fault.at], seconds=fault.seconds,
            )
        )  # fmt: skip
    return described


def _shrink(
    scenario: Scenario,
    outcome: Outcome,
    plan: Plan,
    runtime: str,
    invariant: str,
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> FoundViolation:
    run = simulate_plan(scenario, plan, runtime, timeout)
    faults = _described(run)

    def fails(subset: list[Fault]) -> SimulationRun | None:
        candidate = simulate_plan(scenario, replace(plan, faults=tuple(subset)), runtime, timeout)
        return candidate if any(v.invariant == invariant for v in candidate.violations) else None

    faults = _ddmin(faults, lambda subset: fails(subset) is not None)
    shrunk = fails(faults) or run
    nearest: list[str] | None = None
    divergence: tuple[int, str] | tuple[None, None] = (None, None)
    nearest_artifact = None
    for drop in reversed(range(len(faults))):
        others = faults[:drop] + faults[drop + 1 :]
        passing = simulate_plan(scenario, replace(plan, faults=tuple(others)), runtime, timeout)
        if not any(v.invariant == invariant for v in passing.violations):
            nearest = [fault.describe() for fault in others]
            divergence = _first_divergence(shrunk, passing)
            nearest_artifact = passing.artifact()
            break
    message = next(v.message for v in shrunk.violations if v.invariant == invariant)
    return FoundViolation(
        invariant=invariant,
        message=message,
        artifact=shrunk.artifact(),
        faults=[fault.describe() for fault in faults],
        found_at=outcome.index,
        nearest_passing=nearest,
        divergence=divergence[1],
        divergence_at=divergence[0],
        nearest_artifact=nearest_artifact,
    )


def _ddmin(items: list[Fault], fails: Callable[[list[Fault]], bool]) -> list[Fault]:
    """Zeller's delta debugging: a 1-minimal subset of ``items`` that still fails."""
    granularity = 2
    while len(items) >= 2:
        size = max(1, len(items) // granularity)
        chunks = [items[i : i + size] for i in range(0, len(items), size)]
        reduced = False
        for index in range(len(chunks)):
            complement = [f for j, chunk in enumerate(chunks) if j != index for f in chunk]
            if fails(chunks[index]):
                items, granularity, reduced = chunks[index], 2, True
                break
            if fails(complement):
                items, granularity, reduced = complement, max(granularity - 1, 2), True
                break
        if not reduced:
            if granularity >= len(items):
                break
            granularity = min(len(items), granularity * 2)
    return items


def _first_divergence(failing: SimulationRun, passing: SimulationRun) -> tuple[int, str]:
    for mine, theirs in zip(failing.trace, passing.trace, strict=False):
        if (mine.t, mine.kind, mine.worker, mine.text) != (
            theirs.t,
            theirs.kind,
            theirs.worker,
            theirs.text,
        ):
            theirs_text = f"t={theirs.t:g} {theirs.worker or '-'} {theirs.text}"
            return mine.seq, (
                f"event #{mine.seq}: the violation has 't={mine.t:g} {mine.worker or '-'} "
                f"{mine.text}', the passing run '{theirs_text}'"
            )
    shorter = min(len(failing.trace), len(passing.trace))
    return shorter, f"event #{shorter}: one trace ends where the other goes on"


# --------------------------------------------------------------------------- confirmation


def _confirm(
    scenario: Scenario, report: ExplorationReport, search: _Search, *, against: str, samples: int
) -> None:
    confirm, runtime = against, report.runtime
    if confirm == runtime:
        return
    from yieldstar_sim.simulation.artifact import replay

    for found in report.violations:
        artifact = found.artifact
        again = replay(artifact, runtime=confirm, scenario=scenario, check_trace=False)
        if again.trace_digest() != artifact.trace_digest:
            report.runtime_mismatches.append(
                f"the violation of {found.invariant} replays differently on {confirm}"
            )
        again.runtime.close()
    passing = [
        (plan, outcome)
        for plan, outcome in zip(search.plans, search.outcomes, strict=True)
        if outcome.ok
    ]
    step = max(1, len(passing) // max(samples, 1))
    checked = 0
    for plan, _ in passing[::step][:samples]:
        mine = run_plan(scenario, plan, runtime, digest=True)
        other = run_plan(scenario, plan, confirm, digest=True)
        checked += 1
        if other.digest != mine.digest:
            faults = ", ".join(f.describe() for f in plan.faults) or "no faults"
            report.runtime_mismatches.append(
                f"schedule #{plan.index} ({faults}) gives another trace on {confirm} than on "
                f"{runtime}"
            )
    report.confirmations.append(
        f"confirmed on {confirm}: {len(report.violations)} violation(s) and {checked} passing "
        f"schedule(s) replayed, {len(report.runtime_mismatches)} mismatch(es)"
    )
