"""The timeline's data (``Timeline``, its spans and marks), and where its words go:
deliveries' labels, mark labels and the axis's ticks, each only where it fits, the ones a
reviewer looks for first (a crash's recovery, a fault), so that no label prints over another
and none is cut off at the axis's end.

>>> tick_labels([(0.0, "0"), (0.5, "1"), (40.0, "30")], char_units=1.0)
['0', '', '30']
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.trace_payloads import EffectData, OutcomeData, StallData

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from matplotlib.axes import Axes

    from yieldstar_sim.simulation.trace import TraceEvent
    from yieldstar_sim.views.timeline_axis import Break, Instant


def attempt_of(
    event: TraceEvent,
    key: tuple[str, str, int],
    abandoned: Mapping[tuple[str, str, int, int], object],
) -> int | None:
    """The attempt an event is of, where it may be one its worker gave up on (``abandoned``,
    by worker, execution, token and attempt; ``key`` the event's first three): an effect's or
    a stall's own, or the attempt given up on under the event's token whose completion by
    token (``complete_attempt``, answered or refused) this is."""
    data = event.data
    if isinstance(data, EffectData | StallData):
        return data.attempt
    if event.op == Op.COMPLETE_ATTEMPT:
        return next((given_up[3] for given_up in abandoned if given_up[:3] == key), None)
    return None


def notable_span(span: Span) -> bool:
    """A delivery a reviewer looks for: one that ended badly or ran past its lease, or a
    re-delivery (a token past the first: the execution was claimed again after a crash or an
    expiry)."""
    return span.how in ("crash", "refused", "open") or span.expires is not None or span.token > 1


def label_spans(
    ax: Axes, spans: Sequence[Span], width: float, lane_y: dict[str, int], char_units: float
) -> None:
    """Label deliveries with their execution and token where the label fits, on an axis
    ``width`` units wide: notable ones first, then the rest from the left; a label never
    prints over another."""
    taken: dict[str, list[tuple[float, float]]] = {}
    ordered = sorted(spans, key=lambda span: (not notable_span(span), span.start))
    for span in ordered:
        label = span.label or f"{span.execution_id} · token {span.token}"
        left = span.start + 0.2
        right = left + char_units * (len(label) + 1)
        if right > width + 1:  # near the axis's end the label ends there
            left, right = width + 1 - (right - left), width + 1
        lane = taken.setdefault(span.worker, [])
        if any(left < end and right > start for start, end in lane):
            continue
        lane.append((left, right))
        ax.text(left, lane_y[span.worker] + 0.18, label, fontsize=7, va="bottom", ha="left",
                clip_on=True, parse_math=False)  # fmt: skip


def tick_labels(ticks: list[tuple[float, str]], char_units: float) -> list[str]:
    """The ticks' labels, a label that would print over the one before it left blank (its
    grid line stays): two instants close on the axis once read as one time, "130"."""
    labels: list[str] = []
    free_from = -math.inf
    for x, label in ticks:
        half = char_units * (len(label) + 1) / 2
        if x - half < free_from:
            labels.append("")
            continue
        labels.append(label)
        free_from = x + half
    return labels


def scale_tick_labels(
    scale: list[tuple[float, str]], shown: list[tuple[float, str]], char_units: float
) -> list[str]:
    """The labels of the round-number ticks between instants, each left blank where it would
    print over a label already ``shown`` (the instants' own) or the one before it."""
    taken = [
        (x - char_units * (len(label) + 1) / 2, x + char_units * (len(label) + 1) / 2)
        for x, label in shown
        if label
    ]
    labels = []
    for x, label in scale:
        half = char_units * (len(label) + 1) / 2
        if any(x - half < end and x + half > start for start, end in taken):
            labels.append("")
            continue
        labels.append(label)
        taken.append((x - half, x + half))
    return labels


#: Rows below a lane's centre where mark labels go, nearest first (lanes are 1 apart).
LABEL_ROWS = (-0.36, -0.52)
#: Which marks get labels, most important first: a fault and a crash before start calls.
LABELLED = ("fault", "crash", "declined", "skew", "belief", "start")


def label_marks(
    ax: Axes,
    marks: Sequence[Mark],
    width: float,
    lane_y: dict[str, int],
    *,
    char_units: float,
    colours: Mapping[str, str],
) -> None:
    """Label faults, crashes and start calls under their lane, each only where it fits: a label
    that would print over another is left out, one that would run past the axis ends at its
    mark."""
    taken: dict[tuple[str, float], list[tuple[float, float]]] = {}
    labelled = sorted(
        (m for m in marks if m.label and m.kind in LABELLED),
        key=lambda m: (LABELLED.index(m.kind), m.x),
    )
    for mark in labelled:
        long = char_units * 0.9 * (len(mark.label) + 1)
        left, right = mark.x - 0.3, mark.x - 0.3 + long
        if right > width + 1:
            # Near the right edge the label ends at its mark instead of starting there.
            left, right = mark.x + 0.3 - long, mark.x + 0.3
            if left < -0.5:
                continue
        for row in LABEL_ROWS:
            spans = taken.setdefault((mark.lane, row), [])
            if all(right <= start or left >= end for start, end in spans):
                spans.append((left, right))
                colour = colours[mark.kind]
                ax.text(left, lane_y[mark.lane] + row, mark.label, fontsize=7, ha="left",
                        va="top", color=colour, clip_on=True, parse_math=False)  # fmt: skip
                break


# The spans and marks are defined here, and ``views.timeline`` (which imports this module)
# builds them: the labels above read the classes themselves, not a copy of their shapes.
@dataclass(frozen=True, slots=True)
class Span:
    """A delivery on a worker's lane: claimed at ``start``, over at ``end`` (``how``)."""

    worker: str
    execution_id: str
    token: int
    start: float
    end: float
    how: str
    expires: float | None = None
    """Where the lease ran out, when the worker went on past it (a stale holder)."""
    label: str = ""
    """The words on the bar, when not its execution and token (an execution's own lane names
    the worker instead)."""


@dataclass(frozen=True, slots=True)
class Mark:
    """One event drawn on a lane."""

    lane: str
    x: float
    kind: str
    text: str
    label: str = ""
    """A few words drawn beside the mark where they fit (a fault, a crash, a start call)."""


@dataclass
class Timeline:
    """Lanes, spans and marks at their x positions (``views.timeline_axis``), the ticks that
    name times, and at review size the busy share and the notable executions' lanes."""

    lanes: list[str]
    spans: list[Span] = field(default_factory=list)
    frozen: list[tuple[str, float, float]] = field(default_factory=list)
    stalled: list[tuple[str, float, float]] = field(default_factory=list)
    """Where an attempt hung on its own lane (its worker went on)."""
    marks: list[Mark] = field(default_factory=list)
    ticks: list[tuple[float, str]] = field(default_factory=list)
    """Each instant's start and its virtual time."""
    x_of: dict[int, float] = field(default_factory=dict)
    """Each trace event's x position, by its sequence number (for a cursor)."""
    width: float = 1.0
    scale_ticks: list[tuple[float, str]] = field(default_factory=list)
    """Round numbers of seconds between instants, where the axis runs to scale."""
    instants: list[Instant] = field(default_factory=list)
    breaks: list[Break] = field(default_factory=list)
    """Stretches of nothing cut from the axis."""
    busy: list[tuple[float, float]] = field(default_factory=list)
    """The workers' busy share from each x on (0 to 1), at review size."""
    focus: list[str] = field(default_factory=list)
    """The executions drawn out on lanes of their own, at review size."""
    focus_lanes: list[str] = field(default_factory=list)
    """Their lanes' names, in ``lanes``."""


def dead_letter_labels(spans: list[Span], events: Sequence[TraceEvent]) -> list[Span]:
    """``spans``, each delivery that set its execution aside (dead-lettered) labelled so: it
    ran no code, and its bar would otherwise read like any other."""
    dead = {
        (event.execution_id, event.token)
        for event in events
        if isinstance(event.data, OutcomeData) and event.data.status == "dead-lettered"
    }
    if not dead:
        return spans
    return [
        replace(span, label=f"{span.execution_id} · token {span.token} · dead-lettered")
        if (span.execution_id, span.token) in dead
        else span
        for span in spans
    ]
