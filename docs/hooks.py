"""Pages that quote the CLI carry its real output, committed, so they read in the repository.

A line ``<!-- yieldstar-sim ARGS -->`` in a page is followed by a code block with the output of
``yieldstar-sim ARGS`` (e.g. ``--help``, ``list --faults``) and a line ``<!-- end -->``; a line
``<!-- built-in invariants -->`` by the list of invariants the simulator checks on every run.
``python docs/hooks.py`` writes them into the pages; ``tests/unit/test_docs_drift.py`` fails
when a page's text is not what the CLI prints now, and the MkDocs build (this file is its hook)
renders them afresh, so neither the repository nor the site can drift from the CLI.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from typing import Any

from yieldstar_sim.cli import main
from yieldstar_sim.simulation.invariants import (
    BUILT_IN,
    CancelledLiveExecutionsEndCancelled,
    ExecutionsEndAsExpected,
)

#: A marker line, then the text generated for it last time (if any), up to ``<!-- end -->``.
MARKER = re.compile(
    r"^<!-- (?:yieldstar-sim (?P<args>[^\n]*?)|(?P<invariants>built-in invariants)) -->\n"
    r"(?:(?:```text\n\$ yieldstar-sim [^\n]*\n(?:[^\n]*\n)*?```\n|(?:- \*\*[^\n]*\n)+)"
    r"<!-- end -->\n)?",
    re.M,
)
END = "<!-- end -->"


def _output(args: str) -> str:
    os.environ["COLUMNS"] = "100"  # argparse wraps help to the terminal: one width everywhere
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        try:
            main(shlex.split(args))
        except SystemExit as exit:  # argparse's --help exits 0
            if exit.code not in (0, None):
                raise RuntimeError(f"yieldstar-sim {args} exited {exit.code}") from None
    return buffer.getvalue().rstrip()


def _invariants() -> str:
    lines = []
    for invariant in (*BUILT_IN, ExecutionsEndAsExpected(), CancelledLiveExecutionsEndCancelled()):
        doc = (type(invariant).__doc__ or "").strip().split("\n\n")[0]
        lines.append(f"- **{invariant.name}**: {' '.join(doc.split())}")
    return "\n".join(lines)


def _generated(match: re.Match[str]) -> str:
    if match["invariants"]:
        return f"<!-- built-in invariants -->\n{_invariants()}\n{END}\n"
    args = match["args"]
    block = f"```text\n$ yieldstar-sim {args}\n{_output(args)}\n```"
    return f"<!-- yieldstar-sim {args} -->\n{block}\n{END}\n"


def render(markdown: str) -> str:
    """The page with each marker's text generated afresh (the same page when nothing drifted)."""
    return MARKER.sub(_generated, markdown)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs: the page as the CLI prints it now."""
    return render(markdown)


if __name__ == "__main__":
    from pathlib import Path

    for page in sorted(Path(__file__).parent.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        if render(text) != text:
            page.write_text(render(text), encoding="utf-8")
            print(f"wrote {page}")
