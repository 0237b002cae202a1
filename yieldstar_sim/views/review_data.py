"""What a review page's stepper carries: the trace once, compactly, and each event's changes.

A page that held every event's graph picture and tables grew with events times executions
(125 KB per event at 40 orders). This holds each event once, as columns (time, worker, kind,
choice point, the sentence and the trace line) and as the rows of the runtime's records it
changed (``RecordBook.changes``: added, changed, removed), with every name and cell written
once in a table of strings and referred to by number. The page's script replays the changes
as the slider moves to derive the state at any event, and draws the execution graph from the
same rows as the tables (an execution's node is its row in ``executions``, an edge a row of
``links``), so the graph and the tables cannot disagree. The node positions are the graph
module's layout of the run's final graph, so every event draws an execution where it stays;
its families (``views/families.py``) are drawn once, as in the PNG and the SVG, at the layout
of the graph with each family one node, and a click draws every execution.

>>> import yieldstar_sim as ys
>>> data = stepper_data(ys.simulate(ys.load_scenario("durable-start"), runtime="memory"))
>>> data["tables"][0][0], len(data["changes"]) == len(data["words"])
('executions', True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from yieldstar_sim.views.drawn_text import MAX_CELL, shown
from yieldstar_sim.views.graph_text import _writable
from yieldstar_sim.views.record_fold import LINK_CELLS, LINKS, TABLES

if TYPE_CHECKING:
    from collections.abc import Hashable

    import networkx as nx

    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.views.layout import Layout

#: Trace kinds whose sentence is shown as bad news (red) or a warning (orange).
TONES = {"fault": "bad", "crash": "bad", "refused": "bad", "error": "warn"}
#: Pixels per unit of the graph layout: a node box is about 1.7 units wide (136 px) and 48 px
#: tall; a layer is 84 px, room for a two-line edge label between parent and child (at 66 the
#: label sat on the boxes, and the rows of a grid of siblings, 0.7 layers apart, overlapped).
GRID_X, GRID_Y = 78.0, 84.0


class Names:
    """Every distinct string once: ``number(text)`` is its index in ``texts``."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._index: dict[str, int] = {}

    def number(self, text: str) -> int:
        """The index of ``text`` (as the page shows it: unwritable characters made visible)."""
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.texts)
            self.texts.append(_writable(shown(text, MAX_CELL)))  # a page: long names cut
        return found


def layout(graph: nx.MultiDiGraph) -> dict[Any, tuple[float, float]]:
    """The graph module's positions of ``graph``'s nodes (parents above children), so that the
    page draws the same layout as the pictures."""
    from yieldstar_sim.views.graph import NODE_SPACING
    from yieldstar_sim.views.layout import layered_layout

    return {node: (NODE_SPACING * x, y) for node, (x, y) in layered_layout(graph).positions.items()}


def records_graph(
    final: dict[str, dict[Hashable, tuple[str, ...]]], run: SimulationRun
) -> nx.MultiDiGraph:
    """The run's final execution graph as the page's rows say it (an execution's row, a
    link's row), with the evidence the pictures mark (faults, retries, violations): the graph
    whose families and layout the page draws, the pictures' own."""
    import networkx as nx

    from yieldstar_sim.views.evidence import mark_trace_evidence, mark_violations

    graph = nx.MultiDiGraph()
    for ident, cells in final["executions"].items():
        graph.add_node(ident, workflow_id=cells[1], origin=cells[2], status=cells[4])
    for ident, cells in final[LINKS].items():
        source, target, step_key, line, duplicate, calls = cells[:6]
        if source in graph and target in graph:
            # Keyed as graph_from_trace keys its edges (the step key; a trigger's with its
            # target): the layout orders siblings by it.
            key = ident[2] if isinstance(ident, tuple) else ident
            graph.add_edge(
                source, target, key=key, step_key=step_key, detached=line == "detached",
                kind=line if line in ("trigger", "joined", "continued") else "start",
                duplicate=duplicate == "duplicate", calls=int(calls or 1),
            )  # fmt: skip
    mark_trace_evidence(graph, run.trace)
    mark_violations(graph, run.violations)
    return graph


def _places(graph: nx.MultiDiGraph, names: Names, laid: Layout | None = None) -> list[Any]:
    """Each node's place: ``[name, x, y]`` in pixels, every coordinate at least 0 (``laid``:
    the graph's layered layout, if the caller has it)."""
    from yieldstar_sim.views.graph import NODE_SPACING
    from yieldstar_sim.views.layout import layered_layout

    positions = (laid or layered_layout(graph)).positions
    places = {node: (NODE_SPACING * x, y) for node, (x, y) in positions.items()}
    if not places:
        return []
    left = min(x for x, _ in places.values())
    top = max(y for _, y in places.values())
    return [
        [names.number(str(node)), round((x - left) * GRID_X, 1), round((top - y) * GRID_Y, 1)]
        for node, (x, y) in places.items()
    ]


