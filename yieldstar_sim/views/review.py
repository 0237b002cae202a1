"""The design-review page: a run or an exploration report as one self-contained HTML file.

Reviewers read documents, not notebooks. The page holds the scenario's story, the verdict and
every violation's sentence, the fault plan, and a stepper that works with no kernel and no
network: a slider and previous / next buttons over the run's events, the event in words, the
execution graph and the worker timeline as of the event, and the runtime's records as of it.
For an exploration report it adds the completeness statement, the exploration grid, and per
violation its divergence from the nearest passing schedule and a stepper over its replay.

Everything is in the file, and the file grows with the trace, not with events times
executions: the trace is stored once, compactly (``review_data``: columns, every string once,
each event's changed rows of the runtime's records), and the page's script derives each
event's state as the slider moves. The execution graph is drawn by the script from the same
rows as the tables (one state model: they cannot disagree), at the graph module's layout; the
timeline is drawn once by matplotlib and the script moves a cursor over it. A page can be
linked at an event, an execution or a violation (``#event=41``, ``#execution=order-7``,
``#violation=1``: the event where it came true, the executions it names found) and has a
search box for execution IDs; the run's totals sit beside the graph. Every label (execution
IDs, step keys, scenario text) is set as text, never as markup, with bidirectional formatting
characters shown as ``[U+202E]``, as in the other exports; the pictures' text is SVG text in
the reader's own fonts, nothing fetched.

>>> import yieldstar_sim as ys
>>> run = ys.simulate(ys.load_scenario("durable-start"), runtime="memory")
>>> page = review_page(run)
>>> page.startswith("<!DOCTYPE html>"), page.count('class="ys-stepper"')
(True, 1)
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from yieldstar_sim.core.files import write_whole
from yieldstar_sim.views.drawn_text import MAX_CELL, json_escaped, shown, xml_legal
from yieldstar_sim.views.figures import figure_bytes, inline_svg
from yieldstar_sim.views.graph_text import _writable

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from yieldstar_sim.simulation.explorer import ExplorationReport, FoundViolation
    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.scenario import Scenario

__all__ = [
    "StepperSize",
    "review_page",
    "review_report_page",
    "stepper_html",
    "write_review",
]

#: The timeline's size: inches wide, and inches per lane (plus room for the axis and title).
TIMELINE_WIDTH = 12.0
LANE_HEIGHT = 0.9
#: SVG user units per inch: matplotlib writes SVG in points.
_POINTS = 72.0
#: How much the timeline's future (after the current event) is washed out.
FUTURE_WASH = 0.62
_CURSOR_COLOUR = "#CC0000"

_COMMENT = re.compile(r"<!--.*?-->\s*", re.DOTALL)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)


def _text(value: object) -> str:
    """User text for HTML: unwritable and bidirectional characters made visible, the control
    characters and noncharacters HTML calls errors replaced, escaped."""
    return html.escape(xml_legal(_writable(shown(str(value), MAX_CELL))))


def _asset(name: str) -> str:
    return resources.files("yieldstar_sim.views").joinpath(name).read_text(encoding="utf-8")


def _svg(figure: Figure) -> str:
    """A figure as SVG markup for inside HTML: no XML prologue, no metadata, no comments
    (matplotlib copies each drawn text into one)."""
    import matplotlib

    # Text as SVG text, not paths: a tenth of the bytes; the page's policy fetches no font.
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        svg = figure_bytes(figure, "svg").decode("utf-8")
    svg = _COMMENT.sub("", _METADATA.sub("", inline_svg(svg)))
    return _writable(svg)


def _json_script(data: object, css_class: str) -> str:
    """``data`` as a JSON script element no text inside it can end (``<``, ``>`` and ``&``
    are written as ``\\u`` escapes, which JSON reads back as the same characters)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for char in "<>&\u2028\u2029":
        text = text.replace(char, f"\\u{ord(char):04x}")
    # Control characters and noncharacters are errors in an HTML page, inside a script too:
    # escaped, the data stays whole.
    text = json_escaped(text)
    return f'<script type="application/json" class="{css_class}">{text}</script>'


# --------------------------------------------------------------------------- the stepper


@dataclass(frozen=True)
class StepperSize:
    """What one stepper holds: events, row changes (what the script replays), distinct
    strings, and bytes."""

    events: int
    changes: int
    names: int
    bytes: int


