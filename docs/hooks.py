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
import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

from yieldstar_sim.cli import main
from yieldstar_sim.simulation.invariants import (
    BUILT_IN,
    AttemptsNeverOverlap,
    CancelledLiveExecutionsEndCancelled,
    ExecutionsEndAsExpected,
    NothingRecoveredWithoutEnd,
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
    for invariant in (
        *BUILT_IN,
        ExecutionsEndAsExpected(),
        CancelledLiveExecutionsEndCancelled(),
        AttemptsNeverOverlap(),
        NothingRecoveredWithoutEnd(),
    ):
        doc = (type(invariant).__doc__ or "").strip().split("\n\n")[0]
        lines.append(f"- **{invariant.name}**: {' '.join(doc.split())}")
    return "\n".join(lines)


def _generated(match: re.Match[str]) -> str:
    if match["invariants"]:
        return f"<!-- built-in invariants -->\n{_invariants()}\n{END}\n"
    args = match["args"]
    block = f"```text\n$ yieldstar-sim {args}\n{_output(args)}\n```"
    return f"<!-- yieldstar-sim {args} -->\n{block}\n{END}\n"


# The API page: each ``<!-- api PATH -->`` marker is followed by the entry of the object at PATH
# (its signature, docstring and public members, read by griffe, mkdocstrings' own loader) and
# ``<!-- end -->``, so the page reads in the repository; the site renders the marker with
# mkdocstrings (``::: PATH``) instead. A bare ``::: PATH`` line is turned into a marker.
API_MARKER = re.compile(
    r"^(?:<!-- api (?P<path>[\w.]+)(?P<bare> \(no members\))? -->\n(?:(?:.*\n)*?<!-- end -->\n)?"
    r"|::: (?P<directive>[\w.]+)\n(?P<options>(?:    .*\n)*))",
    re.M,
)
_LOADED: dict[str, Any] = {}


def _package() -> Any:
    if "yieldstar_sim" not in _LOADED:
        import griffe

        root = Path(__file__).resolve().parent.parent
        _LOADED["yieldstar_sim"] = griffe.load("yieldstar_sim", search_paths=[str(root)])
    return _LOADED["yieldstar_sim"]


def _resolve(path: str) -> Any:
    obj = _package()[path.removeprefix("yieldstar_sim.")] if path != "yieldstar_sim" else _package()
    return _target(obj)


def _target(obj: Any) -> Any:
    return obj.final_target if obj.is_alias else obj


def _markdown(doc: str) -> str:
    """A docstring as Markdown: RST's double backticks single, doctests fenced."""
    out: list[str] = []
    in_example = False
    for line in doc.replace("``", "`").split("\n"):
        example = line.startswith((">>> ", "... ")) or line in (">>>", "...")
        if example and not in_example:
            out.append("```pycon")
        elif in_example and (not line.strip() or line.endswith("::")):
            out.append("```")
            in_example = False
            example = False
        in_example = in_example or example
        out.append(line)
    if in_example:
        out.append("```")
    return "\n".join(out).replace("::\n", ":\n").strip()


def _signature(obj: Any) -> str:
    name = obj.name
    if obj.kind.value == "attribute":
        annotation = f": {obj.annotation}" if obj.annotation is not None else ""
        return f"{name}{annotation}"
    if obj.kind.value == "module":
        return f"module {obj.path}"
    params = []
    for parameter in obj.parameters:
        if parameter.name in ("self", "cls"):
            continue
        text = parameter.name
        if parameter.kind.value == "variadic positional":
            text = "*" + text
        elif parameter.kind.value == "variadic keyword":
            text = "**" + text
        if parameter.annotation is not None:
            text += f": {parameter.annotation}"
        if parameter.default is not None and not parameter.kind.value.startswith("variadic"):
            text += f" = {parameter.default}"
        params.append(text)
    returns = f" -> {obj.returns}" if obj.kind.value == "function" and obj.returns else ""
    prefix = "class " if obj.kind.value == "class" else ""
    return f"{prefix}{name}({', '.join(params)}){returns}"


def _members(obj: Any) -> list[Any]:
    if obj.kind.value == "module" and obj.exports:
        return [_target(obj[name]) for name in obj.exports]
    members = []
    for name, member in obj.members.items():
        if name.startswith("_") or member.is_alias or member.is_imported:
            continue
        if obj.kind.value == "class" and member.kind.value == "class":
            continue
        members.append(member)
    return members


def _entry(obj: Any, level: int, members: bool, title: str | None = None) -> str:
    title = title or obj.name
    parts = [f"{'#' * level} `{title}`", f"```py\n{_signature(obj)}\n```"]
    if obj.docstring:
        parts.append(_markdown(obj.docstring.value))
    if members and level == 3:
        for member in _members(obj):
            if member.kind.value == "attribute" and not member.docstring:
                continue  # a dataclass field the class's docstring already explains
            parts.append(_entry(member, 4, False))
    return "\n\n".join(parts)


def _api(match: re.Match[str]) -> str:
    path = match["path"] or match["directive"]
    bare = bool(match["bare"]) or "members: false" in (match["options"] or "")
    label = f"{path} (no members)" if bare else path
    return f"<!-- api {label} -->\n{_entry(_resolve(path), 3, not bare, path)}\n{END}\n"


def _directive(match: re.Match[str]) -> str:
    path = match["path"] or match["directive"]
    if match["bare"] or "members: false" in (match["options"] or ""):
        return f"::: {path}\n    options:\n      show_root_heading: false\n      members: false\n"
    return f"::: {path}\n"


# The performance page's table is made from benchmarks/figures.json (the figures the benchmarks
# printed, as recorded), as its plot is (benchmarks/plot_figures.py): one source for both.
PERFORMANCE_MARKER = re.compile(
    r"^<!-- performance figures -->\n(?:(?:.*\n)*?<!-- end -->\n)?",
    re.M,
)
FIGURES = Path(__file__).resolve().parent.parent / "benchmarks" / "figures.json"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _figures(_: re.Match[str]) -> str:
    figures = json.loads(FIGURES.read_text(encoding="utf-8"))["figures"]
    lines = [
        "| area | figure | against | ratio | target | measured | benchmark |",
        "|---|---|---|---|---|---|---|",
    ]
    notes = []
    for number, figure in enumerate(figures, 1):
        target = figure["target"]
        verdict = "" if target is None else " met" if figure["ratio"] <= target else " **missed**"
        bound = "" if target is None else f"≤ {target:g}x{verdict}"
        lines.append(
            f"| {figure['area']} | {_cell(figure['figure'])} ({number}) | "
            f"{_cell(figure['against'])} | {figure['ratio']:g}x | {bound} | "
            f"{_cell(figure['measured'])} | `{figure['benchmark']}` |"
        )
        if figure["note"]:
            notes.append(f"- ({number}) {figure['note']}")
    body = "\n".join(lines) + "\n\nNotes:\n\n" + "\n".join(notes)
    return f"<!-- performance figures -->\n{body}\n{END}\n"


def _pages(markdown: str) -> str:
    return PERFORMANCE_MARKER.sub(_figures, MARKER.sub(_generated, markdown))


def render(markdown: str) -> str:
    """The page with each marker's text generated afresh (the same page when nothing drifted)."""
    return API_MARKER.sub(_api, _pages(markdown))


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs: the page as the CLI prints it now, the API entries as mkdocstrings renders them."""
    return API_MARKER.sub(_directive, _pages(markdown))


if __name__ == "__main__":
    for page in sorted(Path(__file__).parent.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        if render(text) != text:
            page.write_text(render(text), encoding="utf-8")
            print(f"wrote {page}")
