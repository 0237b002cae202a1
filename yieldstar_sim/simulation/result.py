"""``SimulationRun``: what one run of a scenario left behind, as data, with its verdict.

``simulate`` (``run.py``) makes one; invariants read one (through ``invariants.RunView``, the
part of it they need); the views draw one. ``run.sql(...)`` queries it with DuckDB
(``run_tables.py``); ``run.export(...)`` writes it through the exporter the views registered
(``exporters.py``).
"""

from __future__ import annotations

import hashlib
import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb

from yieldstar_sim.runtime.duckdb_files import connect
from yieldstar_sim.simulation.exporters import drawer, exporter
from yieldstar_sim.simulation.run_tables import load_records, load_trace

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from matplotlib.figure import Figure

    from yieldstar_sim.core.events import EventRecord
    from yieldstar_sim.core.model import ExecutionRecord, StartRequestRecord, StepRecord
    from yieldstar_sim.engine.world import Effect
    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.runtime.protocol import Runtime
    from yieldstar_sim.simulation.artifact import ReplayArtifact
    from yieldstar_sim.simulation.faults import Fault
    from yieldstar_sim.simulation.invariants.protocol import Violation
    from yieldstar_sim.simulation.moves import Choice, Move
    from yieldstar_sim.simulation.scenario import Scenario
    from yieldstar_sim.simulation.totals import Totals
    from yieldstar_sim.simulation.trace import Admission, Trace


@dataclass(frozen=True)
class Regression:
    """A saved run's schedule and faults replayed against edited code (``ys.replay`` of an
    artifact with another scenario's code): where the run leaves the recorded one, and what
    became of the recorded violations. ``simulation/regression.py`` makes one."""

    recorded_scenario: str
    """The scenario the artifact was made from."""
    scenario: str
    """The scenario it was replayed against (its code edited since)."""
    recorded: tuple[str, ...]
    """The invariants the recorded run violated."""
    gone: tuple[str, ...]
    """Recorded violations that no longer happen."""
    still: tuple[str, ...]
    """Recorded violations that happen again."""
    new: tuple[str, ...]
    """Invariants violated now that the recorded run did not violate."""
    unfired: tuple[str, ...]
    """Recorded faults that no choice point of the new run matched: their call is gone."""
    parted_at: int | None
    """The number of the first event where the run did something else (None: the same)."""
    parting: str
    """Where and how the run left the recorded one, in words (or that it did not, or that
    the artifact kept no trace to compare with)."""

    @property
    def fixed(self) -> bool:
        """Whether every recorded violation is gone, none is new, and every recorded fault
        fired again: what a regression test asserts."""
        return bool(self.recorded) and not (self.still or self.new or self.unfired)

    def lines(self) -> list[str]:
        """The comparison in sentences, for the CLI and ``SimulationRun.explain``."""
        against = (
            f"scenario {self.scenario!r}"
            if self.scenario != self.recorded_scenario
            else "its code as it is now"
        )
        lines = [f"the recorded run of {self.recorded_scenario!r} replayed against {against}:"]
        lines.append(f"  {self.parting}")
        if self.gone:
            lines.append(f"  the violation is gone: {', '.join(self.gone)} held")
        if self.still:
            lines.append(f"  the violation is still there: {', '.join(self.still)}")
        if self.new:
            lines.append(f"  a new violation: {', '.join(self.new)}")
        if not self.recorded:
            lines.append("  the recorded run violated nothing")
        lines += [
            f"  the recorded fault '{fault}' no longer fires: no choice point of the edited "
            "code matches it, so this replay does not test the fix (explore the edited "
            "scenario)"
            for fault in self.unfired
        ]
        return lines


#: Trace events a notebook's table of a run shows, at most.
HTML_ROWS = 400


