"""The design-review page: one self-contained HTML file per run or exploration, a stepper in it
that needs no kernel, every label escaped, and a size that stays reasonable.

The page in a real browser (the slider moves, the picture and the words change, no request
leaves the page): tests/browser/test_review_page.py.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order
from yieldstar_sim.simulation import ExplorationReport, SimulationRun
from yieldstar_sim.views.export import export_file
from yieldstar_sim.views.records import RecordBook
from yieldstar_sim.views.review import review_page, review_report_page, stepper_html

if TYPE_CHECKING:
    from pathlib import Path

#: The issue's target for the bundled trigger-in-step scenario's page.
SIZE_TARGET = 2_000_000

HOSTILE_KEY = 'ship</script><script>alert(1)</script> & "\u202e24-redro" <b>'
HOSTILE_ID = "order-\u202e24 <i>&amp;</i>"
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@ys.workflow("hostile-caller")
def hostile_caller(step: ys.StepRunner, params: object) -> Any:
    target = yield from step.start(HOSTILE_KEY, "hostile-child", None)
    return target.execution_id


@ys.workflow("hostile-child")
def hostile_child(step: ys.StepRunner, params: object) -> Any:
    return (yield from step.run(HOSTILE_KEY, lambda: 1))


def always_fails(run: SimulationRun) -> str:
    return f"{HOSTILE_KEY} </li></ul><script>alert(2)</script>"


HOSTILE = ys.Scenario(
    name='hostile <scenario> "&amp;"',
    description="A story with </div><script>alert(3)</script> and \u202eevil\u202c in it.",
    workflows=[hostile_caller, hostile_child],
    triggers=[ys.Trigger("hostile-caller", None, execution_id=HOSTILE_ID)],
    invariants=[always_fails],
)


class Page(HTMLParser):
    """Tags in order with their attributes, the text outside scripts, and each script's body."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._script: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._script = dict(attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self.scripts.append((self._script, data))
        else:
            self.text.append(data)

    def named(self, tag: str, css_class: str = "") -> list[dict[str, str | None]]:
        return [
            attrs
            for name, attrs in self.tags
            if name == tag and (not css_class or css_class in (attrs.get("class") or "").split())
        ]

    def stepper_data(self) -> list[dict[str, Any]]:
        return [json.loads(body) for attrs, body in self.scripts if attrs.get("class") == "ys-data"]


def parse(page: str) -> Page:
    parser = Page()
    parser.feed(page)
    parser.close()
    return parser


@pytest.fixture(scope="module")
def hostile_run() -> SimulationRun:
    return ys.simulate(HOSTILE, seed=0, runtime="memory")


@pytest.fixture(scope="module")
def trigger_run() -> SimulationRun:
    return ys.simulate(ys.load_scenario("trigger-in-step"), seed=0, runtime="memory")


@pytest.fixture(scope="module")
def trigger_report() -> ExplorationReport:
    return ys.explore(ys.load_scenario("trigger-in-step"), confirm=None, stop_at_first=False)


# --------------------------------------------------------------------------- escaping


def test_every_hostile_label_is_escaped_and_no_bidi_mark_survives(
    hostile_run: SimulationRun,
) -> None:
    page = review_page(hostile_run)
    parsed = parse(page)
    # Only the page's own two scripts: the stepper's JSON data and its code.
    assert [attrs.get("type") for attrs, _ in parsed.scripts] == ["application/json", None]
    assert page.count("<script") == 2
    assert "alert(" not in "".join(body for _, body in parsed.scripts[1:])
    assert not BIDI.search(page)
    text = "".join(parsed.text)
    assert 'hostile <scenario> "&amp;"' in text  # shown as written, never as markup
    assert "</div><script>alert(3)</script> and [U+202E]evil[U+202C]" in text
    shown_key = HOSTILE_KEY.replace("\u202e", "[U+202E]")
    assert f"{shown_key} </li></ul><script>alert(2)</script>" in text
    assert html.escape(shown_key) in page
    # The stepper's words and records carry the key too: as JSON text and escaped templates.
    (data,) = parsed.stepper_data()
    assert any(shown_key in words for words in data["words"])
    assert "order-[U+202E]24 <i>&amp;</i>" in " ".join(data["words"])
    assert "order-[U+202E]24 <i>&amp;</i>" in data["names"]  # the graph's and tables' name
    assert not [tag for tag, _ in parsed.tags if tag in {"b", "i", "iframe", "img", "link"}]


