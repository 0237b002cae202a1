"""MkDocs hook: pages that quote the CLI get its real output at build time.

A line ``<!-- yieldstar-sim ARGS -->`` in a page becomes a code block with the output of
``yieldstar-sim ARGS`` (e.g. ``--help``, ``list --faults``), so the CLI reference cannot drift
from the CLI.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from typing import Any

from yieldstar_sim.cli import main
from yieldstar_sim.simulation.invariants import BUILT_IN, ExecutionsEndAsExpected

MARKER = re.compile(r"^<!-- yieldstar-sim (?P<args>.*?) -->$", re.M)
#: A line ``<!-- built-in invariants -->`` becomes the list the simulator checks on every run.
INVARIANTS = "<!-- built-in invariants -->"


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
    for invariant in (*BUILT_IN, ExecutionsEndAsExpected()):
        doc = (type(invariant).__doc__ or "").strip().split("\n\n")[0]
        lines.append(f"- **{invariant.name}**: {' '.join(doc.split())}")
    return "\n".join(lines)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Replace each marker with the command and its output (or the invariants' list)."""
    markdown = markdown.replace(INVARIANTS, _invariants())
    return MARKER.sub(
        lambda m: f"```text\n$ yieldstar-sim {m['args']}\n{_output(m['args'])}\n```", markdown
    )
