"""A timeline denser than its pixels: when a run has more events than the picture has pixel
columns, routine marks (runtime calls, start calls, effects) that would print over each other
are drawn once per few pixels, and deliveries a couple of pixels apart are one bar; faults,
crashes, refused writes and lost responses are always drawn one by one. The timeline's data
(``Timeline``) stays complete: only its drawing aggregates.

>>> aggregate("call", [(0.0, "w1"), (1.0, "w1"), (9.0, "w1"), (1.0, "w2")], bucket=6.0)
[(0.0, 'w1'), (9.0, 'w1'), (1.0, 'w2')]
>>> merge_bars([(0.0, 1.0), (1.5, 1.0), (9.0, 1.0)], gap=1.0)
[(0.0, 2.5), (9.0, 1.0)]
"""

from __future__ import annotations

#: Marks drawn one by one however dense the timeline: what a reviewer looks for.
NOTABLE_MARKS = frozenset({"fault", "crash", "refused", "error", "declined", "skew", "belief"})
#: Pixels one aggregated mark stands for (about a marker's width).
BUCKET_PIXELS = 6


def aggregation(width: float, pixels: float) -> float:
    """The width in x units of the buckets routine marks are aggregated into, on a timeline
    ``width`` x units wide drawn ``pixels`` wide, or 0 when every event has a pixel of its
    own (and every mark is drawn)."""
    per_pixel = (width + 2) / max(pixels, 1.0)
    return BUCKET_PIXELS * per_pixel if per_pixel > 1.0 else 0.0


def aggregate(kind: str, marks: list[tuple[float, str]], bucket: float) -> list[tuple[float, str]]:
    """``marks`` (x, lane) of one kind, one per lane and bucket: the marks of a routine kind
    that would print over each other are drawn once; a notable kind keeps every mark."""
    if kind in NOTABLE_MARKS:
        return marks
    seen: dict[tuple[str, int], float] = {}
    for x, lane in marks:
        seen.setdefault((lane, int(x // bucket)), x)
    return [(x, lane) for (lane, _), x in seen.items()]


def merge_bars(bars: list[tuple[float, float]], gap: float) -> list[tuple[float, float]]:
    """Bars (start, width) of one lane and look, those nearer than ``gap`` merged into one."""
    merged: list[tuple[float, float]] = []
    for start, width in sorted(bars):
        if merged and start <= merged[-1][0] + merged[-1][1] + gap:
            first, extent = merged[-1]
            merged[-1] = (first, max(extent, start + width - first))
        else:
            merged.append((start, width))
    return merged
