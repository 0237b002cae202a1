"""The worker timeline: one lane per worker on the virtual time axis.

Deliveries are lease spans (from the claim to the acknowledgement, release, crash or expiry),
labelled with the execution and fencing token; runtime calls are ticks; refused fenced writes,
faults, crashes, freezes, lost responses, wakes and effects are marks. An attempt that stalls
past its lease gets a lane of its own under its worker, so that it and its retry are drawn side
by side; a worker whose clock was set back shows what it believed beside the true time. Most of
a simulation
happens at a few instants, so the axis is *stretched*: each instant gets room for its events in
order, and the gaps between instants are compressed; the ticks name the real virtual times.
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.narration import fault_words
from yieldstar_sim.simulation.trace_payloads import (
    ClaimData,
    ClientAnswerData,
    ClientAttemptData,
    ClientGiveUpData,
    EffectData,
    FaultData,
    HeartbeatData,
    PutStepData,
    SkewData,
    StallData,
    TraceKind,
    TriggerData,
)
from yieldstar_sim.views.density import BUCKET_PIXELS, aggregate, aggregation, merge_bars
from yieldstar_sim.views.drawn_text import MAX_TICK, drawable, shown
from yieldstar_sim.views.timeline_labels import Mark, Span, label_marks, label_spans, tick_labels

if TYPE_CHECKING:
    from collections.abc import Callable

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from yieldstar_sim.simulation.trace import Trace, TraceEvent

SCENARIO_LANE = "scenario"


@dataclass
class Timeline:
    """Lanes, spans and marks with stretched x positions, and the ticks that name times."""

    lanes: list[str]
    spans: list[Span] = field(default_factory=list)
    frozen: list[tuple[str, float, float]] = field(default_factory=list)
    stalled: list[tuple[str, float, float]] = field(default_factory=list)
    """Where an attempt hung on its own lane (its worker went on)."""
    marks: list[Mark] = field(default_factory=list)
    ticks: list[tuple[float, str]] = field(default_factory=list)
    x_of: dict[int, float] = field(default_factory=dict)
    """Each trace event's x position, by its sequence number (for a cursor)."""
    width: float = 1.0


#: How a mark of each kind is drawn: (marker, colour, size, legend label).
MARK_STYLE: dict[str, tuple[str, str, float, str]] = {
    "call": ("|", "#555555", 60, "runtime call"),
    "start": ("^", "#0072B2", 70, "start call"),
    "refused": ("X", "#D55E00", 90, "fenced write refused"),
    "fault": ("*", "#CC79A7", 140, "fault injected"),
    "crash": ("X", "#000000", 120, "crash"),
    "error": ("x", "#E69F00", 80, "lost response / infra error"),
    "effect": ("P", "#009E73", 90, "effect in the world"),
    "wake": ("v", "#56B4E9", 70, "wake recorded"),
    "trigger": ("D", "#0072B2", 60, "trigger / deploy"),
    "declined": ("d", "#D55E00", 80, "request refused (the runtime's answer)"),
    "skew": ("<", "#7B3294", 90, "clock set back (skew)"),
    "belief": ("o", "#7B3294", 45, "the time a skewed worker's clock reads"),
}


def clock_lane(worker: str) -> str:
    """The lane under a skewed worker's that shows what its clock reads, against true time."""
    return f"{worker}'s clock"


def abandoned_lane(worker: str, attempt: int, token: int) -> str:
    """The lane of an attempt ``worker`` gave up on at its timeout (its delivery went on)."""
    return f"{worker}: timed-out attempt {attempt} (token {token})"


def stalled_lane(worker: str, token: int) -> str:
    """The lane of ``worker``'s attempt that stalled under fencing token ``token``."""
    return f"{worker}: stalled attempt (token {token})"


#: An instant's least room, as a share of the events: ``1 / INSTANT_SHARE`` of them (less when
#: there are many instants, so that the floors take at most half the axis).
INSTANT_SHARE = 20


def _positions(events: list[TraceEvent]) -> tuple[dict[int, float], list[tuple[float, str]], float]:
    """Stretched x for every event: instants get room for their events, gaps are compressed.

    An event takes one unit, and each instant at least ``len(events) / INSTANT_SHARE`` units
    (its events spread over them): in a run of a thousand orders one instant holds 15,000
    events, and the crash's recovery 30 s later, nine events, was two pixels at the axis's end,
    its tick printed over the one before it ("1" and "30" read "130")."""
    instants: list[list[TraceEvent]] = []
    for event in events:
        if instants and instants[-1][0].t == event.t:
            instants[-1].append(event)
        else:
            instants.append([event])
    least = len(events) / max(INSTANT_SHARE, 2 * len(instants))
    x_of: dict[int, float] = {}
    ticks: list[tuple[float, str]] = []
    x = 0.0
    previous: float | None = None
    for instant in instants:
        t = instant[0].t
        if previous is not None:
            x += 1.5 + math.log1p(max(0.0, t - previous))
        ticks.append((x, f"{t:g}"))
        previous = t
        step = max(1.0, least / len(instant))
        for event in instant:
            x_of[event.seq] = x
            x += step
    return x_of, ticks, max(x, 1.0)


