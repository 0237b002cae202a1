"""The SQL files' format: what the two dialects share is written once, and a mistake in it
(an unknown fragment, a statement both shared and a dialect's own) is refused by name."""

from __future__ import annotations

import pytest

from yieldstar_sim.runtime import duckdb_runtime
from yieldstar_sim.runtime.sql_files import SHARED, include, load_queries

SHARED_TEXT = """
-- fragment: live
WHERE status = 'pending'
-- name: count
SELECT count(*) FROM executions
-- include: live
;
"""


def test_shared_statements_join_the_dialects_own() -> None:
    queries = load_queries("-- name: one\nSELECT 1;", SHARED_TEXT)
    assert queries == {
        "count": "SELECT count(*) FROM executions\nWHERE status = 'pending'\n;",
        "one": "SELECT 1;",
    }


def test_a_dialect_includes_a_shared_fragment() -> None:
    queries = load_queries("-- name: live_ids\nSELECT id FROM t\n-- include: live\n;", SHARED_TEXT)
    assert queries["live_ids"] == "SELECT id FROM t\nWHERE status = 'pending'\n;"


def test_a_statement_both_shared_and_the_dialects_own_is_refused() -> None:
    with pytest.raises(ValueError, match="both shared and the dialect's own: count"):
        load_queries("-- name: count\nSELECT 2;", SHARED_TEXT)


def test_an_unknown_fragment_is_refused_with_the_known_ones() -> None:
    with pytest.raises(KeyError, match="no SQL fragment 'gone' \\(known: live\\)"):
        load_queries("-- name: x\n-- include: gone\n", SHARED_TEXT)
    with pytest.raises(KeyError, match="no SQL fragment 'gone'"):
        include("CREATE TABLE t (\n-- include: gone\n);", SHARED_TEXT)


def test_a_schema_keeps_its_own_lines_and_takes_the_fragments() -> None:
    script = include("CREATE TABLE t (\n-- include: live\n);\n-- a comment stays", SHARED_TEXT)
    assert script == "CREATE TABLE t (\nWHERE status = 'pending'\n);\n-- a comment stays"


def test_both_runtimes_read_start_requests_and_records_alike() -> None:
    pytest.importorskip("psycopg")  # the postgres extra
    from yieldstar_sim.runtime import postgres_connections

    # The statements both dialects run as they are: one text, not two copies.
    for name in ("executions", "start_requests", "next_wake_at", "commit", "rollback"):
        assert duckdb_runtime.QUERIES[name] == postgres_connections.QUERIES[name]
    for schema in (duckdb_runtime.SCHEMA, postgres_connections.SCHEMA):
        assert "-- include:" not in schema
        assert "CREATE OR REPLACE VIEW start_requests AS" in schema
    assert "include: " not in "".join(duckdb_runtime.QUERIES.values())
    assert "fragment: execution_columns" in SHARED
