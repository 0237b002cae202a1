"""The runtime's records as of any trace event, derived from the trace alone.

A runtime keeps only its final state, so a stepper cannot ask it what the tables held at event
12. The trace holds every runtime call and its result, so folding it event by event gives the
records at each point: executions, start requests, steps, leases, wakes (when each execution is
claimable next) and the effect ledger. Rows that an event added or changed are marked.

>>> import yieldstar_sim as ys
>>> run = ys.simulate(ys.load_scenario("durable-start"), runtime="memory")
>>> book = RecordBook.of_run(run)
>>> (request,) = book.at(len(run.trace) - 1).table("start requests").rows
>>> request.cells[:2], request.cells[3:]
(('order-42 / ship', 'ship-order'), ('2', 'accepted @ship-order:order-42/ship'))
>>> request.cells[2]
'@ship-order:order-42/ship'
"""

from __future__ import annotations

import heapq
import html
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from yieldstar_sim.core.model import TERMINAL_STATUSES
from yieldstar_sim.views.record_fold import LINKS, TABLES, RecordFold, RowChange

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import networkx as nx

    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.trace import TraceEvent

#: The statuses after which an execution never runs workflow code again (the model's set).
TERMINAL = TERMINAL_STATUSES

#: Row marks: a row the current event added, and one whose cells it changed.
NEW, CHANGED = "new", "changed"

_MARK_STYLE = {
    NEW: "background:#d9f2e3",
    CHANGED: "background:#fff1b8",
}


@dataclass(frozen=True, slots=True)
class Row:
    """One record: a key that identifies it across events, its cells, and its mark (``"new"``,
    ``"changed"`` or ``""``) relative to the previous event."""

    key: str
    cells: tuple[str, ...]
    mark: str = ""


@dataclass(frozen=True, slots=True)
class Table:
    """One table of records as of an event."""

    name: str
    columns: tuple[str, ...]
    rows: tuple[Row, ...]
    note: str = ""

    @property
    def marked(self) -> list[Row]:
        """The rows the event added or changed."""
        return [row for row in self.rows if row.mark]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Every table as of one trace event (``seq``), at virtual time ``t``."""

    seq: int
    t: float
    tables: tuple[Table, ...]

    def table(self, name: str) -> Table:
        """The table called ``name`` (``"executions"``, ``"start requests"``, ``"steps"``,
        ``"leases"``, ``"wakes"``, ``"effects"``)."""
        for table in self.tables:
            if table.name == name:
                return table
        raise KeyError(f"no table {name!r}; the tables are {[t.name for t in self.tables]}")

    @property
    def changed(self) -> dict[str, list[Row]]:
        """For each table with marked rows, those rows."""
        return {table.name: table.marked for table in self.tables if table.marked}


# --------------------------------------------------------------------------- the book

#: Each table's columns and note, in the order the tables are shown.
COLUMNS: dict[str, tuple[tuple[str, ...], str]] = {
    "executions": (("execution", "workflow", "origin", "parent link", "status", "lease"), ""),
    "start requests": (
        ("request (caller / step)", "workflow", "target", "start calls", "last answer"),
        "one record per request ID: every call with it gets the first target",
    ),
    "steps": (("execution", "step", "status", "value", "recorded"), ""),
    "leases": (
        ("execution", "owner", "token", "claimed at", "expires at", "state"),
        "fenced writes must name the current token",
    ),
    "wakes": (
        ("execution", "claimable at", "because", "now"),
        "when each live execution can be claimed next",
    ),
    "effects": (
        ("#", "effect", "data", "made by", "worker", "t"),
        "the outside world's ledger: crashes never undo an effect",
    ),
    "world": (
        ("key", "value", "written by", "t"),
        "the outside world's key-value store: crashes never undo a write",
    ),
}

_Shown = dict[Hashable, tuple[int, str, tuple[str, ...]]]
"""One table's rows as of the cursor: ident -> (order, key, cells)."""


