"""``simulate``: one deterministic run of a scenario, and what it left behind.

>>> import yieldstar_sim as ys
>>> from yieldstar_sim.simulation.scenario import load_scenario
>>> run = ys.simulate(load_scenario("durable-start"), seed=0, runtime="memory")
>>> run.ok, len(run.effects_named("courier.booked"))
(True, 1)
"""

from __future__ import annotations

import hashlib
import html
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb

from yieldstar_sim.core.codec import durable_value_codec
from yieldstar_sim.core.model import ExecutionNotFoundError
from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT, UNGUARDED, Deadline, RunTimedOut
from yieldstar_sim.simulation.exporters import exporter
from yieldstar_sim.simulation.faults import trace_points
from yieldstar_sim.simulation.invariants import (
    BUILT_IN,
    ExecutionsEndAsExpected,
    Violation,
    as_invariant,
)
from yieldstar_sim.simulation.scenario import FaultPlanError, ScenarioError
from yieldstar_sim.simulation.simulator import Simulator
from yieldstar_sim.simulation.trace import ClientAnswerData

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from yieldstar_sim.core.model import ExecutionRecord, StartRequestRecord, StepRecord
    from yieldstar_sim.engine.world import Effect
    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.runtime.protocol import Runtime
    from yieldstar_sim.simulation.artifact import ReplayArtifact
    from yieldstar_sim.simulation.faults import Fault
    from yieldstar_sim.simulation.kernel import Choice
    from yieldstar_sim.simulation.scenario import Scenario
    from yieldstar_sim.simulation.trace import Admission, Trace


