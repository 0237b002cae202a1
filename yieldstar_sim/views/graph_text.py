"""The execution graph as text other tools read: GraphML, node-link JSON, Graphviz DOT and
Mermaid. Execution IDs, workflow IDs and step keys are user input: every format escapes them by
its own rules (quotes, backslashes, angle brackets, braces, pipes, newlines, non-ASCII), so a
hostile step key stays a label and never becomes syntax.

>>> import networkx as nx
>>> graph = nx.MultiDiGraph()
>>> graph.add_node("order-42", workflow_id="charge-order", status="pending", origin="trigger")
>>> print(to_mermaid(graph), end="")  # doctest: +ELLIPSIS
flowchart TD
    n0["order-42<br>charge-order · pending"]
...
"""

from __future__ import annotations

import io
import json
import re
from typing import TYPE_CHECKING, Any

from yieldstar_sim.views.drawn_text import MAX_LINE, shown
from yieldstar_sim.views.evidence import edge_label, edge_line, node_label
from yieldstar_sim.views.families import collapse_families, families
from yieldstar_sim.views.graph import (
    CONTINUED_COLOUR,
    DUPLICATE_COLOUR,
    STATUS_COLOURS,
    VIOLATION_OUTLINE,
)

# networkx loads where a graph is made, not at import: ``import yieldstar_sim`` imports the views
# (through the widgets and the composition root) and must stay quick.
if TYPE_CHECKING:
    from collections.abc import Iterator

    import networkx as nx

_EDGE_COLOUR = "#333333"
_PRUNED_COLOUR = "#FFFFFF"

# --------------------------------------------------------------------------- shared helpers

# Characters no XML 1.0 document can hold, not even as character references: the C0 controls
# other than tab, newline and carriage return, lone surrogates, and U+FFFE/U+FFFF. They are
# shown as their Unicode "control pictures" (U+2400 + code) or as U+FFFD.
_UNWRITABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


# Bidirectional formatting characters reorder the text around them wherever it is displayed
# (an ID "order-\u202e24" shows as "order-42"); labels show them as [U+202E] instead (no
# character any format treats as syntax, so it can go into SVG and XML as it is).
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _bidi_visible(text: str) -> str:
    """``text`` with each bidirectional formatting character written as ``[U+XXXX]``."""
    return _BIDI.sub(lambda match: f"[U+{ord(match.group()):04X}]", text)


def _writable(text: str) -> str:
    """``text`` with the characters no XML or UTF-8 file can hold, and the bidirectional
    formatting characters that would reorder it on screen, made visible instead."""

    if text.isascii() and text.isprintable():  # the commonest case: nothing to replace
        return text

    def picture(match: re.Match[str]) -> str:
        code = ord(match.group())
        return chr(0x2400 + code) if code < 0x20 else "\ufffd"

    return _bidi_visible(_UNWRITABLE.sub(picture, text))