class RecordBook:
    """The records as of every event of a trace, folded once and replayed as row changes.

    The trace is folded on first use up to the event asked for, keeping only each event's
    changed rows (``changes(seq)``); ``at(seq)`` moves a cursor to the event by replaying
    changes forwards or undoing them backwards, so stepping costs what the events changed,
    not the size of the tables. ``lease_seconds`` and ``redelivery_delay`` are the
    scenario's (the trace does not repeat them).
    """

    def __init__(
        self,
        trace: Iterable[TraceEvent],
        *,
        lease_seconds: float = 30.0,
        redelivery_delay: float = 5.0,
    ) -> None:
        self.events: list[TraceEvent] = list(trace)
        self.lease_seconds = lease_seconds
        self.redelivery_delay = redelivery_delay
        self._fold = RecordFold(lease_seconds=lease_seconds, redelivery_delay=redelivery_delay)
        self._changes: list[list[RowChange]] = []
        self._rows: dict[str, _Shown] = {name: {} for name in (*TABLES, LINKS)}
        self._undo: list[list[tuple[str, Hashable, tuple[int, str, tuple[str, ...]] | None]]] = []
        self._cursor = -1
        self._last: Snapshot | None = None

    @classmethod
    def of_run(cls, run: SimulationRun) -> RecordBook:
        """The record book of a run, with its scenario's lease and redelivery times."""
        return cls(
            run.trace,
            lease_seconds=run.scenario.lease_seconds,
            redelivery_delay=run.scenario.redelivery_delay,
        )

    def __len__(self) -> int:
        return len(self.events)

    def changes(self, seq: int) -> list[RowChange]:
        """The rows event ``seq`` added, changed or removed (the graph's ``links`` too)."""
        if not 0 <= seq < len(self.events):
            raise IndexError(f"event {seq} is not in a trace of {len(self.events)} events")
        while len(self._changes) <= seq:
            self._changes.append(self._fold.apply(self.events[len(self._changes)]))
        return self._changes[seq]

    def at(self, seq: int, *, limit: int | None = None) -> Snapshot:
        """The records just after event ``seq``, rows marked against the event before.

        With ``limit``, a table of more rows holds its first ``limit`` and those the event
        changed, its note saying how many it has (a stepper over a big run)."""
        self.changes(seq)
        if self._last is not None and self._last.seq == seq and limit is None:
            return self._last
        self._move(seq)
        if limit is not None:
            return self._snapshot(seq, limit)
        self._last = self._snapshot(seq)
        return self._last

    def current(self, seq: int, table: str) -> dict[Hashable, tuple[str, ...]]:
        """One table's (or ``links``') rows just after event ``seq``, by record, unordered."""
        self.changes(seq)
        self._move(seq)
        return {ident: cells for ident, (_, _, cells) in self._rows[table].items()}

    def links(self, seq: int) -> list[tuple[str, ...]]:
        """The graph's edges just after event ``seq``: ``(source, target, step key, line,
        duplicate, start calls)`` rows (``record_fold.LINK_CELLS``), in the order they came."""
        self.changes(seq)
        self._move(seq)
        return [cells for _, _, cells in sorted(self._rows[LINKS].values())]

    def graph_at(self, seq: int, only: Iterable[str] | None = None) -> nx.MultiDiGraph:
        """The execution graph just after event ``seq``, from these records: a node per row of
        ``executions`` (its status is the record's, and ``lease`` says who holds it), an edge
        per link, with the attributes ``graph_from_trace`` gives them. ``only``: just these
        executions and the links between them."""
        import networkx as nx

        graph = nx.MultiDiGraph()
        self.changes(seq)
        self._move(seq)
        rows = self._rows["executions"]
        if only is None:
            ordered = sorted(rows.values())
        else:
            ordered = sorted(rows[execution_id] for execution_id in only if execution_id in rows)
        for _, _, cells in ordered:
            execution_id, workflow_id, origin, _, status, lease = cells
            graph.add_node(execution_id, workflow_id=workflow_id, status=status, origin=origin,
                           lease=lease)  # fmt: skip
        for source, target, step_key, line, duplicate, calls in self.links(seq):
            if source not in graph or target not in graph:
                continue
            kind = line if line in ("joined", "trigger", "continued") else "start"
            key = f"{step_key}#{target}" if kind == "trigger" else step_key
            graph.add_edge(source, target, key=key, kind=kind, step_key=step_key,
                           detached=line in ("detached", "trigger"), retained=kind != "trigger",
                           duplicate=duplicate == "duplicate", calls=int(calls))  # fmt: skip
        return graph

    def _move(self, seq: int) -> None:
        """Bring the cursor's rows to event ``seq``: replay changes forwards, undo backwards."""
        while self._cursor < seq:
            self._cursor += 1
            undo = []
            for change in self._changes[self._cursor]:
                rows = self._rows[change.table]
                undo.append((change.table, change.ident, rows.get(change.ident)))
                if change.cells is None:
                    rows.pop(change.ident, None)
                else:
                    rows[change.ident] = (change.order, change.key, change.cells)
            self._undo.append(undo)
        while self._cursor > seq:
            for table, ident, before in reversed(self._undo.pop()):
                if before is None:
                    self._rows[table].pop(ident, None)
                else:
                    self._rows[table][ident] = before
            self._cursor -= 1

    def _snapshot(self, seq: int, limit: int | None = None) -> Snapshot:
        event = self.events[seq]
        # A row this event changed is new if the event before had no such row.
        before = {(table, ident) for table, ident, old in self._undo[seq] if old is not None}
        marked = {
            (c.table, c.ident): CHANGED if (c.table, c.ident) in before else NEW
            for c in self._changes[seq]
            if c.cells is not None
        }
        tables = []
        for name in TABLES:
            rows = self._rows[name]
            if name == "world" and not rows:
                continue  # only for runs whose bodies wrote to the world's key-value store
            columns, note = COLUMNS[name]
            if limit is not None and len(rows) > limit:
                first = heapq.nsmallest(limit, rows.items(), key=_place)
                shown = {ident for ident, _ in first} | {
                    ident for table, ident in marked if table == name
                }
                ordered = sorted(((i, rows[i]) for i in shown if i in rows), key=_place)
                note = f"{note}; " if note else ""
                note += f"{len(ordered)} of {len(rows):,} rows shown: the first, and this event's"
            else:
                ordered = sorted(rows.items(), key=_place)
            tables.append(
                Table(
                    name,
                    columns,
                    tuple(
                        Row(key, cells, marked.get((name, ident), ""))
                        for ident, (_, key, cells) in ordered
                    ),
                    note,
                )
            )
        return Snapshot(event.seq, event.t, tuple(tables))