@dataclass
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
    schedule: list[str]
    choices: list[Choice]
    faults: list[Fault]
    executions: list[ExecutionRecord]
    start_requests: list[StartRequestRecord]
    steps: dict[str, list[StepRecord]]
    points: int
    ended_at: float
    violations: list[Violation] = field(default_factory=list)
    incomplete: str | None = None
    """Why the run did not finish (a budget, the wall-clock limit), or None when it did."""
    warnings: list[str] = field(default_factory=list)
    admissions: list[Admission] = field(default_factory=list)
    """Every admission of the run, once per incarnation (from the runtime's records)."""
    world: dict[str, Any] = field(default_factory=dict)
    """The world's key-value store as the run left it (what ``step.world.write`` wrote), for
    invariants: ``run.world.get("seats_left")``."""
    runtime_choice: RuntimeChoice | None = field(default=None, repr=False)
    """What the run was asked to run on (a name or your factory): re-runs use it again."""
    _sql: duckdb.DuckDBPyConnection | None = field(default=None, repr=False)

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

    def effects_named(self, name: str) -> list[Effect]:
        """The ledger's effects named ``name``."""
        return [effect for effect in self.effects if effect.name == name]

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

    def explain(self) -> str:
        """The verdict and each violation's sentence."""
        lines = [
            f"{self.scenario.name} (seed {self.seed}, {self.runtime_kind}): {self.verdict_text}"
        ]
        lines += [f"  - {violation}" for violation in self.violations]
        lines += [f"  warning: {warning}" for warning in self.warnings]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """Jupyter: the verdict, the violations and the trace as a table."""
        rows = "".join(
            f"<tr><td>{e.t:g}</td><td>{html.escape(e.worker or '')}</td>"
            f"<td>{html.escape(e.kind)}</td><td>{html.escape(e.text)}</td></tr>"
            for e in self.trace
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
                self._sql = duckdb.connect(":memory:")
                _load_records(self._sql, self)
            _load_trace(self._sql, self)
        return self._sql


def simulate(
    scenario: Scenario,
    seed: int = 0,
    *,
    runtime: RuntimeChoice = "duckdb",
    db: str | Path | None = None,
    faults: Sequence[Fault] = (),
    schedule: Sequence[str] = (),
    scenario_faults: bool = True,
    timeout: float | None = DEFAULT_TIMEOUT,
    check_faults: bool = True,
) -> SimulationRun:
    """Run ``scenario`` once: deterministic for a given seed, schedule and faults.

    ``runtime`` is ``"duckdb"`` (in memory, or the file ``db``), ``"memory"``, or your own: a
    factory the simulator calls with its virtual clock as ``clock=``, or its
    ``"package.module:factory"`` name. ``faults`` are
    added to the scenario's own fault plan (``scenario_faults=False`` leaves that plan out, as a
    replay does: its artifact holds every fault that fired). A fault that no choice point of
    the run matched raises ``FaultPlanError`` (a scenario error): the run would not test what
    its plan says (``check_faults=False`` allows it: a what-if re-run whose new fault moved the
    old ones' points away). ``timeout`` bounds the run's wall-clock seconds (None: no bound);
    a run it cuts is ``incomplete``.
    """
    simulator = Simulator(
        scenario,
        seed=seed,
        runtime=runtime,
        db=db,
        schedule=schedule,
        faults=faults,
        scenario_faults=scenario_faults,
        timeout=timeout,
    )
    simulator.run()
    run = finish(simulator)
    if check_faults and simulator.plan.unfired and run.incomplete is None:
        run.runtime.close()
        raise FaultPlanError(unfired_faults(simulator))
    unknown = unknown_cancel_targets(simulator) if check_faults else None
    if unknown is not None:
        run.runtime.close()
        raise ScenarioError(unknown)
    return run


def unknown_cancel_targets(simulator: Simulator) -> str | None:
    """A client's cancel that the runtime refused because its execution never existed in the
    run: a misspelled ID, which would otherwise pass as an ordinary refused answer (and a
    green verdict). None when every cancel named an execution the run had."""
    clients = set(simulator.scenario.client_names)
    missing: dict[str, str] = {}
    had: set[str] = set()
    for event in simulator.trace:
        data = event.data
        if event.worker in clients and event.op == "cancel":
            if (
                isinstance(data, ClientAnswerData)
                and data.code == ExecutionNotFoundError.__name__
                and data.execution_id is not None
            ):
                missing.setdefault(data.execution_id, data.client)
            continue
        if event.execution_id is not None:
            had.add(event.execution_id)
    never = {
        execution_id: client for execution_id, client in missing.items() if execution_id not in had
    }
    if not never:
        return None
    known = ", ".join(sorted(had)) or "none"
    return (
        f"scenario {simulator.scenario.name!r}: "
        + "; ".join(
            f"client {client}'s cancel names execution {execution_id!r}, which the run never had"
            for execution_id, client in never.items()
        )
        + f" (its executions: {known})"
    )


def unfired_faults(simulator: Simulator) -> str:
    """Why the plan's unfired faults matched nothing: the fault and what it could have named."""
    seen: dict[str, dict[str, set[str]]] = {}
    for event in simulator.trace:
        if event.point is None or event.op is None:
            continue
        where = seen.setdefault(event.op, {"workers": set(), "steps": set(), "executions": set()})
        for part, value in (
            ("workers", event.worker),
            ("steps", event.step_key),
            ("executions", event.execution_id),
        ):
            if value is not None:
                where[part].add(value)
    # The points as the plan saw them (a claim's point did not know its execution yet).
    points = {index: info for index, (info, _) in trace_points(simulator.trace).items()}
    lines = []
    for fault in simulator.plan.unfired:
        matched = sum(1 for index, info in points.items() if fault.matches(index, info))
        if matched >= fault.occurrence:
            lines.append(
                f"the fault '{fault.describe()}' never fired: an earlier fault of the plan took "
                "its choice point (one fault per point)"
            )
            continue
        if matched:
            lines.append(
                f"the fault '{fault.describe()}' matches {matched} choice point(s) of the run, "
                f"fewer than its occurrence {fault.occurrence}"
            )
            continue
        sentence = f"the fault '{fault.describe()}' matches no choice point of the run"
        if fault.op is not None and fault.op in seen:
            where = seen[fault.op]
            parts = [
                f"{name} {', '.join(sorted(values))}" for name, values in where.items() if values
            ]
            sentence += f"; {fault.op} happens with " + "; ".join(parts)
        elif fault.op is not None:
            sentence += f"; no {fault.op} happens in it"
        lines.append(sentence)
    ops = ", ".join(sorted(seen)) or "none"
    clients = simulator.scenario.client_names
    return (
        f"{'; '.join(lines)} (the ops the run makes: {ops}; the workers: "
        f"{', '.join(simulator.scenario.worker_names)}"
        + (f"; the clients: {', '.join(clients)}" if clients else "")
        + ")"
    )


def finish(simulator: Simulator) -> SimulationRun:
    """Collect a finished simulator's records and check every invariant."""
    runtime = simulator.runtime
    executions = runtime.executions()
    incomplete = simulator.incomplete_reason()
    if incomplete is not None:
        live = [record for record in executions if not record.terminal]
        if live:
            incomplete += (
                "; still live: "
                + ", ".join(f"{r.execution_id} ({r.workflow_id}, {r.status})" for r in live[:5])
                + (f" and {len(live) - 5} more" if len(live) > 5 else "")
            )
    run = SimulationRun(
        scenario=simulator.scenario,
        seed=simulator.seed,
        runtime_kind=simulator.runtime_kind,
        runtime_choice=simulator.runtime_choice,
        runtime=runtime,
        trace=simulator.trace,
        effects=list(simulator.ledger.effects),
        schedule=simulator.kernel.schedule,
        choices=list(simulator.kernel.choices),
        faults=[fault for _, fault in simulator.plan.applied],
        executions=executions,
        start_requests=runtime.start_requests(),
        steps={record.execution_id: runtime.steps(record.execution_id) for record in executions},
        points=simulator.kernel.points,
        ended_at=simulator.clock.now(),
        incomplete=incomplete,
        admissions=_all_admissions(simulator, executions),
        world=simulator.store.values(),
    )
    scenario = simulator.scenario
    invariants = (
        *BUILT_IN,
        ExecutionsEndAsExpected(scenario.expected),
        *map(as_invariant, scenario.invariants),
    )
    deadline = Deadline(simulator.deadline.seconds)  # the invariants' own wall-clock limit
    guarded = deadline.seconds is not None  # else no guard, and no text naming what it guards
    written = bool(run.world)
    with deadline:
        for invariant in invariants:
            if incomplete is not None and getattr(invariant, "final_only", True):
                continue  # about how a run ends: a cut run has not ended
            if written:
                # Each invariant reads the world as the run left it: one that popped a key
                # (or appended to a list) hid it from the next, which could then hold.
                run.world = simulator.store.values()
            try:
                with (
                    deadline.user_code(f"the invariant {invariant.name}") if guarded else UNGUARDED
                ):
                    run.violations.extend(invariant.check(run))
                    unwatched = getattr(invariant, "unwatched", None)
                    warning = unwatched(run) if callable(unwatched) else None
            except RunTimedOut:
                run.incomplete = (
                    run.incomplete
                    or simulator.incomplete_reason()
                    or (f"timed out in the invariant {invariant.name}")
                )
                break
            except Exception as error:  # a broken user invariant is reported, not fatal
                warning = None
                run.violations.append(
                    Violation(
                        invariant.name,
                        f"the invariant itself raised {type(error).__name__}: {error}",
                    )
                )
            except SystemExit as exit:
                warning = None
                run.violations.append(
                    Violation(invariant.name, f"the invariant itself called sys.exit({exit.code})")
                )
            if warning:
                run.warnings.append(warning)
    if written:
        run.world = simulator.store.values()
    return run


def _all_admissions(simulator: Simulator, executions: list[ExecutionRecord]) -> list[Admission]:
    """The admissions the simulator saw, and any the final records hold that it did not."""
    from yieldstar_sim.simulation.trace import Admission

    admissions = list(simulator.admissions)
    seen = {(a.execution_id, a.seq) for a in admissions}
    for record in executions:
        if (record.execution_id, record.seq) not in seen:
            parent = record.parent
            admissions.append(
                Admission(
                    record.execution_id, record.seq, record.workflow_id, str(record.origin),
                    None if parent is None else (parent.execution_id, parent.step_key),
                    record.created_at,
                )
            )  # fmt: skip
    return admissions


# --------------------------------------------------------------------------- SQL tables

_TRACE_SCHEMA = """
CREATE OR REPLACE TABLE trace_events (
    seq INTEGER, t DOUBLE, kind VARCHAR, worker VARCHAR, op VARCHAR, execution_id VARCHAR,
    step_key VARCHAR, token BIGINT, point INTEGER, text VARCHAR, data JSON);
CREATE OR REPLACE TABLE effects (
    seq INTEGER, name VARCHAR, data JSON, execution_id VARCHAR, step_key VARCHAR,
    attempt INTEGER, worker VARCHAR, t DOUBLE);
CREATE OR REPLACE TABLE choices (point INTEGER, actor VARCHAR, among VARCHAR[]);
"""

_RECORD_SCHEMA = """
CREATE OR REPLACE TABLE executions (
    execution_id VARCHAR, seq BIGINT, workflow_id VARCHAR, params JSON, origin VARCHAR,
    parent_execution_id VARCHAR, parent_step_key VARCHAR, parent_detached BOOLEAN,
    status VARCHAR, result JSON, error JSON, created_at DOUBLE, finished_at DOUBLE,
    due_at DOUBLE, lease_owner VARCHAR, lease_token BIGINT, lease_expires_at DOUBLE);
CREATE OR REPLACE TABLE steps (
    execution_id VARCHAR, step_key VARCHAR, position INTEGER, status VARCHAR, value JSON,
    attempt INTEGER, recorded_at DOUBLE);
CREATE OR REPLACE TABLE start_requests (
    caller_execution_id VARCHAR, step_key VARCHAR, workflow_id VARCHAR, params JSON,
    detached BOOLEAN, target_execution_id VARCHAR, created_at DOUBLE);
"""

_BATCH = 200


def _insert(connection: duckdb.DuckDBPyConnection, table: str, rows: list[tuple[Any, ...]]) -> None:
    """Insert rows with one multi-row VALUES statement per batch, every value bound."""
    for start in range(0, len(rows), _BATCH):
        batch = rows[start : start + _BATCH]
        width = len(batch[0])
        row = "(" + ", ".join(["?"] * width) + ")"
        statement = f"INSERT INTO {table} VALUES " + ", ".join([row] * len(batch))
        connection.execute(statement, [value for item in batch for value in item])


def _json(value: object) -> str | None:
    if value is None:
        return None
    return durable_value_codec.encode_or_raise(value)


def _load_trace(connection: duckdb.DuckDBPyConnection, run: SimulationRun) -> None:
    connection.execute(_TRACE_SCHEMA)
    _insert(
        connection,
        "trace_events",
        [
            (e.seq, e.t, str(e.kind), e.worker, e.op, e.execution_id, e.step_key, e.token,
             e.point, e.text, json.dumps(e.data.to_json(), sort_keys=True, default=str))
            for e in run.trace
        ],
    )  # fmt: skip
    _insert(
        connection,
        "effects",
        [
            (i, e.name, _json(e.data), e.execution_id, e.step_key, e.attempt, e.worker, e.at)
            for i, e in enumerate(run.effects)
        ],
    )
    _insert(connection, "choices", [(c.index, c.actor, list(c.among)) for c in run.choices])


def _load_records(connection: duckdb.DuckDBPyConnection, run: SimulationRun) -> None:
    connection.execute(_RECORD_SCHEMA)
    _insert(
        connection,
        "executions",
        [
            (r.execution_id, r.seq, r.workflow_id, _json(r.params), r.origin,
             r.parent.execution_id if r.parent else None, r.parent.step_key if r.parent else None,
             r.parent.detached if r.parent else None, str(r.status), _json(r.result),
             _json(r.error.to_value()) if r.error else None, r.created_at, r.finished_at, r.due_at,
             r.lease.owner if r.lease else None, r.lease_token,
             r.lease.expires_at if r.lease else None)
            for r in run.executions
        ],
    )  # fmt: skip
    _insert(
        connection,
        "steps",
        [
            (
                s.execution_id,
                s.step_key,
                s.position,
                s.status,
                _json(s.value),
                s.attempt,
                s.recorded_at,
            )
            for steps in run.steps.values()
            for s in steps
        ],
    )
    _insert(
        connection,
        "start_requests",
        [
            (r.request_id.execution_id, r.request_id.step_key, r.workflow_id, _json(r.params),
             r.detached, r.target_execution_id, r.created_at)
            for r in run.start_requests
        ],
    )  # fmt: skip
