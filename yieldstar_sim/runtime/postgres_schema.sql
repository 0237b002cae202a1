-- The PostgreSQL runtime's tables, created by PostgresRuntime in its own schema (the connection's
-- search_path names it, so nothing here is qualified). The same shape as the DuckDB runtime's
-- (schema.sql): one row per execution holds its lease, its wake (due_at) and its step log, so
-- each runtime call is one statement and every fenced write touches the row a claim touches.
-- PostgreSQL locks rows, not columns, so no `revision` column is needed to make two writers
-- of one row conflict (docs/decisions.md, "PostgreSQL isolation and locking").

CREATE SEQUENCE execution_seq START 1;

CREATE TABLE executions (
    execution_id        text PRIMARY KEY,
    seq                 bigint NOT NULL,            -- admission order; this incarnation's identity
    workflow_id         text NOT NULL,
    params              text,                       -- canonical JSON (RFC 8785), NULL: none
    origin              text NOT NULL,              -- 'trigger' | 'start' | 'child' | 'spawn'
    parent_execution_id text,                       -- the parent link (RFC 008/009)
    parent_step_key     text,
    parent_detached     boolean,
    request_seq         bigint,                     -- the caller incarnation of the start request
    status              text NOT NULL,              -- pending | suspended | completed | failed | cancelled
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
    -- A start request is (caller incarnation, step key): at most one target each.
    UNIQUE (request_seq, parent_step_key)
);

CREATE INDEX executions_seq ON executions (seq);

-- When an execution becomes claimable: its wake when free, its lease's expiry when leased.
-- A one-expression SQL function: the planner inlines it.
CREATE FUNCTION ready_at(lease_owner text, due_at double precision,
                         lease_expires_at double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN lease_owner IS NULL THEN due_at ELSE lease_expires_at END $$;

-- The retained start-request records: targets whose caller incarnation still exists.
CREATE VIEW start_requests AS
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
-- key is that step's current state. `json`, not `jsonb`: a value may hold "\u0000".
CREATE VIEW step_log AS
SELECT e.execution_id,
       l.entry_no,
       l.entry::json ->> 'k'                     AS step_key,
       l.entry::json ->> 's'                     AS status,
       l.entry::json -> 'v'                      AS value,
       (l.entry::json ->> 'a')::integer          AS attempt,
       (l.entry::json ->> 't')::double precision AS recorded_at
FROM executions AS e
CROSS JOIN LATERAL unnest(string_to_array(rtrim(e.step_log, E'\n'), E'\n'))
     WITH ORDINALITY AS l(entry, entry_no)
WHERE e.step_log <> '';

-- Each step's current state: the last entry of its key, at the position of its first entry.
CREATE VIEW steps AS
WITH positions AS (
    SELECT execution_id, step_key,
           row_number() OVER (PARTITION BY execution_id ORDER BY min(entry_no)) - 1 AS position
    FROM step_log
    GROUP BY execution_id, step_key
), latest AS (
    SELECT l.*,
           row_number() OVER (PARTITION BY execution_id, step_key ORDER BY entry_no DESC) AS nth
    FROM step_log AS l
)
SELECT l.execution_id, l.step_key, p.position, l.status, l.value, l.attempt, l.recorded_at
FROM latest AS l
JOIN positions AS p USING (execution_id, step_key)
WHERE l.nth = 1;