def test_the_page_asks_for_nothing_from_elsewhere(hostile_run: SimulationRun) -> None:
    page = review_page(hostile_run)
    parsed = parse(page)
    for _, attrs in parsed.tags:
        for name in ("href", "src", "xlink:href", "action"):
            value = attrs.get(name)
            assert value is None or value.startswith("#"), f"{name}={value!r} leaves the page"
    assert not re.search(r"url\((?!#)", page)  # CSS and SVG refer only to the page's own ids
    assert "@import" not in page
    # The SVG namespace names the script's graph elements; it is never fetched.
    script = parsed.scripts[-1][1].replace('"http://www.w3.org/2000/svg"', "")
    for call in ("fetch(", "XMLHttpRequest", "import(", "http", "WebSocket", "eval("):
        assert call not in script
    (policy,) = [a for a in parsed.named("meta") if a.get("http-equiv")]
    assert "default-src 'none'" in str(policy["content"])


# --------------------------------------------------------------------------- the stepper


def test_the_trace_is_stored_once_as_columns_and_changed_rows(trigger_run: SimulationRun) -> None:
    page = review_page(trigger_run)
    parsed = parse(page)
    (data,) = parsed.stepper_data()
    events = list(trigger_run.trace)
    (slider,) = parsed.named("input", "ys-slider")
    assert slider["max"] == str(len(events) - 1)
    assert not parsed.named("template")  # no picture or table per event: the script derives them
    for column in ("t", "worker", "kind", "tone", "point", "words", "text", "changes", "x"):
        assert len(data[column]) == len(events), column
    assert len(data["names"]) == len(set(data["names"]))  # every string once
    # The words are the stepper's own: narrate's sentence and the trace text of each event.
    assert data["words"] == ys.widgets.narrate(trigger_run.trace)
    assert data["text"][3] == events[3].text
    # Replaying the changed rows gives the record book's tables at every event.
    book = RecordBook.of_run(trigger_run)
    names, tables = data["names"], [spec[0] for spec in data["tables"]]
    rows: dict[str, dict[str, tuple[int, tuple[str, ...]]]] = {name: {} for name in tables}
    for seq, changes in enumerate(data["changes"]):
        for change in changes:
            table, key = tables[change[0]], names[change[1]]
            if len(change) == 2:
                del rows[table][key]
            else:
                rows[table][key] = (change[2], tuple(names[cell] for cell in change[3:]))
        for table in book.at(seq).tables:
            replayed = sorted(rows[table.name].items(), key=lambda item: (item[1][0], item[0]))
            assert [(key, cells) for key, (_, cells) in replayed] == [
                (row.key, row.cells) for row in table.rows
            ], (seq, table.name)
    # Every execution has a place in the graph; the timeline is drawn once.
    placed = {names[node[0]] for node in data["nodes"]}
    assert placed == {record.execution_id for record in trigger_run.executions}
    assert len(parsed.named("figure", "ys-timeline")) == 1
    assert len(parsed.named("line", "ys-cursor")) == 1
    xs = data["x"]
    assert xs == sorted(xs)
    assert 0 < xs[0] < xs[-1] <= data["right"]
    kinds = [event.kind for event in events]
    assert "crash" in kinds
    tones = dict(zip(range(len(kinds)), data["tone"], strict=True))
    assert all(tones[seq] == "bad" for seq, kind in enumerate(kinds) if kind == "crash")


def orders(count: int) -> ys.Scenario:
    """The issue's scale scenario: independent orders, 4 workers, one crash."""
    return ys.Scenario(
        name=f"orders-{count}",
        workflows=[charge_order, ship_order],
        triggers=[
            ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}")
            for n in range(1, count + 1)
        ],
        workers=4,
        faults=[ys.Fault("crash", op="put_step", execution_id="order-1", step_key="ship")],
        max_points=40 * count + 1_000,
    )


