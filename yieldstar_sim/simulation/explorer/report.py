"""The exploration report: what a search covered and found, in words and as HTML."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core import interrupts
from yieldstar_sim.simulation.explorer.strategy import StopReason
from yieldstar_sim.simulation.exporters import drawer

if TYPE_CHECKING:
    from pathlib import Path

    import networkx as nx
    from matplotlib.figure import Figure

    from yieldstar_sim.simulation.artifact import ReplayArtifact
    from yieldstar_sim.simulation.explorer.exhaustive import ExhaustiveCoverage
    from yieldstar_sim.simulation.explorer.statespace import StateSpace
    from yieldstar_sim.simulation.explorer.systematic import SystematicCoverage
    from yieldstar_sim.simulation.moves import Move
    from yieldstar_sim.simulation.scenario import Scenario


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
    """What an exploration covered and found: a core every strategy fills, and the section of
    the strategy that ran (``systematic`` or ``exhaustive``; a sample has none).

    ``verdict`` is ``"violated"`` when a schedule violated an invariant (or the runtimes
    disagreed), ``"incomplete"`` when something cut the search or a schedule (a budget, the
    wall-clock limit, Ctrl-C) and nothing was violated, else ``"ok"``. ``schedules_run`` counts
    the runs that reached their end, up to the first violation (or all of them with
    ``stop_at_first=False``); ``stopped`` says why the search stopped (``StopReason``).
    """

    scenario: str
    strategy: str
    max_faults: int
    seed: int
    runtime: str
    stopped: StopReason = StopReason.COVERED
    schedules_run: int = 0
    violations: list[FoundViolation] = field(default_factory=list)
    confirmations: list[str] = field(default_factory=list)
    runtime_mismatches: list[str] = field(default_factory=list)
    nondeterminism: list[str] = field(default_factory=list)
    """Said when one schedule run twice on one runtime gave two traces (then no runtime is
    blamed for a mismatch)."""
    elapsed: float = 0.0
    incomplete_schedules: int = 0
    """Schedules a budget or the wall-clock limit cut: neither ok nor violated."""
    incomplete_reasons: list[str] = field(default_factory=list)
    """Why the first few incomplete schedules were cut."""
    unfair_schedules: int = 0
    """Exhaustive search: schedules a bound cut on a loop only an unfair scheduler keeps up
    (a worker ready at each recovery of an execution, never given it). Not incomplete: the
    search ran every fair turn off them too."""
    unfair_reasons: list[str] = field(default_factory=list)
    """Why the first few unfair schedules were not counted incomplete."""
    warnings: list[str] = field(default_factory=list)
    """Invariants and expectations that watched nothing in any schedule run."""
    budget: int | None = None
    time_budget: float | None = None
    adapter_failures: list[str] = field(default_factory=list)
    """The conformance cases the runtime failed (``check_adapter=True``), one sentence each."""
    systematic: SystematicCoverage | None = None
    exhaustive: ExhaustiveCoverage | None = None

    @property
    def interrupted(self) -> bool:
        """Whether Ctrl-C (or, for the command, SIGTERM) stopped the search (what it had found
        is kept)."""
        return self.stopped is StopReason.INTERRUPTED

    @property
    def stopped_at_first(self) -> bool:
        """Whether the search stopped at its first violation."""
        return self.stopped is StopReason.VIOLATION

    @property
    def cut_by(self) -> list[str]:
        """The bounds and budgets that cut the search, each in words (empty: none did)."""
        reasons = [] if self.exhaustive is None else list(self.exhaustive.cut_by)
        if self.stopped in {StopReason.BUDGET, StopReason.TIME_BUDGET} - set(reasons):
            reasons.append(self.stopped)
        return [self._bound(reason) for reason in reasons]

    def _bound(self, reason: StopReason) -> str:
        if reason is StopReason.BUDGET:
            return f"the budget of {self.budget} schedule{'s' if self.budget != 1 else ''}"
        if reason is StopReason.TIME_BUDGET:
            return f"the time budget of {self.time_budget:g}s"
        if reason is StopReason.DEPTH and self.exhaustive is not None:
            return f"the depth bound of {self.exhaustive.max_depth} choice points"
        return reason.describe()

    def why_stopped(self) -> str:
        """Why the search stopped short, in words ("" when it covered its bound)."""
        if self.interrupted:
            return f"interrupted ({interrupts.stop_words()})"
        if self.stopped is StopReason.LOST and self.exhaustive is not None:
            return "; ".join(self.exhaustive.lost) + ": what it had searched is lost"
        if self.cut_by:
            return " and ".join(self.cut_by) + " cut the search"
        if self.stopped is StopReason.VIOLATION:
            return "stopped at the first violation"
        if self.incomplete_schedules:
            return f"{self.incomplete_schedules} schedule(s) did not finish"
        return ""

    @property
    def verdicts(self) -> dict[tuple[str, str], str]:
        """The verdict of each single fault, by (choice point label, kind): the systematic
        search's grid (empty for the others)."""
        return {} if self.systematic is None else self.systematic.verdicts

    @property
    def skipped_equivalent(self) -> int:
        """Faults the systematic search skipped as equivalent to one it ran."""
        return 0 if self.systematic is None else self.systematic.skipped_equivalent

    @property
    def total_under_bound(self) -> int | None:
        """The schedules the systematic search's bound holds, once it covered it (run, or
        skipped as equivalent); None before, or for the other strategies."""
        if self.systematic is None or not self.exhausted:
            return None
        return self.schedules_run + self.systematic.skipped_equivalent

    @property
    def state_space(self) -> StateSpace | None:
        """The states and edges an exhaustive search explored (``state_graph()`` draws them)."""
        return None if self.exhaustive is None else self.exhaustive.state_space

    @property
    def distinct_states(self) -> int:
        """The distinct states an exhaustive search reached (0 for the other strategies, which
        count schedules)."""
        return 0 if self.exhaustive is None else self.exhaustive.distinct_states

    @property
    def states(self) -> int:
        """``distinct_states``."""
        return self.distinct_states

    @property
    def exhausted(self) -> bool:
        """Whether every schedule under the bound was covered (for the exhaustive strategy: up
        to state caching and worker symmetry), with nothing cut and no schedule incomplete. A
        sample never exhausts anything."""
        if self.stopped is not StopReason.COVERED or self.incomplete_schedules:
            return False
        if self.exhaustive is not None:
            return self.exhaustive.searched_to_the_end
        return self.systematic is not None

    @property
    def verdict(self) -> str:
        """``"ok"``, ``"violated"`` or ``"incomplete"``."""
        if (
            self.violations
            or self.runtime_mismatches
            or self.adapter_failures
            or self.nondeterminism
        ):
            return "violated"
        if self.interrupted or self.incomplete_schedules:
            return "incomplete"
        if self.strategy in ("systematic", "exhaustive") and not self.exhausted:
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
        if self.exhaustive is not None:
            return self._completeness()
        systematic = self.systematic
        if systematic is None:
            cut = f", cut by {self._bound(self.stopped)}" if self.cut_by else ""
            return (
                f"{run} ({self.strategy}, {bound}): a sample of the schedules, not all of them{cut}"
            )
        skipped = draws = ""
        if systematic.skipped_equivalent:
            skipped = f", {systematic.skipped_equivalent} skipped as equivalent to one run"
        if systematic.branched:
            draws = f", every option of {systematic.branched} draw(s) and completion order(s)"
        if self.exhausted:
            where = f"seed {self.seed}'s interleaving"
            if self.max_faults:
                where = f"every fault kind at every choice point of {where}"
            return (
                f"exhausted the bound: all {self.total_under_bound} schedules under {bound} "
                f"covered: {run}{skipped} ({where}{draws}; other interleavings are sampled "
                "only by other seeds)"
            )
        return f"{self.why_stopped()} after {run}{skipped} under {bound}"

    def _completeness(self) -> str:
        """The exhaustive search's completeness statement: "verified" only when exhausted."""
        covered = self.exhaustive
        assert covered is not None
        faults = f"{self.max_faults} fault{'s' if self.max_faults != 1 else ''}"
        workers = covered.workers
        every = f"every interleaving of {workers} worker{'s' if workers != 1 else ''}"
        reduced = covered.spared_by_reduction > 0
        if workers > 1:
            every += " up to worker symmetry"
            if reduced:
                every += " and the order of independent moves"
        every += ", every draw and completion order"
        schedules = f"{self.schedules_run:,} schedule{'s' if self.schedules_run != 1 else ''}"
        counts = f"{schedules} run, {covered.pruned_by_cache:,} cut at a state searched already"
        if covered.naive_schedules is not None and covered.pruned_by_cache:
            # An estimate from the subtrees cut; with none cut, the schedules run are the count.
            counts += f"; without caching: about {covered.naive_schedules:,} schedules"
        processes = covered.progress.get("processes", 1)
        sharing = covered.progress.get("sharing", processes)
        kind = covered.progress.get("cluster", "processes")
        if processes > 1 and not sharing:
            # Shortest first: each process searches the fault levels alone, one by one.
            counts += f"; searched by {processes} {kind}, each on its own"
        elif "cluster" in covered.progress and processes == 1:
            counts += f"; searched by one {kind.removesuffix('s')}"  # a cluster of one
        elif "cluster" in covered.progress or processes > 1:
            alone = 0 if "cluster" in covered.progress else processes - sharing
            counts += f"; searched by {processes} {kind} sharing their states" + (
                f" ({alone} of them, on another machine, on its own)" if alone else ""
            )
        states = f"{covered.distinct_states:,} distinct states"
        every_state = f"all {states}"
        if reduced:
            # The states left out are reached by runs the search took, with independent moves
            # swapped: the search stands for them, it did not visit them.
            counts += (
                f"; partial-order reduction left {covered.spared_by_reduction:,} moves untaken "
                f"at {covered.reduced_states:,} states, where one worker's were enough"
            )
            every_state = states
        if self.unfair_schedules:
            count = self.unfair_schedules
            counts += (
                f"; {count:,} schedule{'s' if count != 1 else ''} cut on a loop only an unfair "
                "scheduler keeps up, whose fair turns were searched"
            )
        if self.exhausted and not self.violations:
            searched = every_state if every_state.startswith("all") else f"{states} searched"
            return f"verified: {searched} under {faults} and {every}, none violates ({counts})"
        if self.exhausted:
            return f"exhausted: {every_state} under {faults} and {every} searched ({counts})"
        why = self.why_stopped() or "the search did not finish"
        found = "violations found" if self.violations else "no violation"
        reached = ""
        got = covered.progress
        if covered.cut_by and got.get("depth"):
            reached = (
                f"; where it stopped: {got['frontier']:,} moves left on a path {got['depth']} "
                f"choice points deep (deepest reached: {got['max_depth_reached']})"
            )
        return f"not exhausted: {why}; {found} in {schedules} ({states}, {counts}){reached}"

    def state_graph(self) -> nx.DiGraph:
        """The explored state space as a networkx ``DiGraph`` (an exhaustive search's): nodes
        are distinct states, edges choices and faults, violating states marked."""
        return drawer("state_graph")(self._space())

    def draw_state_graph(self, **options: Any) -> Figure:
        """Draw the explored state space with matplotlib (``views.draw_state_graph``)."""
        options.setdefault("title", f"{self.scenario}: {self._completeness()}"[:120])
        return drawer("draw_state_graph")(self._space(), **options)  # type: ignore[no-any-return]

    def schedule_to_state(self, key: str) -> tuple[Move, ...]:
        """The moves of a run that passes through state ``key`` of the explored state space
        (the run that reached it first, up to there)."""
        node = self._space().nodes.get(key)
        if node is None:
            raise KeyError(f"no state {key!r} in this state space")
        assert self.exhaustive is not None
        return self.exhaustive.state_paths[node.plan][: node.depth]

    def _space(self) -> StateSpace:
        if self.state_space is None:  # the property: None but for an exhaustive search
            raise ValueError(
                "only strategy='exhaustive' explores a state space; this report is "
                f"{self.strategy!r}"
            )
        return self.state_space

    def export(self, path: str | Path, *, scenario: Scenario | None = None) -> Path:
        """Write the design-review page of this exploration to ``path`` (one self-contained
        HTML file: verdict, coverage, grid, and per violation its divergence and a stepper over
        its replay). ``scenario``: the explored one, when it is not bundled. Returns the path."""
        from yieldstar_sim.simulation.exporters import exporter

        return exporter("report")(self, path, scenario=scenario)

    def summary(self) -> str:
        """A few lines for people: verdict, coverage, and each violation explained
        (``views.exploration_summary``)."""
        return drawer("summary")(self)  # type: ignore[no-any-return]

    def broken_by(self) -> dict[str, list[str]]:
        """For each fault kind, the choice points where that single fault broke an invariant
        (the grid's red cells)."""
        broken: dict[str, list[str]] = {}
        for (label, kind), verdict in self.verdicts.items():
            if verdict == "violated":
                broken.setdefault(kind, []).append(label)
        return broken

    def _repr_html_(self) -> str:
        """Jupyter: the summary and the choice point x fault kind table (``views.grid``)."""
        return drawer("report_html")(self)  # type: ignore[no-any-return]
