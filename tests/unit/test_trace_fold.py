"""``Trace.fold``: a reader read on from what the trace kept of its last restore point gives
what a reader of the whole trace gives, and reads only the events past that point; a trace cut
before the kept point and grown again is read from its start."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.simulation.trace import Trace
from yieldstar_sim.simulation.trace_payloads import TraceKind

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.simulation.trace import TraceEvent


class _Texts:
    """Every event's text, in order; and how many events every reader made so far read."""

    read_count = 0

    def __init__(self, texts: list[str] | None = None) -> None:
        self.texts = texts or []

    def read(self, events: Sequence[TraceEvent]) -> None:
        _Texts.read_count += len(events)
        self.texts += [event.text for event in events]

    def copy(self) -> _Texts:
        return _Texts(list(self.texts))


def _add(trace: Trace, *texts: str) -> None:
    for text in texts:
        trace.add(0.0, TraceKind.TRIGGER, text)


def test_a_fold_reads_on_from_its_restore_point() -> None:
    trace = Trace()
    _add(trace, "a", "b", "c")
    assert trace.fold("texts", _Texts).texts == ["a", "b", "c"]
    trace.truncate(2)  # a restore: "a", "b" stay
    _add(trace, "d", "e")
    _Texts.read_count = 0
    assert trace.fold("texts", _Texts).texts == ["a", "b", "d", "e"]
    assert _Texts.read_count == 4  # "a" and "b" into the kept reader, then "d" and "e"
    trace.truncate(2)
    _add(trace, "f")
    _Texts.read_count = 0
    assert trace.fold("texts", _Texts).texts == ["a", "b", "f"]
    assert _Texts.read_count == 1  # the kept reader stood after "b"


def test_a_trace_cut_before_the_kept_point_is_read_again() -> None:
    trace = Trace()
    _add(trace, "a", "b", "c")
    trace.fold("texts", _Texts)
    trace.truncate(2)
    _add(trace, "d")
    trace.fold("texts", _Texts)  # keeps a reader after "a", "b"
    trace.truncate(1)
    _add(trace, "x", "y")
    assert trace.fold("texts", _Texts).texts == ["a", "x", "y"]
    trace.truncate(0)
    assert trace.fold("texts", _Texts).texts == []
    _add(trace, "z")
    assert trace.fold("texts", _Texts).texts == ["z"]


def test_a_copy_is_the_callers() -> None:
    trace = Trace()
    _add(trace, "a")
    mine = trace.fold("texts", _Texts)
    mine.texts.append("mine")
    assert trace.fold("texts", _Texts).texts == ["a"]


def test_two_readers_fold_one_trace_each_from_its_own_restore_point() -> None:
    trace = Trace()
    _add(trace, "a", "b", "c")
    trace.fold("one", _Texts)
    trace.fold("two", _Texts)
    trace.truncate(2)  # a restore: "a", "b" stay
    _add(trace, "d")
    _Texts.read_count = 0
    assert trace.fold("one", _Texts).texts == ["a", "b", "d"]
    # The first fold since the restore does not move the second's point past it.
    assert trace.fold("two", _Texts).texts == ["a", "b", "d"]
    assert _Texts.read_count == 6  # each: "a" and "b" into its kept reader, then "d"
    trace.truncate(2)
    _add(trace, "e")
    _Texts.read_count = 0
    assert trace.fold("two", _Texts).texts == ["a", "b", "e"]
    assert trace.fold("one", _Texts).texts == ["a", "b", "e"]
    assert _Texts.read_count == 2  # each kept reader stood after "b"