def _timeline(run: SimulationRun) -> tuple[str, list[float | None], float]:
    """The timeline drawn once as SVG, with a cursor line and a future wash the script moves;
    returns the SVG, each event's cursor x in SVG units, and the plot's right edge."""
    import matplotlib
    from matplotlib.figure import Figure

    from yieldstar_sim.views.timeline import build_timeline, draw_timeline

    timeline = build_timeline(run.trace, run.scenario.worker_names)
    height = LANE_HEIGHT * len(timeline.lanes) + 1.5
    # At 72 dpi the display coordinates are the SVG's own units (points).
    figure = Figure(figsize=(TIMELINE_WIDTH, height), dpi=_POINTS, layout="constrained")
    axes = figure.add_subplot()
    with matplotlib.rc_context({"text.parse_math": False}):
        draw_timeline(timeline, ax=axes)
        svg = _svg(figure)  # draws the figure: the layout, hence the axes' box, is final now
    left, bottom, right, top = (float(value) for value in axes.bbox.extents)
    page_height = height * _POINTS
    # One transform of every event's x: one call per event was a tenth of a big page's time.
    seqs = [event.seq for event in run.trace]
    placed = [seq for seq in seqs if seq in timeline.x_of]
    pixels = axes.transData.transform([(timeline.x_of[seq], 0.0) for seq in placed] or [(0, 0)])
    cursor = {seq: round(float(x), 2) for seq, (x, _) in zip(placed, pixels, strict=False)}
    xs: list[float | None] = [cursor.get(seq) for seq in seqs]
    first = next((x for x in xs if x is not None), left)
    y_top, y_bottom = page_height - top, page_height - bottom
    overlay = (
        f'<g class="ys-overlay" pointer-events="none">'
        f'<rect class="ys-future" x="{first + 1:.2f}" y="{y_top:.2f}" '
        f'width="{max(right - first - 1, 0):.2f}" height="{y_bottom - y_top:.2f}" fill="#FFFFFF" '
        f'fill-opacity="{FUTURE_WASH}"/>'
        f'<line class="ys-cursor" x1="{first:.2f}" x2="{first:.2f}" y1="{y_top:.2f}" '
        f'y2="{y_bottom:.2f}" stroke="{_CURSOR_COLOUR}" stroke-width="1.5"/></g>'
    )
    end = svg.rindex("</svg>")
    return svg[:end] + overlay + svg[end:], xs, round(right, 2)


def _totals(run: SimulationRun) -> str:
    """The run's totals beside its graph: what a reviewer would otherwise count."""
    lines = "\n".join(_text(line) for line in run.totals().lines())
    return (
        '<figure class="ys-totals"><figcaption>totals (the whole run)</figcaption>'
        f"<pre>{lines}</pre></figure>"
    )


def stepper_html(
    run: SimulationRun, *, label: str = "", violation: tuple[int, str] | None = None
) -> tuple[str, StepperSize]:
    """A stepper over ``run`` as an HTML section (the page's script brings it to life), and
    what it holds. ``label`` names the run above the controls (for a report's violations);
    ``violation``, the number and invariant of the report's violation it replays, makes a link
    to that violation (``#violation=2``) open this stepper where its run broke that invariant.

    The section carries the trace once (``review_data.stepper_data``: columns, interned
    strings, each event's changed rows); the script derives each event's graph and tables
    from those as the slider moves."""
    from yieldstar_sim.views.graph import STATUS_COLOURS
    from yieldstar_sim.views.review_data import stepper_data

    events = list(run.trace)
    if not events:
        return '<p class="ys-empty">The run has no events to step through.</p>', StepperSize(
            0, 0, 0, 0
        )
    timeline_svg, xs, right = _timeline(run)
    data = stepper_data(run)
    # The records have no "running" status (a worker's lease says who runs it): the graph
    # colours the status the executions table shows, and outlines a leased execution.
    colours = {status: colour for status, colour in STATUS_COLOURS.items() if status != "running"}
    data.update({"x": xs, "right": right, "colours": colours})
    last = len(events) - 1
    caption = f'<h3 class="ys-run">{_text(label)}</h3>' if label else ""
    grouping = (
        '<label class="ys-group"><input type="checkbox" class="ys-grouped" checked> '
        "alike executions drawn once</label>"
        if data["families"]
        else ""
    )
    opens = ""
    if violation is not None:
        number, invariant = violation
        mine = [index for index, v in enumerate(run.violations) if v.invariant == invariant]
        opens = f' data-violation="{number}" data-opens="{mine[0] + 1 if mine else 0}"'
    parts = [
        f'<section class="ys-stepper" data-event=""{opens}>',
        caption,
        '<div class="ys-controls">'
        '<button type="button" class="ys-previous">\u25c0 previous</button>'
        f'<input type="range" class="ys-slider" min="0" max="{last}" step="1" value="0" '
        'aria-label="event">'
        '<button type="button" class="ys-next">next \u25b6</button>'
        '<span class="ys-position"></span>'
        '<input type="search" class="ys-search" placeholder="find an execution ID" '
        'aria-label="find an execution ID" spellcheck="false">'
        '<span class="ys-found"></span>' + grouping + "</div>",
        '<div class="ys-event"><div class="ys-where"></div><div class="ys-words"></div>'
        '<div class="ys-line"></div><div class="ys-violation-note"></div></div>',
        '<div class="ys-pictures"><figure class="ys-graph"></figure>'
        + _totals(run)
        + f'<figure class="ys-timeline">{timeline_svg}</figure></div>',
        '<div class="ys-records"></div>',
        _json_script(data, "ys-data"),
        "</section>",
    ]
    section = "\n".join(parts)
    changes = sum(len(row_changes) for row_changes in data["changes"])
    return section, StepperSize(len(events), changes, len(data["names"]), len(section.encode()))


