"""The timeline at review size: the workers' busy share as a counter track, a lane of its
own for each notable execution drawn out in full while the workers' lanes aggregate, and one
execution's own story (``focus_trace``), as Perfetto keeps a counter beside the tracks and
drills down into one.

At a thousand orders the workers' lanes are solid bars: what a reader looks for is which
executions went wrong and how busy the workers were. Past ``FOCUS_AFTER`` executions the
timeline puts the busy share above the lanes (averaged per few pixels: deliveries that follow
each other by the hundred in one instant are a level, not a comb), and the executions a
violation names, then those a fault struck or whose delivery ended badly, ran past its lease
or was delivered again after one that did, on lanes of their own under the scenario's, at
most ``FOCUS_LANES``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import TYPE_CHECKING

from yieldstar_sim.core.ops import Op
from yieldstar_sim.engine.world import TRIGGERED
from yieldstar_sim.simulation.trace_payloads import (
    ClaimData,
    EffectData,
    StartChildData,
    StartData,
    TraceKind,
)
from yieldstar_sim.views.layout import natural
from yieldstar_sim.views.timeline_labels import Span

if TYPE_CHECKING:
    from collections.abc import Iterable

    from matplotlib.axes import Axes

    from yieldstar_sim.simulation.trace import TraceEvent
    from yieldstar_sim.views.timeline_labels import Timeline

#: The counter track of the workers' busy share, above the lanes at review size.
BUSY_LANE = "workers busy"
#: Past this many executions, the timeline adds the busy track and notable executions' lanes.
FOCUS_AFTER = 16
#: How many notable executions get a lane of their own, at most.
FOCUS_LANES = 6
#: The colour of the busy share.
BUSY_COLOUR = "#0072B2"


def review_size(
    timeline: Timeline, events: list[TraceEvent], workers: list[str], notable: Iterable[str]
) -> None:
    """Past ``FOCUS_AFTER`` executions, the busy track and the notable executions' lanes
    (``notable`` first: a violation's)."""
    if len({span.execution_id for span in timeline.spans}) > FOCUS_AFTER:
        _busy(timeline, [worker for worker in workers if worker in timeline.lanes])
        _focus(timeline, events, list(notable))


#: A worker's own events (no execution of their own): shown in an execution's own timeline
#: while the worker holds, or held when it crashed, that execution's delivery.
_WORKER_EVENTS = (TraceKind.CRASH, TraceKind.RESTART, TraceKind.FREEZE, TraceKind.RESUME)


def started_by(events: Iterable[TraceEvent], execution_id: str) -> list[str]:
    """The executions ``execution_id`` started (a start, call, child or spawn it made, or a
    non-durable trigger from one of its step bodies), in the order they were admitted."""
    started: dict[str, None] = {}
    for event in events:
        if event.execution_id != execution_id:
            continue
        data = event.data
        if isinstance(data, StartData | StartChildData) and data.accepted is not None:
            started[data.accepted] = None
        elif isinstance(data, EffectData) and data.name == TRIGGERED:
            started[str(data.data.get("execution_id"))] = None
    return list(started)


def focus_trace(events: Iterable[TraceEvent], execution_id: str) -> list[TraceEvent]:
    """The events of one execution's story: its own, those of the executions it started, and
    what happened to a worker (a crash, its restart, a freeze) while it held, or when it lost,
    one of their deliveries. ``focus_timeline`` lays them out."""
    events = list(events)
    kin = {execution_id, *started_by(events, execution_id)}
    holding: dict[str, str] = {}  # by worker: whose delivery it holds, or held when it crashed
    kept = []
    for event in events:
        worker = event.worker or ""
        if isinstance(event.data, ClaimData):
            holding[worker] = event.data.claimed
        if event.execution_id in kin or (
            event.kind in _WORKER_EVENTS and holding.get(worker) in kin
        ):
            kept.append(event)
        if event.kind == TraceKind.RESTART or (
            event.kind == TraceKind.CALL and event.op in (Op.ACKNOWLEDGE, Op.RELEASE)
        ):
            holding.pop(worker, None)
    return kept


def _busy(timeline: Timeline, workers: list[str]) -> None:
    """The workers' busy share over the axis, as a step from each x on: how many of
    ``workers`` hold a delivery there (a stale holder too, until it learns), over how many
    there are; a counter track above the lanes."""
    changes: dict[float, int] = {}
    for span in timeline.spans:
        if span.worker in workers:
            changes[span.start] = changes.get(span.start, 0) + 1
            changes[span.end] = changes.get(span.end, 0) - 1
    held = 0
    steps = [(0.0, 0.0)]
    for x in sorted(changes):
        held += changes[x]
        steps.append((x, held / max(len(workers), 1)))
    steps.append((timeline.width, steps[-1][1]))
    timeline.busy = steps
    timeline.lanes.insert(0, BUSY_LANE)


def _focus(timeline: Timeline, events: list[TraceEvent], named: list[str]) -> None:
    """Lanes of their own for the notable executions (``named`` first, then those a fault
    struck or whose delivery ended badly, ran past its lease or was a redelivery), each with
    its deliveries (labelled with their worker and token) and every mark of its events."""
    found: dict[str, float] = {}
    ended_badly: set[str] = set()  # executions whose last delivery ended badly
    for span in sorted(timeline.spans, key=lambda span: span.start):
        bad = span.how in ("crash", "refused", "open") or span.expires is not None
        # A delivery that ended badly, or the one after it: not a wake after a suspension.
        if bad or span.execution_id in ended_badly:
            found.setdefault(span.execution_id, span.start)
        (ended_badly.add if bad else ended_badly.discard)(span.execution_id)
    for event in events:
        if event.kind == TraceKind.FAULT and event.execution_id:
            found.setdefault(event.execution_id, timeline.x_of.get(event.seq, 0.0))
    first: dict[str, float] = {}
    for span in timeline.spans:
        first.setdefault(span.execution_id, span.start)
    ordered = [name for name in dict.fromkeys(named) if name in first]
    ordered += sorted(
        (name for name in found if name not in ordered),
        key=lambda name: (found[name], natural(name), name),
    )
    # The violation's executions first, then the rest; each lane in the story's order.
    chosen = sorted(ordered[:FOCUS_LANES], key=lambda name: (first[name], natural(name), name))
    lanes: dict[str, str] = {}
    for name in chosen:
        lanes[name] = name if name not in timeline.lanes else f"{name} (execution)"
        timeline.lanes.append(lanes[name])
    timeline.focus, timeline.focus_lanes = list(lanes), list(lanes.values())
    # Every event has an x of its own: a mark's x says whose event it is.
    whose = {timeline.x_of[event.seq]: event.execution_id for event in events}
    for span in list(timeline.spans):
        if span.execution_id in lanes:
            # The worker, or the lane of the attempt that hung (it names its token).
            label = (
                span.worker
                if "(token" in span.worker
                else f"{span.worker} \u00b7 token {span.token}"
            )
            timeline.spans.append(
                Span(lanes[span.execution_id], span.execution_id, span.token, span.start,
                     span.end, span.how, span.expires, label)
            )  # fmt: skip
    for mark in list(timeline.marks):
        lane = lanes.get(whose.get(mark.x) or "")
        if lane is not None and mark.lane != lane:
            timeline.marks.append(dataclasses.replace(mark, lane=lane))


def busy_buckets(steps: list[tuple[float, float]], bucket: float) -> list[tuple[float, float]]:
    """The busy share ``steps`` (from each x on) averaged over buckets ``bucket`` wide, as a
    zoomed-out counter track shows it: deliveries that follow each other by the hundred in
    one instant are a level, not a comb.

    >>> busy_buckets([(0.0, 0.0), (1.0, 1.0), (3.0, 0.0), (4.0, 0.0)], 2.0)
    [(0.0, 0.5), (2.0, 0.5), (4.0, 0.5)]
    """
    if bucket <= 0 or len(steps) < 2:
        return steps
    end = steps[-1][0]
    sums = [0.0] * max(1, math.ceil(end / bucket))
    for (x, share), (after, _) in itertools.pairwise(steps):
        # The step's share over each bucket it covers (by index: no float creeps past one).
        for index in range(int(x // bucket), min(int(after // bucket), len(sums) - 1) + 1):
            low, high = index * bucket, (index + 1) * bucket
            sums[index] += share * max(0.0, min(after, high) - max(x, low))
    averaged = [(index * bucket, total / bucket) for index, total in enumerate(sums)]
    return [*averaged, (end, averaged[-1][1])]


def draw_busy(ax: Axes, timeline: Timeline, lane_y: dict[str, int], bucket: float) -> None:
    """The workers' busy share as a filled step on its lane, none busy at the bottom of the
    lane's band and every worker at its top (a grey line), averaged per few pixels when the
    timeline is denser than its pixels."""
    if not timeline.busy or BUSY_LANE not in lane_y:
        return
    base = lane_y[BUSY_LANE] - 0.35
    steps = busy_buckets(timeline.busy, bucket / 2)
    xs = [x for x, _ in steps]
    ys = [base + 0.7 * share for _, share in steps]
    ax.fill_between(xs, base, ys, step="post", color=BUSY_COLOUR, alpha=0.45, linewidth=0)
    ax.plot([0.0, timeline.width], [base + 0.7, base + 0.7], color="#BBBBBB", linewidth=0.6)
    ax.plot([0.0, timeline.width], [base, base], color="#BBBBBB", linewidth=0.6)
