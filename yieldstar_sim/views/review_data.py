"""What a review page's stepper carries: the trace once, compactly, and each event's changes.

A page that held every event's graph picture and tables grew with events times executions
(125 KB per event at 40 orders). This holds each event once, as columns (time, worker, kind,
choice point, the sentence and the trace line) and as the rows of the runtime's records it
changed (``RecordBook.changes``: added, changed, removed), with every name and cell written
once in a table of strings and referred to by number. The page's script replays the changes
as the slider moves to derive the state at any event, and draws the execution graph from the
same rows as the tables (an execution's node is its row in ``executions``, an edge a row of
``links``), so the graph and the tables cannot disagree. The node positions are the graph
module's layout of the run's final graph, so every event draws an execution where it stays.

>>> import yieldstar_sim as ys
>>> data = stepper_data(ys.simulate(ys.load_scenario("durable-start"), runtime="memory"))
>>> data["tables"][0][0], len(data["changes"]) == len(data["words"])
('executions', True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from yieldstar_sim.views.graph_text import _writable
from yieldstar_sim.views.record_fold import LINK_CELLS, LINKS, TABLES

if TYPE_CHECKING:
    from collections.abc import Hashable

    import networkx as nx

    from yieldstar_sim.simulation.result import SimulationRun

#: Trace kinds whose sentence is shown as bad news (red) or a warning (orange).
TONES = {"fault": "bad", "crash": "bad", "refused": "bad", "error": "warn"}
#: Pixels per unit of the graph layout: a node box is about 1.7 units wide.
GRID_X, GRID_Y = 78.0, 66.0


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
            self.texts.append(_writable(text))
        return found


def layout(graph: nx.MultiDiGraph) -> dict[Any, tuple[float, float]]:
    """The graph module's positions of ``graph``'s nodes (parents above children), so that the
    page draws the same layout as the pictures."""
    from yieldstar_sim.views.graph import NODE_SPACING
    from yieldstar_sim.views.layout import layered_layout

    return {node: (NODE_SPACING * x, y) for node, (x, y) in layered_layout(graph).positions.items()}


def _positions(final: dict[str, dict[Hashable, tuple[str, ...]]], names: Names) -> list[Any]:
    """Each execution's place: ``[name, x, y]`` in pixels, every coordinate at least 0."""
    import networkx as nx

    graph = nx.MultiDiGraph()
    for ident in final["executions"]:
        graph.add_node(ident)
    for ident, cells in final[LINKS].items():
        source, target = cells[0], cells[1]
        if source in graph and target in graph:
            graph.add_edge(source, target, key=ident)
    places = layout(graph)
    if not places:
        return []
    left = min(x for x, _ in places.values())
    top = max(y for _, y in places.values())
    return [
        [names.number(str(node)), round((x - left) * GRID_X, 1), round((top - y) * GRID_Y, 1)]
        for node, (x, y) in places.items()
    ]


def stepper_data(run: SimulationRun) -> dict[str, Any]:
    """The stepper's JSON: ``names`` (every string once), ``tables`` (name, columns, note),
    per event ``t``, ``worker``, ``kind``, ``point``, ``words``, ``text`` and ``changes``
    (per changed row ``[table, key, order, cell...]``, or ``[table, key]`` when it went;
    strings as indices into ``names``), and ``nodes``: each execution's place in the graph."""
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
    tables = [[name, *COLUMNS[name]] for name in TABLES]
    tables.append([LINKS, LINK_CELLS, "the graph's edges"])
    return {
        "tables": tables,
        "t": [f"{event.t:g}" for event in events],
        "worker": [names.number(event.worker) if event.worker else -1 for event in events],
        "kind": [names.number(str(event.kind)) for event in events],
        "tone": [TONES.get(str(event.kind), "") for event in events],
        "point": [-1 if event.point is None else event.point for event in events],
        "words": [_writable(sentence) for sentence in narrate(events)],
        "text": [_writable(event.text) for event in events],
        "changes": changes,
        "nodes": _positions(final, names),
        "names": names.texts,
    }
