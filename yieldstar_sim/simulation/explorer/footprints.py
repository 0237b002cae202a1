"""The footprints of the exhaustive search's transitions, read from the trace events each left,
and the dependence relation the sleep sets prune by (docs/decisions.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.core.ops import Op
from yieldstar_sim.engine.world import TRIGGERED
from yieldstar_sim.simulation.trace_payloads import (
    BodyData,
    CancelData,
    ClaimData,
    EffectData,
    StartChildData,
    StartData,
    StoreReadData,
    StoreWriteData,
    TraceKind,
    WorldReadData,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.simulation.trace import TraceEvent

#: A footprint item that conflicts with everything: a fault, a move of virtual time.
EVERYTHING = "*"
#: The queue of due work: what a claim reads, and every call that changes it.
QUEUE = "queue"

Footprint = frozenset[str]


def dependent(first: Footprint, second: Footprint) -> bool:
    """Whether two transitions' footprints conflict: they share an execution, the queue, the
    ledger or the random numbers, or one writes a store key the other reads or writes, or either
    is a fault or moved time. Two reads of one key commute.

    >>> dependent(frozenset({"x:booking-1", "r:seats"}), frozenset({"x:booking-2", "r:seats"}))
    False
    >>> dependent(frozenset({"x:booking-1", "r:seats"}), frozenset({"x:booking-2", "w:seats"}))
    True
    >>> dependent(frozenset({"x:a"}), frozenset({EVERYTHING}))
    True
    """
    if EVERYTHING in first or EVERYTHING in second:
        return True
    for item in first:
        if item.startswith("r:"):
            if "w:" + item[2:] in second:
                return True
        elif item in second or (item.startswith("w:") and "r:" + item[2:] in second):
            return True
    return False


def footprint(events: Sequence[TraceEvent], *, fault: bool, time_moved: bool) -> Footprint:
    """What a transition touched, from the trace events it left (see ``dependent``)."""
    if fault or time_moved:
        return frozenset({EVERYTHING})
    items: set[str] = set()
    for event in events:
        kind, data = event.kind, event.data
        if kind in (
            TraceKind.FAULT, TraceKind.CRASH, TraceKind.RESTART, TraceKind.FREEZE,
            TraceKind.RESUME, TraceKind.DEPLOY, TraceKind.PRUNE, TraceKind.CANCEL,
            TraceKind.TRIGGER, TraceKind.CLIENT_ATTEMPT, TraceKind.CLIENT_ANSWER,
            TraceKind.CLIENT_GIVE_UP, TraceKind.STALL, TraceKind.UNSTALL, TraceKind.SKEW,
            TraceKind.STOP,
        ):  # fmt: skip
            return frozenset({EVERYTHING})
        if event.execution_id:
            items.add("x:" + event.execution_id)
        if kind == TraceKind.CALL and event.op != Op.PUT_STEP:
            items.add(QUEUE)
        if isinstance(data, ClaimData):
            items.add("x:" + data.claimed)
        elif isinstance(data, StartData | StartChildData) and data.accepted:
            items.add("x:" + data.accepted)
        elif isinstance(data, CancelData):
            items.update("x:" + reached for reached in data.cancelled)
        elif isinstance(data, StoreReadData):
            items.add("r:" + data.key)
        elif isinstance(data, StoreWriteData):
            items.add("w:" + data.key)
        elif isinstance(data, EffectData):
            if data.name == TRIGGERED:
                return frozenset({EVERYTHING})  # a body's trigger admits a new execution
            items.add("ledger")
        elif isinstance(data, WorldReadData) and data.read == "random":
            items.add("random")
        elif isinstance(data, BodyData) and data.elapsed > 0:
            return frozenset({EVERYTHING})  # the body's work moves time and renews its lease
    return frozenset(items)