def _place(item: tuple[Hashable, tuple[int, str, tuple[str, ...]]]) -> tuple[int, str]:
    """Where a row stands in its table: its order, then its key."""
    return item[1][0], item[1][1]


# --------------------------------------------------------------------------- HTML


def table_html(table: Table) -> str:
    """One table as HTML, every value escaped; marked rows highlighted, with their mark in the
    first column and as the row's class (``<tr class="changed">``)."""
    head = "".join(
        f"<th style='text-align:left;padding:2px 6px;border-bottom:1px solid #999'>"
        f"{html.escape(column)}</th>"
        for column in ("", *table.columns)
    )
    body = []
    for row in table.rows:
        style = _MARK_STYLE.get(row.mark, "")
        badge = f"<b>{html.escape(row.mark)}</b>" if row.mark else ""
        cells = "".join(
            f"<td style='padding:2px 6px'>{html.escape(cell)}</td>" for cell in (*row.cells,)
        )
        body.append(
            f"<tr class='{html.escape(row.mark) or 'same'}' style='{style}'>"
            f"<td style='padding:2px 4px;font-size:85%;color:#555'>{badge}</td>{cells}</tr>"
        )
    if not body:
        span = len(table.columns) + 1
        body.append(
            f"<tr><td colspan='{span}' style='color:#777;padding:2px 6px'>none yet</td></tr>"
        )
    note = (
        f"<span style='font-weight:normal;color:#666;font-size:90%'> · {html.escape(table.note)}"
        "</span>"
        if table.note
        else ""
    )
    return (
        f"<div style='margin:0 0 10px 0'><div style='font-weight:bold;margin:2px 0'>"
        f"{html.escape(table.name)} ({len(table.rows)}){note}</div>"
        f"<table style='border-collapse:collapse;font-family:monospace;font-size:12px'>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def records_html(snapshot: Snapshot, names: Sequence[str] | None = None) -> str:
    """All tables of a snapshot (or those named) as one HTML block, side by side where they
    fit."""
    tables = [t for t in snapshot.tables if names is None or t.name in names]
    return (
        "<div class='ys-records' style='display:flex;flex-wrap:wrap;column-gap:24px'>"
        + "".join(table_html(table) for table in tables)
        + "</div>"
    )
