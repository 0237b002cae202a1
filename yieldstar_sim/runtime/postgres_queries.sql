-- Every statement the PostgreSQL runtime runs, by name: one statement each (psycopg binds
-- parameters server-side, one statement at a time). Parameters are always bound, never
-- formatted into the text, and each is cast to its type (a NULL alone names none). The
-- execution columns come in the order of _common.EXECUTION_COLUMNS. Every transaction is
-- SERIALIZABLE (the connection's default): a race surfaces as a serialization failure, which
-- the adapter retries as DuckDB's conflicts are (docs/decisions.md).

-- name: trigger
INSERT INTO executions (execution_id, seq, workflow_id, params, origin, status, created_at, due_at)
SELECT coalesce(%(execution_id)s::text, %(id_prefix)s::text || n), n, %(workflow_id)s::text, %(params)s::text,
       'trigger', 'pending', %(now)s::float8, %(now)s::float8
FROM (SELECT nextval('execution_seq') AS n
      WHERE NOT EXISTS (SELECT 1 FROM executions WHERE execution_id = %(execution_id)s::text))
     AS fresh
RETURNING execution_id;

-- fragment: target_id
-- The target's ID (core/ids.py start_target_id): the request's target_base, or where a row
-- (a pruned target's tombstone too) holds it, the base with ~n, n one more than the highest
-- such suffix held. The base is held only by a target of a pruned incarnation of the caller.
CASE WHEN NOT EXISTS (SELECT 1 FROM executions WHERE execution_id = %(target_base)s::text)
     THEN %(target_base)s::text
     ELSE %(target_base)s::text || '~' || (
         SELECT 1 + greatest(1, coalesce(max(CASE WHEN s ~ '^[0-9]{1,18}$'
                                                  THEN CAST(s AS bigint) END), 1))
         FROM (SELECT substr(execution_id, length(%(target_base)s::text) + 2) AS s
               FROM executions
               WHERE starts_with(execution_id, %(target_base)s::text || '~')) AS suffixes)
END

-- name: start_insert
-- A new start is this one INSERT: the request (request_seq, parent_step_key), the target, its
-- parent link and its first wake (due_at) are one row, so they commit together or not at all.
-- With the orphan guard (guard), a terminal caller admits nothing (start_find then tells a
-- repeat from a refusal), and an owned target of a caller whose cancellation is requested
-- starts with its own cancellation requested.
INSERT INTO executions (execution_id, seq, workflow_id, params, origin, parent_execution_id,
                        request_seq, parent_step_key, parent_detached, status, created_at, due_at,
                        cancel_requested)
SELECT
-- include: target_id
, n, %(workflow_id)s::text, %(params)s::text, 'start', %(caller)s::text,
       caller_seq, %(step_key)s::text, %(detached)s::boolean, 'pending', %(now)s::float8, %(now)s::float8,
       %(guard)s::boolean AND NOT %(detached)s::boolean AND caller_cancel_requested
FROM (SELECT nextval('execution_seq') AS n, c.seq AS caller_seq,
             c.cancel_requested AS caller_cancel_requested
      FROM executions AS c
      WHERE c.execution_id = %(caller)s::text AND c.status <> 'pruned'
        AND (NOT %(guard)s::boolean OR c.status IN ('pending', 'suspended'))
        AND NOT EXISTS (SELECT 1 FROM executions AS t
                        WHERE t.request_seq = c.seq AND t.parent_step_key = %(step_key)s::text))
     AS fresh
RETURNING execution_id;

-- name: begin
BEGIN;

-- name: schema_tables
-- Whether a schema already holds the runtime's table (a runtime opened on a named schema).
SELECT count(*) FROM pg_catalog.pg_tables
WHERE schemaname = %(schema)s::text AND tablename = 'executions';

-- name: lock_schema
-- Runtimes opening one named schema at once create its tables one at a time.
SELECT pg_advisory_xact_lock(hashtext(%(schema)s::text));

-- name: start_find
-- After start_insert found the request (or no caller, or a terminal one) and its transaction
-- ended: read the target and the caller's status.
SELECT t.execution_id, t.workflow_id, t.params, c.status
FROM executions AS c
LEFT JOIN executions AS t ON t.request_seq = c.seq AND t.parent_step_key = %(step_key)s::text
WHERE c.execution_id = %(caller)s::text AND c.status <> 'pruned';

-- name: execution
SELECT
-- include: record_columns
FROM executions
WHERE execution_id = %(execution_id)s::text AND status <> 'pruned';

-- name: step_log
SELECT step_log FROM executions WHERE execution_id = %(execution_id)s::text;

-- name: due
-- IDs compare by code point, as the memory runtime's and DuckDB's do, whatever the database's
-- collation (a locale's would put 'a' before 'B' and send a schedule elsewhere).
SELECT execution_id
-- include: live
  AND ready_at(lease_owner, due_at, lease_expires_at) <= %(now)s::float8
ORDER BY ready_at(lease_owner, due_at, lease_expires_at), parent_execution_id IS NOT NULL,
         execution_id COLLATE "C";

-- name: claim
UPDATE executions
SET lease_owner = %(owner)s::text, lease_token = lease_token + 1, lease_expires_at = %(expires_at)s::float8,
    due_at = NULL, waiting_on = NULL,
    -- a claim of a row still leased (its lease ran out) takes it over from its holder
    recoveries = recoveries + CASE WHEN lease_owner IS NULL THEN 0 ELSE 1 END
WHERE execution_id = (
    SELECT execution_id
    FROM executions
    WHERE status IN ('pending', 'suspended')
      AND (%(execution_id)s::text IS NULL OR execution_id = %(execution_id)s::text)
      AND ready_at(lease_owner, due_at, lease_expires_at) <= %(now)s::float8
    ORDER BY ready_at(lease_owner, due_at, lease_expires_at), parent_execution_id IS NOT NULL,
         execution_id COLLATE "C"
    LIMIT 1)
RETURNING
-- include: record_columns
, step_log;

-- Fenced writes: each names the lease it holds and checks it in the statement that writes, on
-- the row a claim writes: of a fenced write and a concurrent claim, the second to reach the row
-- fails to serialize and is run again, when it sees the other's write.

-- name: renew
UPDATE executions
SET lease_expires_at = %(expires_at)s::float8
WHERE execution_id = %(execution_id)s::text AND seq = %(incarnation)s::bigint AND lease_owner = %(owner)s::text
  AND lease_token = %(token)s::bigint
  AND lease_expires_at > %(now)s::float8 AND status IN ('pending', 'suspended')
RETURNING lease_expires_at;

-- name: put_step
UPDATE executions
SET step_log = step_log || %(entry)s::text,
    due_at = CASE WHEN %(wake_at)s::float8 IS NULL THEN due_at ELSE least(coalesce(due_at, %(wake_at)s::float8), %(wake_at)s::float8) END
WHERE execution_id = %(execution_id)s::text AND seq = %(incarnation)s::bigint AND lease_owner = %(owner)s::text
  AND lease_token = %(token)s::bigint
  AND lease_expires_at > %(now)s::float8 AND status IN ('pending', 'suspended')
RETURNING execution_id;

-- name: record_wake
UPDATE executions
SET due_at = least(coalesce(due_at, %(at)s::float8), %(at)s::float8)
WHERE execution_id = %(execution_id)s::text AND seq = %(incarnation)s::bigint AND lease_owner = %(owner)s::text
  AND lease_token = %(token)s::bigint
  AND lease_expires_at > %(now)s::float8 AND status IN ('pending', 'suspended')
RETURNING execution_id;

-- name: acknowledge
UPDATE executions
SET status = %(status)s::text, result = %(result)s::text, error = %(error)s::text,
    finished_at = CASE WHEN %(terminal)s::boolean THEN %(now)s::float8 ELSE finished_at END,
    due_at = CASE WHEN %(terminal)s::boolean THEN NULL ELSE due_at END,
    lease_owner = NULL, lease_expires_at = NULL
WHERE execution_id = %(execution_id)s::text AND seq = %(incarnation)s::bigint AND lease_owner = %(owner)s::text
  AND lease_token = %(token)s::bigint
  AND lease_expires_at > %(now)s::float8 AND status IN ('pending', 'suspended')
RETURNING
-- include: record_columns
;

-- name: release
UPDATE executions
SET lease_owner = NULL, lease_expires_at = NULL, due_at = %(due_at)s::float8
WHERE execution_id = %(execution_id)s::text AND seq = %(incarnation)s::bigint AND lease_owner = %(owner)s::text
  AND lease_token = %(token)s::bigint
  AND lease_expires_at > %(now)s::float8 AND status IN ('pending', 'suspended')
RETURNING execution_id;

-- name: acknowledge_terminal
-- A terminal outcome and the wake of every execution waiting for this one, in one statement:
-- a caller that registered its wait before this commit is woken, one after it sees the outcome.
-- The waiters are woken only if the fence holds for the acknowledged execution.
UPDATE executions
SET status = CASE WHEN execution_id = %(execution_id)s::text THEN %(status)s::text ELSE status END,
    result = CASE WHEN execution_id = %(execution_id)s::text THEN %(result)s::text ELSE result END,
    error = CASE WHEN execution_id = %(execution_id)s::text THEN %(error)s::text ELSE error END,
    finished_at = CASE WHEN execution_id = %(execution_id)s::text THEN %(now)s::float8 ELSE finished_at END,
    due_at = CASE WHEN execution_id = %(execution_id)s::text THEN NULL
                  ELSE least(coalesce(due_at, %(now)s::float8), %(now)s::float8) END,
    lease_owner = CASE WHEN execution_id = %(execution_id)s::text THEN NULL ELSE lease_owner END,
    lease_expires_at = CASE WHEN execution_id = %(execution_id)s::text THEN NULL ELSE lease_expires_at END
WHERE (execution_id = %(execution_id)s::text AND seq = %(incarnation)s::bigint AND lease_owner = %(owner)s::text
       AND lease_token = %(token)s::bigint AND lease_expires_at > %(now)s::float8
       AND status IN ('pending', 'suspended'))
   OR (waiting_on = %(execution_id)s::text AND status IN ('pending', 'suspended')
       AND EXISTS (SELECT 1 FROM executions AS t
                   WHERE t.execution_id = %(execution_id)s::text AND t.seq = %(incarnation)s::bigint
                     AND t.lease_owner = %(owner)s::text AND t.lease_token = %(token)s::bigint
                     AND t.lease_expires_at > %(now)s::float8 AND t.status IN ('pending', 'suspended')))
RETURNING
-- include: record_columns
;

-- name: wait_for
UPDATE executions
SET waiting_on = %(target)s::text
WHERE execution_id = %(execution_id)s::text AND seq = %(incarnation)s::bigint AND lease_owner = %(owner)s::text
  AND lease_token = %(token)s::bigint AND lease_expires_at > %(now)s::float8 AND status IN ('pending', 'suspended')
RETURNING execution_id;

-- name: cancel
-- A cancellation request reaches the execution and, recursively, what it owns: targets it
-- started or created without `detached` (joined runs are owned by their creator, not here).
UPDATE executions
SET cancel_requested = true, due_at = least(coalesce(due_at, %(now)s::float8), %(now)s::float8)
WHERE status IN ('pending', 'suspended') AND NOT cancel_requested AND execution_id IN (
    WITH RECURSIVE owned(execution_id, seq) AS (
        SELECT execution_id, seq FROM executions
        WHERE execution_id = %(execution_id)s::text AND status <> 'pruned'
        UNION
        SELECT c.execution_id, c.seq
        FROM executions AS c JOIN owned AS o ON c.request_seq = o.seq AND NOT c.parent_detached
    )
    SELECT execution_id FROM owned)
RETURNING execution_id;

-- name: child_insert
-- Create the run `child_id` for request (caller, step key), unless the request exists, the
-- ID is taken or (with the orphan guard) the caller is terminal; then child_find tells a
-- replay of our creation from a join or a refusal. Cancellation follows as in start_insert.
INSERT INTO executions (execution_id, seq, workflow_id, params, origin, parent_execution_id,
                        request_seq, parent_step_key, parent_detached, status, created_at, due_at,
                        cancel_requested)
SELECT %(child_id)s::text, n, %(workflow_id)s::text, %(params)s::text, %(origin)s::text, %(caller)s::text, caller_seq, %(step_key)s::text,
       %(detached)s::boolean, 'pending', %(now)s::float8, %(now)s::float8, %(guard)s::boolean AND NOT %(detached)s::boolean AND caller_cancel_requested
FROM (SELECT nextval('execution_seq') AS n, c.seq AS caller_seq,
             c.cancel_requested AS caller_cancel_requested
      FROM executions AS c
      WHERE c.execution_id = %(caller)s::text AND c.status <> 'pruned'
        AND (NOT %(guard)s::boolean OR c.status IN ('pending', 'suspended'))
        AND NOT EXISTS (SELECT 1 FROM executions WHERE execution_id = %(child_id)s::text)
        AND NOT EXISTS (SELECT 1 FROM executions AS t
                        WHERE t.request_seq = c.seq AND t.parent_step_key = %(step_key)s::text))
     AS fresh
RETURNING execution_id;

-- name: child_find
SELECT c.seq, r.execution_id, r.workflow_id, r.params, x.execution_id, x.workflow_id, c.status
FROM executions AS c
LEFT JOIN executions AS r ON r.request_seq = c.seq AND r.parent_step_key = %(step_key)s::text
LEFT JOIN executions AS x ON x.execution_id = %(child_id)s::text AND x.status <> 'pruned'
WHERE c.execution_id = %(caller)s::text AND c.status <> 'pruned';

-- name: prune_to_tombstone
-- A pruned target whose caller is retained keeps its row as a tombstone: the caller's start
-- request is part of that row, and RFC 013 prunes requests with their caller, not their target.
UPDATE executions
SET status = 'pruned', step_log = '', result = NULL, error = NULL
WHERE execution_id = %(execution_id)s::text AND status IN ('completed', 'failed', 'cancelled', 'dead-lettered', 'continued-as-new')
  AND origin = 'start'
  AND request_seq IN (SELECT seq FROM executions WHERE status <> 'pruned')
RETURNING seq;

-- name: prune
-- Delete a terminal execution that needs no tombstone, with the tombstones of the targets its
-- own start requests named: those requests are unreachable once their caller is gone.
DELETE FROM executions
WHERE (execution_id = %(execution_id)s::text AND status IN ('completed', 'failed', 'cancelled', 'dead-lettered', 'continued-as-new')
       AND NOT (origin = 'start'
                AND request_seq IN (SELECT seq FROM executions WHERE status <> 'pruned')))
   OR (status = 'pruned'
       AND request_seq = (SELECT seq FROM executions WHERE execution_id = %(execution_id)s::text
                          AND status IN ('completed', 'failed', 'cancelled', 'dead-lettered', 'continued-as-new')))
RETURNING execution_id, seq;

-- name: prune_requests
-- The start-request records a caller made name its incarnation (seq): once the caller is gone
-- they are unreachable, and the tombstones of their pruned targets can go too.
DELETE FROM executions WHERE status = 'pruned' AND request_seq = %(seq)s::bigint;

-- External events and continue-as-new (runtime/_sql_events.py): each call's statements run in
-- one transaction; those that write a leased row are fenced as put_step is.

-- name: event_find
-- The event this instance accepted before under this ID: a resend's answer.
SELECT seq, event_id FROM events WHERE instance_id = %(instance_id)s::text AND event_id = %(event_id)s::text;

-- name: event_insert
INSERT INTO events (seq, event_id, instance_id, execution_id, name, payload, sent_at, status)
SELECT n, coalesce(%(event_id)s::text, '@event-' || n), %(instance_id)s::text, %(execution_id)s::text,
       %(name)s::text, %(payload)s::text, %(now)s::float8, 'pending'
FROM (SELECT coalesce(max(seq), 0) + 1 AS n FROM events) AS fresh
RETURNING seq, event_id;

-- name: event_wake
-- The run the event is for is due now, leased or not: a run that looked before the event came
-- and is about to suspend is due again once it has.
UPDATE executions
SET due_at = least(coalesce(due_at, %(now)s::float8), %(now)s::float8)
WHERE execution_id = %(execution_id)s::text AND status IN ('pending', 'suspended')
RETURNING execution_id;

-- name: instance_runs
SELECT
-- include: record_columns
FROM executions
WHERE coalesce(instance_id, execution_id) = %(instance_id)s::text AND status <> 'pruned'
ORDER BY seq;

-- name: event_next
-- The oldest pending event of this name for the leased run, sent to it or to its instance.
SELECT e.seq, e.event_id, e.payload
FROM events AS e JOIN executions AS x ON x.execution_id = %(execution_id)s::text
WHERE e.status = 'pending' AND e.name = %(name)s::text
  AND (e.execution_id = x.execution_id
       OR (e.execution_id IS NULL AND e.instance_id = coalesce(x.instance_id, x.execution_id)))
ORDER BY e.seq
LIMIT 1;

-- name: event_take
UPDATE events SET status = 'consumed', consumed_by = %(execution_id)s::text, step_key = %(step_key)s::text
WHERE seq = %(seq)s::bigint AND status = 'pending'
RETURNING seq;

-- name: fence_holds
SELECT count(*) FROM executions
WHERE execution_id = %(execution_id)s::text AND seq = %(incarnation)s::bigint AND lease_owner = %(owner)s::text
  AND lease_token = %(token)s::bigint AND lease_expires_at > %(now)s::float8 AND status IN ('pending', 'suspended');

-- name: next_seq
SELECT nextval('execution_seq');

-- name: continue_id
-- The ID of an instance's next run (core/ids.py continued_run_id): its target_base, or with
-- ~n where a run of an earlier instance of the same ID holds it.
SELECT
-- include: target_id
;

-- name: continue_end
UPDATE executions
SET status = 'continued-as-new', result = %(result)s::text, finished_at = %(now)s::float8, due_at = NULL,
    lease_owner = NULL, lease_expires_at = NULL
WHERE execution_id = %(execution_id)s::text AND seq = %(incarnation)s::bigint AND lease_owner = %(owner)s::text
  AND lease_token = %(token)s::bigint AND lease_expires_at > %(now)s::float8 AND status IN ('pending', 'suspended')
RETURNING execution_id;

-- name: continue_insert
INSERT INTO executions (execution_id, seq, workflow_id, params, origin, status, created_at,
                        due_at, instance_id)
VALUES (%(new_id)s::text, %(new_seq)s::bigint, %(workflow_id)s::text, %(params)s::text, 'continue', 'pending',
        %(now)s::float8, %(now)s::float8, %(instance_id)s::text)
RETURNING execution_id;

-- name: waiters_wake
UPDATE executions
SET due_at = least(coalesce(due_at, %(now)s::float8), %(now)s::float8)
WHERE waiting_on = %(execution_id)s::text AND status IN ('pending', 'suspended')
RETURNING execution_id;
