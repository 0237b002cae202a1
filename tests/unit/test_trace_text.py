"""An event's text is written for people, once (``simulation/narration.py``), and only
narration reads it: code that wants to know what happened reads the event's fields and typed
payload. A reworded sentence must never change a verdict, a state count or a view's facts.

The scan reads every ``.text`` attribute (and ``getattr(x, "text")``) in the package, less the
matplotlib calls ``ax.text(...)``. Each read must sit in a function of `ALLOWED`, where the text
is shown whole to people (a sentence, a table cell, a trace line) or serialised; and it must
not be parsed there: not sliced, not method-called (``.partition``,
``.split`` ...), not compared, not searched by a regular expression.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "yieldstar_sim"

#: (module, function): where the package may read an event's text, and why.
ALLOWED: dict[tuple[str, str], str] = {
    ("simulation/trace.py", "TraceEvent.to_json"): "the trace's own serialisation",
    ("simulation/trace.py", "Trace.lines"): "the readable trace, one line an event",
    ("simulation/result.py", "SimulationRun._repr_html_"): "the notebook's table of the trace",
    ("simulation/run_tables.py", "load_trace"): "the trace_events SQL table keeps the text",
    ("simulation/invariants/evidence.py", "why_again"): "the sentence a violation prints",
    ("views/words.py", "describe_event"): "narration: a fault's sentence, a kind it has none for",
    ("views/words.py", "_call"): "narration: a call it has no sentence for",
    ("views/words.py", "_reason"): "narration of a trace written before refusals had payloads",
    ("views/words.py", "_error"): "narration of a trace written before errors had payloads",
    ("views/timeline.py", "build_timeline"): "a mark's hover text",
    ("views/timeline.py", "_Attempts.take"): "a skew mark's hover text",
    ("views/review_data.py", "stepper_data"): "the review page's trace lines",
    ("views/review.py", "_trace_table"): "the review page's trace table",
    ("views/export.py", "html_report"): "the HTML report's trace table",
    ("widgets/stepper.py", "RunView.event_html"): "the stepper's trace line",
    ("widgets/whatif.py", "_line"): "the what-if diff's trace lines",
    ("simulation/explorer/shrink.py", "first_divergence"): "the sentence naming the divergence",
    ("simulation/narration.py", "parting_words"): "the sentence naming where two runs part",
    ("simulation/regression.py", "_event_words.line"): "the sentence naming where a replay "
    "against edited code leaves the recorded run",
}

#: Calls that search text: a read passed to one parses it.
_SEARCHES = {"search", "match", "fullmatch", "findall", "finditer", "split", "sub", "subn"}


@dataclass(frozen=True)
class Read:
    """One read of ``.text``: where, and whether it parses the text."""

    module: str
    function: str
    line: int
    parsed: bool


def _is_text_read(node: ast.AST, parent: ast.AST | None) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "text":
        called = isinstance(parent, ast.Call) and parent.func is node  # ax.text(...)
        return isinstance(node.ctx, ast.Load) and not called
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value == "text"
    )


def _parses(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """The read is sliced, method-called, compared or searched (anywhere up its
    expression)."""
    parent = parents.get(node)
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return True
    if isinstance(parent, ast.Attribute):
        return True  # event.text.partition(...), .split(), .startswith() ...
    while parent is not None and isinstance(parent, ast.expr):
        if isinstance(parent, ast.Compare):
            return True
        if (
            isinstance(parent, ast.Call)
            and isinstance(parent.func, ast.Attribute)
            and parent.func.attr in _SEARCHES
        ):
            return True
        parent = parents.get(parent)
    return False


def scan(source: str, module: str) -> list[Read]:
    """Every read of ``.text`` in ``source``, with the function it is in."""
    tree = ast.parse(source)
    parents: dict[ast.AST, ast.AST] = {}
    names: dict[ast.AST, str] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                outer = names.get(node)
                names[child] = f"{outer}.{child.name}" if outer else child.name
            elif node in names:
                names[child] = names[node]
    reads = []
    for node in ast.walk(tree):
        if _is_text_read(node, parents.get(node)):
            function = names.get(node, "<module>")
            line = getattr(node, "lineno", 0)
            reads.append(Read(module, function, line, _parses(node, parents)))
    return reads


@functools.cache
def package_reads() -> list[Read]:
    reads = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        reads.extend(scan(path.read_text(encoding="utf-8"), module))
    return reads


def test_only_narration_reads_an_events_text() -> None:
    outside = [read for read in package_reads() if (read.module, read.function) not in ALLOWED]
    assert not outside, (
        "code reads an event's text outside narration; read its payload instead (add a "
        "field to its dataclass in simulation/trace_payloads.py if the data is missing): "
        + ", ".join(f"{read.module}:{read.line} ({read.function})" for read in outside)
    )


def test_narration_shows_the_text_whole_and_never_parses_it() -> None:
    parsed = [read for read in package_reads() if read.parsed]
    assert not parsed, "text sliced, compared or searched: " + ", ".join(
        f"{read.module}:{read.line} ({read.function})" for read in parsed
    )


def test_every_allowed_place_still_reads_the_text() -> None:
    """The allowlist names real reads (a stale entry would let a new read pass unseen), and
    the scan finds them: it cannot pass by finding nothing."""
    found = {(read.module, read.function) for read in package_reads()}
    assert set(ALLOWED) <= found, sorted(set(ALLOWED) - found)


def test_the_scan_sees_a_parsed_read_and_ignores_a_drawing_call() -> None:
    source = """
import re
def status(event):
    return event.text.partition(": ")[2]
def wake(event):
    return re.compile("t=(.*)").search(event.text)
def same(a, b):
    return (a.t, a.text) == (b.t, b.text)
def sentence(event):
    return f"it says: {event.text}"
def other(event):
    return getattr(event, "text")
def draw(ax):
    ax.text(0, 0, "label")
"""
    reads = {(read.function, read.parsed) for read in scan(source, "example.py")}
    assert reads == {
        ("status", True),
        ("wake", True),
        ("same", True),
        ("sentence", False),
        ("other", False),
    }
