"""Export an execution graph, or a whole run, to files other tools read.

One graph, eight formats: pictures (``svg``, ``png``, ``pdf``), data (``graphml``, node-link
``json``), diagrams as text (Graphviz ``dot``, ``mermaid`` for Markdown design docs) and, for a
run, one self-contained ``html`` report, or the ``review`` page with a stepper in it
(``yieldstar_sim.views.review``). Execution IDs, workflow IDs and step keys are user
input: every format escapes them by its own rules (quotes, backslashes, angle brackets, braces,
pipes, newlines, non-ASCII), so a hostile step key stays a label and never becomes syntax.

>>> import yieldstar_sim as ys
>>> from yieldstar_sim.views import execution_graph
>>> runtime = ys.MemoryRuntime()
>>> caller = runtime.trigger("charge-order", execution_id="order-42")
>>> _ = runtime.start(ys.StartRequest(ys.RequestId(caller, 'say "hi"'), "ship-order"))
>>> print(to_mermaid(execution_graph(runtime)), end="")  # doctest: +ELLIPSIS
flowchart TD
    n0["order-42<br>charge-order · pending"]
    n1("@ship-order-2<br>ship-order · pending")
    n0 -->|"say #quot;hi#quot;"| n1
...
"""

from __future__ import annotations

import html
import io
import re
from pathlib import Path
from typing import TYPE_CHECKING

import networkx as nx

from yieldstar_sim.views.formats import EXTENSIONS, FIGURE_FORMATS, FORMATS, RUN_FORMATS
from yieldstar_sim.views.graph import draw_execution_graph, execution_graph
from yieldstar_sim.views.graph_text import (
    _bidi_visible,
    _one_line,
    _writable,
    to_dot,
    to_graphml,
    to_mermaid,
    to_node_link_json,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from matplotlib.figure import Figure

    from yieldstar_sim.simulation.result import SimulationRun

__all__ = [
    "EXTENSIONS",
    "FIGURE_FORMATS",
    "FORMATS",
    "RUN_FORMATS",
    "export",
    "figure_bytes",
    "html_report",
    "to_dot",
    "to_graphml",
    "to_mermaid",
    "to_node_link_json",
]

# --------------------------------------------------------------------------- figures

# Fixed metadata and ID salt: the same figure gives the same bytes, and the SVG names no
# external resource (no RDF type or creator URL).
_FIGURE_METADATA: dict[str, dict[str, str | None]] = {
    "svg": {"Date": None, "Creator": None, "Type": None, "Format": None},
    "png": {"Software": None},
    "pdf": {"CreationDate": None, "Creator": None, "Producer": None},
}


def figure_bytes(figure: Figure, format: str) -> bytes:
    """The figure saved as ``"svg"``, ``"png"`` or ``"pdf"`` bytes (reproducibly).

    >>> from matplotlib.figure import Figure
    >>> figure_bytes(Figure(), "png")[:4]
    b'\\x89PNG'
    """
    if format not in FIGURE_FORMATS:
        raise ValueError(
            f"cannot render a figure as {format!r}: choose one of {', '.join(FIGURE_FORMATS)}"
        )
    import matplotlib

    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "yieldstar-sim"}):
        figure.savefig(buffer, format=format, metadata=_FIGURE_METADATA[format])
    return buffer.getvalue()


_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def _drawable_text(text: str) -> str:
    """``text`` as a font can draw it: tabs as spaces, line breaks as newlines, other
    control characters as U+FFFD (the fonts matplotlib ships have no glyphs for them)."""
    return _bidi_visible(_CONTROLS.sub("\ufffd", _one_line(text).replace("\t", " ")))


