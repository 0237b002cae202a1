"""Export an execution graph, or a whole run, to files other tools read.

One graph, eight formats: pictures (``svg``, ``png``, ``pdf``), data (``graphml``, node-link
``json``), diagrams as text (Graphviz ``dot``, ``mermaid`` for Markdown design docs) and, for a
run, one self-contained ``html`` report, or the ``review`` page with a stepper in it
(``yieldstar_sim.views.review``). Execution IDs, workflow IDs and step keys are user
input: every format escapes them by its own rules (quotes, backslashes, angle brackets, braces,
pipes, newlines, non-ASCII), so a hostile step key stays a label and never becomes syntax.

Every file the views write goes through here (``export``, ``export_file`` behind
``run.export``, ``write_exploration_pictures``), so the views' modules form a ladder: formats,
graph and timeline, figures, exploration, review, then this writer at the top.

>>> import yieldstar_sim as ys
>>> from yieldstar_sim.views import execution_graph
>>> runtime = ys.MemoryRuntime()
>>> caller = runtime.trigger("charge-order", execution_id="order-42")
>>> _ = runtime.start(ys.StartRequest(ys.RequestId(caller, 'say "hi"'), "ship-order"))
>>> print(to_mermaid(execution_graph(runtime)), end="")  # doctest: +ELLIPSIS
flowchart TD
    n0["order-42<br>charge-order · pending"]
    n1("@ship-order#58;order-42/say #quot;hi#quot;<br>ship-order · pending")
    n0 -->|"say #quot;hi#quot;"| n1
...
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

from yieldstar_sim.core.filenames import file_stem
from yieldstar_sim.core.files import write_whole
from yieldstar_sim.views.drawn_text import MAX_CELL, shown, xml_legal
from yieldstar_sim.views.exploration import ExplorationPictures, draw_divergence, draw_exploration
from yieldstar_sim.views.figures import (
    draw_run,
    drawable_graph,
    drawable_text,
    figure_bytes,
    inline_svg,
)
from yieldstar_sim.views.formats import EXTENSIONS, FIGURE_FORMATS, FORMATS, RUN_FORMATS
from yieldstar_sim.views.graph import draw_execution_graph, run_graph
from yieldstar_sim.views.graph_text import (
    _bidi_visible,
    _writable,
    labelled,
    to_dot,
    to_graphml,
    to_mermaid,
    to_node_link_json,
)
from yieldstar_sim.views.review import review_page, write_review

# networkx loads where a graph is made, not at import: ``import yieldstar_sim`` imports the views
# (through the widgets and the composition root) and must stay quick.
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import networkx as nx
    from matplotlib.figure import Figure

    from yieldstar_sim.simulation.explorer import ExplorationReport
    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.scenario import Scenario

__all__ = [
    "EXTENSIONS",
    "FIGURE_FORMATS",
    "FORMATS",
    "RUN_FORMATS",
    "export",
    "export_file",
    "figure_bytes",
    "html_report",
    "to_dot",
    "to_graphml",
    "to_mermaid",
    "to_node_link_json",
    "write_exploration_pictures",
]

# --------------------------------------------------------------------------- figures


def _draw(graph: nx.MultiDiGraph, title: str) -> Figure:
    """``draw_execution_graph`` of a drawable copy, with mathtext off: a ``$`` in a step key
    stays a ``$`` (and an unbalanced one does not make the drawing fail)."""
    import matplotlib

    with matplotlib.rc_context({"text.parse_math": False}):
        return draw_execution_graph(drawable_graph(graph), title=drawable_text(title))


def _draw_run(run: SimulationRun) -> Figure:
    """The run's graph beside its timeline, with mathtext off (user text stays literal)."""
    import matplotlib

    with matplotlib.rc_context({"text.parse_math": False}):
        return draw_run(run)