def _mark_label(event: TraceEvent) -> str:
    """The words beside a fault (which fault, at which call) or a crash; none for the rest."""
    if event.kind == TraceKind.CRASH:
        return f"{event.worker} crashed"
    if not isinstance(event.data, FaultData):
        return ""
    # Without the worker (it is the lane) and, at a step, the execution (the span says it):
    # "freeze 40s before put_step ship".
    where = event.step_key or event.execution_id
    return " ".join(part for part in (fault_words(event.data), event.op, where) if part)


def _wake_or_call(event: TraceEvent) -> str:
    """A put_step or record_wake mark's style: ``wake`` when it sets when the execution is due
    again (a pending step, a recorded wake)."""
    pending = isinstance(event.data, PutStepData) and event.data.status == "pending"
    return "wake" if pending or event.op == Op.RECORD_WAKE else "call"


#: Event kinds drawn as a mark of their own kind.
_OWN_MARKS = (TraceKind.FAULT, TraceKind.CRASH, TraceKind.ERROR, TraceKind.EFFECT)


def _lanes(events: list[TraceEvent], workers: list[str] | None) -> list[str]:
    """The workers' lanes, then a lane for each client (``ys.Client``): clients are actors."""
    names = list(workers or sorted({e.worker for e in events if e.worker}))
    clients = dict.fromkeys(
        e.data.client
        for e in events
        if isinstance(e.data, ClientAttemptData | ClientAnswerData | ClientGiveUpData)
    )
    return names + [client for client in clients if client not in names]


def _client_mark(data: ClientAnswerData | ClientGiveUpData) -> str:
    """A client's answer is drawn as a trigger (an error when it was lost, a refusal when the
    runtime refused it), its giving up as a crash."""
    if isinstance(data, ClientGiveUpData):
        return "crash"
    if data.lost:
        return "error"
    # A refused trigger admitted nothing: drawn as a trigger, two clients racing for one
    # business ID looked like two admissions.
    return "declined" if data.answer == "refused" else "trigger"


def _declined_label(event: TraceEvent, style: str) -> str:
    """The words beside a refused request: the refusal's code; none beside other marks."""
    if style != "declined":
        return ""
    data = event.data
    code = data.code if isinstance(data, ClientAnswerData) else None
    if isinstance(data, TriggerData):
        code = data.refused
    return f"refused: {code}" if code else "refused"


