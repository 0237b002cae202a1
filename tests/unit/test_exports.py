"""Exports of the execution graph: every format reads back, and hostile text stays text."""

from __future__ import annotations

import html
import importlib
import io
import json
import re
import warnings
import xml.etree.ElementTree as ET
from collections import Counter
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any

import networkx as nx
import pydot
import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.ids import start_target_id
from yieldstar_sim.core.model import ExecutionStatus
from yieldstar_sim.simulation import SimulationRun
from yieldstar_sim.views import drawn_text, execution_graph
from yieldstar_sim.views.export import (
    EXTENSIONS,
    FORMATS,
    export,
    figure_bytes,
    html_report,
    to_dot,
    to_graphml,
    to_mermaid,
    to_node_link_json,
)
from yieldstar_sim.views.graph import draw_execution_graph, run_graph
from yieldstar_sim.views.graph_text import labelled

if TYPE_CHECKING:
    from pathlib import Path

with warnings.catch_warnings():
    # pydot 4.0's DOT parser calls pyparsing names that pyparsing 3.3 deprecates, once, when
    # the module is imported: import it here so no test turns that warning into an error.
    warnings.simplefilter("ignore", DeprecationWarning)
    importlib.import_module("pydot.dot_parser")

#: A step key as hostile as user input gets (runtimes refuse the newline: see hostile_graph).
HOSTILE_KEY = 'a "quoted" <key>\nwith {braces} \\ back|slash: ünïcødé'
RUNTIME_KEY = HOSTILE_KEY.replace("\n", " ")
CALLER = 'order "42" <b>{x}</b> & \\ | ü: #1; a-->b'
CALLER_WORKFLOW = "charge #1; a-->b & <i>"
CHILD_WORKFLOW = 'ship --> "x"; %% #quot; [y]'


def hostile_runtime() -> ys.MemoryRuntime:
    """Execution IDs, workflow IDs and step keys full of quotes, brackets, colons and keywords."""
    runtime = ys.MemoryRuntime()
    caller = runtime.trigger(CALLER_WORKFLOW, execution_id=CALLER)
    node = runtime.trigger("node", execution_id="node")
    strict = runtime.trigger("graph", execution_id="strict")
    tail = runtime.trigger("subgraph", execution_id="ends with \\")
    runtime.start(ys.StartRequest(ys.RequestId(caller, RUNTIME_KEY), CHILD_WORKFLOW))
    runtime.start(ys.StartRequest(ys.RequestId(caller, "port:a:b"), "edge", None, True))
    runtime.start(ys.StartRequest(ys.RequestId(node, "trailing \\"), "w"))
    runtime.start(ys.StartRequest(ys.RequestId(strict, "<html>label</html>"), "w", None, True))
    runtime.start(ys.StartRequest(ys.RequestId(tail, '"already quoted"'), "w"))
    return runtime


def hostile_graph() -> nx.MultiDiGraph:
    """The hostile runtime's graph, plus edges no runtime admits (newlines, tabs, CRLF)."""
    graph = execution_graph(hostile_runtime())
    for key, duplicate in ((HOSTILE_KEY, True), ("tab\there\r\nand crlf", False)):
        graph.add_edge(
            CALLER,
            "node",
            key=key,
            kind="trigger",
            step_key=key,
            detached=True,
            retained=False,
            duplicate=duplicate,
        )
    return graph


def scenario_graph(name: str) -> nx.MultiDiGraph:
    run = ys.simulate(ys.load_scenario(name), seed=0, runtime="memory")
    return execution_graph(run.runtime, run.effects)


@pytest.fixture(scope="module", params=["trigger-in-step", "durable-start", "hostile"])
def graph(request: pytest.FixtureRequest) -> nx.MultiDiGraph:
    if request.param == "hostile":
        return hostile_graph()
    return scenario_graph(request.param)


def node_label(node: str, data: dict[str, Any]) -> str:
    """A node's label: a name past 64 characters cut as ``drawn_text.shown`` says (the
    target of the hostile caller's hostile step key has a 126-character ID)."""
    return f"{drawn_text.shown(node)}\n{data['workflow_id']} · {data['status']}"