# --------------------------------------------------------------------------- pages


def _page(title: str, body: list[str]) -> str:
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            # Nothing may leave the page: no script, style, image, font or frame from elsewhere.
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">",
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_text(title)}</title>",
            f"<style>\n{_asset('review.css')}</style>",
            "</head>",
            "<body>",
            *body,
            "<noscript><p>The steppers need JavaScript; everything else on this page reads "
            "without it.</p></noscript>",
            f"<script>\n{_asset('review.js')}</script>",
            "</body>",
            "</html>",
        ]
    )


#: A `code span` in a story, as the scenarios write names of code (found in escaped text:
#: the backticks survive escaping and the span holds no markup).
_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _story(description: str) -> list[str]:
    if not description.strip():
        return []
    text = _CODE_SPAN.sub(r"<code>\1</code>", _text(description.strip()))
    return ["<h2>The story</h2>", f'<div class="story">{text}</div>']


def _violations(sentences: list[str], empty: str) -> str:
    """The violations' sentences, numbered as the pictures number them ("named by violation
    2"), each a link that moves the stepper to where it came true (``#violation=2``)."""
    if not sentences:
        return f"<p>{_text(empty)}</p>"
    items = "".join(
        f'<li id="violation-{number}">{_text(sentence)} '
        f'<a class="ys-violation-link" href="#violation={number}">show it</a></li>'
        for number, sentence in enumerate(sentences, start=1)
    )
    return f'<ol class="violations sentence">{items}</ol>'


def _list(items: list[str], css_class: str, empty: str) -> str:
    if not items:
        return f"<p>{_text(empty)}</p>"
    return f'<ul class="{css_class}">' + "".join(f"<li>{_text(i)}</li>" for i in items) + "</ul>"


def _trace_table(run: SimulationRun) -> list[str]:
    rows = "".join(
        f"<tr><td>{e.seq}</td><td>{e.t:g}</td><td>{_text(e.worker or '')}</td>"
        f"<td>{_text(e.kind)}</td><td>{_text(e.text)}</td></tr>"
        for e in run.trace
    )
    return [
        f"<details><summary>The whole trace ({len(run.trace)} events)</summary>",
        '<table class="trace"><thead><tr><th>#</th><th>t</th><th>worker</th><th>kind</th>'
        f"<th>what</th></tr></thead><tbody>{rows}</tbody></table></details>",
    ]


def review_page(run: SimulationRun) -> str:
    """One self-contained HTML page to review ``run``: the story, the verdict and every
    violation's sentence, the fault plan, and a stepper over its events (graph, timeline,
    the event in words, the records as of it) that needs no kernel and no network."""
    scenario = run.scenario
    stepper, _ = stepper_html(run)
    violations = [f"{v.invariant}: {v.message}" for v in run.violations]
    body = [
        f"<h1>{_text(scenario.name)}</h1>",
        f'<p class="meta">seed {run.seed} · runtime {_text(run.runtime_kind)} · '
        f"{len(run.trace)} events · {run.points} choice points</p>",
        f'<p class="verdict {run.verdict}">{_text(run.verdict_text)}</p>',
        *_story(scenario.description),
        "<h2>Violations</h2>",
        _violations(violations, "None: every invariant held."),
    ]
    if run.incomplete:
        body.append(f'<p class="incomplete">Incomplete: {_text(run.incomplete)}</p>')
    if run.warnings:
        body += ["<h2>Warnings</h2>", _list(run.warnings, "warnings", "")]
    body += [
        "<h2>Fault plan</h2>",
        _list([f.describe() for f in run.faults], "plan", "No faults: the run as scheduled."),
        "<h2>Step through the run</h2>",
        stepper,
        *_trace_table(run),
    ]
    title = f"{scenario.name} · seed {run.seed} · {run.verdict_text}"
    return _page(title, body) + "\n"


