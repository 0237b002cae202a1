"""The single-fault grid folded to a size a reader can take in (the picture's and the
notebook's table, ``report_html``): choice points (rows) x fault
kinds (columns), where choice points whose labels differ only in their numbers share one row
once there are more than ``GRID_ROWS`` of them.

A review-size run (100 orders on 3 workers) has thousands of choice points; one row each drew
a grid 31,000 pixels high. Folded, "100 x w# put_step order-#/charge" says in one row that a
crash before any order's charge is recorded breaks the run, and how many of those points do.

>>> rows = grid_rows(
...     ["w1 put_step order-1/charge", "w2 put_step order-2/charge", "w1 claim"],
...     ["crash"],
...     {("w1 put_step order-1/charge", "crash"): "violated",
...      ("w2 put_step order-2/charge", "crash"): "ok",
...      ("w1 claim", "crash"): "ok"},
...     at_most=2,
... )
>>> [(row.label, row.verdict("crash"), row.count("crash")) for row in rows]
[('2 \u00d7 w# put_step order-#/charge', 'violated', (1, 2)), ('w1 claim', 'ok', (1, 1))]
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from yieldstar_sim.simulation.faults import FAULT_KINDS

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from yieldstar_sim.simulation.explorer import ExplorationReport

#: Rows a grid shows one choice point each; past it, choice points whose labels differ only
#: in their numbers are one row.
GRID_ROWS = 60
#: Verdicts, the one a reader must see first first: a folded cell shows its worst.
SEVERITY = ("violated", "incomplete", "ok", "equivalent")

_NUMBER = re.compile(r"\d+")


@dataclass(frozen=True)
class GridRow:
    """One row of the grid: a choice point, or every choice point of one pattern.

    ``label`` is the choice point's label, or ``"100 \u00d7 w# put_step order-#/charge"``;
    ``points`` the labels it stands for, in run order; ``cells`` how many of its single-fault
    schedules ended in each verdict, per fault kind.
    """

    label: str
    points: tuple[str, ...]
    cells: dict[str, dict[str, int]] = field(default_factory=dict)

    def verdict(self, kind: str) -> str | None:
        """The worst verdict of the row's schedules with a fault of ``kind`` (None: none ran)."""
        counts = self.cells.get(kind, {})
        return next((verdict for verdict in SEVERITY if counts.get(verdict)), None)

    def count(self, kind: str) -> tuple[int, int]:
        """How many of the row's schedules with a fault of ``kind`` ended in its worst verdict,
        and how many there were."""
        counts = self.cells.get(kind, {})
        worst = self.verdict(kind)
        return (counts[worst] if worst else 0), sum(counts.values())


def by_point(report: ExplorationReport) -> tuple[list[str], list[str], dict[tuple[str, str], str]]:
    """The report's single-fault verdicts as a table: choice-point labels (rows, in run order),
    fault kinds (columns) and ``{(label, kind): "ok" | "violated" | "equivalent"}``."""
    verdicts = report.verdicts
    labels = list(dict.fromkeys(label for label, _ in verdicts))
    kinds = [str(kind) for kind in FAULT_KINDS if any(k == kind for _, k in verdicts)]
    return labels, kinds, dict(verdicts)


def pattern(label: str) -> str:
    """A choice point's label with its numbers as ``#``: ``w# put_step order-#/charge``."""
    return _NUMBER.sub("#", label)


def grid_rows(
    labels: Sequence[str],
    kinds: Sequence[str],
    verdicts: Mapping[tuple[str, str], str],
    *,
    at_most: int = GRID_ROWS,
) -> list[GridRow]:
    """The grid's rows, in run order: one per choice point when there are at most ``at_most``,
    else one per pattern (a pattern of one choice point keeps its own label)."""
    folded = len(labels) > at_most
    groups: dict[str, list[str]] = {}
    for label in labels:
        groups.setdefault(pattern(label) if folded else label, []).append(label)
    rows = []
    for key, points in groups.items():
        cells: dict[str, dict[str, int]] = {}
        for kind in kinds:
            for point in points:
                verdict = verdicts.get((point, kind))
                if verdict is not None:
                    counts = cells.setdefault(kind, {})
                    counts[verdict] = counts.get(verdict, 0) + 1
        label = f"{len(points)} \u00d7 {key}" if len(points) > 1 else points[0]
        rows.append(GridRow(label, tuple(points), cells))
    return rows


#: A verdict's cell in the notebook's table: its colour and its mark.
_CELLS = {
    "ok": ("#d9f2e3", "ok"), "violated": ("#f8d0d0", "\u2717"),
    "incomplete": ("#fbe8b0", "\u2026"), "equivalent": ("#eeeeee", "\u2261"),
}  # fmt: skip


def report_html(report: ExplorationReport) -> str:
    """An exploration report in Jupyter (``ExplorationReport._repr_html_``): its summary, and
    the choice point x fault kind table folded as the grid is."""
    labels, kinds, verdicts = by_point(report)
    head = "".join(f"<th>{html.escape(kind)}</th>" for kind in kinds)
    rows = []
    for row in grid_rows(labels, kinds, verdicts):
        cells = []
        for kind in kinds:
            verdict = row.verdict(kind)
            if verdict is None:
                cells.append("<td></td>")
                continue
            worst, of = row.count(kind)
            colour, mark = _CELLS[verdict]
            many = f" {worst}/{of}" if of > 1 else ""
            cells.append(f'<td style="background:{colour}">{mark}{many}</td>')
        rows.append(f"<tr><td><code>{html.escape(row.label)}</code></td>{''.join(cells)}</tr>")
    summary = html.escape(report.summary()).replace("\n", "<br>")
    table = f"<table><tr><th>choice point</th>{head}</tr>{''.join(rows)}</table>" if rows else ""
    return f"<div><p style='font-family:monospace'>{summary}</p>{table}</div>"
