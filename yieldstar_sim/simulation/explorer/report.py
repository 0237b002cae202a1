"""The exploration report: what a search covered and found, as text, JSON and HTML."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.explorer.grid import GRID_ROWS, GridRow, grid_rows
from yieldstar_sim.simulation.explorer.statespace import view
from yieldstar_sim.simulation.faults import FAULT_KINDS

if TYPE_CHECKING:
    from pathlib import Path

    import networkx as nx
    from matplotlib.figure import Figure

    from yieldstar_sim.simulation.artifact import ReplayArtifact
    from yieldstar_sim.simulation.explorer.plans import Plan
    from yieldstar_sim.simulation.explorer.statespace import StateSpace
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
    nondeterminism: list[str] = field(default_factory=list)
    """Said when one schedule run twice on one runtime gave two traces (then no runtime is
    blamed for a mismatch)."""
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
    adapter_failures: list[str] = field(default_factory=list)
    """The conformance cases the runtime failed (``check_adapter=True``), one sentence each."""
    state_space: StateSpace | None = None
    """The states and edges an exhaustive search explored (``state_graph()`` draws them)."""
    distinct_states: int = 0
    """Distinct states (fingerprints) an exhaustive search reached."""
    pruned_by_reduction: int = 0
    """Branches the sleep sets skipped: an independent order of transitions already tried."""
    pruned_by_cache: int = 0
    """Runs cut where they reached a state explored already (state caching)."""
    pruned_by_symmetry: int = 0
    """Of ``pruned_by_cache``: moves of a worker interchangeable with one whose same move was
    tried from the same state, cut without running (their state has its key: keys are blind
    to which worker is which)."""
    search_progress: dict[str, Any] = field(default_factory=dict)
    """How far an exhaustive search got, as a model checker shows it: ``states``,
    ``states_per_second``, ``frontier`` (moves left to try on the current path), ``depth``
    (of the current path) and ``max_depth_reached``, ``root_moves_done`` of
    ``root_moves``, ``kernel_steps`` and ``transitions`` (moves run past a replayed prefix)."""
    naive_schedules: int | None = None
    """How many schedules the search without reduction or caching would run under the bound
    (``naive_how`` says whether it was ``computed`` or ``estimated``)."""
    naive_how: str | None = None
    cut_by: list[str] = field(default_factory=list)
    """The bounds and budgets that cut an exhaustive search (empty: none did)."""
    order: str = "dfs"
    max_depth: int | None = None
    workers: int = 0
    searched_to_the_end: bool = False
    """The exhaustive search backtracked out of its last choice point (nothing cut it)."""
    state_paths: list[tuple[tuple[str, str | None], ...]] = field(default_factory=list)
    """Each attempt of an exhaustive search: its moves (actor, fault kind or None), in order."""
    freeze_seconds: float | None = None

    @property
    def states(self) -> int:
        """The distinct states an exhaustive search reached (``distinct_states``; 0 for the
        other strategies, which count schedules)."""
        return self.distinct_states

    @property
    def exhausted(self) -> bool:
        """Whether every schedule under the bound was covered, up to equivalence (for the
        exhaustive strategy: up to the reduction and state caching, with no bound or budget,
        no stop at a violation and no cut schedule in the way)."""
        if self.strategy == "exhaustive":
            return (
                self.searched_to_the_end
                and not self.interrupted
                and not self.cut_by
                and not self.incomplete_schedules
            )
        return (
            self.strategy == "systematic"
            and not self.interrupted
            and self.total_under_bound is not None
            and self.schedules_run + self.skipped_equivalent >= self.total_under_bound
        )

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
        skipped = (
            f", {self.skipped_equivalent} skipped as equivalent to one run"
            if self.skipped_equivalent
            else ""
        )
        if self.strategy == "exhaustive":
            return self._completeness()
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

    def _completeness(self) -> str:
        """The exhaustive search's completeness statement: "verified" only when exhausted."""
        faults = f"{self.max_faults} fault{'s' if self.max_faults != 1 else ''}"
        every = f"every interleaving of {self.workers} worker{'s' if self.workers != 1 else ''}"
        if self.workers > 1:
            every += " up to worker symmetry"
        schedules = f"{self.schedules_run:,} schedule{'s' if self.schedules_run != 1 else ''}"
        counts = (
            f"{schedules} run, {self.pruned_by_reduction:,} "
            f"branch{'es' if self.pruned_by_reduction != 1 else ''} pruned by the reduction, "
            f"{self.pruned_by_cache:,} by state caching"
        )
        if self.pruned_by_symmetry:
            counts += f" ({self.pruned_by_symmetry:,} of them by worker symmetry, not run)"
        if self.naive_schedules is not None:
            counts += f"; naive search: {self.naive_schedules:,} schedules ({self.naive_how})"
        processes = self.search_progress.get("processes", 1)
        if processes > 1:
            alone = processes - self.search_progress.get("sharing", processes)
            counts += f"; searched by {processes} processes sharing their states" + (
                f" ({alone} of them, on another machine, on its own)" if alone else ""
            )
        states = f"{self.distinct_states:,} distinct states"
        if self.exhausted and not self.violations:
            return f"verified: all {states} under {faults} and {every}, none violates ({counts})"
        if self.exhausted:
            return f"exhausted: all {states} under {faults} and {every} searched ({counts})"
        if self.interrupted:
            why = "interrupted (Ctrl-C)"
        elif self.cut_by:
            why = " and ".join(self.cut_by) + " cut the search"
        elif self.violations and self.stopped_at_first:
            why = "stopped at the first violation"
        elif self.incomplete_schedules:
            why = f"{self.incomplete_schedules} schedule(s) did not finish"
        else:
            why = "the search did not finish"
        found = "violations found" if self.violations else "no violation"
        reached = ""
        got = self.search_progress
        if self.cut_by and got.get("root_moves"):
            reached = (
                f"; where it stopped: {got['root_moves_done']} of the first choice point's "
                f"{got['root_moves']} moves searched, {got['frontier']:,} moves left on a path "
                f"{got['depth']} choice points deep (deepest reached: {got['max_depth_reached']})"
            )
        return f"not exhausted: {why}; {found} in {schedules} ({states}, {counts}){reached}"

    def completeness(self) -> dict[str, Any]:
        """The exhaustive search's completeness as plain data (``--json``'s ``completeness``)."""
        return {
            **self._plain("exhausted", "cut_by", "interrupted", "distinct_states"),
            "states_in_graph": 0 if self.state_space is None else len(self.state_space),
            **self._plain(
                "schedules_run", "pruned_by_reduction", "pruned_by_cache", "pruned_by_symmetry"
            ),
            "progress": self.search_progress,
            "naive_schedules": self.naive_schedules,
            "naive_schedules_how": self.naive_how,
            **self._plain("max_faults", "max_depth", "order"),
            "statement": self._completeness(),
        }

    def _plain(self, *names: str) -> dict[str, Any]:
        """These fields (or properties) as plain data, each under its own name: the JSON forms
        keep them in the order named."""
        return {name: getattr(self, name) for name in names}

    def state_graph(self) -> nx.DiGraph:
        """The explored state space as a networkx ``DiGraph`` (an exhaustive search's): nodes
        are distinct states, edges choices and faults, violating states marked."""
        return view("state_graph")(self._space())

    def draw_state_graph(self, **options: Any) -> Figure:
        """Draw the explored state space with matplotlib (``views.draw_state_graph``)."""
        options.setdefault("title", f"{self.scenario}: {self._completeness()}"[:120])
        return view("draw_state_graph")(self._space(), **options)  # type: ignore[no-any-return]

    def export_state_graph(self, folder: str | Path, formats: Any = ("svg", "graphml")) -> Any:
        """Write the state space to ``folder`` in ``formats`` (svg, png, pdf, graphml, json,
        dot, html); returns ``{format: path}``."""
        return view("export_state_graph")(
            self._space(), folder, formats, stem=f"{self.scenario}-states"
        )

    def plan_to_state(self, key: str) -> Plan:
        """A plan whose run passes through state ``key`` of the explored state space (the
        attempt that reached it first, its moves up to there; the run goes on from there with
        the first ready worker at each choice point, without faults)."""
        from yieldstar_sim.simulation.explorer.plans import Plan
        from yieldstar_sim.simulation.faults import Fault, FaultKind

        node = self._space().nodes.get(key)
        if node is None:
            raise KeyError(f"no state {key!r} in this state space")
        moves = self.state_paths[node.plan][: node.depth]
        faults = tuple(
            Fault(kind, at=index, seconds=self.freeze_seconds if kind == FaultKind.FREEZE else None)
            for index, (_, kind) in enumerate(moves)
            if kind is not None
        )
        return Plan(node.plan, self.seed, faults, schedule=tuple(actor for actor, _ in moves))

    def _space(self) -> StateSpace:
        if self.state_space is None:
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
        lines += [
            f"  RUNTIME ADAPTER fails the conformance case {failure}"
            for failure in self.adapter_failures
        ]
        if not self.violations and not self.runtime_mismatches:
            lines.append("  no invariant was violated")
        for found in self.violations:
            lines.append(f"  VIOLATED {found.invariant}: {found.message}")
            if found.faults:
                lines.append(
                    f"    shrunk to {len(found.faults)} fault(s): {'; '.join(found.faults)}"
                )
            elif self.strategy == "exhaustive":
                lines.append(
                    "    with no fault: the interleaving alone violates it (its schedule is in "
                    "the replay artifact)"
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
        lines += [f"  NOT DETERMINISTIC: {m}" for m in self.nondeterminism]
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

    def grid_rows(self, at_most: int = GRID_ROWS) -> list[GridRow]:
        """The single-fault table folded to at most about ``at_most`` rows: one per choice
        point, or, past ``at_most`` choice points, one per label pattern ("100 \u00d7 w#
        put_step order-#/charge") with the worst verdict of each fault kind and how many
        (``simulation.explorer.grid``)."""
        labels, kinds, verdicts = self.by_point()
        return grid_rows(labels, kinds, verdicts, at_most=at_most)

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
        for row in grid_rows(labels, kinds, verdicts):
            cells = []
            for kind in kinds:
                verdict = row.verdict(kind)
                worst, of = row.count(kind)
                many = f" {worst}/{of}" if of > 1 else ""
                cells.append(
                    "<td></td>"
                    if verdict is None
                    else f'<td style="background:{colour[verdict]}">{mark[verdict]}{many}</td>'
                )
            rows.append(f"<tr><td><code>{html.escape(row.label)}</code></td>{''.join(cells)}</tr>")
        summary = html.escape(self.summary()).replace("\n", "<br>")
        table = (
            f"<table><tr><th>choice point</th>{head}</tr>{''.join(rows)}</table>" if rows else ""
        )
        return f"<div><p style='font-family:monospace'>{summary}</p>{table}</div>"

    def to_json(self) -> dict[str, Any]:
        """The report as plain data (the CLI's --json)."""
        return {
            **self._plain("scenario", "strategy", "max_faults", "seed", "runtime", "ok", "verdict"),
            "coverage": self.coverage(),
            **self._plain(
                "exhausted",
                "interrupted",
                "schedules_run",
                "skipped_equivalent",
                "total_under_bound",
                "incomplete_schedules",
                "incomplete_reasons",
                "warnings",
            ),
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
            "nondeterminism": self.nondeterminism,
            "adapter_failures": self.adapter_failures,
            "confirmations": self.confirmations,
            **({"completeness": self.completeness()} if self.strategy == "exhaustive" else {}),
            "elapsed_seconds": round(self.elapsed, 3),
        }