class _Attempts:
    """Lays out stalled attempts (a lane each) and skewed workers' beliefs."""

    def __init__(self, timeline: Timeline, events: list[TraceEvent]) -> None:
        self.timeline = timeline
        self.stalls: dict[str, float] = {}
        self.stalled: dict[tuple[str, str, int], str] = {}
        """Each stalled attempt's lane, by worker, execution and fencing token: the whole
        delivery goes there, from its claim, so its worker's lane shows what it went on with."""
        self.behind: dict[str, float] = {}
        self.read_at: set[tuple[str, float]] = set()
        self.abandoned: dict[tuple[str, str, int, int], tuple[str, int]] = {}
        """Attempts their worker gave up on at their timeout, by worker, execution, token and
        attempt: their lane, and the event after which what they do goes there (the delivery
        stays on its worker's lane)."""
        for event in events:
            data = event.data
            if isinstance(data, SkewData) and event.worker:
                lane = clock_lane(event.worker)
                if lane not in timeline.lanes:
                    timeline.lanes.insert(timeline.lanes.index(event.worker) + 1, lane)
            if isinstance(data, StallData) and event.kind == TraceKind.STALL and event.worker:
                lane = stalled_lane(event.worker, int(event.token or 0))
                key = (event.worker, str(event.execution_id), int(event.token or 0))
                if data.timed_out:
                    lane = abandoned_lane(event.worker, data.attempt, int(event.token or 0))
                    self.abandoned[(*key, data.attempt)] = (lane, event.seq)
                else:
                    self.stalled[key] = lane
                timeline.lanes.insert(timeline.lanes.index(event.worker) + 1, lane)

    def lane(self, event: TraceEvent, lane: str) -> str:
        """The lane of an event: a stalled attempt's own, or its worker's."""
        key = (lane, str(event.execution_id), int(event.token or 0))
        attempt = event.data.attempt if isinstance(event.data, EffectData | StallData) else None
        if attempt is not None and (*key, attempt) in self.abandoned:
            own, after = self.abandoned[(*key, attempt)]
            if event.seq >= after:
                return own
        return self.stalled.get(key, lane)

    def take(
        self, event: TraceEvent, x: float, open_spans: dict[str, tuple[str, int, float, float]]
    ) -> bool:
        """Lay out a stall, an attempt's resumption, a skew, a heartbeat or a belief; False
        for the rest."""
        timeline, kind = self.timeline, event.kind
        lane = self.lane(event, event.worker or SCENARIO_LANE)
        data = event.data
        if isinstance(data, SkewData) and event.worker:
            self.behind[event.worker] = data.behind
        self._clock(event, x)
        if kind == TraceKind.STALL:
            self.stalls[lane] = x
        elif kind == TraceKind.UNSTALL and lane in self.stalls:
            timeline.stalled.append((lane, self.stalls.pop(lane), x))
        elif isinstance(data, SkewData):
            label = f"clock {data.behind:g}s behind"
            timeline.marks.append(Mark(lane, x, "skew", event.text, label))
        elif isinstance(data, HeartbeatData):
            held = open_spans.get(lane)
            if data.renewed and held is not None and held[1] == event.token:
                open_spans[lane] = (*held[:3], data.expires_at)  # the lease runs on
        else:
            return False
        return True

    def _clock(self, event: TraceEvent, x: float) -> None:
        """Under a skewed worker's lane, once per instant, the time its clock reads: belief
        against the true time of the axis."""
        worker = event.worker or ""
        if worker not in self.behind or (worker, event.t) in self.read_at:
            return
        self.read_at.add((worker, event.t))
        believed = event.t - self.behind[worker]
        text = f"{worker}'s clock reads t={believed:g} at true t={event.t:g}"
        label = f"reads t={believed:g}"
        self.timeline.marks.append(Mark(clock_lane(worker), x, "belief", text, label))


def _outside_mark(event: TraceEvent) -> str | None:
    """The mark of what comes from outside the workers: a client's answer or giving up on its
    lane, a scenario's trigger or deploy (which carry no worker) on the scenario's lane."""
    if isinstance(event.data, ClientAnswerData | ClientGiveUpData):
        return _client_mark(event.data)
    if isinstance(event.data, TriggerData) and event.data.refused:
        return "declined"
    if event.kind in (TraceKind.TRIGGER, TraceKind.DEPLOY):
        return "trigger"
    return None


def _x_of_time(
    events: list[TraceEvent], x_of: dict[int, float], width: float
) -> Callable[[float], float]:
    """The x of a virtual time ``t``: just before the first event at or after it."""
    # The running maximum of the events' times: the first event at or after ``t`` is where it
    # first reaches ``t``, found by bisection (a scan per delivery made big runs quadratic).
    times = list(itertools.accumulate((event.t for event in events), max))

    def x_at(t: float) -> float:
        index = bisect.bisect_left(times, t)
        if index == len(events):
            return width
        event = events[index]
        return x_of[event.seq] - (0.5 if event.t > t else 0.0)

    return x_at


