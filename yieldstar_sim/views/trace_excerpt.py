"""The trace for a terminal: every event of a story-size run; at review size, the stories of
the executions a reader looks for, the executions the timeline draws on lanes of their own.

A thousand orders make thousands of events, and ``yieldstar-sim run`` printed one line each:
the verdict scrolled away under a wall of trace. Past ``TRACE_LINES`` events the command
prints the stories (``focus_trace``: an execution's own events, those of the executions it
started and what befell their workers) of the executions the violations name, then of those a
fault struck, at most ``FOCUS_LANES`` of them; each stretch of the trace left out is one line
that counts it, and the heading says what was chosen and why. A run with no such execution
ends with its last ``TAIL`` events, where a cut run stopped.

>>> import yieldstar_sim as ys
>>> run = ys.simulate(ys.load_scenario("trigger-in-step"), runtime="memory")
>>> excerpt = trace_excerpt(run)
>>> excerpt.whole, excerpt.lines == run.trace.lines()
(True, True)
>>> excerpt = trace_excerpt(run, at_most=10)
>>> excerpt.chosen, excerpt.whole
(('order-42', '@ship-order-2', '@ship-order-3'), False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from yieldstar_sim.simulation.trace_payloads import TraceKind
from yieldstar_sim.views.evidence import violation_names
from yieldstar_sim.views.timeline_focus import FOCUS_LANES, focus_trace

if TYPE_CHECKING:
    from yieldstar_sim.simulation.result import SimulationRun

#: Events a run may have for the terminal to print each: a few screens. The bundled stories
#: have at most about a hundred; 100 orders have 800 and more.
TRACE_LINES = 200
#: Events printed from the end of a run that no violation or fault singles an execution out of.
TAIL = 20


@dataclass(frozen=True)
class TraceExcerpt:
    """The lines to print, and what they leave out.

    ``lines`` are the trace's own lines (``Trace.lines``), with one line counting each stretch
    left out; ``chosen`` the executions whose stories they tell, each with why (``reasons``);
    ``shown`` how many of the trace's ``events`` they print.
    """

    lines: list[str]
    events: int
    shown: int
    chosen: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    more: int = 0
    """Executions the violations name beyond those chosen."""

    @property
    def whole(self) -> bool:
        """Whether every event is printed."""
        return self.shown == self.events

    def heading(self, where: str = "") -> str:
        """One sentence: how many events the trace has and which of them are printed;
        ``where`` names where every event is (the trace file)."""
        rest = f"; every event is in {where}" if where and not self.whole else ""
        if self.whole:
            return f"trace: {self.events:,} events"
        head = f"trace: {self.events:,} events, too many to print one a line"
        if not self.chosen:
            return (
                f"{head}; no violation or fault singles out an execution, so below are the "
                f"last {self.shown:,}{rest}"
            )
        by_reason: dict[str, list[str]] = {}
        for name, why in zip(self.chosen, self.reasons, strict=True):
            by_reason.setdefault(why, []).append(name)
        who = "; ".join(f"{_and(names)} ({why})" for why, names in by_reason.items())
        more = f", and {self.more:,} more executions the violations name" if self.more else ""
        if len(self.chosen) > 1:
            story = "the stories of {}{}: their events, those of the executions they started and "
            story += "what befell their workers"
        else:
            story = "the story of {}{}: its events, those of the executions it started and what "
            story += "befell its workers"
        return f"{head}; below, {story.format(who, more)} ({self.shown:,} events){rest}"


def _chosen(run: SimulationRun) -> tuple[list[str], list[str], int]:
    """The executions whose stories a terminal prints, why each, and how many more the
    violations name: the violations' first (their order, then the trace's), then those a fault
    struck (in the order they were struck), at most ``FOCUS_LANES``, as many as the timeline
    draws on lanes of their own."""
    # In the order the trace first shows them: a parent before the executions it started.
    first: dict[str, int] = {}
    for event in run.trace:
        if event.execution_id:
            first.setdefault(event.execution_id, event.seq)
    reasons: dict[str, str] = {}
    for number, violation in enumerate(run.violations, start=1):
        named = sorted(violation_names(violation) & first.keys(), key=first.__getitem__)
        for name in named:
            reasons.setdefault(name, f"named by violation {number}")
    named_count = len(reasons)
    for event in run.trace:
        if event.kind == TraceKind.FAULT and event.execution_id:
            reasons.setdefault(event.execution_id, "struck by a fault")
    chosen = list(reasons)[:FOCUS_LANES]
    return chosen, [reasons[name] for name in chosen], max(0, named_count - len(chosen))


def trace_excerpt(run: SimulationRun, at_most: int = TRACE_LINES) -> TraceExcerpt:
    """The run's trace as a terminal prints it: whole up to ``at_most`` events, else the
    stories of the executions it singles out (see the module's words), at most ``at_most``
    of their events (the first half and the last half, past it)."""
    lines = run.trace.lines()
    events = list(run.trace)
    if len(events) <= at_most:
        return TraceExcerpt(lines, len(events), len(events))
    chosen, reasons, more = _chosen(run)
    if chosen:
        kept: set[int] = set()
        for name in chosen:
            kept.update(event.seq for event in focus_trace(events, name))
        positions = [at for at, event in enumerate(events) if event.seq in kept]
    else:
        positions = list(range(len(events)))[-TAIL:]
    if len(positions) > at_most:
        positions = positions[: at_most // 2] + positions[-(at_most - at_most // 2) :]
    printed: list[str] = []
    last = -1
    for at in positions:
        if at > last + 1:
            printed.append(_left_out(at - last - 1))
        printed.append(lines[at])
        last = at
    if last < len(events) - 1:
        printed.append(_left_out(len(events) - 1 - last))
    return TraceExcerpt(printed, len(events), len(positions), tuple(chosen), tuple(reasons), more)


def _left_out(count: int) -> str:
    """The line that stands for ``count`` events left out."""
    return f"{'':10}\u2026 {count:,} event{'s' if count > 1 else ''} left out"


def _and(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
