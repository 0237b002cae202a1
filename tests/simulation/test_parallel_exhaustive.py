"""The exhaustive search in several processes (``jobs`` > 1): each searches the whole tree in an
order of its own and they share the states searched to their end (``explorer/exhaustive.py``,
``explorer/seen.py``). Together they reach the very states one process reaches, and find
the same violations; the report says how many processes searched."""

from __future__ import annotations

import concurrent.futures
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation.explorer.exhaustive import ExhaustiveSearch, ParallelExhaustive, Part
from yieldstar_sim.simulation.explorer.shards import Runner
from yieldstar_sim.simulation.explorer.strategy import SearchConfig
from yieldstar_sim.simulation.faults import FaultKind
from yieldstar_sim.simulation.shared_states import SharedVisited


def _explore(name: str, max_faults: int, **options: Any) -> ys.ExplorationReport:
    options.setdefault("strategy", "exhaustive")
    return ys.explore(ys.load_scenario(name), max_faults=max_faults, confirm=None, **options)


@pytest.mark.parametrize(
    ("name", "max_faults"),
    [
        ("durable-start", 1), ("trigger-in-step", 1), ("booking-race", 1),
        ("booking-race-fixed", 1), ("fan-out-order", 1), ("cancel-owner", 0),
        ("concurrent-starts", 1),
    ],
)  # fmt: skip
def test_two_processes_reach_the_states_and_violations_one_process_reaches(
    name: str, max_faults: int
) -> None:
    alone = _explore(name, max_faults, stop_at_first=False)
    two = _explore(name, max_faults, stop_at_first=False, jobs=2)
    assert two.exhausted == alone.exhausted
    assert two.distinct_states == alone.distinct_states
    assert sorted(two.state_graph().nodes) == sorted(alone.state_graph().nodes)
    assert {v.invariant for v in two.violations} == {v.invariant for v in alone.violations}
    assert two.verdict == alone.verdict
    assert two.exhaustive is not None
    progress = two.exhaustive.progress
    assert progress["processes"] == progress["sharing"] == 2
    # Not every process need take a move: one that starts after the other searched the whole
    # tree finds its root searched (seen on a loaded machine).
    assert sum(progress["transitions_per_process"]) > 0


def test_processes_reach_the_states_of_one_where_a_stalled_attempt_runs() -> None:
    # The keys are blind to which worker is which, and a stalled attempt's actor is named
    # after its worker. Processes once counted a few states more here (3,250 against 3,247):
    # twins, one state keyed two ways after a freeze at a claim (docs/decisions.md, "Twins
    # that went on differently"); now each order reaches one count.
    alone = _explore("zombie-attempt", 1, stop_at_first=False)
    two = _explore("zombie-attempt", 1, stop_at_first=False, jobs=2)
    assert two.exhausted
    assert alone.exhausted
    assert two.distinct_states == alone.distinct_states
    assert {v.invariant for v in two.violations} == {v.invariant for v in alone.violations}


def test_a_violation_found_by_one_process_stops_the_others() -> None:
    report = _explore("trigger-in-step", 1, jobs=2)
    assert not report.ok
    assert not report.exhausted
    assert report.violations
    assert "stopped at the first violation" in report.coverage()


def test_the_statement_names_the_processes_that_searched() -> None:
    report = _explore("durable-start", 1, jobs=2)
    statement = report.coverage()
    assert statement.startswith("verified: ")
    assert "searched by 2 processes sharing their states" in statement
    # A process that cut what another searched cannot estimate the naive search's schedules
    # under it: the statement gives no estimate it cannot back.
    assert "without caching" not in statement


def test_the_shortest_first_search_in_processes_keeps_its_shortest_violation() -> None:
    options: dict[str, Any] = {"strategy": ys.Exhaustive(order="shortest"), "kinds": ["crash"]}
    alone = _explore("booking-race", 1, **options)
    two = _explore("booking-race", 1, jobs=2, **options)
    assert [(v.invariant, len(v.faults)) for v in two.violations] == [
        (v.invariant, len(v.faults)) for v in alone.violations
    ]


