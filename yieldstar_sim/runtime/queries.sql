-- Every statement the DuckDB runtime runs, by name. Parameters are always bound ($name), never
-- formatted into the text. A block may hold several statements; only its last takes parameters.
-- A read and the write that follows it in one transaction include one fragment (runtime/
-- sql_files.py): the write writes the rows the read found only while the two say the same.
-- The execution columns come in the order of _common.EXECUTION_COLUMNS.

-- The inserts answer the record they inserted (RETURNING the record costs about 0.08 ms more
-- than the ID; an UPDATE's RETURNING costs 4-5 ms, see claim_rows): the simulator reads every
-- admitted execution right after admitting it, and a runtime that is its database's one writer
-- answers that read from here while nothing was written since.

-- name: trigger
INSERT INTO executions (execution_id, seq, workflow_id, params, origin, status, created_at, due_at)
SELECT coalesce($execution_id, $id_prefix || n), n, $workflow_id, $params,
       'trigger', 'pending', $now, $now
FROM (SELECT nextval('execution_seq') AS n
      WHERE NOT EXISTS (SELECT 1 FROM executions WHERE execution_id = $execution_id))
RETURNING
-- include: record_columns
;

-- fragment: caller_admits
-- The caller's row, when request (caller, step key) may admit a new target: the caller is
-- retained, live unless the orphan guard ($guard) is off, and the request has no target yet.
-- The request is looked up by the caller's seq through an uncorrelated subquery: a correlated
-- NOT EXISTS (t.request_seq = c.seq) is planned as a delim join, about 0.3 ms more.
FROM executions AS c
WHERE c.execution_id = $caller AND c.status <> 'pruned'
  AND (NOT $guard OR c.status IN ('pending', 'suspended'))
  AND NOT EXISTS (SELECT 1 FROM executions AS t
                  WHERE t.parent_step_key = $step_key
                    AND t.request_seq = (SELECT seq FROM executions
                                         WHERE execution_id = $caller AND status <> 'pruned'))

-- fragment: target_id
-- The target's ID (core/ids.py start_target_id): the request's $target_base, or where a row
-- (a pruned target's tombstone too) holds it, the base with ~n, n one more than the highest
-- such suffix held. The base is held only by a target of a pruned incarnation of the caller.
CASE WHEN NOT EXISTS (SELECT 1 FROM executions WHERE execution_id = $target_base)
     THEN $target_base
     ELSE $target_base || '~' || (
         SELECT 1 + greatest(1, coalesce(max(CASE WHEN regexp_full_match(s, '[0-9]{1,18}')
                                                  THEN CAST(s AS BIGINT) END), 1))
         FROM (SELECT substr(execution_id, length($target_base) + 2) AS s
               FROM executions WHERE starts_with(execution_id, $target_base || '~')))
END

-- name: start_insert
-- A new start is this one INSERT: the request (request_seq, parent_step_key), the target, its
-- parent link and its first wake (due_at) are one row, so they commit together or not at all.
-- With the orphan guard ($guard), a terminal caller admits nothing (start_find then tells a
-- repeat from a refusal), and an owned target of a caller whose cancellation is requested
-- starts with its own cancellation requested.
BEGIN TRANSACTION;
INSERT INTO executions (execution_id, seq, workflow_id, params, origin, parent_execution_id,
                        request_seq, parent_step_key, parent_detached, status, created_at, due_at,
                        cancel_requested)
SELECT
-- include: target_id
, n, $workflow_id, $params, 'start', $caller,
       caller_seq, $step_key, $detached, 'pending', $now, $now,
       $guard AND NOT $detached AND caller_cancel_requested
FROM (SELECT nextval('execution_seq') AS n, c.seq AS caller_seq,
             c.cancel_requested AS caller_cancel_requested
-- include: caller_admits
)
RETURNING
-- include: record_columns
;

-- name: begin
BEGIN TRANSACTION;

-- name: schema_objects
-- How many of schema.sql's objects exist: a database that has all 7 is opened without writing
-- its catalog (two opens racing on one file would conflict on CREATE OR REPLACE).
SELECT (SELECT count(*) FROM duckdb_tables()
        WHERE schema_name = 'main' AND table_name IN ('executions', 'events'))
     + (SELECT count(*) FROM duckdb_views()
        WHERE schema_name = 'main' AND view_name IN ('start_requests', 'step_log', 'steps'))
     + (SELECT count(*) FROM duckdb_sequences()
        WHERE schema_name = 'main' AND sequence_name = 'execution_seq')
     + (SELECT count(DISTINCT function_name) FROM duckdb_functions()
        WHERE schema_name = 'main' AND function_name = 'ready_at' AND function_type = 'macro');

-- name: start_find
-- After start_insert found the request (or no caller, or a terminal one): end that
-- transaction, read the target and the caller's status.
ROLLBACK;
SELECT t.execution_id, t.workflow_id, t.params, c.status
FROM executions AS c
LEFT JOIN executions AS t ON t.request_seq = c.seq AND t.parent_step_key = $step_key
WHERE c.execution_id = $caller AND c.status <> 'pruned';

-- name: execution
SELECT
-- include: record_columns
FROM executions
WHERE execution_id = $execution_id AND status <> 'pruned';

-- name: snapshot
-- Every row, pruned tombstones included, with its step log and whether it is a retained start
-- request (as start_requests joins them): what `executions` answers, and while nothing was
-- written since, what `start_requests` and `step_log` would (a run's end reads all three).
SELECT
-- include: record_columns
, step_log,
       request_seq IN (SELECT seq FROM executions WHERE status <> 'pruned') AS requested
FROM executions
ORDER BY seq;

-- name: step_log
SELECT step_log FROM executions WHERE execution_id = $execution_id;

-- name: due
SELECT execution_id
-- include: live
  AND ready_at(lease_owner, due_at, lease_expires_at) <= $now
ORDER BY ready_at(lease_owner, due_at, lease_expires_at), parent_execution_id IS NOT NULL,
         execution_id;

-- name: claim_rows
-- A claim is this read of the first row to become claimable and claim_take's lease of it, if
-- the row is claimable now (`ready` at most $now) and still at the revision read: every write
-- bumps `revision`, so the same revision is the same row, and a write in between makes
-- claim_take write nothing (or conflict), a lost race tried again. No transaction: a claim
-- that finds nothing is this one statement (or none, while the adapter's queue model stands),
-- and it answers when the next row becomes claimable (`ready`, as next_wake_at would), which
-- the adapter checks its queue model against.
-- The claim answers the row read with the lease's columns as claim_take sets them (an UPDATE
-- ... RETURNING costs 4-5 ms more on duckdb 2.0.1, and conflicts are missed between a
-- RETURNING and a plain UPDATE: every UPDATE is plain). Rows with no ready time sort last.
SELECT
-- include: record_columns
, step_log, revision,
       ready_at(lease_owner, due_at, lease_expires_at) AS ready
-- include: live
  AND ($execution_id IS NULL OR execution_id = $execution_id)
ORDER BY ready NULLS LAST, parent_execution_id IS NOT NULL, execution_id
LIMIT 1;

-- name: claim_take
UPDATE executions
SET lease_owner = $owner, lease_token = lease_token + 1, lease_expires_at = $expires_at,
    due_at = NULL, waiting_on = NULL, revision = revision + 1,
    -- a claim of a row still leased (its lease ran out) takes it over from its holder
    recoveries = recoveries + CASE WHEN lease_owner IS NULL THEN 0 ELSE 1 END
WHERE execution_id = $claimed AND revision = $revision;

-- name: claim
-- The claim as one statement: claim_rows and claim_take are it, the row found by ID instead of
-- by the subquery again (1-1.5 ms less). The concurrency tests race this one against the fenced
-- writes; the adapter runs those two.
UPDATE executions
SET lease_owner = $owner, lease_token = lease_token + 1, lease_expires_at = $expires_at,
    due_at = NULL, waiting_on = NULL, revision = revision + 1,
    -- a claim of a row still leased (its lease ran out) takes it over from its holder
    recoveries = recoveries + CASE WHEN lease_owner IS NULL THEN 0 ELSE 1 END
WHERE execution_id = (
    SELECT execution_id
    FROM executions
    WHERE status IN ('pending', 'suspended')
      AND ($execution_id IS NULL OR execution_id = $execution_id)
      AND ready_at(lease_owner, due_at, lease_expires_at) <= $now
    ORDER BY ready_at(lease_owner, due_at, lease_expires_at), parent_execution_id IS NOT NULL,
         execution_id
    LIMIT 1);

-- Fenced writes: each names the lease it holds and bumps `revision`, so that it conflicts with
-- any concurrent claim of the same row whichever commits first. Each answers its row count
-- (0: the fence refused it), not RETURNING rows (see claim_rows). An acknowledgement given the
-- row's `$revision` is also a compare-and-swap: the adapter knows the row as its claim read it
-- and as its own fenced writes changed it since, so when no other write came in between (the
-- revision is the one it counted) the record is that row with the acknowledgement's columns,
-- with no read; without `$revision` (NULL), the adapter reads the record back in the
-- acknowledgement's transaction.

-- name: renew
UPDATE executions
SET lease_expires_at = $expires_at, revision = revision + 1
WHERE execution_id = $execution_id AND seq = $incarnation AND lease_owner = $owner
  AND lease_token = $token
  AND lease_expires_at > $now AND status IN ('pending', 'suspended');

-- name: put_step
UPDATE executions
SET step_log = step_log || $entry,
    due_at = CASE WHEN $wake_at IS NULL THEN due_at ELSE least(coalesce(due_at, $wake_at), $wake_at) END,
    revision = revision + 1
WHERE execution_id = $execution_id AND seq = $incarnation AND lease_owner = $owner
  AND lease_token = $token
  AND lease_expires_at > $now AND status IN ('pending', 'suspended');

-- name: record_wake
UPDATE executions
SET due_at = least(coalesce(due_at, $at), $at), revision = revision + 1
WHERE execution_id = $execution_id AND seq = $incarnation AND lease_owner = $owner
  AND lease_token = $token
  AND lease_expires_at > $now AND status IN ('pending', 'suspended');

-- name: acknowledge
UPDATE executions
SET status = $status, result = $result, error = $error,
    finished_at = CASE WHEN $terminal THEN $now ELSE finished_at END,
    due_at = CASE WHEN $terminal THEN NULL ELSE due_at END,
    lease_owner = NULL, lease_expires_at = NULL, revision = revision + 1
WHERE execution_id = $execution_id AND seq = $incarnation AND lease_owner = $owner
  AND lease_token = $token
  AND lease_expires_at > $now AND status IN ('pending', 'suspended')
  AND ($revision IS NULL OR revision = $revision);

-- name: release
UPDATE executions
SET lease_owner = NULL, lease_expires_at = NULL, due_at = $due_at, revision = revision + 1
WHERE execution_id = $execution_id AND seq = $incarnation AND lease_owner = $owner
  AND lease_token = $token
  AND lease_expires_at > $now AND status IN ('pending', 'suspended');

-- name: acknowledge_terminal
-- A terminal outcome and the wake of every execution waiting for this one, in one statement:
-- a caller that registered its wait before this commit is woken, one after it sees the outcome.
-- The waiters are woken only if the fence holds for the acknowledged execution.
UPDATE executions
SET status = CASE WHEN execution_id = $execution_id THEN $status ELSE status END,
    result = CASE WHEN execution_id = $execution_id THEN $result ELSE result END,
    error = CASE WHEN execution_id = $execution_id THEN $error ELSE error END,
    finished_at = CASE WHEN execution_id = $execution_id THEN $now ELSE finished_at END,
    due_at = CASE WHEN execution_id = $execution_id THEN NULL
                  ELSE least(coalesce(due_at, $now), $now) END,
    lease_owner = CASE WHEN execution_id = $execution_id THEN NULL ELSE lease_owner END,
    lease_expires_at = CASE WHEN execution_id = $execution_id THEN NULL ELSE lease_expires_at END,
    revision = revision + 1
WHERE (execution_id = $execution_id AND seq = $incarnation AND lease_owner = $owner
       AND lease_token = $token AND lease_expires_at > $now
       AND status IN ('pending', 'suspended') AND ($revision IS NULL OR revision = $revision))
   OR (waiting_on = $execution_id AND status IN ('pending', 'suspended')
       AND EXISTS (SELECT 1 FROM executions AS t
                   WHERE t.execution_id = $execution_id AND t.seq = $incarnation
                     AND t.lease_owner = $owner AND t.lease_token = $token
                     AND t.lease_expires_at > $now AND t.status IN ('pending', 'suspended')
                     AND ($revision IS NULL OR t.revision = $revision)));

-- name: wait_for
UPDATE executions
SET waiting_on = $target, revision = revision + 1
WHERE execution_id = $execution_id AND seq = $incarnation AND lease_owner = $owner
  AND lease_token = $token AND lease_expires_at > $now AND status IN ('pending', 'suspended');

-- fragment: cancel_reaches
-- A cancellation request reaches the execution and, recursively, what it owns: targets it
-- started or created without `detached` (joined runs are owned by their creator, not here).
-- The live ones it newly reaches:
WHERE status IN ('pending', 'suspended') AND NOT cancel_requested AND execution_id IN (
    WITH RECURSIVE owned(execution_id, seq) AS (
        SELECT execution_id, seq FROM executions
        WHERE execution_id = $execution_id AND status <> 'pruned'
        UNION
        SELECT c.execution_id, c.seq
        FROM executions AS c JOIN owned AS o ON c.request_seq = o.seq AND NOT c.parent_detached
    )
    SELECT execution_id FROM owned)

-- name: cancel_rows
-- The executions a cancellation newly reaches, read in the transaction that cancel then
-- writes them in.
BEGIN TRANSACTION;
SELECT execution_id FROM executions
-- include: cancel_reaches
;

-- name: cancel
UPDATE executions
SET cancel_requested = true, due_at = least(coalesce(due_at, $now), $now),
    revision = revision + 1
-- include: cancel_reaches
;

-- name: child_insert
-- Create the run `child_id` for request (caller, step key), unless the request exists, the
-- ID is taken or (with the orphan guard) the caller is terminal; then child_find tells a
-- replay of our creation from a join or a refusal. Cancellation follows as in start_insert.
BEGIN TRANSACTION;
INSERT INTO executions (execution_id, seq, workflow_id, params, origin, parent_execution_id,
                        request_seq, parent_step_key, parent_detached, status, created_at, due_at,
                        cancel_requested)
SELECT $child_id, n, $workflow_id, $params, $origin, $caller, caller_seq, $step_key,
       $detached, 'pending', $now, $now, $guard AND NOT $detached AND caller_cancel_requested
FROM (SELECT nextval('execution_seq') AS n, c.seq AS caller_seq,
             c.cancel_requested AS caller_cancel_requested
-- include: caller_admits
  AND NOT EXISTS (SELECT 1 FROM executions WHERE execution_id = $child_id))
RETURNING
-- include: record_columns
;

-- name: child_find
ROLLBACK;
SELECT c.seq, r.execution_id, r.workflow_id, r.params, x.execution_id, x.workflow_id, c.status
FROM executions AS c
LEFT JOIN executions AS r ON r.request_seq = c.seq AND r.parent_step_key = $step_key
LEFT JOIN executions AS x ON x.execution_id = $child_id AND x.status <> 'pruned'
WHERE c.execution_id = $caller AND c.status <> 'pruned';

-- fragment: keeps_a_tombstone
-- A pruned target whose caller is retained keeps its row as a tombstone: the caller's start
-- request is part of that row, and RFC 013 prunes requests with their caller, not their target.
WHERE execution_id = $execution_id AND status IN ('completed', 'failed', 'cancelled', 'dead-lettered', 'continued-as-new')
  AND origin = 'start'
  AND request_seq IN (SELECT seq FROM executions WHERE status <> 'pruned')

-- name: prune_to_tombstone_rows
-- The target's incarnation, read in the transaction that prune_to_tombstone then writes it in.
BEGIN TRANSACTION;
SELECT seq FROM executions
-- include: keeps_a_tombstone
;

-- name: prune_to_tombstone
UPDATE executions
SET status = 'pruned', step_log = '', result = NULL, error = NULL, revision = revision + 1
-- include: keeps_a_tombstone
;

-- name: prune
-- Delete a terminal execution that needs no tombstone, with the tombstones of the targets its
-- own start requests named: those requests are unreachable once their caller is gone.
DELETE FROM executions
WHERE (execution_id = $execution_id AND status IN ('completed', 'failed', 'cancelled', 'dead-lettered', 'continued-as-new')
       AND NOT (origin = 'start'
                AND request_seq IN (SELECT seq FROM executions WHERE status <> 'pruned')))
   OR (status = 'pruned'
       AND request_seq = (SELECT seq FROM executions WHERE execution_id = $execution_id
                          AND status IN ('completed', 'failed', 'cancelled', 'dead-lettered', 'continued-as-new')))
RETURNING execution_id, seq;

-- name: prune_requests
-- The start-request records a caller made name its incarnation (seq): once the caller is gone
-- they are unreachable, and the tombstones of their pruned targets can go too.
DELETE FROM executions WHERE status = 'pruned' AND request_seq = $seq;

-- External events and continue-as-new (runtime/_sql_events.py): each call's statements run in
-- one transaction; those that write a leased row are fenced as put_step is.

-- name: event_find
-- The event this instance accepted before under this ID: a resend's answer.
SELECT seq, event_id FROM events WHERE instance_id = $instance_id AND event_id = $event_id;

-- name: event_insert
INSERT INTO events (seq, event_id, instance_id, execution_id, name, payload, sent_at, status)
SELECT n, coalesce($event_id, '@event-' || n), $instance_id, $execution_id, $name, $payload,
       $now, 'pending'
FROM (SELECT coalesce(max(seq), 0) + 1 AS n FROM events)
RETURNING seq, event_id;

-- name: event_wake
-- The run the event is for is due now, leased or not: a run that looked before the event came
-- and is about to suspend is due again once it has.
UPDATE executions
SET due_at = least(coalesce(due_at, $now), $now), revision = revision + 1
WHERE execution_id = $execution_id AND status IN ('pending', 'suspended');

-- name: instance_runs
SELECT
-- include: record_columns
FROM executions
WHERE coalesce(instance_id, execution_id) = $instance_id AND status <> 'pruned'
ORDER BY seq;

-- name: event_next
-- The oldest pending event of this name for the leased run, sent to it or to its instance.
SELECT e.seq, e.event_id, e.payload
FROM events AS e JOIN executions AS x ON x.execution_id = $execution_id
WHERE e.status = 'pending' AND e.name = $name
  AND (e.execution_id = x.execution_id
       OR (e.execution_id IS NULL AND e.instance_id = coalesce(x.instance_id, x.execution_id)))
ORDER BY e.seq
LIMIT 1;

-- name: event_take
UPDATE events SET status = 'consumed', consumed_by = $execution_id, step_key = $step_key
WHERE seq = $seq AND status = 'pending';

-- name: fence_holds
SELECT count(*) FROM executions
WHERE execution_id = $execution_id AND seq = $incarnation AND lease_owner = $owner
  AND lease_token = $token AND lease_expires_at > $now AND status IN ('pending', 'suspended');

-- name: next_seq
SELECT nextval('execution_seq');

-- name: continue_id
-- The ID of an instance's next run (core/ids.py continued_run_id): its $target_base, or with
-- ~n where a run of an earlier instance of the same ID holds it.
SELECT
-- include: target_id
;

-- name: continue_end
UPDATE executions
SET status = 'continued-as-new', result = $result, finished_at = $now, due_at = NULL,
    lease_owner = NULL, lease_expires_at = NULL, revision = revision + 1
WHERE execution_id = $execution_id AND seq = $incarnation AND lease_owner = $owner
  AND lease_token = $token AND lease_expires_at > $now AND status IN ('pending', 'suspended');

-- name: continue_insert
INSERT INTO executions (execution_id, seq, workflow_id, params, origin, status, created_at,
                        due_at, instance_id)
VALUES ($new_id, $new_seq, $workflow_id, $params, 'continue', 'pending', $now, $now,
        $instance_id);

-- name: waiters_wake
UPDATE executions
SET due_at = least(coalesce(due_at, $now), $now), revision = revision + 1
WHERE waiting_on = $execution_id AND status IN ('pending', 'suspended');