#: What an edge's label adds under its step key when its step admitted several executions.
DUPLICATE_LINE = "\nduplicate admission"


def edge_label(data: dict[str, Any]) -> str:
    return str(data["step_key"]) + (DUPLICATE_LINE if data.get("duplicate") else "")


def edge_set(graph: nx.MultiDiGraph) -> set[tuple[Any, Any, Any, str]]:
    return {
        (u, v, k, json.dumps(d, sort_keys=True)) for u, v, k, d in graph.edges(keys=True, data=True)
    }


# --------------------------------------------------------------------------- GraphML


def test_graphml_reads_back_the_same_graph(graph: nx.MultiDiGraph) -> None:
    text = to_graphml(graph)
    ET.fromstring(text.encode("utf-8"))
    back = nx.read_graphml(io.BytesIO(text.encode("utf-8")), force_multigraph=True)
    assert isinstance(back, nx.MultiDiGraph)
    assert dict(back.nodes(data=True)) == dict(graph.nodes(data=True))
    back_edges = {
        (u, v, str(k), json.dumps(d, sort_keys=True))
        for u, v, k, d in back.edges(keys=True, data=True)
    }
    assert back_edges == edge_set(graph)


def test_graphml_keeps_flags_as_booleans_and_writes_none_and_containers_as_text() -> None:
    graph = nx.MultiDiGraph()
    graph.add_node(
        "a",
        status=ExecutionStatus.COMPLETED,
        nothing=None,
        params={"order": 42, "tags": ["x", "<y>"]},
        control="bell\x07here",
        count=3,
    )
    graph.add_edge("a", "a", key="loop", detached=True, weight=0.5)
    text = to_graphml(graph)
    back = nx.read_graphml(io.BytesIO(text.encode("utf-8")), force_multigraph=True)
    node = back.nodes["a"]
    assert node["status"] == "completed"
    assert node["nothing"] == ""
    assert json.loads(node["params"]) == {"order": 42, "tags": ["x", "<y>"]}
    assert node["control"] == "bell\u2407here"  # XML cannot hold U+0007: its control picture
    assert node["count"] == 3
    assert back.edges["a", "a", "loop"] == {"detached": True, "weight": 0.5}


def test_graphml_keeps_a_carriage_return() -> None:
    graph = nx.MultiDiGraph()
    graph.add_node("a", note="one\r\ntwo\rthree")
    back = nx.read_graphml(io.BytesIO(to_graphml(graph).encode("utf-8")))
    assert back.nodes["a"]["note"] == "one\r\ntwo\rthree"


# --------------------------------------------------------------------------- node-link JSON


def test_node_link_json_reads_back_the_same_graph(graph: nx.MultiDiGraph) -> None:
    text = to_node_link_json(graph)
    assert text == to_node_link_json(graph)
    back = nx.node_link_graph(json.loads(text), edges="edges")
    assert isinstance(back, nx.MultiDiGraph)
    assert list(back.nodes(data=True)) == list(graph.nodes(data=True))
    assert edge_set(back) == edge_set(graph)


def test_node_link_json_keeps_unicode_readable() -> None:
    text = to_node_link_json(hostile_graph())
    assert "ünïcødé" in text
    assert json.dumps(HOSTILE_KEY, ensure_ascii=False) in text


# --------------------------------------------------------------------------- DOT


def dot_unquote(text: str) -> str:
    """A DOT double-quoted string's value: the inverse of the exporter's quoting."""
    assert text.startswith('"')
    assert text.endswith('"')
    return re.sub(
        r"\\(.)", lambda m: {"n": "\n", "r": "\r"}.get(m[1], m[1]), text[1:-1], flags=re.S
    )


def parse_dot(text: str) -> pydot.Dot:
    graphs = pydot.graph_from_dot_data(text)
    assert graphs is not None
    assert len(graphs) == 1
    return graphs[0]