def test_the_page_grows_linearly_within_1000_bytes_per_event_and_names_every_execution() -> None:
    sizes, events = {}, {}
    for count in (10, 40):
        run = ys.simulate(orders(count), seed=0, runtime="memory")
        page = review_page(run)
        sizes[count], events[count] = len(page.encode()), len(run.trace)
        text = "".join(parse(page).text)
        assert all(record.execution_id in text for record in run.executions)
    # What each event adds (the page's own code and styles are paid once, and at ten orders
    # they are most of it).
    added = (sizes[40] - sizes[10]) / (events[40] - events[10])
    assert added <= 1_000, added
    assert sizes[40] <= 6 * sizes[10]


def test_families_are_drawn_once_at_the_pictures_layout() -> None:
    # The page drew a thousand orders as two thousand boxes to scroll through while the PNG
    # drew one family; now both draw the family at one layout, and the page can unfold it.
    from yieldstar_sim.views import collapse_families, graph_from_trace, layered_layout
    from yieldstar_sim.views.evidence import mark_violations
    from yieldstar_sim.views.graph import NODE_SPACING
    from yieldstar_sim.views.review_data import GRID_X, GRID_Y, stepper_data

    run = ys.simulate(orders(10), seed=0, runtime="memory")
    data = stepper_data(run)
    names = data["names"]
    (family,) = data["families"]
    node, shape, members, executions, parent, label, line, span = family
    assert names[node] == "9 \u00d7 charge-order \u2192 ship-order, completed"
    assert names[span] == "order-2 \u2026 order-10"
    assert names[shape] == "charge-order \u2192 ship-order, completed"
    assert [names[m] for m in members] == [f"order-{n}" for n in range(2, 11)]
    assert len(executions) == 18
    assert (parent, label, line) == (-1, -1, "")
    # The PNG's graph, its families collapsed, laid out: the page's grouped places.
    graph = graph_from_trace(run.trace)
    mark_violations(graph, run.violations)
    positions = layered_layout(collapse_families(graph)).positions
    left = min(x for x, _ in positions.values())
    top = max(y for _, y in positions.values())
    expected = {
        str(n): (round((x - left) * NODE_SPACING * GRID_X, 1), round((top - y) * GRID_Y, 1))
        for n, (x, y) in positions.items()
    }
    assert {names[n]: (x, y) for n, x, y in data["grouped"]} == expected
    assert {names[n] for n, _, _ in data["nodes"]} == {r.execution_id for r in run.executions}
    (box,) = parse(review_page(run)).named("input", "ys-grouped")
    assert "checked" in box


def test_a_family_under_a_parent_is_reached_by_one_edge() -> None:
    @ys.workflow("line")
    def line(step: ys.StepRunner, params: Any) -> Any:
        return (yield from step.run("pick", lambda: params["line"]))

    @ys.workflow("order")
    def order(step: ys.StepRunner, params: Any) -> Any:
        for number in range(1, 7):
            yield from step.start(f"line-{number}", "line", {"line": number})
        return "ok"

    from yieldstar_sim.views.review_data import stepper_data

    scenario = ys.Scenario(name="lines", workflows=[order, line],
                           triggers=[ys.Trigger("order", {}, execution_id="order-1")])  # fmt: skip
    data = stepper_data(ys.simulate(scenario, seed=0, runtime="memory"))
    names = data["names"]
    (family,) = data["families"]
    assert names[family[0]] == "6 \u00d7 line, completed"
    assert (names[family[4]], names[family[5]], family[6]) == (
        "order-1",
        "line-1 \u2026 line-6",
        "owned",
    )
    assert {names[n] for n, _, _ in data["grouped"]} == {"order-1", names[family[0]]}


def test_a_run_without_families_has_no_grouping_box(trigger_run: SimulationRun) -> None:
    page = review_page(trigger_run)
    (data,) = parse(page).stepper_data()
    assert data["families"] == []
    assert data["grouped"] == []
    assert not parse(page).named("input", "ys-grouped")


def test_the_trigger_in_step_page_stays_under_its_size_target(
    trigger_run: SimulationRun,
) -> None:
    page = review_page(trigger_run)
    assert len(page.encode()) < SIZE_TARGET
    _, size = stepper_html(trigger_run)
    assert size.events == len(trigger_run.trace)
    assert size.changes < 10 * size.events
    # No matplotlib metadata, comments or XML prologues inside the page.
    for leftover in ("<metadata", "<!--", "<?xml", "<!DOCTYPE svg", "dc:date", "Matplotlib v"):
        assert leftover not in page