def _report_story(report: ExplorationReport, scenario: Scenario | None) -> str:
    """The explored scenario's description: from ``scenario``, else the bundled one."""
    if scenario is not None:
        return scenario.description
    from yieldstar_sim.simulation.scenario_files import bundled_scenarios, load_scenario

    if report.scenario in bundled_scenarios():
        return load_scenario(report.scenario).description
    return ""


def _violation(number: int, found: FoundViolation, scenario: Scenario | None) -> list[str]:
    import matplotlib

    from yieldstar_sim.simulation.run import replay
    from yieldstar_sim.views.exploration import draw_divergence

    with matplotlib.rc_context({"text.parse_math": False}):
        divergence = _svg(draw_divergence(found, scenario))
    passing = found.nearest_passing
    parts = [
        f'<section class="violation" id="violation-{number}-section">',
        f"<h2>Violation {number}: {_text(found.invariant)}</h2>",
        f'<p class="sentence">{_text(found.message)}</p>',
        f"<p>Found at schedule #{found.found_at}; the shrunk fault plan:</p>",
        _list(found.faults, "plan", "No faults: the schedule alone breaks it."),
        "<p>Its nearest passing schedule: "
        + (
            "none found."
            if passing is None
            else (_text("; ".join(passing)) if passing else "no faults.")
        )
        + (f" First divergence: {_text(found.divergence)}." if found.divergence else "")
        + "</p>",
    ]
    if found.artifact_path is not None:
        parts.append(
            f"<p>Replay it: <code>{_text(found.artifact.replay_command(found.artifact_path))}"
            "</code></p>"
        )
    parts += [
        '<figure class="divergence">',
        divergence,
        "<figcaption>The violation (left) beside its nearest passing schedule (right); the "
        "cursor marks the first event where they differ.</figcaption></figure>",
    ]
    run = replay(found.artifact, scenario=scenario, check_trace=False)
    try:
        stepper, _ = stepper_html(
            run,
            label=f"Step through violation {number}'s run",
            violation=(number, found.invariant),
        )
    finally:
        run.runtime.close()
    parts += [stepper, "</section>"]
    return parts


def review_report_page(report: ExplorationReport, *, scenario: Scenario | None = None) -> str:
    """One self-contained HTML page to review an exploration: the story, the verdict and the
    completeness statement, the exploration grid, and per violation its sentence, shrunk
    fault plan, divergence beside its nearest passing schedule and a stepper over its replay.

    ``scenario`` is the explored scenario object, needed when it is not a bundled one (the
    violations are replayed to draw them)."""
    import matplotlib

    from yieldstar_sim.views.exploration import draw_exploration

    with matplotlib.rc_context({"text.parse_math": False}):
        grid = _svg(draw_exploration(report))
    body = [
        f"<h1>{_text(report.scenario)}: {_text(report.strategy)} exploration</h1>",
        f'<p class="meta">max {report.max_faults} fault(s) · seed {report.seed} · '
        f"runtime {_text(report.runtime)} · {report.schedules_run} schedules in "
        f"{report.elapsed:.1f}s</p>",
        f'<p class="verdict {report.verdict}">{_text(report.verdict)}</p>',
        f'<p class="coverage">{_text(report.coverage())}</p>',
        *_story(_report_story(report, scenario)),
    ]
    notes = [
        *report.runtime_mismatches,
        *(f"incomplete schedule: {reason}" for reason in report.incomplete_reasons),
        *(f"warning: {warning}" for warning in report.warnings),
        *report.confirmations,
    ]
    if notes:
        body += ["<h2>Notes</h2>", _list(notes, "notes", "")]
    body += [
        "<h2>Violations</h2>",
        _violations(
            [f"{found.invariant}: {found.message}" for found in report.violations],
            "None found.",
        ),
        "<h2>The exploration grid</h2>",
        f'<figure class="grid">{grid}<figcaption>Each single fault at each choice point of '
        "the fault-free run, by verdict.</figcaption></figure>",
    ]
    for number, found in enumerate(report.violations, start=1):
        body += _violation(number, found, scenario)
    title = f"{report.scenario} · exploration · {report.verdict}"
    return _page(title, body) + "\n"


def write_review(
    subject: SimulationRun | ExplorationReport,
    path: str | Path,
    *,
    scenario: Scenario | None = None,
) -> Path:
    """Write the review page of a run or an exploration report to ``path``; returns it.
    (``scenario``: for a report of a scenario that is not bundled.)"""
    from yieldstar_sim.simulation.explorer import ExplorationReport

    if isinstance(subject, ExplorationReport):
        page = review_report_page(subject, scenario=scenario)
    else:
        page = review_page(subject)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_whole(target, page)
    return target
