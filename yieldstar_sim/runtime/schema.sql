-- The DuckDB runtime's tables. Created by the adapter itself (DuckDBRuntime), idempotently.
--
-- One row per execution holds everything a delivery writes: its lease, its wake (due_at) and
-- its step log. That keeps every runtime call a single statement, and every fenced write
-- conflicts with a concurrent claim: both bump `revision`, and DuckDB detects write-write
-- conflicts per column only when the value actually changes (see docs/decisions.md).

CREATE SEQUENCE IF NOT EXISTS execution_seq START 1;

CREATE TABLE IF NOT EXISTS executions (
    execution_id        VARCHAR PRIMARY KEY,
    seq                 BIGINT NOT NULL,       -- admission order; also this incarnation's identity
    workflow_id         VARCHAR NOT NULL,
    params              VARCHAR,               -- canonical JSON (RFC 8785), NULL: no parameters
    origin              VARCHAR NOT NULL,      -- 'trigger' | 'start' | 'child' | 'spawn'
    parent_execution_id VARCHAR,               -- the parent link (RFC 008/009)
    parent_step_key     VARCHAR,
    parent_detached     BOOLEAN,
    request_seq         BIGINT,                -- the caller incarnation of the start request
    status              VARCHAR NOT NULL,      -- pending | suspended | completed | failed | cancelled
    result              VARCHAR,               -- canonical JSON
    error               VARCHAR,               -- canonical JSON {name, message, code?}
    created_at          DOUBLE NOT NULL,
    finished_at         DOUBLE,
    due_at              DOUBLE,                -- the pending wake
    lease_owner         VARCHAR,
    lease_token         BIGINT NOT NULL DEFAULT 0,   -- the fencing token; only grows
    lease_expires_at    DOUBLE,
    step_log            VARCHAR NOT NULL DEFAULT '', -- one canonical JSON step entry per line
    cancel_requested    BOOLEAN NOT NULL DEFAULT false, -- RFC 009: thrown at the next delivery
    waiting_on          VARCHAR,               -- the execution whose end wakes this one
    revision            BIGINT NOT NULL DEFAULT 0,   -- bumped by every write to the row
    -- A start request is (caller incarnation, step key): at most one target each.
    UNIQUE (request_seq, parent_step_key)
);

-- When an execution becomes claimable: its wake when free, its lease's expiry when leased.
CREATE OR REPLACE MACRO ready_at(lease_owner, due_at, lease_expires_at) AS
    CASE WHEN lease_owner IS NULL THEN due_at ELSE lease_expires_at END;

-- The retained start-request records: targets whose caller incarnation still exists.
CREATE OR REPLACE VIEW start_requests AS
SELECT t.parent_execution_id AS caller_execution_id,
       t.parent_step_key     AS step_key,
       t.workflow_id,
       t.params,
       t.parent_detached     AS detached,
       t.execution_id        AS target_execution_id,
       t.created_at
FROM executions AS t
JOIN executions AS c ON c.seq = t.request_seq AND c.status <> 'pruned';

-- Every entry of every execution's step log, for querying with SQL. The last entry of a step
-- key is that step's current state.
CREATE OR REPLACE VIEW step_log AS
SELECT execution_id,
       entry_no,
       json_extract_string(entry, '$.k') AS step_key,
       json_extract_string(entry, '$.s') AS status,
       json_extract(entry, '$.v')        AS value,
       CAST(json_extract(entry, '$.a') AS INTEGER) AS attempt,
       CAST(json_extract(entry, '$.t') AS DOUBLE)  AS recorded_at
FROM (
    SELECT execution_id,
           unnest(string_split(rtrim(step_log, chr(10)), chr(10))) AS entry,
           generate_subscripts(string_split(rtrim(step_log, chr(10)), chr(10)), 1) AS entry_no
    FROM executions
    WHERE step_log <> ''
);

-- Each step's current state: the last entry of its key, at the position of its first entry.
CREATE OR REPLACE VIEW steps AS
WITH positions AS (
    SELECT execution_id, step_key,
           row_number() OVER (PARTITION BY execution_id ORDER BY min(entry_no)) - 1 AS position
    FROM step_log
    GROUP BY execution_id, step_key
)
SELECT l.execution_id, l.step_key, p.position, l.status, l.value, l.attempt, l.recorded_at
FROM step_log AS l
JOIN positions AS p USING (execution_id, step_key)
QUALIFY row_number() OVER (PARTITION BY l.execution_id, l.step_key ORDER BY l.entry_no DESC) = 1;