def _timeline_svg(run: SimulationRun) -> str:
    import matplotlib

    from yieldstar_sim.views.timeline import build_timeline, draw_timeline

    with matplotlib.rc_context({"text.parse_math": False}):
        figure = draw_timeline(build_timeline(run.trace, run.scenario.worker_names))
    return _bidi_visible(figure_bytes(figure, "svg").decode("utf-8"))


# --------------------------------------------------------------------------- HTML report

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


def _cell(value: object) -> str:
    # A page for people: a cell of 100 KB (a long label in every event of the trace) is cut,
    # the trace in the data formats keeps it whole.
    return "" if value is None else html.escape(xml_legal(_writable(shown(str(value), MAX_CELL))))


def html_report(
    run: SimulationRun, graph_svg: str | None = None, timeline_svg: str | None = None
) -> str:
    """One self-contained HTML page about ``run``: verdict, violations, graph and totals,
    timeline, trace.

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
        graph = run_graph(run)
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
    totals = "\n".join(_cell(line) for line in run.totals().lines())
    parts += [
        "<h2>Execution graph</h2>",
        f'<figure class="graph">\n{inline_svg(graph_svg)}\n</figure>',
        "<h2>Totals</h2>",
        f'<pre class="totals">{totals}</pre>',
    ]
    if timeline_svg is not None:
        parts += [
            "<h2>Timeline</h2>",
            f'<figure class="timeline">\n{inline_svg(timeline_svg)}\n</figure>',
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
    ``run_graph(run)`` (the runtime's records, with the trace's evidence and the violations
    marked on them) and the title defaults to its scenario, seed and verdict. The drawn
    formats (pictures, DOT, Mermaid) draw each family of alike executions once; GraphML and
    JSON keep every execution, with the ``label`` the pictures show and its ``family``.
    Unknown formats are refused before anything is written.

    >>> import tempfile
    >>> import networkx as nx
    >>> graph = nx.MultiDiGraph()
    >>> graph.add_node("a", workflow_id="w", status="pending", origin="trigger")
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     paths = export(graph, folder, ["dot", "mermaid"], stem="order-42")
    ...     sorted(path.name for path in paths.values())
    ['order-42.dot', 'order-42.mmd']
    """
    import networkx as nx

    chosen = _formats(formats)
    if not stem or stem in {".", ".."} or Path(stem).name != stem or "\\" in stem:
        raise ValueError(f"stem must be a plain file name, not {stem!r}")
    run: SimulationRun | None
    if isinstance(run_or_graph, nx.Graph):
        run, given = None, run_or_graph
    else:
        run, given = run_or_graph, None
        title = title or f"{shown(run.scenario.name)}, seed {run.seed}: {run.verdict_text}"
    made: list[nx.MultiDiGraph] = []

    def the_graph() -> nx.MultiDiGraph:
        # A run's graph from its records, made once and only for the formats that write it
        # (a run's pictures draw the trace's own graph beside the timeline).
        if given is not None:
            return given
        if not made:
            assert run is not None
            made.append(run_graph(run))
        return made[0]

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
            figure = _draw(the_graph(), title) if run is None else _draw_run(run)
        if format != "svg":
            return figure_bytes(figure, format)
        if svg is None:
            # matplotlib draws text as paths but copies it into comments: make those plain too
            svg = _bidi_visible(figure_bytes(figure, "svg").decode("utf-8")).encode("utf-8")
        return svg

    texts: dict[str, Callable[[], str]] = {
        "graphml": lambda: to_graphml(labelled(the_graph())),
        "json": lambda: to_node_link_json(labelled(the_graph())),
        "dot": lambda: to_dot(the_graph(), title=title),
        "mermaid": lambda: to_mermaid(the_graph(), title=title),
    }
    written: dict[str, Path] = {}
    for format in chosen:
        path = out / f"{stem}{EXTENSIONS[format]}"
        if format in FIGURE_FORMATS:
            write_whole(path, picture(format))
        elif format == "html":
            assert run is not None
            page = html_report(
                run,
                graph_svg=figure_bytes(_draw(the_graph(), title), "svg").decode("utf-8"),
                timeline_svg=_timeline_svg(run),
            )
            write_whole(path, page)
        elif format == "review":
            assert run is not None
            write_whole(path, review_page(run))
        else:
            write_whole(path, texts[format]())
        written[format] = path
    return written