def _drawable(graph: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """A copy of ``graph`` whose node IDs, workflow IDs and step keys a font can draw."""
    copy = graph.copy()
    for _, data in copy.nodes(data=True):
        data.update({k: _drawable_text(v) for k, v in data.items() if isinstance(v, str)})
    for _, _, data in copy.edges(data=True):
        data.update({k: _drawable_text(v) for k, v in data.items() if isinstance(v, str)})
    names = {node: _drawable_text(node) for node in copy.nodes if isinstance(node, str)}
    if len(set(names.values())) == len(names):  # never merge two nodes to clean a label
        copy = nx.relabel_nodes(copy, names)
    return copy


def _draw(graph: nx.MultiDiGraph, title: str) -> Figure:
    """``draw_execution_graph`` of a drawable copy, with mathtext off: a ``$`` in a step key
    stays a ``$`` (and an unbalanced one does not make the drawing fail)."""
    import matplotlib

    with matplotlib.rc_context({"text.parse_math": False}):
        return draw_execution_graph(_drawable(graph), title=_drawable_text(title))


def _draw_run(run: SimulationRun) -> Figure:
    """The run's graph beside its timeline, with mathtext off (user text stays literal)."""
    import matplotlib

    from yieldstar_sim.views.figures import draw_run

    with matplotlib.rc_context({"text.parse_math": False}):
        return draw_run(run)


def _timeline_svg(run: SimulationRun) -> str:
    import matplotlib

    from yieldstar_sim.views.timeline import build_timeline, draw_timeline

    with matplotlib.rc_context({"text.parse_math": False}):
        figure = draw_timeline(build_timeline(run.trace, run.scenario.worker_names))
    return _bidi_visible(figure_bytes(figure, "svg").decode("utf-8"))


# --------------------------------------------------------------------------- HTML report

_SVG_START = re.compile(r"<svg[\s>]")

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; }
.verdict { font-weight: bold; }
.ok { color: #009E73; }
.violated { color: #CC0000; }
.incomplete { color: #B8860B; }
.sentence, td { white-space: pre-wrap; }
figure { margin: 1em 0; }
figure svg { max-width: 100%; height: auto; }
table { border-collapse: collapse; font-family: ui-monospace, monospace; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
""".strip()


def _inline_svg(svg: str) -> str:
    """An SVG document as markup for inside HTML: its XML declaration and DOCTYPE removed."""
    match = _SVG_START.search(svg)
    if match is None:
        raise ValueError("expected an SVG document (no <svg> element found)")
    return svg[match.start() :].strip()


def _cell(value: object) -> str:
    return "" if value is None else html.escape(_writable(str(value)))


def html_report(
    run: SimulationRun, graph_svg: str | None = None, timeline_svg: str | None = None
) -> str:
    """One self-contained HTML page about ``run``: verdict, violations, graph, timeline, trace.

    The graph is drawn with ``draw_execution_graph`` unless ``graph_svg`` is given; both SVGs
    are inlined (they are markup: pass only SVG you made). Every other piece of text (scenario,
    violations, trace) is escaped with ``html.escape``. Nothing is loaded from elsewhere.

    >>> import yieldstar_sim as ys
    >>> run = ys.simulate(ys.load_scenario("durable-start"), seed=0, runtime="memory")
    >>> page = html_report(run, graph_svg="<svg xmlns='http://www.w3.org/2000/svg'/>")
    >>> page.startswith("<!DOCTYPE html>"), "ok: every invariant held" in page
    (True, True)
    """
    scenario = run.scenario.name
    heading = f"{scenario} · seed {run.seed} · {run.verdict_text}"
    if graph_svg is None:
        graph = execution_graph(run.runtime, run.effects)
        graph_svg = figure_bytes(_draw(graph, f"{scenario}, seed {run.seed}"), "svg").decode()
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{_cell(heading)}</title>",
        f"<style>\n{_STYLE}\n</style>",
        "</head>",
        "<body>",
        f"<h1>{_cell(scenario)}, seed {run.seed} ({_cell(run.runtime_kind)})</h1>",
        f'<p class="verdict {run.verdict}">{_cell(run.verdict_text)}</p>',
        "<h2>Violations</h2>",
    ]
    if run.violations:
        parts.append('<ul class="violations">')
        parts += [
            f'<li><strong class="invariant">{_cell(v.invariant)}</strong>: '
            f'<span class="sentence">{_cell(v.message)}</span></li>'
            for v in run.violations
        ]
        parts.append("</ul>")
    else:
        parts.append("<p>None: every invariant held.</p>")
    parts += [
        "<h2>Execution graph</h2>",
        f'<figure class="graph">\n{_inline_svg(graph_svg)}\n</figure>',
    ]
    if timeline_svg is not None:
        parts += [
            "<h2>Timeline</h2>",
            f'<figure class="timeline">\n{_inline_svg(timeline_svg)}\n</figure>',
        ]
    parts += [
        f"<h2>Trace ({len(run.trace)} events)</h2>",
        '<table class="trace">',
        "<thead><tr><th>#</th><th>t</th><th>worker</th><th>kind</th><th>op</th>"
        "<th>execution</th><th>step</th><th>what</th></tr></thead>",
        "<tbody>",
    ]
    parts += [
        f"<tr><td>{e.seq}</td><td>{e.t:g}</td><td>{_cell(e.worker)}</td><td>{_cell(e.kind)}</td>"
        f"<td>{_cell(e.op)}</td><td>{_cell(e.execution_id)}</td><td>{_cell(e.step_key)}</td>"
        f"<td>{_cell(e.text)}</td></tr>"
        for e in run.trace
    ]
    parts += ["</tbody>", "</table>", "</body>", "</html>"]
    return "\n".join(parts) + "\n"


# --------------------------------------------------------------------------- export


def _formats(formats: Sequence[str] | str) -> list[str]:
    """The requested formats, deduplicated in order; ``"svg,png"`` is read as a list."""
    requested = formats.split(",") if isinstance(formats, str) else list(formats)
    chosen: list[str] = []
    for name in (str(f).strip().lower() for f in requested):
        if name not in FORMATS:
            raise ValueError(f"unknown export format {name!r}: choose among {', '.join(FORMATS)}")
        if name not in chosen:
            chosen.append(name)
    return chosen


def export(
    run_or_graph: SimulationRun | nx.MultiDiGraph,
    folder: str | Path,
    formats: Sequence[str],
    *,
    stem: str,
    title: str = "",
) -> dict[str, Path]:
    """Write ``folder/stem.<ext>`` in each of ``formats``; returns ``{format: path}``.

    ``formats`` are among ``svg, png, pdf, graphml, json, dot, mermaid, html, review``
    (``html`` and ``review`` need a run; ``mermaid`` is written as ``.mmd``, ``review``, the
    design-review page with a stepper, as ``.review.html``). Given a run, the graph is
    ``execution_graph(run.runtime, run.effects)`` and the title defaults to its scenario,
    seed and verdict. Unknown formats are refused before anything is written.

    >>> import tempfile
    >>> graph = nx.MultiDiGraph()
    >>> graph.add_node("a", workflow_id="w", status="pending", origin="trigger")
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     paths = export(graph, folder, ["dot", "mermaid"], stem="order-42")
    ...     sorted(path.name for path in paths.values())
    ['order-42.dot', 'order-42.mmd']
    """
    chosen = _formats(formats)
    if not stem or stem in {".", ".."} or Path(stem).name != stem or "\\" in stem:
        raise ValueError(f"stem must be a plain file name, not {stem!r}")
    run: SimulationRun | None
    if isinstance(run_or_graph, nx.Graph):
        run, graph = None, run_or_graph
    else:
        run = run_or_graph
        graph = execution_graph(run.runtime, run.effects)
        title = title or f"{run.scenario.name}, seed {run.seed}: {run.verdict_text}"
    needs_run = [format for format in chosen if format in RUN_FORMATS]
    if needs_run and run is None:
        raise ValueError(f"the {needs_run[0]} export needs a SimulationRun, not a graph")
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)

    figure: Figure | None = None
    svg: bytes | None = None

    def picture(format: str) -> bytes:
        nonlocal figure, svg
        if figure is None:
            figure = _draw(graph, title) if run is None else _draw_run(run)
        if format != "svg":
            return figure_bytes(figure, format)
        if svg is None:
            # matplotlib draws text as paths but copies it into comments: make those plain too
            svg = _bidi_visible(figure_bytes(figure, "svg").decode("utf-8")).encode("utf-8")
        return svg

    texts: dict[str, Callable[[], str]] = {
        "graphml": lambda: to_graphml(graph),
        "json": lambda: to_node_link_json(graph),
        "dot": lambda: to_dot(graph, title=title),
        "mermaid": lambda: to_mermaid(graph, title=title),
    }
    written: dict[str, Path] = {}
    for format in chosen:
        path = out / f"{stem}{EXTENSIONS[format]}"
        if format in FIGURE_FORMATS:
            path.write_bytes(picture(format))
        elif format == "html":
            assert run is not None
            page = html_report(
                run,
                graph_svg=figure_bytes(_draw(graph, title), "svg").decode("utf-8"),
                timeline_svg=_timeline_svg(run),
            )
            path.write_bytes(page.encode("utf-8"))
        elif format == "review":
            from yieldstar_sim.views.review import review_page

            assert run is not None
            path.write_bytes(review_page(run).encode("utf-8"))
        else:
            path.write_bytes(texts[format]().encode("utf-8"))
        written[format] = path
    return written