def test_dot_parses_back_with_every_node_edge_and_label(graph: nx.MultiDiGraph) -> None:
    dot = parse_dot(to_dot(graph, title='the "title"\nsecond line'))
    nodes = [n for n in dot.get_nodes() if n.get_name() not in {"node", "edge", "graph"}]
    assert {dot_unquote(n.get_name()): dot_unquote(n.get("label")) for n in nodes} == {
        node: node_label(node, data) for node, data in graph.nodes(data=True)
    }
    edges = Counter(
        (
            dot_unquote(e.get_source()),
            dot_unquote(e.get_destination()),
            dot_unquote(e.get("step_key")),
            dot_unquote(e.get("label")),
        )
        for e in dot.get_edges()
    )
    assert edges == Counter(
        (u, v, d["step_key"], edge_label(d).replace("\r\n", "\n"))  # a label breaks lines
        for u, v, d in graph.edges(data=True)
    )
    assert dot_unquote(dot.get("label")) == 'the "title"\nsecond line'


def test_dot_styles_detached_dashed_triggers_dotted_duplicates_red() -> None:
    dot = parse_dot(to_dot(hostile_graph()))
    styles = {
        dot_unquote(e.get("label")): (dot_unquote(e.get("style")), dot_unquote(e.get("color")))
        for e in dot.get_edges()
    }
    assert styles[RUNTIME_KEY] == ("solid", "#333333")
    assert styles["port:a:b"] == ("dashed", "#333333")
    assert styles[HOSTILE_KEY + DUPLICATE_LINE] == ("dotted", "#CC0000")
    assert styles["tab\there\nand crlf"] == ("dotted", "#333333")
    data = {dot_unquote(e.get("key")): dot_unquote(e.get("detached")) for e in dot.get_edges()}
    assert data["port:a:b"] == "true"
    assert data[RUNTIME_KEY] == "false"


def test_dot_of_the_bug_shows_two_red_trigger_edges() -> None:
    dot = parse_dot(to_dot(scenario_graph("trigger-in-step")))
    assert [(e.get("style"), e.get("color")) for e in dot.get_edges()] == [
        ('"dotted"', '"#CC0000"'),
        ('"dotted"', '"#CC0000"'),
    ]


# --------------------------------------------------------------------------- Mermaid

MERMAID_NODE = re.compile(r'^    (n\d+|totals)(?:\["(.*)"\]|\("(.*)"\))$')
MERMAID_EDGE = re.compile(r'^    (n\d+) (-->|-\.->)\|"(.*)"\| (n\d+)$')
MERMAID_OTHER = re.compile(r"^    (classDef|class|linkStyle) [\w,]+ [\w:#,.\- ]+$")


def parse_mermaid(text: str) -> tuple[dict[str, str], list[tuple[str, str, str, str]], list[str]]:
    """Node labels by ID, edges (source, arrow, label, target) and the other statements."""
    lines = text.splitlines()
    if lines[0] == "---":
        end = lines.index("---", 1)
        lines = lines[end + 1 :]
    assert lines[0] == "flowchart TD"
    nodes: dict[str, str] = {}
    edges: list[tuple[str, str, str, str]] = []
    others: list[str] = []
    for line in lines[1:]:
        if match := MERMAID_NODE.match(line):
            nodes[match[1]] = match[2] if match[2] is not None else match[3]
        elif match := MERMAID_EDGE.match(line):
            edges.append((match[1], match[2], match[3], match[4]))
        else:
            assert MERMAID_OTHER.match(line), f"unexpected Mermaid line {line!r}"
            others.append(line)
    return nodes, edges, others


def mermaid_unescape(label: str) -> str:
    """What Mermaid shows for a label: ``#name;``/``#123;`` entities, ``<br>`` line breaks."""
    assert '"' not in label
    assert "\n" not in label
    assert "<" not in label.replace("<br>", "")
    assert ">" not in label.replace("<br>", "")
    text = re.sub(r"#(\w+);", r"&\1;", label)
    text = re.sub(r"&(\d+);", r"&#\1;", text)
    return html.unescape(text.replace("<br>", "\n"))


