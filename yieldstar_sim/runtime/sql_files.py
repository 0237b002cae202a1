"""The SQL files' format: named statements, and fragments that statements share.

A ``-- name: X`` line starts the statement block ``X``; a ``-- fragment: X`` line starts a piece
of SQL that a line ``-- include: X`` of a later block stands for; other comment lines are
dropped. A read of the rows a write will change, in the transaction the write then runs in
(``cancel_rows`` before ``cancel``), includes the write's ``WHERE`` clause instead of a copy of
it: the write writes the rows the read found only while the two say the same thing.

What the two SQL dialects write alike (``shared.sql``: the table's columns, a record's, what a
start-request record is, and the statements both run as they are) is written once, given to
both runtimes' files (``load_queries(..., shared)``) and schema scripts (``include``).

>>> load_queries('''
... -- fragment: live
... WHERE status = 'pending'
... -- name: count
... -- How many are live.
... SELECT count(*) FROM executions
... -- include: live
... ;
... ''')
{'count': "SELECT count(*) FROM executions\\nWHERE status = 'pending'\\n;"}
>>> include("SELECT\\n-- include: one\\n;", "-- fragment: one\\n1")
'SELECT\\n1\\n;'
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping


def _blocks(text: str, fragments: Mapping[str, str]) -> dict[str, dict[str, str]]:
    blocks: dict[str, dict[str, str]] = {"name": {}, "fragment": dict(fragments)}
    header: tuple[str, str] | None = None
    lines: list[str] = []
    for line in [*text.splitlines(), "-- name: "]:
        head, _, rest = line.partition(":")
        if head in ("-- name", "-- fragment"):
            if header is not None and header[1]:
                blocks[header[0]][header[1]] = _trimmed(lines)
            header, lines = (head.removeprefix("-- "), rest.strip()), []
        elif head == "-- include":
            lines.append(_fragment(blocks["fragment"], rest.strip()))
        elif not line.lstrip().startswith("--"):
            lines.append(line)
    return blocks


def _trimmed(lines: list[str]) -> str:
    """The block's lines without blank ones at either end (a column list keeps its indent)."""
    while lines and not lines[-1].strip():
        lines.pop()
    start = next((n for n, line in enumerate(lines) if line.strip()), len(lines))
    return "\n".join(lines[start:]).rstrip()


def _fragment(fragments: Mapping[str, str], name: str) -> str:
    try:
        return fragments[name]
    except KeyError:
        known = ", ".join(sorted(fragments))
        raise KeyError(f"no SQL fragment {name!r} (known: {known})") from None


def load_queries(text: str, shared: str = "") -> dict[str, str]:
    """Split a named-query file into ``{name: sql}``, each fragment included where named.

    ``shared`` is a file of fragments and statements the file's own may use (``shared.sql``):
    its statements are added to the file's, and a name in both is refused.
    """
    common = _blocks(shared, {})
    own = _blocks(text, common["fragment"])["name"]
    clash = own.keys() & common["name"].keys()
    if clash:
        names = ", ".join(sorted(clash))
        raise ValueError(f"statements both shared and the dialect's own: {names}")
    return {**common["name"], **own}


def include(script: str, shared: str) -> str:
    """A script (a schema) with each ``-- include: X`` line replaced by ``shared``'s fragment X."""
    fragments = _blocks(shared, {})["fragment"]
    return "\n".join(
        _fragment(fragments, line.partition(":")[2].strip())
        if line.startswith("-- include:")
        else line
        for line in script.splitlines()
    )


#: The fragments and statements both SQL runtimes' files take (``shared.sql``).
SHARED = (resources.files("yieldstar_sim.runtime") / "shared.sql").read_text(encoding="utf-8")