def build_timeline(trace: Trace, workers: list[str] | None = None) -> Timeline:
    """Lay out a run's trace as lanes, spans and marks."""
    events = list(trace)
    names = _lanes(events, workers)
    x_of, ticks, width = _positions(events)
    timeline = Timeline([*names, SCENARIO_LANE], ticks=ticks, x_of=x_of, width=width)
    open_spans: dict[str, tuple[str, int, float, float]] = {}
    freezes: dict[str, float] = {}
    attempts = _Attempts(timeline, events)

    x_at = _x_of_time(events, x_of, width)

    def close(worker: str, x: float, how: str) -> None:
        if worker in open_spans:
            execution_id, token, start, expires_at = open_spans.pop(worker)
            expiry = x_at(expires_at)
            timeline.spans.append(
                Span(worker, execution_id, token, start, x, how, expiry if expiry < x else None)
            )

    for event in events:
        x = x_of[event.seq]
        lane = attempts.lane(event, event.worker or SCENARIO_LANE)
        kind = event.kind
        if attempts.take(event, x, open_spans):
            pass
        elif isinstance(event.data, ClaimData):
            close(lane, x, "reclaimed")
            expires_at = event.data.expires_at
            open_spans[lane] = (str(event.execution_id), int(event.token or 0), x, expires_at)
        elif kind == TraceKind.CALL and event.op in (Op.ACKNOWLEDGE, Op.RELEASE):
            timeline.marks.append(Mark(lane, x, "call", event.text))
            close(lane, x, event.op)
        elif kind == TraceKind.CALL and event.op == Op.START:
            timeline.marks.append(Mark(lane, x, "start", event.text, f"start {event.step_key}"))
        elif kind == TraceKind.CALL and event.op in (Op.PUT_STEP, Op.RECORD_WAKE):
            timeline.marks.append(Mark(lane, x, _wake_or_call(event), event.text))
        elif kind == TraceKind.REFUSED:
            timeline.marks.append(Mark(lane, x, "refused", event.text))
            if event.op == Op.RELEASE:
                close(lane, x, "refused")
        elif kind in _OWN_MARKS:
            timeline.marks.append(Mark(lane, x, str(kind), event.text, _mark_label(event)))
            if kind == TraceKind.CRASH:
                close(lane, x, "crash")
        elif (style := _outside_mark(event)) is not None:
            timeline.marks.append(Mark(lane, x, style, event.text, _declined_label(event, style)))
        elif kind == TraceKind.FREEZE:
            freezes[lane] = x
        elif kind == TraceKind.RESUME and lane in freezes:
            timeline.frozen.append((lane, freezes.pop(lane), x))
    for worker in list(open_spans):
        close(worker, width, "open")
    for lane, start in freezes.items():
        timeline.frozen.append((lane, start, width))
    for lane, start in attempts.stalls.items():
        timeline.stalled.append((lane, start, width))
    return timeline


