"""The reduction's summaries shared with the states (``simulation/shared_states.py``,
``simulation/dask_visited.py``, ``persistent.Reduction.summary``/``heard``): a process that
searched a state to its end shares what was touched below it, and another that reaches the
state takes it as its own instead of searching the state again where a vouch above waits on
it. The processes then reach the states one process reaches, with less work each."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation import dask_visited
from yieldstar_sim.simulation.dask_visited import DaskVisited, VisitedPartition
from yieldstar_sim.simulation.explorer.exhaustive import search_part
from yieldstar_sim.simulation.explorer.strategy import SearchConfig
from yieldstar_sim.simulation.faults import FaultKind
from yieldstar_sim.simulation.footprints import Footprint, lease, status, steps
from yieldstar_sim.simulation.persistent import Held, Reduction, Summary
from yieldstar_sim.simulation.shared_states import NO_SUMMARY, SharedVisited, SummaryBook

_SUMMARY: Summary = (
    20.0,
    frozenset({lease("order-41"), status("order-40"), ("lease", None)}),
    Footprint(frozenset({lease("order-41")}), frozenset({steps("order-41")})),
)


class _Known:
    """A process's summaries, by key (what its ``Reduction`` would say)."""

    def __init__(self, found: dict[str, Summary]) -> None:
        self.found = found

    def summary(self, key: str) -> Summary | None:
        return self.found.get(key)


def test_a_summary_has_one_digest_in_every_process() -> None:
    # Sets iterate in an order of their own in each process (string hashes are salted): the
    # digest is of a text with the things sorted, so two processes file one summary alike.
    mine, theirs = SummaryBook(), SummaryBook()
    digest, text = mine.digest(_SUMMARY)
    instant, below, alone = _SUMMARY
    assert alone is not None
    turned = (instant, frozenset(sorted(below, reverse=True, key=str)), alone)
    assert theirs.digest(turned) == (digest, text)
    assert mine.digest(_SUMMARY) == (digest, None)  # sent once
    heard = SummaryBook()
    assert text is not None
    heard.learn(digest, text)
    assert heard.summary(digest) == _SUMMARY
    assert heard.summary(b"\x07" * 8) is None
    assert digest != NO_SUMMARY


def test_a_process_reads_the_summaries_another_shared_in_shared_memory() -> None:
    table = SharedVisited.create(slots=16)
    try:
        first = SharedVisited.attach(table.name, 16, part=0)
        second = SharedVisited.attach(table.name, 16, part=1)
        assert first is not None
        assert second is not None
        first.summarised(_Known({"a" * 32: _SUMMARY}))
        first.claim("a" * 32)
        assert second.summary("a" * 32) is None  # claimed, not searched to its end
        first.add("a" * 32, faults_left=1, depth_left=None)
        first.add("b" * 32, faults_left=1, depth_left=None)  # nothing known whole
        assert second.covers("a" * 32, 1, None)
        assert second.summary("a" * 32) == _SUMMARY
        assert second.summary("b" * 32) is None
        assert second.covers("b" * 32, 1, None)
        # A table no process attached by its part files no texts: it shares states alone.
        table.summarised(_Known({"c" * 32: _SUMMARY}))
        table.add("c" * 32, faults_left=0, depth_left=None)
        assert second.covers("c" * 32, 0, None)
        assert second.summary("c" * 32) is None
        first.close()
        second.close()
    finally:
        table.close(unlink=True)


class _Answered:
    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self, timeout: float | None = None) -> Any:
        return self.value


class _Actor:
    """A partition called as a Dask actor is, answered at once."""

    def __init__(self) -> None:
        self.partition = VisitedPartition()

    def exchange(self, *args: Any) -> _Answered:
        return _Answered(asyncio.run(self.partition.exchange(*args)))


def test_the_partitions_carry_the_summaries_between_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dask_visited, "in_cluster", lambda worker: True)
    actors = [_Actor(), _Actor()]
    workers = ["tcp://a:1", "tcp://b:1"]
    keys = [f"{n:032x}" for n in range(1, 9)]
    plain, told, hearing = (DaskVisited(list(actors), part, workers) for part in range(3))
    plain.add(keys[0], 1, None)  # a process with nothing known whole shares the state alone
    plain.close()
    told.summarised(_Known(dict.fromkeys(keys, _SUMMARY)))
    for key in keys:
        told.add(key, 1, None)
    told.close()
    hearing.close()
    for key in keys:
        assert hearing.covers(key, 1, None)
        # The same visit with a summary says more than one without: it is kept.
        assert hearing.summary(key) == _SUMMARY
    sent = sum(actor.partition._bytes for actor in actors)
    assert sent < 8 * 200  # the summary's text travelled once, not with each entry


def test_a_summary_heard_is_taken_as_the_process_own() -> None:
    reduction = Reduction()
    held = Held(solo=True, instant=20.0)
    assert not reduction.heard("a" * 32, None)
    assert reduction.heard("a" * 32, _SUMMARY)
    assert reduction.known("a" * 32)
    assert reduction.summary("a" * 32) == _SUMMARY
    # A state cut because another process searched it, nothing shared: not known whole, and
    # a summary that took it in is not shared on.
    reduction.unseen("b" * 32, held)
    assert not reduction.known("b" * 32)
    assert reduction.summary("b" * 32) is None


