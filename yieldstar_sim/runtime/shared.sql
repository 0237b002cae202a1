-- SQL that the DuckDB (queries.sql, schema.sql) and PostgreSQL (postgres_queries.sql,
-- postgres_schema.sql) runtimes write the same way, as fragments their files include
-- (`-- include: X`; sql_files.py). What a start-request record is, and which columns a record
-- read returns, are written once: two dialects' copies could drift apart, and the
-- conformance suite compares what the adapters answer, not their SQL.

-- fragment: execution_columns
-- The executions table's columns, in type names both dialects read alike (DuckDB's VARCHAR
-- is text, its DOUBLE double precision). DuckDB adds `revision` (schema.sql).
    execution_id        text PRIMARY KEY,
    seq                 bigint NOT NULL,            -- admission order; this incarnation's identity
    workflow_id         text NOT NULL,
    params              text,                       -- canonical JSON (RFC 8785), NULL: none
    origin              text NOT NULL,              -- 'trigger' | 'start' | 'child' | 'spawn'
    parent_execution_id text,                       -- the parent link (RFC 008/009)
    parent_step_key     text,
    parent_detached     boolean,
    request_seq         bigint,                     -- the caller incarnation of the start request
    status              text NOT NULL,              -- pending | suspended | completed | failed | cancelled | dead-lettered
    result              text,                       -- canonical JSON
    error               text,                       -- canonical JSON {name, message, code?}
    created_at          double precision NOT NULL,
    finished_at         double precision,
    due_at              double precision,           -- the pending wake
    lease_owner         text,
    lease_token         bigint NOT NULL DEFAULT 0,  -- the fencing token; only grows
    lease_expires_at    double precision,
    step_log            text NOT NULL DEFAULT '',   -- one canonical JSON step entry per line
    cancel_requested    boolean NOT NULL DEFAULT false, -- RFC 009: thrown at the next delivery
    waiting_on          text,                       -- the execution whose end wakes this one
    recoveries          bigint NOT NULL DEFAULT 0,  -- claims that took over an expired lease
    instance_id         text,                       -- the first run's ID, for a run continued as new

-- fragment: record_columns
-- The columns of an execution's record (`ExecutionRecord`), in the order the adapters read them.
execution_id, seq, workflow_id, params, origin, parent_execution_id, parent_step_key,
parent_detached, status, result, error, created_at, finished_at, due_at, lease_owner,
lease_token, lease_expires_at, cancel_requested, waiting_on, recoveries, instance_id

-- fragment: events_table
-- External events (core/events.py): each accepted event once per (instance, event ID), sent to
-- one run (execution_id) or to its instance's current run (execution_id NULL). Its status is
-- pending or consumed; 'undelivered' is derived when read (runtime/_events_common.py).
CREATE TABLE IF NOT EXISTS events (
    seq          bigint PRIMARY KEY,                -- acceptance order
    event_id     text NOT NULL,
    instance_id  text NOT NULL,
    execution_id text,
    name         text NOT NULL,
    payload      text NOT NULL,                     -- canonical JSON
    sent_at      double precision NOT NULL,
    status       text NOT NULL,                     -- pending | consumed
    consumed_by  text,
    step_key     text,
    UNIQUE (instance_id, event_id)
);

-- fragment: request_targets
-- The retained start-request records: targets whose caller incarnation (request_seq) still
-- exists. A pruned caller's requests are unreachable, and so not retained.
FROM executions AS t
JOIN executions AS c ON c.seq = t.request_seq AND c.status <> 'pruned'

-- fragment: start_requests_view
-- The start-request records as a view, for querying with SQL (`run.sql`).
CREATE OR REPLACE VIEW start_requests AS
SELECT t.parent_execution_id AS caller_execution_id,
       t.parent_step_key     AS step_key,
       t.workflow_id,
       t.params,
       t.parent_detached     AS detached,
       t.execution_id        AS target_execution_id,
       t.created_at
-- include: request_targets
;

-- fragment: live
-- Executions that may still be claimed: not terminal, not pruned.
FROM executions
WHERE status IN ('pending', 'suspended')

-- fragment: step_positions
-- Each step key's position: the order of its first entry in its execution's step log.
WITH positions AS (
    SELECT execution_id, step_key,
           row_number() OVER (PARTITION BY execution_id ORDER BY min(entry_no)) - 1 AS position
    FROM step_log
    GROUP BY execution_id, step_key
)

-- Named statements both dialects run as they are (sql_files.load_queries adds them to each
-- runtime's own).

-- name: executions
SELECT
-- include: record_columns
FROM executions
WHERE status <> 'pruned'
ORDER BY seq;

-- name: start_requests
SELECT
-- include: record_columns
FROM executions
WHERE seq IN (
    SELECT t.seq
-- include: request_targets
)
ORDER BY seq;

-- name: next_wake_at
SELECT min(ready_at(lease_owner, due_at, lease_expires_at))
-- include: live
;

-- name: events_all
SELECT seq, event_id, instance_id, execution_id, name, payload, sent_at, status, consumed_by,
       step_key
FROM events
ORDER BY seq;

-- name: commit
COMMIT;

-- name: rollback
ROLLBACK;
