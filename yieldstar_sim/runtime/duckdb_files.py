"""Every DuckDB database the toolkit opens, opened one way: DuckDB never installs or loads an
extension (so it never reaches the network), and a file it did not make is looked at first.

DuckDB answers a file it cannot read by finding an extension that can: an SQLite file made it
download ``sqlite_scanner`` from the internet. ``connect`` turns autoinstalling and autoloading
off for every connection, and ``foreign_file`` names what a file that is not DuckDB's looks
like (from its first bytes) before DuckDB opens it. ``schema_problem`` refuses an
``executions`` table of another schema (an older yieldstar-sim's, or someone else's) in one
line, where the runtime's first statement gave a Binder error of two.

>>> foreign_file_kind(b"SQLite format 3\\x00")
'an SQLite database'
>>> foreign_file_kind(b"\\x00" * 8 + b"DUCK") is None
True
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

if TYPE_CHECKING:
    from collections.abc import Sequence

NO_EXTENSIONS: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}
"""The configuration of every connection: no extension installed or loaded behind our back."""

#: ``md:``, ``s3://``, ``http://``...: what DuckDB hands to an extension, not a path (a drive
#: letter, ``C:``, is one letter).
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")

#: Where a DuckDB file says it is one: bytes 8 to 12 (after the header's checksum).
_MAGIC = (slice(8, 12), b"DUCK")

#: The first bytes of formats people mistake for a database file, and what each is.
_SIGNATURES: Sequence[tuple[bytes, str]] = (
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"PAR1", "a Parquet file"),
    (b"ARROW1", "an Arrow file"),
    (b"PK\x03\x04", "a ZIP archive"),
    (b"\x1f\x8b", "a gzip file"),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"PGDMP", "a PostgreSQL dump"),
)


class DatabaseFileError(ValueError):
    """A database file the DuckDB runtime will not open: not DuckDB's, or holding tables of
    another schema. The message names what was found and what was expected."""


def connect(path: str, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect(path)`` with extensions never installed or loaded, after refusing a
    file that is not DuckDB's (``DatabaseFileError``)."""
    problem = foreign_file(path)
    if problem is not None:
        raise DatabaseFileError(problem)
    try:
        return duckdb.connect(path, read_only=read_only, config=NO_EXTENSIONS)
    except duckdb.ConnectionException:
        # The file is open in this process already, by a connection of your own with DuckDB's
        # defaults, and DuckDB refuses a second one configured otherwise: join that database
        # and turn the loading off there (settings are the database's, not a connection's).
        connection = duckdb.connect(path, read_only=read_only)
        connection.execute(_OFF)
        return connection


_OFF = ";".join(f"SET GLOBAL {name} = false" for name in NO_EXTENSIONS)


def foreign_file(path: str) -> str | None:
    """Why ``path`` is not a DuckDB database (None: it is one, or it does not exist yet, or
    it is DuckDB's own ``:memory:``)."""
    if path.startswith(":memory:"):
        return None
    scheme = _SCHEME.match(path)
    if scheme is not None:
        return (
            f"{path!r} names a database an extension opens ({scheme.group()}), not a file: "
            "the runtime loads no extension, so it opens local files only"
        )
    file = Path(path)
    if not file.exists():
        return None
    if not file.is_file():  # a device or a pipe could be read forever
        return f"{path!r} is not a regular file, so not a DuckDB database"
    try:
        with file.open("rb") as opened:
            head = opened.read(512)
    except OSError as error:
        return f"cannot read {path!r}: {error.strerror or error}"
    kind = foreign_file_kind(head)
    return None if kind is None else f"{path!r} is {kind}, not a DuckDB database"


def foreign_file_kind(head: bytes) -> str | None:
    """What a file starting with ``head`` looks like, when it is not a DuckDB database."""
    if head[_MAGIC[0]] == _MAGIC[1]:
        return None
    if not head:
        return "an empty file"
    for signature, kind in _SIGNATURES:
        if head.startswith(signature):
            return kind
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and "\x00" not in text:
        return "a text file"
    return f"a file of another kind (it starts with the bytes {head[:8].hex(' ')})"


# --------------------------------------------------------------------------- the schema

_COLUMNS = """SELECT column_name, data_type FROM duckdb_columns()
WHERE schema_name = 'main' AND table_name = 'executions' ORDER BY column_index"""

#: How many column names a refusal lists before it counts the rest.
_NAMED = 6


def schema_problem(
    connection: duckdb.DuckDBPyConnection, expected: Sequence[tuple[str, str]]
) -> str | None:
    """Why the database's ``executions`` table is not the runtime's (``expected``: its columns'
    names and types, in order), or None when it is, or there is none yet."""
    found: list[tuple[str, str]] = [
        (str(name), str(kind)) for name, kind in connection.execute(_COLUMNS).fetchall()
    ]
    if not found or found == list(expected):
        return None
    names = {name for name, _ in found}
    wanted = {name for name, _ in expected}
    missing = [name for name, _ in expected if name not in names]
    extra = [name for name, _ in found if name not in wanted]
    changed = [
        f"{name} {kind} (expected {dict(expected)[name]})"
        for name, kind in found
        if name in wanted and dict(expected)[name] != kind
    ]
    parts = [
        f"lacks {_listed(missing)}" if missing else "",
        f"has {_listed(extra)} besides" if extra else "",
        f"has {_listed(changed)}" if changed else "",
    ]
    differs = "; ".join(part for part in parts if part) or "orders its columns differently"
    return (
        f"holds an 'executions' table of another schema (an older yieldstar-sim's, or not "
        f"yieldstar-sim's): {len(found)} columns found where yieldstar-sim's has "
        f"{len(expected)}, and it {differs}"
    )


def _listed(names: Sequence[str]) -> str:
    """At most ``_NAMED`` names, then how many more."""
    shown = ", ".join(names[:_NAMED])
    return shown if len(names) <= _NAMED else f"{shown} and {len(names) - _NAMED} more"


@functools.cache
def runtime_columns(schema: str) -> tuple[tuple[str, str], ...]:
    """The ``executions`` table's columns as ``schema`` (the runtime's SQL) creates them: made
    once per process in a database of its own."""
    with duckdb.connect(":memory:", config=NO_EXTENSIONS) as connection:
        connection.execute(schema)
        return tuple(
            (str(name), str(kind)) for name, kind in connection.execute(_COLUMNS).fetchall()
        )