def test_the_shared_table_cuts_only_what_was_searched_with_as_much_left() -> None:
    table = SharedVisited.create(slots=16)
    try:
        keys = [f"{n:032x}" for n in range(40)]  # more keys than slots: the table fills
        for key in keys:
            table.add(key, faults_left=1, depth_left=5)
        kept = [key for key in keys if table.covers(key, 1, 5)]
        assert 0 < len(kept) <= 16
        assert not any(table.covers(key, 2, 5) for key in kept)  # more faults left
        assert not any(table.covers(key, 1, 6) for key in kept)  # more depth left
        assert all(table.covers(key, 0, 4) for key in kept)
        assert not table.covers("f" * 32, 0, None)
        assert not table.stopped
        table.stop()
        assert table.stopped
    finally:
        table.close(unlink=True)


def test_a_visit_reached_again_replaces_the_shared_one_only_where_it_covers_it() -> None:
    # Merging an incomparable visit (more faults, less depth) into the one held would claim a
    # visit no process made, and a depth-bounded search could cut what nobody searched.
    table = SharedVisited.create(slots=16)
    key = "a" * 32
    try:
        table.add(key, faults_left=0, depth_left=10)
        table.add(key, faults_left=1, depth_left=2)
        assert table.covers(key, 0, 10)
        assert not table.covers(key, 1, 10)
        table.add(key, faults_left=1, depth_left=10)
        assert table.covers(key, 1, 10)
    finally:
        table.close(unlink=True)


def test_a_claimed_state_is_not_cut_until_it_is_searched_to_its_end() -> None:
    # A claim says a process is searching the state: another takes a move into it last, and
    # cuts it only once it is searched with as much left.
    table = SharedVisited.create(slots=16)
    key = "b" * 32
    try:
        assert not table.claimed(key)
        table.claim(key)
        assert table.claimed(key)
        assert not table.covers(key, 0, None)
        table.add(key, faults_left=1, depth_left=None)
        assert table.claimed(key)
        assert table.covers(key, 1, None)
    finally:
        table.close(unlink=True)


class _Here:
    """A ``Cluster`` whose processes are calls in this process, one after another."""

    name = "calls"

    def __init__(self, processes: int) -> None:
        self.figures: dict[str, Any] = {}
        self.parts: list[Part] = []
        self.kept: list[int] = []
        """How many states each part's graph kept, as it came back."""
        self._processes = processes

    def processes(self) -> int:
        return self._processes

    def search(self, task: Any, watch: Any, *, share: bool) -> tuple[list[Part], list[str]]:
        self.parts = [task(part=part, table=None) for part in range(self._processes)]
        self.kept = [len(part.covered.state_space or ()) for part in self.parts]
        return self.parts, []


def test_each_process_keeps_its_share_of_the_state_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    # What the processes ship back, and the merge, stay the size of one process's graph
    # however many processes search: at 100 orders x 3 workers under a time budget of 30 s,
    # two Dask workers each shipping a whole graph (and its paths) back ran 13 s past it.
    monkeypatch.setattr(ExhaustiveSearch, "graph_states", 12)
    cluster = _Here(3)
    config = SearchConfig(
        strategy=ys.Exhaustive(), seed=0, max_faults=1, kinds=tuple(FaultKind), freeze=40.0,
        stop_at_first=False,
    )  # fmt: skip
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        runner = Runner(ys.load_scenario("durable-start"), "memory", executor=pool)
        search = ParallelExhaustive(runner, config, processes=3, cluster=cluster)
        search.search()
        runner.close()
    assert cluster.kept == [4, 4, 4]
    assert [len(part.covered.state_paths) for part in cluster.parts] == [4, 4, 4]
    covered = search.section()["exhaustive"]
    assert covered.state_space is not None
    assert 4 <= len(covered.state_space) <= 12
    assert covered.distinct_states > 12  # the count is of every state, as ever