class _Table:
    """A table of shared states in this process (a ``SharedStates`` and ``SharesStates``):
    the faults left and the summary of each state searched to its end."""

    stopped = False

    def __init__(self, entries: dict[str, tuple[int, Summary | None]] | None = None) -> None:
        self.entries = dict(entries or {})
        self.source: Any = None

    def attach(self, part: int) -> _Table:
        return self

    def stop(self) -> None:
        """Nothing to stop."""

    def covers(self, key: str, faults_left: int, depth_left: int | None) -> bool:
        found = self.entries.get(key)
        return found is not None and found[0] >= faults_left

    def add(
        self, key: str, faults_left: int, depth_left: int | None, filed: str | None = None
    ) -> None:
        summary = None if self.source is None else self.source.summary(key)
        self.entries[filed or key] = (faults_left, summary)

    def claim(self, key: str, filed: str | None = None) -> None:
        """Claims are not shared here."""

    def claimed(self, key: str) -> bool:
        return False

    def summarised(self, summaries: Any) -> None:
        self.source = summaries

    def summary(self, key: str) -> Summary | None:
        found = self.entries.get(key)
        return None if found is None else found[1]

    def heard(self, progress: dict[str, Any]) -> None:
        """Progress is not gathered here."""

    def close(self) -> None:
        """Nothing held back."""


#: One process's exhaustive search of a bundled scenario under one fault of every kind.
_ONE_FAULT = SearchConfig(
    strategy=ys.Exhaustive(), seed=0, max_faults=1, kinds=tuple(FaultKind), freeze=40.0,
    stop_at_first=False,
)  # fmt: skip


@pytest.mark.parametrize("name", ["booking-race-fixed", "durable-start"])
def test_a_process_that_hears_the_summaries_searches_no_state_again(name: str) -> None:
    # A second process finds half the states the first searched, the first state left out
    # (taken at random, the same half each run): with their summaries it cuts each where the
    # first process would, and reaches the states the first reached; without them it searches
    # again every one a vouch above waits on, and takes more moves for the same states.
    first = _Table()
    alone = search_part(name, "memory", _ONE_FAULT, 60.0, part=0, table=first)
    states = set(_keys(alone.fingerprints))
    searched = sorted(list(first.entries)[:-1])  # the root, searched to its end last, left out
    chosen = random.Random(7).sample(searched, len(searched) // 2)
    half = {key: first.entries[key] for key in chosen}
    heard = search_part(name, "memory", _ONE_FAULT, 60.0, part=1, table=_Table(half))
    bare = {key: (left, None) for key, (left, _) in half.items()}
    unheard = search_part(name, "memory", _ONE_FAULT, 60.0, part=1, table=_Table(bare))
    assert set(_keys(heard.fingerprints)) <= states
    assert set(_keys(unheard.fingerprints)) <= states
    moves = [part.covered.progress["transitions"] for part in (heard, unheard)]
    assert moves[0] < moves[1]


def _keys(fingerprints: bytes) -> list[bytes]:
    return [fingerprints[at : at + 16] for at in range(0, len(fingerprints), 16)]


def test_a_state_with_a_past_is_shared_under_its_verdict_key_and_not_counted_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dask_visited, "in_cluster", lambda worker: True)
    actors = [_Actor(), _Actor()]
    workers = ["tcp://a:1", "tcp://b:1"]
    state, past = f"{1:032x}", f"{2:032x}"
    sender, hearing = (DaskVisited(list(actors), part, workers) for part in range(2))
    sender.claim(state, past)
    sender.add(state, 1, None, past)
    sender.close()
    hearing.close()
    # Cut only with the same past: the state by its own key was not searched to its end.
    assert hearing.covers(past, 1, None)
    assert not hearing.covers(state, 0, None)
    assert hearing.claimed(state)
    # The partitions count the state once, as the statement does: its verdict key is none.
    assert sum(asyncio.run(actor.partition.summary())[0] for actor in actors) == 1


@pytest.mark.parametrize("name", ["durable-start", "poison-workflow"])
def test_a_process_cuts_the_states_with_a_past_another_searched(name: str) -> None:
    # A second process handed only the states the first searched with a past (filed under
    # their verdict keys, which are no state's key) cuts them where it reaches them with the
    # same past: it reaches only the first's states, in fewer moves than alone.
    first = _Table()
    alone = search_part(name, "memory", _ONE_FAULT, 60.0, part=0, table=first)
    states = set(_keys(alone.fingerprints))
    pasts = {key: entry for key, entry in first.entries.items() if bytes.fromhex(key) not in states}
    assert pasts, "a fault's recovery gives states a past"
    heard = search_part(name, "memory", _ONE_FAULT, 60.0, part=1, table=_Table(pasts))
    again = search_part(name, "memory", _ONE_FAULT, 60.0, part=1, table=_Table())
    assert set(_keys(heard.fingerprints)) <= states
    assert heard.covered.progress["transitions"] < again.covered.progress["transitions"]
