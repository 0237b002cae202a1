"""Every DuckDB connection the toolkit opens: no extension installed or loaded behind its back
(so DuckDB never reaches the network), and a file it did not make refused in one sentence that
names what the file is."""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

import duckdb
import pytest

import yieldstar_sim as ys
from yieldstar_sim.runtime.duckdb_files import DatabaseFileError, foreign_file_kind

PACKAGE = Path(ys.__file__).parent


def _settings(connection: duckdb.DuckDBPyConnection) -> tuple[object, ...]:
    return (
        connection.execute(
            "select current_setting('autoinstall_known_extensions'), "
            "current_setting('autoload_known_extensions')"
        ).fetchone()
        or ()
    )


def test_every_connection_the_toolkit_opens_loads_no_extension(tmp_path: Path) -> None:
    for path in (":memory:", str(tmp_path / "run.duckdb")):
        runtime = ys.DuckDBRuntime(path)
        try:
            assert _settings(runtime.connection) == (False, False)
        finally:
            runtime.close()
    run = ys.simulate(ys.load_scenario("durable-start"), runtime="memory")
    assert _settings(run.connection) == (False, False)  # run.sql()'s own database


def test_no_module_calls_duckdb_connect_but_the_one_that_configures_it() -> None:
    """``duckdb_files.connect`` is the one door: a new ``duckdb.connect`` elsewhere would open a
    connection that autoloads extensions again."""
    callers = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "connect"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "duckdb"
    }
    assert callers == {"runtime/duckdb_files.py"}


def test_an_sqlite_file_is_named_not_handed_to_an_extension(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as lite:
        lite.execute("create table t (x)")
    with pytest.raises(DatabaseFileError, match="is an SQLite database, not a DuckDB database"):
        ys.DuckDBRuntime(path)


def test_an_executions_table_of_another_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    with duckdb.connect(str(path)) as db:
        db.execute("create table executions (execution_id varchar)")
    with pytest.raises(DatabaseFileError, match=r"of another schema.*1 columns found"):
        ys.DuckDBRuntime(path)
    # Refused, not repaired: the file is as it was.
    with duckdb.connect(str(path), read_only=True) as db:
        assert db.execute("select count(*) from duckdb_views() where not internal").fetchone() == (
            0,
        )


def test_a_file_this_version_made_opens_again(tmp_path: Path) -> None:
    path = tmp_path / "run.duckdb"
    ys.DuckDBRuntime(path).close()
    ys.DuckDBRuntime(path).close()


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (b"", "an empty file"),
        (b"PAR1\x15\x04", "a Parquet file"),
        (b"PK\x03\x04rest", "a ZIP archive"),
        (b"order,total\n42,9.5\n", "a text file"),
        (b"\xff\xfe\x00\x01\x02\x03\x04\x05\x06\x07", "a file of another kind"),
    ],
)
def test_what_a_foreign_file_looks_like(head: bytes, kind: str) -> None:
    assert (foreign_file_kind(head) or "").startswith(kind)


def test_a_file_you_hold_open_is_joined_with_loading_off(tmp_path: Path) -> None:
    path = tmp_path / "run.duckdb"
    ys.DuckDBRuntime(path).close()
    yours = duckdb.connect(str(path))  # DuckDB's defaults: it refuses a second configuration
    runtime = ys.DuckDBRuntime(path)
    try:
        assert _settings(runtime.connection) == (False, False)
    finally:
        runtime.close()
        yours.close()