@dataclass(repr=False)
class SimulationRun:
    """A finished run: its trace, ledger, records and verdict.

    ``verdict`` is ``"ok"`` (every invariant held and the run finished), ``"violated"``
    (``violations`` says which and why) or ``"incomplete"`` (a budget or the wall-clock limit
    cut the run: ``incomplete`` says which, where, and what was still live); ``ok`` is true only
    for ``"ok"``. ``warnings`` name invariants and expectations that watched nothing.
    ``runtime`` is the runtime the run used (still open: query it). ``schedule`` and ``faults``
    (placed at choice-point indices) replay the run exactly.
    """

    scenario: Scenario
    seed: int
    runtime_kind: str
    """The runtime's name: ``memory``, ``duckdb`` or a factory's ``module:qualname``."""
    runtime: Runtime
    trace: Trace
    effects: list[Effect]
    schedule: tuple[Move, ...]
    """The move taken at each choice point."""
    choices: Sequence[Choice]
    """Every choice point taken: the actor that went, among those ready (made when read)."""
    faults: list[Fault]
    executions: list[ExecutionRecord]
    start_requests: list[StartRequestRecord]
    steps: dict[str, list[StepRecord]]
    points: int
    ended_at: float
    violations: list[Violation] = field(default_factory=list)
    incomplete: str | None = None
    """Why the run did not finish (a budget, the wall-clock limit), or None when it did."""
    unfair: str | None = None
    """For a cut run: why only an unfair scheduler kept it going (a worker ready at each
    recovery of an execution, never given it), or None. The run is still incomplete; an
    exhaustive search, which also runs the fair turns, does not count it so."""
    warnings: list[str] = field(default_factory=list)
    admissions: list[Admission] = field(default_factory=list)
    """Every admission of the run, once per incarnation (from the runtime's records)."""
    world: dict[str, Any] = field(default_factory=dict)
    """The world's key-value store as the run left it (what ``step.world.write`` wrote), for
    invariants: ``run.world.get("seats_left")``."""
    events: list[EventRecord] = field(default_factory=list)
    """Every external event the runtime accepted, with what became of it (``pending``,
    ``consumed``, ``undelivered``), as the run left them: empty on a runtime without events."""
    runtime_choice: RuntimeChoice | None = field(default=None, repr=False)
    """What the run was asked to run on (a name or your factory): re-runs use it again."""
    regression: Regression | None = None
    """For a replay against edited code: how the run compares with the recorded one (where
    it leaves it, whether the violation is gone); None for any other run."""
    _sql: duckdb.DuckDBPyConnection | None = field(default=None, repr=False)
    _totals: Totals | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """Whether every invariant held and the run finished."""
        return self.verdict == "ok"

    @property
    def verdict(self) -> str:
        """``"ok"``, ``"violated"`` or ``"incomplete"``."""
        if self.violations:
            return "violated"
        return "incomplete" if self.incomplete is not None else "ok"

    @property
    def verdict_text(self) -> str:
        """The verdict in words: ``ok: every invariant held and the run finished``."""
        if self.violations:
            count = len(self.violations)
            text = f"violated: {count} invariant violation{'s' if count > 1 else ''}"
            return text + (f" (and the run was {self.incomplete})" if self.incomplete else "")
        if self.incomplete is not None:
            return f"incomplete: {self.incomplete}"
        return "ok: every invariant held and the run finished"

    # ------------------------------------------------------------------ for invariants

    def effects_named(self, name: str) -> list[Effect]:
        """The ledger's effects named ``name``.

        >>> import yieldstar_sim as ys
        >>> run = ys.simulate(ys.load_scenario("durable-start"), runtime="memory")
        >>> len(run.effects_named("courier.booked")), run.effects_named("courier.booked")[0].data
        (1, {'order': 42})
        """
        return [effect for effect in self.effects if effect.name == name]

    def execution(self, execution_id: str) -> ExecutionRecord | None:
        """The final record of ``execution_id`` (None if the run never had it, or pruned it).

        >>> import yieldstar_sim as ys
        >>> run = ys.simulate(ys.load_scenario("durable-start"), runtime="memory")
        >>> str(run.execution("order-42").status)
        'completed'
        """
        return next((r for r in self.executions if r.execution_id == execution_id), None)

    def executions_of(self, workflow_id: str) -> list[ExecutionRecord]:
        """The final records of the executions of workflow ``workflow_id``, in admission order.

        >>> import yieldstar_sim as ys
        >>> run = ys.simulate(ys.load_scenario("durable-start"), runtime="memory")
        >>> len(run.executions_of("ship-order")), len(run.executions_of("charge-order"))
        (1, 1)
        """
        return [record for record in self.executions if record.workflow_id == workflow_id]

    def children(self, execution_id: str, step_key: str | None = None) -> list[ExecutionRecord]:
        """The executions whose parent link names ``execution_id`` (and ``step_key``, if given):
        what its steps started, owned or detached. "Exactly one child of each kind" is
        ``Counter(c.workflow_id for c in run.children(parent))``.

        >>> import yieldstar_sim as ys
        >>> run = ys.simulate(ys.load_scenario("durable-start"), runtime="memory")
        >>> (child,) = run.children("order-42")
        >>> child.workflow_id, child.parent.step_key
        ('ship-order', 'ship')
        """
        return [
            record
            for record in self.executions
            if record.parent is not None
            and record.parent.execution_id == execution_id
            and (step_key is None or record.parent.step_key == step_key)
        ]

    def steps_of(self, execution_id: str) -> list[StepRecord]:
        """The recorded steps of ``execution_id``, in the order they were recorded.

        >>> import yieldstar_sim as ys
        >>> run = ys.simulate(ys.load_scenario("durable-start"), runtime="memory")
        >>> " ".join(step.step_key for step in run.steps_of("order-42"))
        'charge ship'
        """
        return list(self.steps.get(execution_id, ()))

    def totals(self) -> Totals:
        """What a reviewer would otherwise count: executions per workflow and status, effects
        per kind (with the idempotency keys made more than once), start requests and how many
        returned an existing target, each worker's deliveries, redeliveries, crashes and
        freezes, and what became of the external events sent. ``print(run.totals())`` says
        them in words, ``.to_json()`` as data.

        >>> import yieldstar_sim as ys
        >>> run = ys.simulate(ys.load_scenario("trigger-in-step"), runtime="memory")
        >>> run.totals().executions, run.totals().effects["courier.booked"].seen
        ({'charge-order': {'completed': 1}, 'ship-order': {'completed': 2}}, 2)
        """
        from yieldstar_sim.simulation.totals import totals_of

        if self._totals is None:  # a finished run: counted once, for every view that says them
            self._totals = totals_of(
                list(self.trace), self.effects, self.executions, self.scenario.worker_names,
                self.events,
            )  # fmt: skip
        return self._totals

    def trace_digest(self) -> str:
        """A hash of the trace: equal digests mean byte-identical traces."""
        return "sha256:" + hashlib.sha256(self.trace.to_jsonl().encode()).hexdigest()[:32]

    def artifact(self) -> ReplayArtifact:
        """A replay artifact that reproduces this run."""
        from yieldstar_sim.simulation.artifact import ReplayArtifact

        return ReplayArtifact.from_run(self)

    def export(self, path: str | Path, *, format: str | None = None) -> Path:
        """Write the run to ``path``: ``run.export("review.html")`` is the design-review page
        (one self-contained HTML file with a stepper, no kernel needed); other endings
        (``.svg``, ``.png``, ``.pdf``, ``.graphml``, ``.json``, ``.dot``, ``.mmd``) or
        ``format=`` (``"html"``: the static report) choose the others. Returns the path."""
        return exporter("run")(self, path, format)

    def timeline(self, execution_id: str | None = None) -> Figure:
        """A picture of the run's timeline; with ``execution_id``, that execution's own: its
        deliveries, the executions it started and what befell their workers meanwhile, on an
        axis of those events alone (the story of order-150 out of a thousand orders). Returns
        the matplotlib Figure (save it with ``figure.savefig("order-150.png")``); an ID the
        run never had is a ``ValueError`` naming the nearest it has."""
        figure: Figure = drawer("timeline")(self, execution_id)
        return figure

    def explain(self) -> str:
        """The verdict and each violation's sentence (after a replay against edited code,
        first how the run compares with the recorded one)."""
        lines = [] if self.regression is None else self.regression.lines()
        lines += [
            f"{self.scenario.name} (seed {self.seed}, {self.runtime_kind}): {self.verdict_text}"
        ]
        lines += [f"  - {violation}" for violation in self.violations]
        lines += [f"  warning: {warning}" for warning in self.warnings]
        return "\n".join(lines)

    def __repr__(self) -> str:
        """One line: the dataclass's own repr held every trigger and trace event, a megabyte
        and more at a thousand orders, printed whole by a REPL or a debugger."""
        found = len(self.violations)
        return (
            f"<SimulationRun {self.scenario.name!r} seed={self.seed} {self.runtime_kind}: "
            f"{self.verdict}{f', {found} violation(s)' if found else ''}, "
            f"{len(self.executions):,} executions, {len(self.trace):,} events, "
            f"{self.points:,} choice points, t={self.ended_at:g}>"
        )

    def _repr_html_(self) -> str:
        """Jupyter: the verdict, the violations and the trace as a table (its first and last
        ``HTML_ROWS`` halves past that many events: every event went into the notebook's
        file otherwise, most of a megabyte at a thousand orders; ``run.trace`` has them all)."""
        events = list(self.trace)
        half = HTML_ROWS // 2
        kept = events if len(events) <= HTML_ROWS else [*events[:half], None, *events[-half:]]
        left_out = len(events) - HTML_ROWS
        rows = "".join(
            f"<tr><td colspan='4'>\u2026 {left_out:,} events left out (run.trace has every "
            "one)</td></tr>"
            if e is None
            else f"<tr><td>{e.t:g}</td><td>{html.escape(e.worker or '')}</td>"
            f"<td>{html.escape(e.kind)}</td><td>{html.escape(e.text)}</td></tr>"
            for e in kept
        )
        return (
            f"<div><p style='font-family:monospace'>"
            f"{html.escape(self.explain()).replace(chr(10), '<br>')}</p>"
            f"<details><summary>trace ({len(self.trace)} events, {self.points} choice points)"
            f"</summary><table><tr><th>t</th><th>worker</th><th>kind</th><th>what</th></tr>"
            f"{rows}</table></details></div>"
        )

    # ------------------------------------------------------------------ SQL

    def sql(self, query: str, params: Sequence[object] | None = None) -> list[tuple[Any, ...]]:
        """Query the run with SQL: the runtime's tables (on DuckDB) plus ``trace_events``,
        ``effects`` and ``choices``; on the memory runtime, ``executions``, ``steps`` and
        ``start_requests`` tables are made from its records.

        >>> run.sql("select count(*) from trace_events where kind = 'fault'")  # doctest: +SKIP
        """
        return self.connection.execute(query, params).fetchall()

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection holding this run's tables."""
        if self._sql is None:
            # A runtime that keeps its records in DuckDB offers its connection: the run's tables
            # go beside them. Any other runtime's records are loaded into a fresh database.
            own = getattr(self.runtime, "connection", None)
            if isinstance(own, duckdb.DuckDBPyConnection):
                self._sql = own
            else:
                self._sql = connect(":memory:")
                load_records(self._sql, self.executions, self.steps, self.start_requests)
            load_trace(self._sql, self.trace, self.effects, self.choices)
        return self._sql
