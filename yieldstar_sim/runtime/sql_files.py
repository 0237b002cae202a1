"""The SQL files' format: named statements, and fragments that statements of one file share.

A ``-- name: X`` line starts the statement block ``X``; a ``-- fragment: X`` line starts a piece
of SQL that a line ``-- include: X`` of a later block stands for; other comment lines are
dropped. A read of the rows a write will change, in the transaction the write then runs in
(``cancel_rows`` before ``cancel``), includes the write's ``WHERE`` clause instead of a copy of
it: the write writes the rows the read found only while the two say the same thing.

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
"""

from __future__ import annotations


def load_queries(text: str) -> dict[str, str]:
    """Split a named-query file into ``{name: sql}``, each fragment included where named."""
    blocks: dict[str, dict[str, str]] = {"name": {}, "fragment": {}}
    header: tuple[str, str] | None = None
    lines: list[str] = []
    for line in [*text.splitlines(), "-- name: "]:
        head, _, rest = line.partition(":")
        if head in ("-- name", "-- fragment"):
            if header is not None and header[1]:
                blocks[header[0]][header[1]] = "\n".join(lines).strip()
            header, lines = (head.removeprefix("-- "), rest.strip()), []
        elif head == "-- include":
            lines.append(blocks["fragment"][rest.strip()])
        elif not line.lstrip().startswith("--"):
            lines.append(line)
    return blocks["name"]