def _legend(timeline: Timeline, seen: set[str]) -> list[Any]:
    """Legend entries for what the timeline shows, and nothing else."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = []
    if any(span.how not in ("crash", "refused") for span in timeline.spans):
        handles.append(
            Patch(
                facecolor="#56B4E9", alpha=0.25, edgecolor="#56B4E9", label="lease held (delivery)"
            )
        )
    if any(span.how in ("crash", "refused") for span in timeline.spans):
        handles.append(
            Patch(
                facecolor="#D55E00", alpha=0.25, edgecolor="#D55E00", label="delivery ended badly"
            )
        )
    if any(span.expires is not None for span in timeline.spans):
        handles.append(
            Patch(
                facecolor="none",
                edgecolor="#D55E00",
                linestyle="--",
                label="lease expired, worker unaware",
            )
        )
    if timeline.frozen:
        handles.append(
            Patch(facecolor="none", edgecolor="#555555", hatch="///", label="worker frozen")
        )
    if timeline.stalled:
        handles.append(
            Patch(
                facecolor="none", edgecolor="#7B3294", hatch="\\\\",
                label="attempt stalled (its worker goes on)",
            )
        )  # fmt: skip

    handles += [
        Line2D(
            [],
            [],
            marker=MARK_STYLE[k][0],
            color=MARK_STYLE[k][1],
            linestyle="none",
            markersize=7,
            label=MARK_STYLE[k][3],
        )
        for k in MARK_STYLE
        if k in seen
    ]
    return handles


def draw_timeline(
    timeline: Timeline, *, title: str = "", ax: Axes | None = None, cursor: float | None = None
) -> Figure:
    """Draw the timeline (into ``ax`` if given); returns the Figure, never shows it."""
    from matplotlib.figure import Figure

    if ax is None:
        figure = Figure(
            figsize=(max(8.0, min(24.0, timeline.width / 3)), 1.1 * len(timeline.lanes) + 1.6),
            layout="constrained",
        )
        ax = figure.add_subplot()
    else:
        figure = ax.figure  # type: ignore[assignment]
    lane_y = {lane: -i for i, lane in enumerate(timeline.lanes)}
    # A label takes about 0.055 in per character at 7 pt: in x units, on this axes' width.
    axes_inches = max(ax.get_position().width * figure.get_figwidth(), 1.0)
    char_units = 0.055 * (timeline.width + 2) / axes_inches
    bucket = aggregation(timeline.width, axes_inches * figure.dpi)
    # Bars are batched, one collection per lane and look: an artist per bar made a timeline
    # of a hundred deliveries slow to build and to draw.
    held_bars: dict[tuple[str, str], list[tuple[float, float]]] = {}
    stale_bars: dict[str, list[tuple[float, float]]] = {}
    for span in timeline.spans:
        colour = "#D55E00" if span.how in ("crash", "refused") else "#56B4E9"
        held = span.end if span.expires is None else span.expires
        held_bars.setdefault((span.worker, colour), []).append(
            (span.start, max(held - span.start, 0.6))
        )
        if span.expires is not None:
            # The worker goes on past its lease: a stale holder, fenced on its next write.
            stale_bars.setdefault(span.worker, []).append((span.expires, span.end - span.expires))
    label_spans(ax, timeline.spans, timeline.width, lane_y, char_units)
    if bucket:  # deliveries a couple of pixels apart are one bar
        held_bars = {
            look: merge_bars(bars, 2 * bucket / BUCKET_PIXELS) for look, bars in held_bars.items()
        }
    for (lane, colour), bars in held_bars.items():
        ax.broken_barh(bars, (lane_y[lane] - 0.3, 0.6), facecolors=colour, alpha=0.25,
                       edgecolor=colour)  # fmt: skip
    for lane, bars in stale_bars.items():
        ax.broken_barh(bars, (lane_y[lane] - 0.3, 0.6), facecolors="none", edgecolor="#D55E00",
                       linestyle="--")  # fmt: skip
    _draw_hatched(ax, timeline.frozen, lane_y, colour="#555555", hatch="///")
    _draw_hatched(ax, timeline.stalled, lane_y, colour="#7B3294", hatch="\\\\")
    _draw_marks(ax, timeline, lane_y, bucket)
    colours = {kind: style[1] for kind, style in MARK_STYLE.items()}
    label_marks(ax, timeline.marks, timeline.width, lane_y, char_units=char_units, colours=colours)
    if cursor is not None:
        ax.axvline(cursor, color="#CC0000", linewidth=1.5, zorder=4)
    # Tick labels take their text as the figure is drawn, after drawn_text's pass: here.
    ax.set_yticks(list(lane_y.values()), [drawable(shown(lane, MAX_TICK)) for lane in lane_y])
    ax.set_ylim(min(lane_y.values()) - 0.7, 0.7)
    # A unit each side, or a few pixels on a long axis: the first trigger's diamond whole.
    pad = max(1.0, timeline.width / 250)
    ax.set_xlim(-pad, timeline.width + pad)
    ticks = [x for x, _ in timeline.ticks]
    ax.set_xticks(ticks, tick_labels(timeline.ticks, 8 / 7 * char_units), fontsize=8)
    ax.set_xlabel(_x_label(timeline, bucket))
    ax.grid(axis="x", color="#DDDDDD", linewidth=0.6)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    handles = _legend(timeline, {mark.kind for mark in timeline.marks})
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False
    )
    if title:
        ax.set_title(title, fontsize=11, parse_math=False)
    return figure


def _draw_hatched(
    ax: Axes,
    spans: list[tuple[str, float, float]],
    lane_y: dict[str, int],
    *,
    colour: str,
    hatch: str,
) -> None:
    """Time a lane stood still (a frozen worker, a stalled attempt): hatched, unfilled bars, each
    at least 0.6 wide, so that a short one still shows."""
    bars: dict[str, list[tuple[float, float]]] = {}
    for lane, start, end in spans:
        bars.setdefault(lane, []).append((start, max(end - start, 0.6)))
    for lane, lane_bars in bars.items():
        ax.broken_barh(lane_bars, (lane_y[lane] - 0.3, 0.6), facecolors="none", edgecolor=colour,
                       hatch=hatch, linewidth=0.8)  # fmt: skip


def _draw_marks(ax: Axes, timeline: Timeline, lane_y: dict[str, int], bucket: float) -> None:
    """Every mark, one scatter collection per kind (matplotlib is slow per call); routine
    kinds aggregated into buckets of ``bucket`` x units when that is not 0."""
    by_kind: dict[str, list[tuple[float, str]]] = {}
    for mark in timeline.marks:
        by_kind.setdefault(mark.kind, []).append((mark.x, mark.lane))
    if bucket:
        by_kind = {kind: aggregate(kind, marks, bucket) for kind, marks in by_kind.items()}
    for kind, marks in by_kind.items():
        marker, colour, size, _ = MARK_STYLE[kind]
        ax.scatter([x for x, _ in marks], [lane_y[lane] for _, lane in marks], marker=marker,
                   c=colour, s=size, zorder=3, linewidths=1.5)  # fmt: skip


def _x_label(timeline: Timeline, bucket: float) -> str:
    """What the x axis shows, and whether routine marks are aggregated."""
    label = "virtual time (s); each instant is stretched to show its events in order"
    if bucket:
        # Lines no longer than the first: two timelines side by side (the divergence figure)
        # each have half the width, and a longer line ran into the other's.
        label += (
            f"\n{len(timeline.x_of)} events, more than the picture has pixels:"
            "\ncalls, starts, effects: one mark per few pixels; every fault and crash"
        )
    return label
