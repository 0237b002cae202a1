"""The execution graph around one event, as SVG markup: the stepper's graph for big runs.

A run of a thousand orders has two thousand executions: drawing them all with matplotlib at
every event costs seconds (ten per picture at 100 orders), and no one reads such a picture
at a slider's pace. So for a big run the stepper shows the executions the event is about (its
execution, that one's parent and children, and the rows the event changed), at most
``WINDOW`` of them, drawn as plain SVG from the record book's rows (the same state the
records tables show, so the two agree), with a line counting the whole graph by status.

>>> import yieldstar_sim as ys
>>> from yieldstar_sim.views.records import RecordBook
>>> run = ys.simulate(ys.load_scenario("durable-start"), runtime="memory")
>>> svg = graph_window_html(RecordBook.of_run(run), list(run.trace), 15)
>>> svg.count("<svg"), "@ship-order:order-42/ship" in svg
(1, True)
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from yieldstar_sim.views.evidence import edge_line
from yieldstar_sim.views.graph import EDGE_STYLES, STATUS_COLOURS
from yieldstar_sim.views.graph_text import _writable
from yieldstar_sim.views.review_data import layout

if TYPE_CHECKING:
    from yieldstar_sim.simulation.trace import TraceEvent
    from yieldstar_sim.views.records import RecordBook

#: At most this many executions around an event are drawn.
WINDOW = 12
_W, _H, _GRID_X, _GRID_Y, _MARGIN = 150.0, 50.0, 80.0, 80.0, 14.0
_DASHES = {"-": "", "--": "6 4", "-.": "6 3 2 3", ":": "2 3"}


def _text(value: object) -> str:
    """A label as SVG text: bidirectional and unwritable characters made visible, escaped."""
    return html.escape(_writable(str(value)))


def _around(book: RecordBook, events: list[TraceEvent], seq: int) -> list[str]:
    """The executions event ``seq`` is about, nearest first, at most ``WINDOW``."""
    executions = book.current(seq, "executions")
    chosen: list[str] = []

    def add(execution_id: str | None) -> None:
        if execution_id and execution_id in executions and execution_id not in chosen:
            chosen.append(execution_id)

    add(events[seq].execution_id)
    for change in book.changes(seq):
        ident: Any = change.ident  # an execution ID, or a tuple that starts with one
        if change.table in ("executions", "wakes"):
            add(str(ident))
        elif change.table in ("leases", "steps", "start requests"):
            add(str(ident[0]))
    for source, target, *_ in book.current(seq, "links").values():
        if target in chosen[:1]:
            add(source)
        if source in chosen[:1]:
            add(target)
    back = seq - 1
    while len(chosen) < min(4, len(executions)) and back >= 0:
        add(events[back].execution_id)  # an event about no execution: the ones just before
        back -= 1
    return chosen[:WINDOW]


def graph_window_html(book: RecordBook, events: list[TraceEvent], seq: int) -> str:
    """The executions around event ``seq`` as an SVG in a ``div``, with a line counting the
    whole graph by status; every label escaped."""
    counts: dict[str, int] = {}
    everyone = book.current(seq, "executions")
    for cells in everyone.values():
        counts[cells[4]] = counts.get(cells[4], 0) + 1
    chosen = _around(book, events, seq)
    window = book.graph_at(seq, only=chosen)
    summary = ", ".join(f"{count:,} {status}" for status, count in sorted(counts.items()))
    head = (
        f"<div style='font-size:13px;color:#444'>{len(chosen)} of {len(everyone):,} "
        f"executions: those this event is about; the whole graph: "
        f"{_text(summary or 'empty')}</div>"
    )
    if not chosen:
        return f"<div class='ys-graph-window'>{head}</div>"
    places = layout(window)
    left = min(x for x, _ in places.values())
    top = max(y for _, y in places.values())
    spot = {
        node: (_MARGIN + _W / 2 + (x - left) * _GRID_X, _MARGIN + _H / 2 + (top - y) * _GRID_Y)
        for node, (x, y) in places.items()
    }
    width = max(x for x, _ in spot.values()) + _W / 2 + _MARGIN
    height = max(y for _, y in spot.values()) + _H / 2 + _MARGIN
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='{height:.0f}' "
        "style='font-family:sans-serif'>"
    ]
    for source, target, data in window.edges(data=True):
        (x1, y1), (x2, y2) = spot[source], spot[target]
        colour = "#CC0000" if data["duplicate"] else "#333333"
        dash = _DASHES[EDGE_STYLES[edge_line(data)]]
        label = str(data["step_key"])
        if data.get("calls", 0) > 1:
            label += f" · {data['calls']} start calls, one target"
        parts.append(
            f"<line x1='{x1:.0f}' y1='{y1 + _H / 2:.0f}' x2='{x2:.0f}' y2='{y2 - _H / 2:.0f}' "
            f"stroke='{colour}' stroke-width='1.4' stroke-dasharray='{dash}'/>"
            # A white halo under the words: the edge ran through them.
            f"<text x='{(x1 + x2) / 2:.0f}' y='{(y1 + y2) / 2 + 4:.0f}' font-size='10' "
            "text-anchor='middle' fill='#333' stroke='#FFF' stroke-width='3' "
            f"paint-order='stroke'>{_text(label)}</text>"
        )
    for node, data in window.nodes(data=True):
        x, y = spot[node]
        leased = data["lease"] != "none"
        lines = [str(node), f"{data['workflow_id']} · {data['status']}"]
        if leased:
            lines.append("lease: " + str(data["lease"]).split(", token")[0])
        parts.append(
            f"<g class='ys-node' data-status='{_text(data['status'])}'>"
            f"<rect x='{x - _W / 2:.0f}' y='{y - _H / 2:.0f}' width='{_W:.0f}' height='{_H:.0f}' "
            f"rx='{0 if data['origin'] == 'trigger' else 7}' "
            f"fill='{STATUS_COLOURS.get(str(data['status']), '#FFFFFF')}' stroke='#222' "
            f"stroke-width='{3 if leased else 1}'/>"
            + "".join(
                f"<text x='{x:.0f}' y='{y - 10 + 13 * i:.0f}' font-size='{9.5 + 1.5 * (i == 0)}' "
                f"text-anchor='middle' font-weight='{'bold' if i == 0 else 'normal'}'>"
                f"{_text(text)}</text>"
                for i, text in enumerate(lines)
            )
            + "</g>"
        )
    parts.append("</svg>")
    return f"<div class='ys-graph-window'>{head}{''.join(parts)}</div>"
