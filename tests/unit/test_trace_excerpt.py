"""The trace as a terminal prints it (``views.trace_excerpt``): whole at story size; at review
size the stories of the executions a reader looks for, each stretch left out counted."""

from __future__ import annotations

import dataclasses
import re

from _review_size import durable_start, trigger_in_step

import yieldstar_sim as ys
from yieldstar_sim.views.timeline_focus import focus_trace
from yieldstar_sim.views.trace_excerpt import TAIL, TRACE_LINES, trace_excerpt

_LEFT_OUT = re.compile(r"^ {10}\u2026 ([\d,]+) events? left out$")


def _left_out(lines: list[str]) -> int:
    """How many events the excerpt's counting lines say it left out."""
    return sum(int(found[1].replace(",", "")) for line in lines if (found := _LEFT_OUT.match(line)))


def test_a_story_size_run_is_printed_whole() -> None:
    for name in ("trigger-in-step", "poison-workflow", "leader-rollback"):
        run = ys.simulate(ys.load_scenario(name), seed=0, runtime="memory")
        assert len(run.trace) <= TRACE_LINES
        excerpt = trace_excerpt(run)
        assert excerpt.whole
        assert excerpt.lines == run.trace.lines()
        assert excerpt.heading("out/x.jsonl") == f"trace: {len(run.trace):,} events"


def test_at_review_size_the_stories_of_the_named_executions_are_printed_and_the_rest_counted() -> (
    None
):
    # 100 orders of RFC 003's Problem, order-50's worker crashing before it records its ship
    # step: 1,600 events, and the command printed each, the verdict far below them.
    run = ys.simulate(trigger_in_step(100, crashed=50), seed=0, runtime="memory")
    assert run.verdict == "violated"
    excerpt = trace_excerpt(run)
    assert not excerpt.whole
    # order-50 first, then the two ship-orders it triggered, as the trace first shows them.
    assert excerpt.chosen[0] == "order-50"
    assert len(excerpt.chosen) == 3
    assert set(excerpt.reasons) == {"named by violation 1"}
    story = {e.seq for name in excerpt.chosen for e in focus_trace(list(run.trace), name)}
    lines = run.trace.lines()
    printed = [line for line in excerpt.lines if not _LEFT_OUT.match(line)]
    assert printed == [lines[at] for at, event in enumerate(run.trace) if event.seq in story]
    assert excerpt.shown == len(printed) < TRACE_LINES
    assert _left_out(excerpt.lines) + excerpt.shown == excerpt.events == len(run.trace)
    assert any(
        "w" in line and "crash" in line and "put_step order-50/ship" in line for line in printed
    )
    heading = excerpt.heading("out/t.jsonl")
    assert heading.startswith(f"trace: {len(run.trace):,} events, too many to print one a line")
    assert "the stories of order-50, " in heading
    assert "(named by violation 1)" in heading
    assert heading.endswith(f"({excerpt.shown:,} events); every event is in out/t.jsonl")


def test_with_nothing_singled_out_the_last_events_are_printed() -> None:
    scenario = dataclasses.replace(durable_start(40, crashed=1), faults=[])
    run = ys.simulate(scenario, seed=0, runtime="memory")
    assert run.ok
    assert len(run.trace) > TRACE_LINES
    excerpt = trace_excerpt(run)
    assert excerpt.chosen == ()
    assert excerpt.shown == TAIL
    assert excerpt.lines[1:] == run.trace.lines()[-TAIL:]
    assert _left_out(excerpt.lines[:1]) == len(run.trace) - TAIL
    assert "no violation or fault singles out an execution, so below are the last 20" in (
        excerpt.heading()
    )


def test_stories_longer_than_the_bound_keep_their_beginning_and_their_end() -> None:
    run = ys.simulate(trigger_in_step(100, crashed=50), seed=0, runtime="memory")
    excerpt = trace_excerpt(run, at_most=10)
    printed = [line for line in excerpt.lines if not _LEFT_OUT.match(line)]
    assert excerpt.shown == len(printed) == 10
    assert _left_out(excerpt.lines) + 10 == len(run.trace)
    events = list(run.trace)
    seqs = {e.seq for name in excerpt.chosen for e in focus_trace(events, name)}
    story = [
        line for line, event in zip(run.trace.lines(), events, strict=True) if event.seq in seqs
    ]
    assert len(story) > 10
    assert printed[:5] == story[:5]
    assert printed[-5:] == story[-5:]
