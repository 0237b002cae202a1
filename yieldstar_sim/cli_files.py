"""Where the command line reads and writes: the ``--out`` folder, the stems of the files a
run writes there, and the ``--db`` file a DuckDB run keeps its records in. Each refuses a path it
cannot use before any run starts, in one line (``UsageError``, exit code 2). Also what its
commands (``cli``, ``cli_explore``) share: the exit codes and the fault budget."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

#: The exit code of each verdict.
EXIT_CODES = {"ok": 0, "violated": 1, "incomplete": 3}
#: The most faults per schedule ``explore`` searches without a budget: each fault more
#: multiplies the schedules by the choice points times the fault kinds.
MAX_FAULTS_UNBUDGETED = 3


def explore_options_mistake(
    *,
    max_faults: int,
    budget: int | None,
    strategy: str,
    time_budget: float | None = None,
    prefix: str = "--",
) -> str | None:
    """What is wrong with an exploration's fault count and budget, in one line (the flags
    named with ``prefix``: ``--`` for the CLI, ``--yieldstar-`` for the pytest plugin), or
    None. One place for both, so the plugin refuses in one line what the CLI refuses."""
    if max_faults < 0:
        return f"{prefix}max-faults must be 0 or more, not {max_faults}"
    if budget is not None and budget < 1:
        return f"{prefix}budget must be at least 1, not {budget}"
    if (
        strategy in ("systematic", "exhaustive")  # random and pct sample 200 by default
        and max_faults > MAX_FAULTS_UNBUDGETED
        and budget is None
        and time_budget is None
    ):
        # Schedules grow as (choice points x fault kinds) to the power of the faults: without a
        # budget such a search runs for days and prints nothing.
        timed = " (or --time-budget SECONDS)" if prefix == "--" else ""
        return (
            f"{prefix}max-faults {max_faults} tries every combination of {max_faults} faults, "
            f"more schedules than a search finishes; give {prefix}budget N{timed}, or at most "
            f"{MAX_FAULTS_UNBUDGETED} faults"
        )
    return None


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit code 2."""


class FlagError(UsageError):
    """A command line whose flags do not go together (or a value argparse cannot check alone):
    reported as argparse reports its own errors, after the subcommand's usage."""


def output_folder(path: str) -> Path:
    """The ``--out`` folder, made and checked writable before any run starts."""
    import tempfile

    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot create the output folder {path!r}: {error.strerror}") from error
    if not folder.is_dir():
        raise UsageError(f"the output path {path!r} is not a folder")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise UsageError(
            f"cannot write in the output folder {path!r}: {error.strerror or error}"
        ) from error
    return folder


# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional formatting
# characters: what a terminal would act on (an escape sequence sets its title, moves its cursor,
# writes its clipboard) or reorder, instead of showing.
_UNPRINTABLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def for_terminal(text: str) -> str:
    """``text`` as the command prints it for people: every character a terminal would act on
    instead of showing (``\\x1b`` of an escape sequence, a NUL, a bidirectional override)
    written as its escape, as ``repr`` writes it. A name, a key or a parameter is the user's
    to choose, and the trace and the verdict print them."""
    return _UNPRINTABLE.sub(lambda found: found.group().encode("unicode_escape").decode(), text)


def unwritten(error: OSError) -> str:
    """A file the command could not write (a full disk), in words: ``cannot write 'x': ...``."""
    where = f" {error.filename!r}" if error.filename else ""
    return f"cannot write{where}: {error.strerror or error}"


def not_written(failed: list[str]) -> str:
    """The files a command could not write, in one line: the first, and how many more."""
    more = len(failed) - 1
    return failed[0] + (
        f" (and {more} more file{'s' if more > 1 else ''} not written)" if more else ""
    )


def output_stem(name: str, seed: int, *, replayed: bool) -> str:
    """Where a run's files go inside --out: a safe stem of the scenario's name (which is free
    text), and a replay's apart from the run it replays."""
    from yieldstar_sim.core.filenames import file_stem

    return f"{file_stem(name)}-seed{seed}" + ("-replayed" if replayed else "")


def database_path(path: str | None) -> str:
    if path is None:
        return ":memory:"
    from yieldstar_sim.runtime.duckdb_files import foreign_file

    db = Path(path)
    if path.startswith(":memory:"):
        return path
    problem = foreign_file(path)
    if problem is not None and not db.exists():  # md:, s3://: not a file at all
        raise UsageError(f"--db {problem}")
    if db.is_dir():
        raise UsageError(f"--db {path!r} is a folder; give a file path such as run.duckdb")
    if not db.parent.is_dir():
        raise UsageError(f"--db {path!r}: the folder {str(db.parent)!r} does not exist")
    return str(db)


_EXECUTIONS_HELD = "SELECT count(*) FROM executions"


def check_database(path: str, *, continuing: bool) -> None:
    """Refuse a --db file that is not a DuckDB database, or holds an ``executions`` table of
    another schema, or (unless ``continuing``) already holds executions: a second run on it
    continues the first one's records (and its artifact then replays something else)."""
    import duckdb

    from yieldstar_sim.runtime.duckdb_files import (
        DatabaseFileError,
        connect,
        runtime_columns,
        schema_problem,
    )
    from yieldstar_sim.runtime.duckdb_runtime import SCHEMA

    if not Path(path).exists():
        return
    try:
        with connect(path, read_only=True) as connection:
            problem = schema_problem(connection, runtime_columns(SCHEMA))
            if problem is not None:
                raise UsageError(f"--db {path!r} {problem}; give a new file")
            held = 0 if continuing else _held(connection)
    except DatabaseFileError as error:
        raise UsageError(f"--db {error}; give a new file (or a DuckDB one)") from error
    except duckdb.Error as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise UsageError(f"--db {path!r} cannot be opened as a DuckDB database: {first}") from error
    if held:
        raise UsageError(
            f"--db {path!r} already holds {held} execution(s) from an earlier run; give a new "
            "file, delete that one, or pass --continue-db to run on its records"
        )


def _held(connection: duckdb.DuckDBPyConnection) -> int:
    """How many executions the database holds (none when it has no ``executions`` table)."""
    found = connection.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'executions'"
    ).fetchall()[0][0]
    return int(connection.execute(_EXECUTIONS_HELD).fetchall()[0][0]) if found else 0