def _graph_places(graph: nx.MultiDiGraph, names: Names) -> tuple[list[Any], list[Any], list[Any]]:
    """Every execution's place, and the families of ``graph`` as the page draws them with the
    places of the graph with each family drawn once (``[]`` and ``[]`` when there are none).
    A family is ``[node, shape, members, executions, parent, edge label, line, span]`` (names'
    indices; parent -1 when nobody started them; span: its members in words, as ranges that
    hold none drawn outside it, ``Family.span``)."""
    from yieldstar_sim.views.evidence import edge_line
    from yieldstar_sim.views.families import collapse_families, families
    from yieldstar_sim.views.layout import layered_layout

    laid = layered_layout(graph)  # once: the families are found on it too
    every = _places(graph, names, laid)
    found = families(graph, layout=laid)
    if not found:
        return every, [], []
    drawn = collapse_families(graph, found=found)
    rows = []
    for family in found:
        parent, label, line = -1, -1, ""
        for source, _, data in drawn.in_edges(family.node, data=True):
            parent, label = names.number(str(source)), names.number(str(data["step_key"]))
            line = edge_line(data)
        rows.append(
            [
                names.number(family.node),
                names.number(family.shape),
                [names.number(str(member)) for member in family.members],
                [names.number(str(execution)) for execution in family.executions],
                parent,
                label,
                line,
                names.number(family.span),
            ]
        )
    return every, rows, _places(drawn, names)


def stepper_data(run: SimulationRun) -> dict[str, Any]:
    """The stepper's JSON: ``names`` (every string once), ``tables`` (name, columns, note),
    per event ``t``, ``worker``, ``kind``, ``point``, ``words``, ``text`` and ``changes``
    (per changed row ``[table, key, order, cell...]``, or ``[table, key]`` when it went;
    strings as indices into ``names``), ``nodes``: each execution's place in the graph,
    ``families`` and ``grouped``: the families of alike executions and the places of the
    graph with each drawn once (both empty when the run has none), and ``violations``: each
    violation's event, executions and sentence, for a link to it."""
    from yieldstar_sim.views.records import COLUMNS, RecordBook
    from yieldstar_sim.views.words import narrate

    events = list(run.trace)
    book = RecordBook.of_run(run)
    names = Names()
    table_index = {name: index for index, name in enumerate((*TABLES, LINKS))}
    final: dict[str, dict[Hashable, tuple[str, ...]]] = {name: {} for name in table_index}
    changes: list[list[list[int]]] = []
    for seq in range(len(events)):
        row_changes = []
        for change in book.changes(seq):
            numbered = [table_index[change.table], names.number(change.key)]
            if change.cells is None:
                final[change.table].pop(change.ident, None)
            else:
                final[change.table][change.ident] = change.cells
                numbered.append(change.order)
                numbered.extend(names.number(cell) for cell in change.cells)
            row_changes.append(numbered)
        changes.append(row_changes)
    graph = records_graph(final, run)
    nodes, families, grouped = _graph_places(graph, names)
    tables = [[name, *COLUMNS[name]] for name in TABLES]
    tables.append([LINKS, LINK_CELLS, "the graph's edges"])
    return {
        "tables": tables,
        "t": [f"{event.t:g}" for event in events],
        "worker": [names.number(event.worker) if event.worker else -1 for event in events],
        "kind": [names.number(str(event.kind)) for event in events],
        "tone": [TONES.get(str(event.kind), "") for event in events],
        "point": [-1 if event.point is None else event.point for event in events],
        # Sentences for people, each cut to a page's cell: a 100 KB label in every event made
        # a 7 MB page; the trace keeps them whole.
        "words": [_writable(shown(sentence, MAX_CELL)) for sentence in narrate(events)],
        "text": [_writable(shown(event.text, MAX_CELL)) for event in events],
        "changes": changes,
        "nodes": nodes,
        "families": families,
        "grouped": grouped,
        "violations": _violations(run, graph, names),
        "names": names.texts,
    }


def _violations(run: SimulationRun, graph: nx.MultiDiGraph, names: Names) -> list[Any]:
    """Each violation as ``[event, [execution...], sentence]``: where in the trace it came
    true (``evidence.violation_events``), the executions it names (names' indices: the
    event's own first, then in natural order) and its sentence, for a link to it
    (``#violation=1``)."""
    from yieldstar_sim.views.evidence import violation_events, violation_names
    from yieldstar_sim.views.layout import natural

    events = list(run.trace)
    rows = []
    for violation, seq in zip(
        run.violations, violation_events(run.violations, events), strict=True
    ):
        # The execution of the event where it came true first (the link finds that one).
        here = events[seq].execution_id if 0 <= seq < len(events) else None
        named = sorted(
            (name for name in violation_names(violation) if name in graph),
            key=lambda name: (name != here, natural(name), name),
        )
        rows.append(
            [
                seq,
                [names.number(name) for name in named],
                names.number(f"{violation.invariant}: {violation.message}"),
            ]
        )
    return rows
