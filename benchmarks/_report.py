"""Plain-text report helpers that every benchmark prints its figures with.

The benchmarks run as scripts (``python benchmarks/bench_runtime.py``), so this module is
imported from the script's own folder rather than from the package: it is not part of
yieldstar_sim's public surface.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence


def us(seconds: float) -> str:
    """Seconds as microseconds with one decimal: ``us(0.0012)`` is ``'1,200.0'``."""
    return f"{seconds * 1e6:,.1f}"


def ms(seconds: float) -> str:
    """Seconds as milliseconds with two decimals: ``ms(0.0012)`` is ``'1.20'``."""
    return f"{seconds * 1e3:,.2f}"


def verdict(ok: bool) -> str:
    """The word a benchmark prints beside a target: PASS when it was met, else MISS."""
    return "PASS" if ok else "MISS"


def table(rows: Sequence[Sequence[str]], right: Sequence[bool], indent: str = "") -> list[str]:
    """Format rows as aligned plain-text columns (the first row is the header).

    ``right`` says, column by column, whether to right-align (numbers) or left-align (names);
    every line starts with ``indent``.
    """
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    lines = []
    for r, row in enumerate(rows):
        cells = [
            cell.rjust(width) if align else cell.ljust(width)
            for cell, width, align in zip(row, widths, right, strict=True)
        ]
        lines.append(indent + "  ".join(cells).rstrip())
        if r == 0:
            lines.append(indent + "  ".join("-" * width for width in widths))
    return lines
