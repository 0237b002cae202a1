"""What the trace shows about an admission: the event that admitted each execution, why a
step ran again, where and by whom; and how many of a long list a sentence names."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from yieldstar_sim.core.ops import Op
from yieldstar_sim.engine.world import TRIGGERED
from yieldstar_sim.simulation.trace_payloads import (
    EffectData,
    FaultData,
    StartChildData,
    StartData,
    TraceKind,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from yieldstar_sim.simulation.invariants.protocol import RunView
    from yieldstar_sim.simulation.trace import Trace, TraceEvent

V = TypeVar("V")

#: Items a violation's sentence names one by one; past it, "and N more". A bug that strikes
#: every one of 300 orders is one sentence a reader can take in, not 300 clauses.
LISTED_AT_MOST = 3


def listed(words: Sequence[str], joiner: str, *, where: str) -> str:
    """The first ``LISTED_AT_MOST`` of ``words`` joined, then how many more and ``where`` to
    find every one.

    >>> listed(["a", "b"], " and ", where="x")
    'a and b'
    >>> listed(["a", "b", "c", "d", "e"], ", ", where="run.effects has every one")
    'a, b, c and 2 more (run.effects has every one)'
    """
    shown = joiner.join(words[:LISTED_AT_MOST])
    more = len(words) - LISTED_AT_MOST
    return f"{shown} and {more} more ({where})" if more > 0 else shown


#: Who asked: (caller execution, step key), or (client, the request it meant).
Request = tuple[str, str]


def repeated(pairs: Iterable[tuple[Request, V]]) -> list[tuple[Request, list[V]]]:
    """The requests given more than one value, in order of the request, each with its values
    in the order given: what an exactly-once invariant reports."""
    groups: dict[Request, list[V]] = defaultdict(list)
    for request, value in pairs:
        groups[request].append(value)
    return [(request, values) for request, values in sorted(groups.items()) if len(values) > 1]


def admission_events(run: RunView) -> dict[str, TraceEvent]:
    """For each execution admitted during the run, the trace event that admitted it (kept
    on the trace: three invariants ask for it)."""
    return dict(run.trace.derived("admission_events", _admission_events))


def _admission_events(trace: Trace) -> dict[str, TraceEvent]:
    # Read on from the run's restore point (``Trace.fold``): a search's run shares the
    # events before it with the run before.
    return trace.fold("admission events", _Admissions).admitted


@dataclass(slots=True)
class _Admissions:
    """The event that admitted each execution, as the events read so far show."""

    admitted: dict[str, TraceEvent] = field(default_factory=dict)

    def copy(self) -> _Admissions:
        """A reader that stands where this one stands (``Trace.fold`` keeps one)."""
        return _Admissions(dict(self.admitted))

    def read(self, events: Sequence[TraceEvent]) -> None:
        """Take ``events``, the next ones in order."""
        admitted = self.admitted
        for event in events:
            data = event.data
            # Exact types, not isinstance: this runs over every event of every run.
            if type(data) is StartData or type(data) is StartChildData:
                if data.accepted is not None:
                    admitted.setdefault(data.accepted, event)
            elif type(data) is EffectData and data.name == TRIGGERED:
                admitted.setdefault(str(data.data["execution_id"]), event)


#: What a fault of each kind did to the worker's call, as ``why_again`` says it.
_FAULT_WORDS = {
    "freeze": "after {worker} froze before {call} and its lease expired",
    "crash": "after {worker} crashed before {call}",
    "crash_after": "after {worker} crashed right after {call}",
    "child_exit": "after {worker}'s worker process exited before {call}",
    "lose_response": "after the response of {worker}'s {call} was lost",
    "infra_error": "after {worker}'s {call} failed",
}


def why_again(run: RunView, first: TraceEvent, second: TraceEvent) -> str:
    """What happened between two admissions for one step that made the step run again."""
    between = [e for e in run.trace if first.seq < e.seq < second.seq]
    redelivered = next(
        (
            e
            for e in between
            if e.kind == TraceKind.CALL
            and e.op == Op.CLAIM
            and e.execution_id == first.execution_id
        ),
        None,
    )
    again = (
        f", and {redelivered.worker} ran the step again at t={redelivered.t:g} "
        f"(token {redelivered.token})"
        if redelivered is not None
        else ""
    )
    for event in between:
        if isinstance(event.data, FaultData) and event.worker == first.worker:
            what = event.data.kind
            call = f"{event.op} of step {event.step_key}" if event.step_key else str(event.op)
            words = _FAULT_WORDS.get(what)
            if words is None:
                return f"after a fault ({event.text}){again}"
            return words.format(worker=first.worker, call=call) + again
    for event in between:
        if event.kind in (TraceKind.REJECT, TraceKind.REFUSED, TraceKind.CRASH):
            return f"after {event.text}"
    return "on a replay"


#: What fixes a violation of a promise only the runtime keeps (one target per request, a fenced
#: acknowledgement, a wake never lost, ...): workflow code cannot break it, the runtime can.
RUNTIME_FIX = (
    "only the runtime keeps this promise: a runtime adapter of your own breaks it, and its "
    "conformance cases name the rule (yieldstar-sim explore --check-adapter, or "
    "yieldstar_sim.testing.check_runtime_adapter)"
)


def seen_at(event: TraceEvent) -> str:
    """``at t=3 by w1``: when an event happened and on which worker."""
    return f"at t={event.t:g} by {event.worker}"