# --------------------------------------------------------------------------- files


def export_file(run: SimulationRun, path: str | Path, format: str | None = None) -> Path:
    """Write ``run`` to ``path`` in ``format``; returns the path (``SimulationRun.export``).

    Without ``format``, the path's ending chooses: ``.html`` is the review page, ``.svg``,
    ``.png``, ``.pdf``, ``.graphml``, ``.json``, ``.dot`` and ``.mmd`` the formats of
    ``export`` (``format="html"`` is the static report, without a stepper).
    """
    target = Path(path)
    if format is None:
        by_ending = {ext: name for name, ext in EXTENSIONS.items() if name not in RUN_FORMATS}
        format = "review" if target.suffix.lower() == ".html" else by_ending.get(target.suffix)
        if format is None:
            endings = ", ".join(["*.html", *(f"*{ext}" for ext in by_ending)])
            raise ValueError(
                f"cannot tell which format to write from {target.name!r}: name a file "
                f"{endings}, or pass format="
            )
    if format == "review":
        return write_review(run, target)
    if format not in EXTENSIONS:
        raise ValueError(f"unknown export format {format!r}: choose among {', '.join(EXTENSIONS)}")
    ending = EXTENSIONS[format]
    if not target.name.endswith(ending) or target.name == ending:
        raise ValueError(f"a {format} export is a file named *{ending}, not {target.name!r}")
    return export(run, target.parent, [format], stem=target.name[: -len(ending)])[format]


def write_exploration_pictures(
    report: ExplorationReport,
    folder: str | Path,
    formats: Sequence[str] = ("png",),
    *,
    scenario: Scenario | None = None,
) -> ExplorationPictures:
    """Write the exploration grid and, per violation, the divergence figure and the execution
    graph into ``folder``, in ``formats`` (those of ``export``; the grid and the divergence are
    pictures, written in the picture formats among them, or PNG if there is none).

    ``scenario`` is the explored scenario object, needed when it is not a bundled one (its
    violations are replayed to draw them). Files are named after the scenario:
    ``NAME-explore.png``, ``NAME-violation-1-divergence.png``, ``NAME-violation-1-graph.png``.
    """
    import matplotlib

    from yieldstar_sim.simulation.artifact import ArtifactError
    from yieldstar_sim.simulation.run import replay

    chosen = list(dict.fromkeys(formats))
    unknown = [name for name in chosen if name not in EXTENSIONS]
    if unknown:
        raise ValueError(f"unknown format {unknown[0]!r}: choose among {', '.join(EXTENSIONS)}")
    pictures = [name for name in chosen if name in FIGURE_FORMATS] or ["png"]
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    stem = file_stem(report.scenario)  # never a path: it stays inside `out`
    written = ExplorationPictures()

    def save(figure: Figure, name: str) -> dict[str, Path]:
        paths = {}
        for format in pictures:
            path = out / f"{name}{EXTENSIONS[format]}"
            write_whole(path, figure_bytes(figure, format))
            paths[format] = path
        return paths

    with matplotlib.rc_context({"text.parse_math": False}):  # user text stays literal
        written.grid = save(draw_exploration(report), f"{stem}-explore")
        for number, found in enumerate(report.violations, start=1):
            name = f"{stem}-violation-{number}"
            written.divergences.append(save(draw_divergence(found, scenario), f"{name}-divergence"))
            try:
                run = replay(found.artifact, scenario=scenario, check_trace=False)
            except ArtifactError as error:
                # The report is whole without it; the search said why when it is the scenario.
                written.graphs.append({})
                written.not_drawn[number] = str(error)
                continue
            try:
                written.graphs.append(export(run, out, chosen, stem=f"{name}-graph"))
            finally:
                run.runtime.close()
    return written
