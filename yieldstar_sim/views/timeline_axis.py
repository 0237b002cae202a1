"""The timeline's time axis: virtual time to scale, with instants opened out and long stretches
of nothing cut.

Most of a simulation happens at a few instants: a thousand orders make 15,000 events at t=0.
Time alone would draw them as one line, so each *instant* is opened out: its events take room
in their order (one x unit each, and each instant at least ``len(events) / INSTANT_SHARE``,
less when there are many instants), and the picture shades it. Between instants the axis runs
to scale, one scale for the whole picture, taking about ``TIME_SHARE`` of it, with ticks at
round numbers of seconds; a stretch in which nothing happens (no delivery held, no worker
frozen, no attempt stalled) that is ``CUT_FACTOR`` times longer than the middle gap is cut to
a marked break saying how long it was.

>>> from yieldstar_sim.simulation.trace import TraceEvent
>>> from yieldstar_sim.simulation.trace_payloads import TraceKind
>>> axis = time_axis([TraceEvent(n, t, TraceKind.TRIGGER) for n, t in enumerate([0, 0, 1, 9])])
>>> [label for _, label in axis.ticks], [round(axis.x_at(t), 1) for t in (1, 5)]
(['0', '1', '9'], [2.1, 4.2])
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.trace_payloads import ClaimData, TraceKind

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.simulation.trace import TraceEvent

#: An instant's least room, as a share of the events: ``1 / INSTANT_SHARE`` of them (less when
#: there are many instants, so that the floors take at most half the axis).
INSTANT_SHARE = 20
#: The share of the axis the time between instants takes, when any passes.
TIME_SHARE = 0.35
#: A stretch of nothing this many times longer than the middle gap between instants is cut.
CUT_FACTOR = 10.0
#: A cut stretch's room, as a share of the axis.
BREAK_SHARE = 0.03
#: About how many round-number ticks the time between instants gets.
SCALE_TICKS = 8
#: Past this many instants, their own ticks give way to round numbers (and only the first
#: and the last instant are named).
MANY_INSTANTS = 60


@dataclass(frozen=True, slots=True)
class Instant:
    """One virtual time at which events happen, opened out from ``start`` to ``end``."""

    t: float
    start: float
    end: float
    events: int


@dataclass(frozen=True, slots=True)
class Break:
    """A stretch of nothing cut from the axis: drawn from ``start`` to ``end``, ``seconds``
    long in virtual time (from ``t_from`` to ``t_to``)."""

    start: float
    end: float
    t_from: float
    t_to: float

    @property
    def seconds(self) -> float:
        """How long the cut stretch was."""
        return self.t_to - self.t_from


@dataclass
class Axis:
    """Where each event and each virtual time is drawn."""

    x_of: dict[int, float] = field(default_factory=dict)
    """Each event's x, by its sequence number."""
    ticks: list[tuple[float, str]] = field(default_factory=list)
    """Each instant's start and time."""
    scale_ticks: list[tuple[float, str]] = field(default_factory=list)
    """Round numbers of seconds between instants, where the axis runs to scale."""
    instants: list[Instant] = field(default_factory=list)
    breaks: list[Break] = field(default_factory=list)
    width: float = 1.0
    scale: float = 0.0
    """x units per second between instants (0: no time passes)."""

    def x_at(self, t: float) -> float:
        """The x of virtual time ``t``: within an instant, just before its first event; between
        instants, to scale (inside a break, in proportion to the break)."""
        if not self.instants:
            return 0.0
        times = [instant.t for instant in self.instants]
        index = bisect.bisect_left(times, t)
        if index < len(times) and times[index] == t:
            start = self.instants[index].start
            room = start - (self.instants[index - 1].end if index else 0.0)
            return max(start - min(0.5, room / 2), 0.0)
        if index == 0:
            return 0.0
        if index == len(times):
            return self.width
        before, after = self.instants[index - 1], self.instants[index]
        share = (t - before.t) / (after.t - before.t)
        return before.end + share * (after.start - before.end)


