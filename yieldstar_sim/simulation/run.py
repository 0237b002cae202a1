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

from yieldstar_sim.codec import durable_value_codec
from yieldstar_sim.runtime.duckdb_runtime import DuckDBRuntime
from yieldstar_sim.simulation.invariants import BUILT_IN, Violation, as_invariant
from yieldstar_sim.simulation.simulator import Simulator

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from yieldstar_sim.engine.world import Effect
    from yieldstar_sim.model import ExecutionRecord, StartRequestRecord, StepRecord
    from yieldstar_sim.runtime.protocol import Runtime
    from yieldstar_sim.simulation.artifact import ReplayArtifact
    from yieldstar_sim.simulation.faults import Fault
    from yieldstar_sim.simulation.kernel import Choice
    from yieldstar_sim.simulation.scenario import Scenario
    from yieldstar_sim.simulation.trace import Trace
    from yieldstar_sim.widgets import Stepper


@dataclass
class SimulationRun:
    """A finished run: its trace, ledger, records and verdict.

    ``ok`` is true when no invariant was violated; ``violations`` says which and why.
    ``runtime`` is the runtime the run used (still open: query it). ``schedule`` and ``faults``
    (placed at choice-point indices) replay the run exactly.
    """

    scenario: Scenario
    seed: int
    runtime_kind: str
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
    _sql: duckdb.DuckDBPyConnection | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        """Whether every invariant held."""
        return not self.violations

    @property
    def verdict(self) -> str:
        """``ok`` or the number of violations, in words."""
        if self.ok:
            return "ok: every invariant held"
        return (
            f"{len(self.violations)} invariant violation{'s' if len(self.violations) > 1 else ''}"
        )

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

    def stepper(self, **options: Any) -> Stepper:
        """A ``Stepper`` widget over this run (``ys.Stepper(run, **options)``)."""
        from yieldstar_sim.widgets import Stepper

        return Stepper(self, **options)

    def explain(self) -> str:
        """The verdict and each violation's sentence."""
        lines = [f"{self.scenario.name} (seed {self.seed}, {self.runtime_kind}): {self.verdict}"]
        lines += [f"  - {violation}" for violation in self.violations]
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
            if isinstance(self.runtime, DuckDBRuntime):
                self._sql = self.runtime.connection
            else:
                self._sql = duckdb.connect(":memory:")
                _load_records(self._sql, self)
            _load_trace(self._sql, self)
        return self._sql


def simulate(
    scenario: Scenario,
    seed: int = 0,
    *,
    runtime: str = "duckdb",
    db: str | Path | None = None,
    faults: Sequence[Fault] = (),
    schedule: Sequence[str] = (),
    scenario_faults: bool = True,
) -> SimulationRun:
    """Run ``scenario`` once: deterministic for a given seed, schedule and faults.

    ``runtime`` is ``"duckdb"`` (in memory, or the file ``db``) or ``"memory"``. ``faults`` are
    added to the scenario's own fault plan (``scenario_faults=False`` leaves that plan out, as a
    replay does: its artifact holds every fault that fired).
    """
    simulator = Simulator(
        scenario,
        seed=seed,
        runtime=runtime,
        db=db,
        schedule=schedule,
        faults=faults,
        scenario_faults=scenario_faults,
    )
    simulator.run()
    return finish(simulator)


def finish(simulator: Simulator) -> SimulationRun:
    """Collect a finished simulator's records and check every invariant."""
    runtime = simulator.runtime
    executions = runtime.executions()
    run = SimulationRun(
        scenario=simulator.scenario,
        seed=simulator.seed,
        runtime_kind=simulator.runtime_kind,
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
    )
    for invariant in (*BUILT_IN, *map(as_invariant, simulator.scenario.invariants)):
        try:
            run.violations.extend(invariant.check(run))
        except Exception as error:  # a broken user invariant is reported, not fatal
            run.violations.append(
                Violation(
                    invariant.name, f"the invariant itself raised {type(error).__name__}: {error}"
                )
            )
    return run


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
            (e.seq, e.t, e.kind, e.worker, e.op, e.execution_id, e.step_key, e.token, e.point,
             e.text, json.dumps(e.data, sort_keys=True, default=str))
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
