"""The worker timeline: one lane per worker on the virtual time axis.

Deliveries are lease spans (from the claim to the acknowledgement, release, crash or expiry),
labelled with the execution and fencing token; runtime calls are ticks; refused fenced writes,
faults, crashes, freezes, lost responses, wakes and effects are marks. An attempt that stalls
past its lease gets a lane of its own under its worker, so that it and its retry are drawn side
by side; a worker whose clock was set back shows what it believed beside the true time.

The time axis (``views/timeline_axis.py``) runs to scale between instants, with long stretches
of nothing cut to marked breaks; an instant holding many events (a thousand orders make 15,000
at t=0) is opened out and shaded, its events in order. At review size (more than
``FOCUS_AFTER`` executions) the timeline adds what a reader of a dense picture needs: the
workers' busy share as a counter track above the lanes, and a lane of its own for each notable
execution (a violation names it, a fault struck it, a delivery of it ended badly or was a
redelivery), drawn out in full while the workers' lanes aggregate. ``focus_trace`` cuts a
run's trace down to one execution and what it started, for that execution's own timeline.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.narration import fault_words
from yieldstar_sim.simulation.trace_payloads import (
    ClaimData,
    ClientAnswerData,
    ClientAttemptData,
    ClientGiveUpData,
    FaultData,
    HeartbeatData,
    PutStepData,
    RuntimeActionData,
    SendData,
    SkewData,
    StallData,
    TraceKind,
    TriggerData,
)
from yieldstar_sim.views.density import BUCKET_PIXELS, aggregate, aggregation, merge_bars
from yieldstar_sim.views.drawn_text import (
    MAX_TICK,
    drawable,
    drawable_figure,
    glyphs_missing_quietly,
    shown,
)
from yieldstar_sim.views.timeline_axis import MANY_INSTANTS, time_axis
from yieldstar_sim.views.timeline_focus import BUSY_COLOUR, BUSY_LANE, draw_busy, review_size
from yieldstar_sim.views.timeline_labels import (
    Mark,
    Span,
    Timeline,
    attempt_of,
    dead_letter_labels,
    label_marks,
    label_spans,
    scale_tick_labels,
    tick_labels,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from yieldstar_sim.simulation.trace import TraceEvent

SCENARIO_LANE = "scenario"

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
    "event": (">", "#0072B2", 70, "external event sent (ys.SendEvent)"),
    "declined": ("d", "#D55E00", 80, "request refused (the runtime's answer)"),
    "skew": ("<", "#7B3294", 90, "clock set back (skew)"),
    "belief": ("o", "#7B3294", 45, "the time a skewed worker's clock reads"),
    "runtime": ("s", "#D55E00", 80, "the runtime's own action"),
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


def _mark_label(event: TraceEvent) -> str:
    """The words beside a fault (which fault, at which call) or a crash; none for the rest."""
    if event.kind == TraceKind.CRASH:
        return f"{event.worker} crashed"
    if isinstance(event.data, RuntimeActionData):
        return f"runtime: {event.data.action} {event.execution_id}"
    if not isinstance(event.data, FaultData):
        return ""
    # Without the worker (it is the lane) and, at a step, the execution (the span says it):
    # "freeze 40s before put_step ship".
    where = event.step_key or event.execution_id
    return " ".join(part for part in (fault_words(event.data), event.op, where) if part)


def _wake_or_call(event: TraceEvent) -> str:
    """A step record's or a wake's mark style: ``wake`` when it sets when the run is next due."""
    pending = isinstance(event.data, PutStepData) and event.data.status == "pending"
    return "wake" if pending or event.op == Op.RECORD_WAKE else "call"


#: The calls drawn as a step's record or a wake (a completion by token records a step too).
_STEP_CALLS = (Op.PUT_STEP, Op.RECORD_WAKE, Op.COMPLETE_ATTEMPT)
#: Event kinds drawn as a mark of their own kind.
_OWN_MARKS = (
    TraceKind.FAULT, TraceKind.CRASH, TraceKind.ERROR, TraceKind.EFFECT, TraceKind.RUNTIME,
)  # fmt: skip


def _lanes(events: list[TraceEvent], workers: list[str] | None) -> list[str]:
    """The workers' lanes, then a lane for each client (``ys.Client``): clients are actors."""
    names = list(workers or sorted({e.worker for e in events if e.worker}))
    clients = dict.fromkeys(
        e.data.client
        for e in events
        if isinstance(e.data, ClientAttemptData | ClientAnswerData | ClientGiveUpData | SendData)
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


#: The kinds of event ``_Attempts.take`` lays out (a skewed worker's beliefs aside).
_ATTEMPT_KINDS = frozenset(
    {TraceKind.STALL, TraceKind.UNSTALL, TraceKind.SKEW, TraceKind.HEARTBEAT}
)


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
        if not self.stalled and not self.abandoned:
            return lane
        key = (lane, str(event.execution_id), int(event.token or 0))
        attempt = attempt_of(event, key, self.abandoned)
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
        if kind not in _ATTEMPT_KINDS and not self.behind:
            return False  # most events, at once: a thousand orders make 15,000
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
    if isinstance(event.data, SendData):  # a sender's event, drawn as a client's request
        return "error" if event.data.lost else "declined" if event.data.code else "event"
    if isinstance(event.data, TriggerData) and event.data.refused:
        return "declined"
    if event.kind in (TraceKind.TRIGGER, TraceKind.DEPLOY):
        return "trigger"
    return None


def build_timeline(
    trace: Iterable[TraceEvent],
    workers: Sequence[str] | None = None,
    *,
    notable: Iterable[str] = (),
) -> Timeline:
    """Lay out a run's trace as lanes, spans and marks. ``notable``: executions to draw out on
    lanes of their own at review size (a violation's), before those the trace shows notable."""
    events = list(trace)
    names = _lanes(events, list(workers) if workers is not None else None)
    axis = time_axis(events)
    timeline = Timeline(
        [*names, SCENARIO_LANE], ticks=axis.ticks, x_of=axis.x_of, width=axis.width,
        scale_ticks=axis.scale_ticks, instants=axis.instants, breaks=axis.breaks,
    )  # fmt: skip
    open_spans: dict[str, tuple[str, int, float, float]] = {}
    freezes: dict[str, float] = {}
    attempts = _Attempts(timeline, events)
    x_at = axis.x_at
    width = axis.width

    def close(worker: str, x: float, how: str) -> None:
        if worker in open_spans:
            execution_id, token, start, expires_at = open_spans.pop(worker)
            expiry = x_at(expires_at)
            timeline.spans.append(
                Span(worker, execution_id, token, start, x, how, expiry if expiry < x else None)
            )

    for event in events:
        x = axis.x_of[event.seq]
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
        elif kind == TraceKind.CALL and event.op in _STEP_CALLS:
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
    timeline.spans = dead_letter_labels(timeline.spans, events)
    review_size(timeline, events, names if workers is None else list(workers), notable)
    return timeline


def _legend(timeline: Timeline, seen: set[str]) -> list[Any]:
    """Legend entries for what the timeline shows, and nothing else."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = []
    looks: list[tuple[bool, dict[str, Any], str]] = [
        (any(span.how not in ("crash", "refused") for span in timeline.spans),
         {"facecolor": "#56B4E9", "alpha": 0.25, "edgecolor": "#56B4E9"}, "lease held (delivery)"),
        (any(span.how in ("crash", "refused") for span in timeline.spans),
         {"facecolor": "#D55E00", "alpha": 0.25, "edgecolor": "#D55E00"}, "delivery ended badly"),
        (any(span.expires is not None for span in timeline.spans),
         {"facecolor": "none", "edgecolor": "#D55E00", "linestyle": "--"},
         "lease expired, worker unaware"),
        (bool(timeline.frozen), {"facecolor": "none", "edgecolor": "#555555", "hatch": "///"},
         "worker frozen"),
        (bool(timeline.stalled), {"facecolor": "none", "edgecolor": "#7B3294", "hatch": "\\\\"},
         "attempt stalled (its worker goes on)"),
    ]  # fmt: skip
    handles += [Patch(**look, label=label) for drawn, look, label in looks if drawn]
    if any(instant.end - instant.start > 1.0 for instant in timeline.instants):
        handles.append(Patch(facecolor=INSTANT_SHADE, label="one instant, opened out"))
    if timeline.breaks:
        handles.append(
            Patch(facecolor="white", edgecolor="#999999", hatch="//", label="nothing happens: cut")
        )
    if timeline.busy:
        handles.append(Patch(facecolor=BUSY_COLOUR, alpha=0.45, label="workers busy (share)"))
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
    lane_y = frame_timeline(timeline, ax, title)
    # Labels spaced on the axes' width once the names and legend took theirs (measured before
    # the layout they ran into each other), at about 0.06 in a character at 7 pt: in x units.
    engine = figure.get_layout_engine()
    if engine is not None:
        drawable_figure(figure)  # the layout renders the texts: as a picture shows them
        with glyphs_missing_quietly():
            engine.execute(figure)
    axes_inches = max(ax.get_position().width * figure.get_figwidth(), 1.0)
    char_units = 0.06 * (timeline.width + 2) / axes_inches
    bucket = aggregation(timeline.width, axes_inches * figure.dpi)
    focus = set(timeline.focus_lanes)  # drawn out in full, never aggregated
    _draw_axis_marks(ax, timeline, lane_y, char_units)
    # One collection per lane and look: an artist per bar was slow at a hundred deliveries.
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
    if bucket:  # deliveries a couple of pixels apart are one bar, but on a focus lane
        held_bars = {
            look: bars if look[0] in focus else merge_bars(bars, 2 * bucket / BUCKET_PIXELS)
            for look, bars in held_bars.items()
        }
    for (lane, colour), bars in held_bars.items():
        ax.broken_barh(bars, (lane_y[lane] - 0.3, 0.6), facecolors=colour, alpha=0.25,
                       edgecolor=colour)  # fmt: skip
    for lane, bars in stale_bars.items():
        ax.broken_barh(bars, (lane_y[lane] - 0.3, 0.6), facecolors="none", edgecolor="#D55E00",
                       linestyle="--")  # fmt: skip
    _draw_hatched(ax, timeline.frozen, lane_y, colour="#555555", hatch="///")
    _draw_hatched(ax, timeline.stalled, lane_y, colour="#7B3294", hatch="\\\\")
    _draw_marks(ax, timeline, lane_y, bucket, focus)
    draw_busy(ax, timeline, lane_y, bucket)
    colours = {kind: style[1] for kind, style in MARK_STYLE.items()}
    label_marks(ax, timeline.marks, timeline.width, lane_y, char_units=char_units, colours=colours)
    if cursor is not None:
        ax.axvline(cursor, color="#CC0000", linewidth=1.5, zorder=4)
    _draw_ticks(ax, timeline, char_units)
    ax.set_xlabel(_x_label(timeline, bucket))
    ax.grid(axis="x", color="#DDDDDD", linewidth=0.6)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return figure


def frame_timeline(timeline: Timeline, ax: Axes, title: str = "") -> dict[str, int]:
    """The lanes' names, limits, legend and title of ``timeline`` on ``ax`` (each lane's y):
    what takes room beside the axes. A figure of several timelines frames each before drawing
    any (``draw_timeline`` lays the figure out to space its labels)."""
    lane_y = {lane: -i for i, lane in enumerate(timeline.lanes)}
    # Tick labels take their text as the figure is drawn, after drawn_text's pass: here.
    names = [
        f"{lane}\n(none to all)" if lane == BUSY_LANE else drawable(shown(lane, MAX_TICK))
        for lane in lane_y
    ]
    ax.set_yticks(list(lane_y.values()), names)
    ax.set_ylim(min(lane_y.values()) - 0.7, 0.7)
    # A unit each side, or a few pixels on a long axis: the first trigger's diamond whole.
    pad = max(1.0, timeline.width / 250)
    ax.set_xlim(-pad, timeline.width + pad)
    handles = _legend(timeline, {mark.kind for mark in timeline.marks})
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False
    )
    if title:
        ax.set_title(title, fontsize=11, parse_math=False)
    return lane_y


def _draw_ticks(ax: Axes, timeline: Timeline, char_units: float) -> None:
    """The instants' times, and round seconds where time runs to scale (smaller, grey), each
    label only where it prints over no other."""
    chosen = timeline.ticks
    if len(chosen) > MANY_INSTANTS and timeline.scale_ticks:
        # Thousands of instants at odd times: the first and the last, and round seconds
        # between (a tick is an artist: three thousand were most of a picture's seconds).
        chosen = [chosen[0], chosen[-1]]
    ticks = [x for x, _ in chosen]
    shown = tick_labels(chosen, 8 / 7 * char_units)
    if len(ticks) > MANY_INSTANTS:  # a tick only where its label is
        kept = [(x, label) for x, label in zip(ticks, shown, strict=True) if label]
        ticks, shown = [x for x, _ in kept], [label for _, label in kept]
    ax.set_xticks(ticks, shown, fontsize=8)
    if timeline.scale_ticks:
        placed = list(zip(ticks, shown, strict=True))
        ax.set_xticks(
            [x for x, _ in timeline.scale_ticks],
            scale_tick_labels(timeline.scale_ticks, placed, char_units),
            minor=True, fontsize=7, color="#777777",
        )  # fmt: skip


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


#: The shade of an instant opened out.
INSTANT_SHADE = "#EFEFEF"


def _draw_axis_marks(
    ax: Axes, timeline: Timeline, lane_y: dict[str, int], char_units: float
) -> None:
    """Behind the lanes: each instant opened out, shaded (a thin gap between two that touch),
    and each stretch of nothing that was cut, hatched, with how long it was where the words
    fit. One collection each: a run of elapses makes thousands of instants."""
    bottom = min(lane_y.values()) - 0.7
    height = 0.7 - bottom
    shaded = [
        (instant.start, instant.end - instant.start - 0.15)
        for instant in timeline.instants
        if instant.end - instant.start > 1.0
    ]
    if shaded:
        ax.broken_barh(shaded, (bottom, height), facecolors=INSTANT_SHADE, edgecolor="none",
                       zorder=0, gid="instants")  # fmt: skip
    if not timeline.breaks:
        return
    cuts = [(cut.start, cut.end - cut.start) for cut in timeline.breaks]
    ax.broken_barh(cuts, (bottom, height), facecolors="white", edgecolor="#999999", hatch="//",
                   linewidth=0.0, zorder=0.5, gid="breaks")  # fmt: skip
    free_from = -math.inf
    for cut in timeline.breaks:
        words = f"{_seconds(cut.seconds)}\ncut"
        middle = (cut.start + cut.end) / 2
        half = char_units * (len(words) / 2 + 1) / 2
        if middle - half < free_from:
            continue
        free_from = middle + half
        ax.text(middle, bottom + 0.1, words, ha="center", va="bottom", fontsize=7,
                color="#555555", zorder=5,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})  # fmt: skip


def _seconds(seconds: float) -> str:
    """``3,540 s`` (whole seconds with a thousands comma, else as short as it goes)."""
    return f"{seconds:,.0f} s" if seconds == round(seconds) else f"{seconds:,.3g} s"


def _draw_marks(
    ax: Axes, timeline: Timeline, lane_y: dict[str, int], bucket: float, focus: set[str]
) -> None:
    """Every mark, one scatter collection per kind (matplotlib is slow per call); routine
    kinds aggregated into buckets of ``bucket`` x units when that is not 0, but on the
    ``focus`` lanes (a notable execution's), where every mark is drawn."""
    by_kind: dict[str, list[tuple[float, str]]] = {}
    for mark in timeline.marks:
        by_kind.setdefault(mark.kind, []).append((mark.x, mark.lane))
    if bucket:
        by_kind = {
            kind: aggregate(kind, [m for m in marks if m[1] not in focus], bucket)
            + [m for m in marks if m[1] in focus]
            for kind, marks in by_kind.items()
        }
    for kind, marks in by_kind.items():
        marker, colour, size, _ = MARK_STYLE[kind]
        ax.scatter([x for x, _ in marks], [lane_y[lane] for _, lane in marks], marker=marker,
                   c=colour, s=size, zorder=3, linewidths=1.5)  # fmt: skip


def _x_label(timeline: Timeline, bucket: float) -> str:
    """What the x axis shows, and whether routine marks are aggregated."""
    label = "virtual time (s), to scale between instants; an instant is opened out (shaded)"
    if timeline.breaks:
        label += "\nto show its events in order; hatched: a stretch of nothing, cut"
    else:
        label += "\nto show its events in order"
    if bucket:
        # Lines no longer than the first: two timelines side by side (the divergence figure)
        # each have half the width, and a longer line ran into the other's.
        label += (
            f"\n{len(timeline.x_of):,} events, more than the picture has pixels:"
            "\ncalls, starts, effects: one mark per few pixels; every fault and crash"
        )
        if timeline.focus_lanes:
            label += "\nthe lanes under the scenario's: notable executions, every mark"
    return label
