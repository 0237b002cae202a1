-- The DuckDB runtime's tables. Created by the adapter itself (DuckDBRuntime), idempotently.
--
-- One row per execution holds everything a delivery writes: its lease, its wake (due_at) and
-- its step log. That keeps every runtime call a single statement, and every fenced write
-- conflicts with a concurrent claim: both bump `revision`, and DuckDB detects write-write
-- conflicts per column only when the value actually changes (see docs/decisions.md).

CREATE SEQUENCE IF NOT EXISTS execution_seq START 1;

CREATE TABLE IF NOT EXISTS executions (
-- include: execution_columns
    revision            BIGINT NOT NULL DEFAULT 0,   -- bumped by every write to the row
    -- A start request is (caller incarnation, step key): at most one target each.
    UNIQUE (request_seq, parent_step_key)
);

-- When an execution becomes claimable: its wake when free, its lease's expiry when leased.
CREATE OR REPLACE MACRO ready_at(lease_owner, due_at, lease_expires_at) AS
    CASE WHEN lease_owner IS NULL THEN due_at ELSE lease_expires_at END;

-- include: events_table

-- include: start_requests_view

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
-- include: step_positions
SELECT l.execution_id, l.step_key, p.position, l.status, l.value, l.attempt, l.recorded_at
FROM step_log AS l
JOIN positions AS p USING (execution_id, step_key)
QUALIFY row_number() OVER (PARTITION BY l.execution_id, l.step_key ORDER BY l.entry_no DESC) = 1;