# --------------------------------------------------------------------------- the report


def test_the_report_page_holds_coverage_grid_and_each_violation(
    trigger_report: ExplorationReport,
) -> None:
    page = review_report_page(trigger_report)
    parsed = parse(page)
    text = " ".join("".join(parsed.text).split())
    assert trigger_report.violations
    assert " ".join(trigger_report.coverage().split()) in text
    assert "RFC 003's Problem" in text  # the bundled scenario's story
    assert len(parsed.named("figure", "grid")) == 1
    assert len(parsed.named("figure", "divergence")) == len(trigger_report.violations)
    assert len(parsed.named("section", "ys-stepper")) == len(trigger_report.violations)
    assert len(parsed.named("section", "violation")) == len(trigger_report.violations)
    for found in trigger_report.violations:
        assert " ".join(found.message.split()) in text
        for fault in found.faults:
            assert fault in text
    assert "nearest passing" in text
    assert len(page.encode()) < 2 * SIZE_TARGET


def test_a_report_with_nothing_found_says_so(tmp_path: Path) -> None:
    report = ys.explore(ys.load_scenario("durable-start"), confirm=None)
    path = report.export(tmp_path / "review.html")
    parsed = parse(path.read_text("utf-8"))
    assert "None found." in "".join(parsed.text)
    assert not parsed.named("section", "ys-stepper")
    assert len(parsed.named("figure", "grid")) == 1


# --------------------------------------------------------------------------- entry points


def test_run_export_chooses_the_format_by_the_files_ending(
    trigger_run: SimulationRun, tmp_path: Path
) -> None:
    review = trigger_run.export(tmp_path / "sub" / "review.html")
    assert review.read_text("utf-8").count('class="ys-stepper"') == 1
    static = trigger_run.export(tmp_path / "static.html", format="html")
    assert 'class="ys-stepper"' not in static.read_text("utf-8")
    assert "flowchart TD" in trigger_run.export(tmp_path / "graph.mmd").read_text("utf-8")
    with pytest.raises(ValueError, match=r"cannot tell which format.*\*\.html"):
        trigger_run.export(tmp_path / "notes.txt")
    with pytest.raises(ValueError, match=r"a dot export is a file named \*\.dot"):
        export_file(trigger_run, tmp_path / "graph.svg", "dot")
    with pytest.raises(ValueError, match="unknown export format 'jpeg'"):
        trigger_run.export(tmp_path / "x.jpeg", format="jpeg")


def test_the_command_line_writes_review_pages(tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "yieldstar_sim.cli"]
    run = subprocess.run(
        [*cli, "run", "trigger-in-step", "--runtime", "memory", "--format", "review,png",
         "--out", "out", "--quiet"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 1, run.stderr
    assert "review: out/trigger-in-step-seed0-graph.review.html" in run.stdout
    page = (tmp_path / "out" / "trigger-in-step-seed0-graph.review.html").read_text("utf-8")
    assert page.count('class="ys-stepper"') == 1
    explore = subprocess.run(
        [*cli, "explore", "trigger-in-step", "--no-confirm", "--format", "review", "--json",
         "--out", "out"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert explore.returncode == 1, explore.stderr
    data = json.loads(explore.stdout)
    assert data["review"] == "out/trigger-in-step-review.html"
    report_page = (tmp_path / data["review"]).read_text("utf-8")
    assert report_page.count('class="ys-stepper"') == len(data["violations"])
    # The review is of the whole exploration: no review page per violation beside it.
    assert not list((tmp_path / "out").glob("*violation*.review.html"))


def test_a_story_s_code_spans_are_code_and_its_markup_stays_text() -> None:
    from yieldstar_sim.views.review import _story

    (_, story) = _story('wrap it: `step.run("k", fn)` <b>not bold</b> and a stray `tick')
    assert "<code>step.run(&quot;k&quot;, fn)</code>" in story
    assert "&lt;b&gt;not bold&lt;/b&gt;" in story
    assert "a stray `tick" in story