def shown(text: str) -> str:
    """What a one-line-per-break renderer shows: line breaks as newlines, tabs as spaces."""
    return text.replace("\r\n", "\n").replace("\t", " ")


def test_mermaid_has_every_node_and_edge_with_escaped_labels(graph: nx.MultiDiGraph) -> None:
    nodes, edges, _ = parse_mermaid(to_mermaid(graph))
    ids = {node: f"n{index}" for index, node in enumerate(graph.nodes)}
    assert set(nodes) == set(ids.values())
    assert {ids[node]: node_label(node, data) for node, data in graph.nodes(data=True)} == {
        node: mermaid_unescape(label) for node, label in nodes.items()
    }
    assert [(source, mermaid_unescape(label), target) for source, _, label, target in edges] == [
        (ids[u], shown(edge_label(d)), ids[v]) for u, v, d in graph.edges(data=True)
    ]


def test_mermaid_arrows_classes_and_duplicates() -> None:
    nodes, edges, others = parse_mermaid(to_mermaid(scenario_graph("trigger-in-step")))
    assert len(nodes) == 3
    assert [arrow for _, arrow, _, _ in edges] == ["-.->", "-.->"]
    assert "    classDef st_completed fill:#009E73,stroke:#222222,color:#000000" in others
    assert "    class n0,n1,n2 st_completed" in others
    assert "    class n1,n2 duplicate" in others
    assert "    linkStyle 0,1 stroke:#CC0000,stroke-width:2.5px,stroke-dasharray:2 4" in others
    nodes, edges, others = parse_mermaid(to_mermaid(scenario_graph("durable-start")))
    assert [arrow for _, arrow, _, _ in edges] == ["-->"]
    assert not any("duplicate" in line or "linkStyle" in line for line in others)


def test_mermaid_escapes_what_its_entity_pass_and_html_would_read() -> None:
    text = to_mermaid(hostile_graph(), title='a "title"\n---\nnot: yaml')
    nodes, edges, _ = parse_mermaid(text)
    labels = [*nodes.values(), *(label for _, _, label, _ in edges)]
    for label in labels:
        # no raw syntax: quotes, brackets, pipes, comments, semicolons, colons or entity starts
        bare = re.sub(r"#\w+;", "", label.replace("<br>", ""))
        assert not set(bare) & set('"<>[](){}|;:%`\\#\n')
    assert "#quot;quoted#quot; #lt;key#gt;<br>with #123;braces#125; #92; back#124;slash#58;" in text
    assert text.splitlines()[1] == 'title: "a \\"title\\"\\n---\\nnot: yaml"'


# --------------------------------------------------------------------------- figures


def test_figure_bytes_in_every_format() -> None:
    figure = draw_execution_graph(execution_graph(hostile_runtime()), title="hostile")
    svg = figure_bytes(figure, "svg")
    assert ET.fromstring(svg).tag == "{http://www.w3.org/2000/svg}svg"
    assert svg == figure_bytes(figure, "svg")  # reproducible: fixed ID salt, no date
    assert figure_bytes(figure, "png").startswith(b"\x89PNG\r\n\x1a\n")
    assert figure_bytes(figure, "pdf").startswith(b"%PDF-")
    with pytest.raises(ValueError, match="svg, png, pdf"):
        figure_bytes(figure, "jpg")


def test_a_dollar_in_a_step_key_is_not_mathtext(tmp_path: Path) -> None:
    graph = nx.MultiDiGraph()
    graph.add_node("a", workflow_id="w", status="completed", origin="trigger")
    graph.add_node("b", workflow_id="w", status="pending", origin="start")
    graph.add_edge(
        "a", "b", key="k", kind="start", step_key="cost $\\frac{$", detached=False, duplicate=False
    )
    paths = export(graph, tmp_path, ["svg", "png"], stem="dollars", title="$x^$")
    assert paths["png"].read_bytes().startswith(b"\x89PNG")


# --------------------------------------------------------------------------- HTML

VOID = {"meta", "br", "hr", "img", "input", "link"}


