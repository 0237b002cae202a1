"""A run as DuckDB tables, for ``run.sql(...)``: the trace, the effects and the choices, and
the runtime's records where the runtime keeps no tables of its own. Every value is bound."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.codec import durable_value_codec

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import duckdb

    from yieldstar_sim.core.model import ExecutionRecord, StartRequestRecord, StepRecord
    from yieldstar_sim.engine.world import Effect
    from yieldstar_sim.simulation.moves import Choice
    from yieldstar_sim.simulation.trace import Trace

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


def load_trace(
    connection: duckdb.DuckDBPyConnection,
    trace: Trace,
    effects: Sequence[Effect],
    choices: Sequence[Choice],
) -> None:
    """Make (or remake) the ``trace_events``, ``effects`` and ``choices`` tables."""
    connection.execute(_TRACE_SCHEMA)
    _insert(
        connection,
        "trace_events",
        [
            (e.seq, e.t, str(e.kind), e.worker, e.op, e.execution_id, e.step_key, e.token,
             e.point, e.text, json.dumps(e.data.to_json(), sort_keys=True, default=str))
            for e in trace
        ],
    )  # fmt: skip
    _insert(
        connection,
        "effects",
        [
            (i, e.name, _json(e.data), e.execution_id, e.step_key, e.attempt, e.worker, e.at)
            for i, e in enumerate(effects)
        ],
    )
    _insert(connection, "choices", [(c.index, c.actor, list(c.among)) for c in choices])


def load_records(
    connection: duckdb.DuckDBPyConnection,
    executions: Sequence[ExecutionRecord],
    steps: Mapping[str, Sequence[StepRecord]],
    start_requests: Sequence[StartRequestRecord],
) -> None:
    """Make the ``executions``, ``steps`` and ``start_requests`` tables from records (for a
    runtime that keeps no tables of its own)."""
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
            for r in executions
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
            for recorded in steps.values()
            for s in recorded
        ],
    )
    _insert(
        connection,
        "start_requests",
        [
            (r.request_id.execution_id, r.request_id.step_key, r.workflow_id, _json(r.params),
             r.detached, r.target_execution_id, r.created_at)
            for r in start_requests
        ],
    )  # fmt: skip
