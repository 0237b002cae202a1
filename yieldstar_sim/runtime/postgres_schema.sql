-- The PostgreSQL runtime's tables, created by PostgresRuntime in its own schema (the connection's
-- search_path names it, so nothing here is qualified). The same shape as the DuckDB runtime's
-- (schema.sql): one row per execution holds its lease, its wake (due_at) and its step log, so
-- each runtime call is one statement and every fenced write touches the row a claim touches.
-- PostgreSQL locks rows, not columns, so no `revision` column is needed to make two writers
-- of one row conflict (docs/decisions.md, "PostgreSQL isolation and locking").

CREATE SEQUENCE execution_seq START 1;

CREATE TABLE executions (
-- include: execution_columns
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

-- include: events_table

-- include: start_requests_view

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
-- include: step_positions
, latest AS (
    SELECT l.*,
           row_number() OVER (PARTITION BY execution_id, step_key ORDER BY entry_no DESC) AS nth
    FROM step_log AS l
)
SELECT l.execution_id, l.step_key, p.position, l.status, l.value, l.attempt, l.recorded_at
FROM latest AS l
JOIN positions AS p USING (execution_id, step_key)
WHERE l.nth = 1;