class Page(HTMLParser):
    """Checks tags nest and close, and keeps the text and attributes it saw."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []
        self.text: list[str] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += attrs
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += attrs

    def handle_endtag(self, tag: str) -> None:
        assert self.stack, f"</{tag}> closes nothing"
        assert self.stack.pop() == tag, f"</{tag}> closes the wrong element"

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def parse_html(page: str) -> Page:
    parser = Page()
    parser.feed(page)
    parser.close()
    assert parser.stack == []
    return parser


@ys.workflow(CHILD_WORKFLOW)
def hostile_child(step: ys.StepRunner, params: object) -> Any:
    return (yield from step.run(RUNTIME_KEY, lambda: 1))


@ys.workflow(CALLER_WORKFLOW)
def hostile_caller(step: ys.StepRunner, params: object) -> Any:
    target = yield from step.start(RUNTIME_KEY, CHILD_WORKFLOW, None)
    return target.execution_id


def always_fails(run: SimulationRun) -> str:
    return f"{RUNTIME_KEY} </li></ul><script>alert(1)</script>"


HOSTILE_SCENARIO = ys.Scenario(
    name='hostile <scenario> "&amp;"',
    workflows=[hostile_caller, hostile_child],
    triggers=[ys.Trigger(CALLER_WORKFLOW, None, execution_id=CALLER)],
    invariants=[always_fails],
)


@pytest.fixture(scope="module")
def hostile_run() -> SimulationRun:
    return ys.simulate(HOSTILE_SCENARIO, seed=0, runtime="memory")


def test_html_report_escapes_every_piece_of_user_text(hostile_run: SimulationRun) -> None:
    page = html_report(hostile_run)
    parser = parse_html(page)
    text = "".join(parser.text)
    assert RUNTIME_KEY not in page  # never raw...
    assert html.escape(RUNTIME_KEY) in page  # ...always escaped
    assert "<script" not in page
    assert "script" not in parser.tags
    assert 'hostile <scenario> "&amp;"' in text
    assert "always_fails" in text
    assert f"{RUNTIME_KEY} </li></ul><script>alert(1)</script>" in text
    assert f"put_step: recorded step {RUNTIME_KEY}" in text
    assert parser.tags.count("tr") == len(hostile_run.trace) + 1
    assert "svg" in parser.tags
    assert parser.tags.count("svg") == 1


def test_html_report_is_self_contained(hostile_run: SimulationRun) -> None:
    timeline = '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>'
    page = html_report(hostile_run, timeline_svg=timeline)
    parser = parse_html(page)
    assert parser.tags.count("svg") == 2
    assert "<?xml" not in page
    assert "<!DOCTYPE svg" not in page
    assert not {"link", "script", "img", "iframe"} & set(parser.tags)
    for name, value in parser.attributes:
        if name in {"href", "src", "xlink:href"}:
            assert value is not None
            assert value.startswith("#"), f"{name}={value!r} points outside the page"


def test_html_report_of_a_good_run_says_so() -> None:
    run = ys.simulate(ys.load_scenario("durable-start"), seed=0, runtime="memory")
    page = html_report(run, graph_svg='<svg xmlns="http://www.w3.org/2000/svg"/>')
    text = "".join(parse_html(page).text)
    assert "durable-start, seed 0 (memory)" in text
    assert "ok: every invariant held" in text
    assert "None: every invariant held." in text
    with pytest.raises(ValueError, match="SVG"):
        html_report(run, graph_svg="<p>not svg</p>")


# --------------------------------------------------------------------------- export


def test_export_writes_every_format_of_a_run(tmp_path: Path, hostile_run: SimulationRun) -> None:
    paths = export(hostile_run, tmp_path / "out", FORMATS, stem="hostile")
    assert list(paths) == list(FORMATS)
    assert {path.name for path in paths.values()} == {
        "hostile.svg",
        "hostile.png",
        "hostile.pdf",
        "hostile.graphml",
        "hostile.json",
        "hostile.dot",
        "hostile.mmd",
        "hostile.html",
        "hostile.review.html",
    }
    graph = labelled(run_graph(hostile_run))  # the evidence and the pictures' labels added
    ET.fromstring(paths["svg"].read_bytes())
    assert paths["png"].read_bytes().startswith(b"\x89PNG")
    assert paths["pdf"].read_bytes().startswith(b"%PDF-")
    graphml = nx.read_graphml(paths["graphml"], force_multigraph=True)
    assert edge_set(graphml) == edge_set(graph)
    back = nx.node_link_graph(json.loads(paths["json"].read_text("utf-8")), edges="edges")
    assert edge_set(back) == edge_set(graph)
    dot = parse_dot(paths["dot"].read_text("utf-8"))
    assert [dot_unquote(e.get("label")) for e in dot.get_edges()] == [RUNTIME_KEY]
    assert {d["label"] for _, d in back.nodes(data=True)} == {
        f"{CALLER}\n{CALLER_WORKFLOW} · completed",
        f"{drawn_text.shown(start_target_id(CHILD_WORKFLOW, CALLER, RUNTIME_KEY))}\n"
        f"{CHILD_WORKFLOW} · completed",
    }
    assert 'hostile <scenario> "&amp;", seed 0' in dot_unquote(dot.get("label"))
    nodes, edges, _ = parse_mermaid(paths["mermaid"].read_text("utf-8"))
    assert (len(nodes), len(edges)) == (3, 1)  # the two executions and the totals' note
    assert nodes["totals"].startswith("totals<br>executions #40;2#41;#58; ")
    parse_html(paths["html"].read_text("utf-8"))
    parse_html(paths["review"].read_text("utf-8"))


def test_export_of_a_graph_and_its_refusals(tmp_path: Path) -> None:
    graph = scenario_graph("trigger-in-step")
    paths = export(graph, tmp_path, "dot, mermaid,dot", stem="bug", title="the bug")
    assert paths == {"dot": tmp_path / "bug.dot", "mermaid": tmp_path / "bug.mmd"}
    assert "the bug" in paths["mermaid"].read_text("utf-8")
    with pytest.raises(ValueError, match="unknown export format 'jpeg'") as refused:
        export(graph, tmp_path / "never", ["svg", "jpeg"], stem="bug")
    assert "svg, png, pdf, graphml, json, dot, mermaid, html" in str(refused.value)
    assert not (tmp_path / "never").exists()
    for format in ["html", "review"]:
        with pytest.raises(ValueError, match=f"the {format} export needs a SimulationRun"):
            export(graph, tmp_path, [format], stem="bug")
    for stem in ["", "..", "../escape", "a/b"]:
        with pytest.raises(ValueError, match="plain file name"):
            export(graph, tmp_path, ["dot"], stem=stem)
    assert set(EXTENSIONS) == set(FORMATS)


@pytest.mark.parametrize(
    ("kind", "detached", "line", "dot", "arrow"),
    [
        ("start", False, "owned", "solid", "-->"),
        ("start", True, "detached", "dashed", "-.->"),
        ("joined", False, "joined", "dashed", "-.->"),
        ("trigger", True, "trigger", "dotted", "-.->"),
    ],
)
def test_every_renderer_draws_an_edge_by_the_one_edge_rule(
    kind: str, detached: bool, line: str, dot: str, arrow: str
) -> None:
    # One rule (evidence.edge_line) says what an edge is; the picture, DOT and Mermaid each draw
    # those words their own way, a joined run included.
    from yieldstar_sim.views.evidence import edge_line

    graph = nx.MultiDiGraph()
    graph.add_node("a", workflow_id="w", status="completed", origin="trigger")
    graph.add_node("b", workflow_id="w", status="pending", origin="child")
    graph.add_edge("a", "b", key="k", step_key="k", kind=kind, detached=detached)
    assert edge_line(graph.edges["a", "b", "k"]) == line
    (edge,) = pydot.graph_from_dot_data(to_dot(graph))[0].get_edges()
    assert edge.get("style").strip('"') == dot
    assert f' {arrow}|"k"| ' in to_mermaid(graph)