def _quiet_gaps(instants: list[list[TraceEvent]]) -> list[bool]:
    """For each gap between instants, whether nothing is going on in it: no delivery held by a
    live worker, no worker frozen, no attempt stalled."""
    held: set[str] = set()
    frozen: set[str] = set()
    stalled: set[tuple[str, str | None]] = set()
    quiet = []
    for instant in instants:
        for event in instant:
            worker = event.worker or ""
            if isinstance(event.data, ClaimData):
                held.add(worker)
            elif event.kind == TraceKind.CRASH or (
                event.kind == TraceKind.CALL and event.op in (Op.ACKNOWLEDGE, Op.RELEASE)
            ):
                held.discard(worker)
            elif event.kind == TraceKind.FREEZE:
                frozen.add(worker)
            elif event.kind == TraceKind.RESUME:
                frozen.discard(worker)
            elif event.kind == TraceKind.STALL:
                stalled.add((worker, event.execution_id))
            elif event.kind == TraceKind.UNSTALL:
                stalled.discard((worker, event.execution_id))
        quiet.append(not (held or frozen or stalled))
    return quiet[:-1]


def _round_step(seconds: float, ticks: int) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving about ``ticks`` ticks."""
    raw = seconds / max(ticks, 1)
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    return next((m * power for m in (1, 2, 5, 10) if m * power >= raw), 10 * power)


def time_axis(events: Sequence[TraceEvent]) -> Axis:
    """Lay out ``events`` (in order) on the axis: instants opened out, time between them to
    scale, long stretches of nothing cut."""
    instants: list[list[TraceEvent]] = []
    for event in events:
        if instants and instants[-1][0].t == event.t:
            instants[-1].append(event)
        else:
            instants.append([event])
    axis = Axis()
    if not instants:
        return axis
    least = len(events) / max(INSTANT_SHARE, 2 * len(instants))
    rooms = [max(float(len(instant)), least) for instant in instants]
    opened = sum(rooms)
    gaps = [after[0].t - before[0].t for before, after in itertools.pairwise(instants)]
    quiet = _quiet_gaps(instants)
    positive = sorted(gap for gap in gaps if gap > 0)
    middle = positive[len(positive) // 2] if positive else 0.0
    cut = [
        gap > CUT_FACTOR * middle and q and len(positive) > 1
        for gap, q in zip(gaps, quiet, strict=True)
    ]
    kept = sum(gap for gap, c in zip(gaps, cut, strict=True) if not c)
    time_units = opened * TIME_SHARE / (1 - TIME_SHARE) if kept > 0 else 0.0
    axis.scale = time_units / kept if kept > 0 else 0.0
    room = BREAK_SHARE * (opened + time_units)
    x = 0.0
    for index, instant in enumerate(instants):
        if index:
            gap = gaps[index - 1]
            if cut[index - 1]:
                axis.breaks.append(Break(x, x + room, instants[index - 1][0].t, instant[0].t))
                x += room
            else:
                x += gap * axis.scale
        start = x
        step = rooms[index] / len(instant)
        for event in instant:
            axis.x_of[event.seq] = x
            x += step
        axis.instants.append(Instant(instant[0].t, start, x, len(instant)))
        axis.ticks.append((start, f"{instant[0].t:g}"))
    axis.width = max(x, 1.0)
    if kept > 0:
        axis.scale_ticks = _scale_ticks(axis, _round_step(kept, SCALE_TICKS))
    return axis


def _scale_ticks(axis: Axis, step: float) -> list[tuple[float, str]]:
    """Round multiples of ``step`` seconds strictly between instants, where time runs to scale
    (not in a break); past ``MANY_INSTANTS`` instants, those that fall on an instant too (its
    own tick goes unlabelled then: thousands of instants at odd times read as noise)."""
    ticks = []
    many = len(axis.instants) > MANY_INSTANTS
    for before, after in itertools.pairwise(axis.instants):
        if any(cut.t_from == before.t for cut in axis.breaks):
            continue
        first = math.floor(before.t / step) + 1
        for k in range(first, math.floor(after.t / step) + 1):
            t = k * step
            if t < after.t or (many and t == after.t):
                ticks.append((axis.x_at(t), f"{t:g}"))
    return ticks