def _one_line(text: str) -> str:
    """``text`` with its line breaks (``\\r\\n``, ``\\r``, ``\\n``) as ``\\n``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _node_label(node: object, data: dict[str, Any]) -> str:
    """The text a drawn node shows, as in the pictures: ID (or a family's count and shape),
    workflow and status, then its evidence (faults, retries, a violation naming it)."""
    return node_label(node, data)


def _edge_label(key: object, data: dict[str, Any]) -> str:
    """The text a drawn edge shows, as in the pictures: the step key that made the link, then
    its start calls or duplicate admissions."""
    return edge_label(key, data)


#: A family's node data a drawn export leaves out: every execution it stands for (the data
#: exports, GraphML and JSON, name each execution's family instead).
_FAMILY_ONLY = frozenset({"members", "executions"})


def labelled(graph: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """A copy of ``graph`` for the data exports (GraphML, JSON): every execution kept, each
    node and edge with the ``label`` the pictures show, and each execution of a family with
    ``family``, the name of the box it is drawn in."""
    copy = graph.copy()
    for node, data in copy.nodes(data=True):
        data["label"] = node_label(node, data)
    for _, _, key, data in copy.edges(keys=True, data=True):
        data["label"] = edge_label(key, data)
    for family in families(graph):
        for execution in family.executions:
            copy.nodes[execution]["family"] = family.node
    return copy


def totals_lines(graph: nx.MultiDiGraph) -> list[str]:
    """The run's totals in words, from the graph's ``totals`` (``run_graph`` sets them), under
    a heading; none for a graph that has none."""
    from yieldstar_sim.simulation.totals import Totals

    data = graph.graph.get("totals")
    return ["totals", *Totals.from_json(data).lines()] if data else []


def _free_name(graph: nx.MultiDiGraph, name: str) -> str:
    """``name``, or ``name (2)``... whichever no node of ``graph`` has."""
    taken = {str(node) for node in graph.nodes}
    chosen, number = name, 2
    while chosen in taken:
        chosen, number = f"{name} ({number})", number + 1
    return chosen


def _edges(graph: nx.MultiDiGraph) -> Iterator[tuple[Any, Any, Any, dict[str, Any]]]:
    """Every edge with its key and data, in the graph's order."""
    yield from graph.edges(keys=True, data=True)


def _unique(names: dict[object, str], what: str) -> None:
    """Refuse an export in which two distinct nodes would get one name."""
    seen: dict[str, object] = {}
    for node, name in names.items():
        if name in seen:
            raise ValueError(
                f"{what}: nodes {seen[name]!r} and {node!r} would both be written as {name!r}"
            )
        seen[name] = node


# --------------------------------------------------------------------------- GraphML


def _graphml_value(value: object) -> bool | int | float | str:
    """A GraphML-writable attribute value: scalars kept, None as ``""``, the rest as JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return _writable(str(value))
    return _writable(json.dumps(value, sort_keys=True, default=str, ensure_ascii=False))


def to_graphml(graph: nx.MultiDiGraph) -> str:
    """The graph as a GraphML document (keys kept as edge IDs, flags as booleans).

    GraphML holds scalars only: ``None`` becomes ``""`` (which a reader sees as a missing
    value), other non-scalars their JSON text, and the few characters XML cannot hold at all
    (ASCII control characters other than tab and line breaks) their Unicode control pictures.

    >>> import networkx as nx
    >>> graph = nx.MultiDiGraph()
    >>> graph.add_edge("a", "b", key="ship", step_key="ship", detached=False)
    'ship'
    >>> text = to_graphml(graph)
    >>> back = nx.read_graphml(io.BytesIO(text.encode()), force_multigraph=True)
    >>> sorted(back.edges(keys=True, data=True))
    [('a', 'b', 'ship', {'step_key': 'ship', 'detached': False})]
    """
    import networkx as nx

    names = {node: _writable(str(node)) for node in graph.nodes}
    _unique(names, "GraphML")
    ready = nx.MultiDiGraph()
    ready.graph.update(
        {
            _writable(str(name)): _graphml_value(value)
            for name, value in graph.graph.items()
            if name not in {"node_default", "edge_default", "id"}
        }
    )
    for node, data in graph.nodes(data=True):
        ready.add_node(
            names[node], **{_writable(str(k)): _graphml_value(v) for k, v in data.items()}
        )
    for source, target, key, data in _edges(graph):
        ready.add_edge(
            names[source],
            names[target],
            key=_writable(str(key)),
            **{_writable(str(k)): _graphml_value(v) for k, v in data.items() if k != "key"},
        )
    buffer = io.BytesIO()
    nx.write_graphml(ready, buffer, encoding="utf-8")
    # XML parsers turn a raw carriage return in text into a newline: write it as a reference.
    # (Attribute values already have theirs escaped; a raw CR can only be in element text.)
    return buffer.getvalue().decode("utf-8").replace("\r", "&#13;")


# --------------------------------------------------------------------------- node-link JSON


def to_node_link_json(graph: nx.MultiDiGraph) -> str:
    """The graph as networkx node-link JSON (``edges`` list, keys kept, keys sorted).

    >>> import networkx as nx
    >>> graph = nx.MultiDiGraph()
    >>> graph.add_edge("a", "b", key="ship")
    'ship'
    >>> data = json.loads(to_node_link_json(graph))
    >>> data["edges"], data["multigraph"]
    ([{'key': 'ship', 'source': 'a', 'target': 'b'}], True)
    """
    import networkx as nx

    data = nx.node_link_data(graph, edges="edges")
    text = json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: JSON can still say them, as \\u escapes
        text = json.dumps(data, sort_keys=True, indent=2, default=str)
    # Bidirectional formatting characters as \\u escapes: the same data, shown as it is.
    return _BIDI.sub(lambda match: f"\\u{ord(match.group()):04x}", text) + "\n"


# --------------------------------------------------------------------------- DOT

_DOT_ESCAPES = {ord("\\"): "\\\\", ord('"'): '\\"', ord("\n"): "\\n", ord("\r"): "\\r"}
_DOT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOT_DISPLAY = frozenset(
    {"label", "shape", "style", "color", "fillcolor", "fontcolor", "penwidth", "key"}
)


def _dot_quote(value: object) -> str:
    """``value`` as a double-quoted DOT string: backslash, quote and line breaks escaped.

    pydot leaves a string that is already quoted as it is, so nothing it does to unquoted
    strings (split at colons into node ports, read ``<...>`` as an HTML label, leave
    backslashes unescaped) can reach user text.

    >>> print(_dot_quote('a "b" \\\\ c:d\\n<e>'))
    "a \\"b\\" \\\\ c:d\\n<e>"
    """
    if isinstance(value, bool):
        value = "true" if value else "false"
    return '"' + _writable(str(value)).translate(_DOT_ESCAPES) + '"'


def _dot_data(data: dict[str, Any]) -> dict[str, str]:
    """The data attributes DOT can carry: those named like DOT identifiers, values quoted."""
    return {
        name: _dot_quote("" if value is None else value)
        for name, value in data.items()
        if isinstance(name, str) and _DOT_NAME.fullmatch(name) and name not in _DOT_DISPLAY
    }


#: Graphviz line styles by ``evidence.edge_line`` (DOT has no dash-dot: a joined run is dashed like
#: a detached one, neither owned).
_DOT_LINES = {
    "owned": "solid", "detached": "dashed", "joined": "dashed", "trigger": "dotted",
    "continued": "bold",
}  # fmt: skip


def to_dot(graph: nx.MultiDiGraph, *, title: str = "", group: bool = True) -> str:
    """The graph as Graphviz DOT text, drawn like ``draw_execution_graph`` draws it.

    Nodes are boxes (rounded when started) labelled ``id\\nworkflow · status`` and filled by
    status; edges are labelled with their step key, dashed when detached or joined (not
    owned), dotted when a non-durable trigger, bold blue from a run that continued as new to
    its instance's next run, red when their step admitted several executions.
    Labels carry the evidence the pictures show (``mail\\n2 start calls, one target``, a
    fault, a retry); an execution a violation names is outlined in red. With ``group`` (the
    default), families of alike executions are one node each (``collapse_families``), as in
    the pictures, and a run's totals (the graph's ``totals``) are a note beside it. The data
    attributes (``workflow_id``, ``step_key``, ``detached``...) are kept; every ID and value
    is quoted.
    Labels show exactly; Graphviz itself unescapes ``\\\\`` in labels only, so an ID or data
    value holding a backslash keeps it doubled in Graphviz's own view (pydot reads it exactly).

    >>> import networkx as nx
    >>> graph = nx.MultiDiGraph()
    >>> graph.add_node("a:1", workflow_id="w", status="completed", origin="trigger")
    >>> graph.add_node("b", workflow_id="w", status="pending", origin="start")
    >>> graph.add_edge("a:1", "b", key='k"1', step_key='k"1', kind="start", detached=True)
    'k"1'
    >>> print(to_dot(graph), end="")  # doctest: +ELLIPSIS
    digraph {
    ...
    "a:1" [workflow_id="w", status="completed", origin="trigger", label="a:1\\nw · completed", ...];
    ...
    "a:1" -> "b" [key="k\\"1", step_key="k\\"1", kind="start", detached="true", label="k\\"1", ...];
    }
    """
    import networkx as nx
    from networkx.drawing.nx_pydot import to_pydot

    if group:
        graph = collapse_families(graph)
    names = {node: _dot_quote(node) for node in graph.nodes}
    _unique(names, "DOT")
    ready = nx.MultiDiGraph()
    graph_attributes = {"rankdir": '"TB"'}
    if title:
        label = _dot_quote(_one_line(shown(title, MAX_LINE)))
        graph_attributes |= {"label": label, "labelloc": '"t"'}
    ready.graph["graph"] = graph_attributes
    ready.graph["node"] = {"shape": '"box"', "fontname": '"Helvetica"', "fontsize": '"10"'}
    ready.graph["edge"] = {"fontname": '"Helvetica"', "fontsize": '"9"'}
    for node, data in graph.nodes(data=True):
        status = str(data.get("status", ""))
        started = data.get("origin") == "start"
        outline = {}
        if data.get("violation"):
            outline = {"color": _dot_quote(DUPLICATE_COLOUR), "penwidth": f'"{VIOLATION_OUTLINE}"'}
        ready.add_node(
            names[node],
            **_dot_data({k: v for k, v in data.items() if k not in _FAMILY_ONLY}),
            label=_dot_quote(_one_line(_node_label(node, data))),
            style=_dot_quote("filled,rounded" if started else "filled"),
            fillcolor=_dot_quote(STATUS_COLOURS.get(status, _PRUNED_COLOUR)),
            **outline,
        )
    for source, target, key, data in _edges(graph):
        duplicate = bool(data.get("duplicate"))
        line = edge_line(data)
        colour = DUPLICATE_COLOUR if duplicate else _EDGE_COLOUR
        if line == "continued":
            colour = CONTINUED_COLOUR
        style = _DOT_LINES[line]
        ready.add_edge(
            names[source],
            names[target],
            key=_dot_quote(key),
            **_dot_data(data),
            label=_dot_quote(_one_line(_edge_label(key, data))),
            style=_dot_quote(style),
            color=_dot_quote(colour),
            fontcolor=_dot_quote(colour),
            penwidth=_dot_quote("2.2" if duplicate else "1.4"),
        )
    said = totals_lines(graph)
    if said:  # beside the graph, as in the pictures: a note, linked to nothing
        ready.add_node(
            _dot_quote(_free_name(graph, "totals")),
            label=_dot_quote("\n".join(said)),
            shape='"note"',
            style='"filled"',
            fillcolor='"#FFFFFF"',
            fontname='"Courier"',
        )
    text: str = to_pydot(ready).to_string()
    return text if text.endswith("\n") else text + "\n"


# --------------------------------------------------------------------------- Mermaid

# Mermaid decodes ``#name;`` and ``#123;`` to HTML entities before it parses; these make every
# character that Mermaid or HTML could read as syntax an entity. The colon and semicolon are
# escaped too: Mermaid's entity pre-pass treats a line matching ``style...:...#...;`` as a style
# statement and drops its last semicolon, which a label could otherwise trigger.
_MERMAID_ESCAPES = {
    ord('"'): "#quot;",
    ord("#"): "#35;",
    ord("&"): "#amp;",
    ord("<"): "#lt;",
    ord(">"): "#gt;",
    ord("\\"): "#92;",
    ord("{"): "#123;",
    ord("}"): "#125;",
    ord("["): "#91;",
    ord("]"): "#93;",
    ord("("): "#40;",
    ord(")"): "#41;",
    ord("|"): "#124;",
    ord("`"): "#96;",
    ord(":"): "#58;",
    ord(";"): "#59;",
    ord("%"): "#37;",
    ord("\t"): " ",
    ord("\n"): "<br>",
}
_MERMAID_CLASS = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
#: Mermaid's default ``maxEdges``: a flowchart with more edges is not rendered.
MERMAID_MAX_EDGES = 500


def _mermaid_text(text: object) -> str:
    """``text`` for inside a Mermaid ``"..."`` label: entities for syntax, ``<br>`` for breaks.

    >>> _mermaid_text('a "b" <c>\\n{d}|e#')
    'a #quot;b#quot; #lt;c#gt;<br>#123;d#125;#124;e#35;'
    """
    return _one_line(_writable(str(text))).translate(_MERMAID_ESCAPES)


def _status_classes(statuses: Iterator[str]) -> dict[str, str]:
    """A Mermaid class name for each status: ``st_<status>``, or ``st_<n>`` if not a name."""
    classes: dict[str, str] = {}
    for status in statuses:
        if status not in classes:
            readable = _MERMAID_CLASS.fullmatch(status) is not None
            classes[status] = f"st_{status}" if readable else f"st_{len(classes)}"
    return classes


def to_mermaid(graph: nx.MultiDiGraph, *, title: str = "", group: bool = True) -> str:
    """The graph as a Mermaid ``flowchart TD`` for Markdown design documents.

    Nodes get generated IDs (``n0``, ``n1``... in graph order) and quoted labels
    ``id<br>workflow · status`` (rounded when started); edges are ``-->|"step key"|``, or
    ``-.->`` when detached, joined or a non-durable trigger (triggers also dashed finer),
    ``==>`` in blue from a run that continued as new to its instance's next run; a
    run's totals (the graph's ``totals``) are a note linked to nothing. Labels use
    Mermaid's entity codes (``#quot;``, ``#lt;``, ``#35;``...) for every character that could
    be syntax. One class per status colours the nodes; ``duplicate`` outlines in red the
    executions a step admitted more than once, whose edges are red too, ``violation`` those a
    violation names. Labels carry the evidence the pictures show (start calls, faults,
    retries). With ``group`` (the default) each family of alike executions is one node, as in
    the pictures, which keeps a big run within Mermaid's default limit of 500 edges; a
    diagram still past it says so in a comment under its first line.

    >>> import networkx as nx
    >>> graph = nx.MultiDiGraph()
    >>> graph.add_node("a", workflow_id="w", status="completed", origin="trigger")
    >>> print(to_mermaid(graph), end="")
    flowchart TD
        n0["a<br>w · completed"]
        classDef st_completed fill:#009E73,stroke:#222222,color:#000000
        class n0 st_completed
    """
    if group:
        graph = collapse_families(graph)
    lines: list[str] = []
    if title:
        # A JSON string is a YAML double-quoted scalar: the title cannot end the front matter.
        drawn = _one_line(_writable(shown(title, MAX_LINE)))
        lines += ["---", "title: " + json.dumps(drawn), "---"]
    lines.append("flowchart TD")
    if graph.number_of_edges() > MERMAID_MAX_EDGES:
        lines.append(
            f"    %% {graph.number_of_edges()} edges: past Mermaid's default maxEdges "
            f"({MERMAID_MAX_EDGES}); raise it in the Mermaid configuration to render this"
        )
    ids = {node: f"n{index}" for index, node in enumerate(graph.nodes)}
    for node, data in graph.nodes(data=True):
        label = _mermaid_text(_node_label(node, data))
        opening, closing = ("(", ")") if data.get("origin") == "start" else ("[", "]")
        lines.append(f'    {ids[node]}{opening}"{label}"{closing}')
    said = totals_lines(graph)
    if said:  # beside the graph, as in the pictures: a note linked to nothing
        lines.append(f'    totals["{_mermaid_text(chr(10).join(said))}"]')
    link_styles: dict[str, list[int]] = {}
    duplicates: list[str] = []
    for index, (source, target, key, data) in enumerate(_edges(graph)):
        line = edge_line(data)
        trigger = line == "trigger"
        arrow = {"owned": "-->", "continued": "==>"}.get(line, "-.->")
        label = _mermaid_text(_edge_label(key, data))
        lines.append(f'    {ids[source]} {arrow}|"{label}"| {ids[target]}')
        style = []
        if data.get("duplicate"):
            style.append(f"stroke:{DUPLICATE_COLOUR},stroke-width:2.5px")
            duplicates += [ids[target]] if ids[target] not in duplicates else []
        if trigger:
            style.append("stroke-dasharray:2 4")
        if line == "continued" and not data.get("duplicate"):
            style.append(f"stroke:{CONTINUED_COLOUR}")
        if style:
            link_styles.setdefault(",".join(style), []).append(index)
    classes = _status_classes(str(data.get("status", "")) for _, data in graph.nodes(data=True))
    for status, name in classes.items():
        colour = STATUS_COLOURS.get(status, _PRUNED_COLOUR)
        members = ",".join(
            ids[node] for node, data in graph.nodes(data=True) if str(data.get("status")) == status
        )
        lines.append(f"    classDef {name} fill:{colour},stroke:#222222,color:#000000")
        lines.append(f"    class {members} {name}")
    if duplicates:
        lines.append(f"    classDef duplicate stroke:{DUPLICATE_COLOUR},stroke-width:3px")
        lines.append(f"    class {','.join(duplicates)} duplicate")
    named = [ids[node] for node, data in graph.nodes(data=True) if data.get("violation")]
    if named:
        lines.append(
            f"    classDef violation stroke:{DUPLICATE_COLOUR},stroke-width:4px,"
            "stroke-dasharray:6 3"
        )
        lines.append(f"    class {','.join(named)} violation")
    if said:
        lines.append("    classDef totals fill:#FFFFFF,stroke:#999999,color:#222222")
        lines.append("    class totals totals")
    for css, indices in link_styles.items():
        lines.append(f"    linkStyle {','.join(map(str, indices))} {css}")
    return "\n".join(lines) + "\n"
