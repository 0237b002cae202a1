"""The states an exhaustive search reached, kept as 16-byte fingerprints (``explorer/seen.py``)
and a state graph bounded for people (``StateSpace.limit``): a search of a million states
fits in memory, and counts, caches and finds exactly what it did when it kept every state's
key, label and edges (issue 32, item 5)."""

from __future__ import annotations

import pickle
import random

import pytest
from _keys import search_summary

import yieldstar_sim as ys
from yieldstar_sim.simulation import deadline as deadline_module
from yieldstar_sim.simulation.deadline import Deadline
from yieldstar_sim.simulation.explorer.exhaustive import ExhaustiveSearch
from yieldstar_sim.simulation.explorer.paths import Paths
from yieldstar_sim.simulation.explorer.seen import SeenStates
from yieldstar_sim.simulation.explorer.shards import Runner
from yieldstar_sim.simulation.explorer.strategy import Exhaustive, SearchConfig
from yieldstar_sim.simulation.faults import FaultKind
from yieldstar_sim.simulation.trail import schedule_of


def _key(number: int) -> str:
    return f"{random.Random(number).getrandbits(128):032x}"


def test_a_state_is_cut_only_when_reached_before_with_no_fewer_faults_and_no_less_depth() -> None:
    seen = SeenStates()
    key = _key(1)
    assert not seen.reached(key, 1, 5)
    assert seen.reached(key, 1, 5)
    assert seen.reached(key, 0, 4)
    assert not seen.reached(key, 2, 5)  # more faults left: searched again, and kept
    assert seen.reached(key, 2, 5)
    assert seen.reached(key, 1, 5)
    # Incomparable with what was kept (fewer faults, more depth): a second visit, both kept.
    assert not seen.reached(key, 1, 9)
    assert seen.reached(key, 1, 9)
    assert seen.reached(key, 2, 5)
    assert not seen.reached(key, 2, 9)
    assert len(seen) == 1


def test_the_table_grows_and_keeps_every_state_its_visits_and_estimates() -> None:
    seen = SeenStates()  # 4,096 slots: it grows past 3,072 states
    keys = [_key(n) for n in range(5_000)]
    for number, key in enumerate(keys):
        assert seen.add(key)
        assert not seen.reached(key, number % 3, None)
        seen.keep_estimate(key, float(number))
    assert len(seen) == len(keys)
    assert not any(seen.add(key) for key in keys)
    assert all(seen.reached(key, n % 3, None) for n, key in enumerate(keys))
    assert not any(seen.reached(key, 3, None) for key in keys[:10])
    assert [seen.estimate(key) for key in keys[:3]] == [0.0, 1.0, 2.0]


def test_fingerprints_count_the_states_of_several_searches_once() -> None:
    one, two = SeenStates(), SeenStates()
    for n in range(100):
        one.add(_key(n))
    for n in range(50, 180):
        two.add(_key(n))
    union = SeenStates()
    union.add_fingerprints(one.fingerprints())
    union.add_fingerprints(two.fingerprints())
    assert len(union) == 180


def test_another_search_s_fingerprints_land_in_a_table_as_large_as_theirs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # They come in the order of their table's slots: into fewer slots they piled up in runs,
    # each probing past the run before (merging two processes' 18,000 states took 2 s).
    # A table with at least their slots takes each at its slot or next to it.
    theirs = SeenStates()
    for number in range(20_000):
        theirs.add(_key(number))
    union, ours = SeenStates(), _key(20_000)
    union.add(ours)
    slots: list[int] = []  # the table's slots as each of theirs goes in
    found = SeenStates._slot

    def slot(self: SeenStates, raw: bytes) -> int:
        if raw != bytes.fromhex(ours):
            slots.append(self._mask + 1)
        return found(self, raw)

    monkeypatch.setattr(SeenStates, "_slot", slot)
    union.add_fingerprints(theirs.fingerprints())
    assert len(union) == 20_001
    assert min(slots) >= theirs._mask + 1


def test_a_key_of_another_shape_is_hashed_not_refused() -> None:
    seen = SeenStates()
    assert seen.add("s0")
    assert seen.add("0123")
    assert not seen.add("s0")


@pytest.mark.parametrize(("name", "max_faults"), [("durable-start", 1), ("booking-race", 0)])
def test_a_bounded_state_graph_changes_nothing_the_search_finds(
    name: str, max_faults: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = {"strategy": "exhaustive", "confirm": None, "max_faults": max_faults,
               "stop_at_first": False}  # fmt: skip
    whole = ys.explore(ys.load_scenario(name), **options)
    monkeypatch.setattr(ExhaustiveSearch, "graph_states", 12)
    bounded = ys.explore(ys.load_scenario(name), **options)
    assert whole.distinct_states > 12
    assert bounded.distinct_states == whole.distinct_states
    assert bounded.schedules_run == whole.schedules_run
    assert bounded.verdict == whole.verdict
    assert bounded.exhausted == whole.exhausted
    assert [v.invariant for v in bounded.violations] == [v.invariant for v in whole.violations]
    space = bounded.state_space
    assert space is not None
    assert space.full
    assert len(space) == 12
    # The graph keeps the first states the search reached, each as it was kept before, and
    # only edges between states it keeps; a state it keeps still replays to itself.
    assert list(space.nodes) == list(whole.state_space.nodes)[:12]  # type: ignore[union-attr]
    assert all(e.source in space.nodes and e.target in space.nodes for e in space.edges.values())
    assert len(bounded.state_space or ()) == 12
    key = list(space.nodes)[-1]
    assert bounded.schedule_to_state(key) == whole.schedule_to_state(key)
    # Counts, cuts, the naive estimate, verdicts and violations; not the paths, kept now
    # only for the states the graph keeps.
    assert search_summary(bounded)[:-1] == search_summary(whole)[:-1]


def test_the_paths_to_the_graph_s_states_keep_each_move_once() -> None:
    # Whole schedules grew with the states times the depth (36 million moves for 36,810
    # states a thousand deep), which a process of a search on a cluster shipped back: kept as
    # the tree a depth-first search's runs make, they hold one entry a move at most, and read
    # back as the schedules they were.
    runner = Runner(ys.load_scenario("durable-start"), "memory")
    config = SearchConfig(
        strategy=Exhaustive(), seed=0, max_faults=1, kinds=tuple(FaultKind),
        freeze=40.0, stop_at_first=False,
    )  # fmt: skip
    search = ExhaustiveSearch(runner, config)
    search.search()
    covered = search.section()["exhaustive"]
    runner.close()
    paths = covered.state_paths
    assert list(paths) == [schedule_of(trail) for trail in search.paths]
    assert len(paths) == len(covered.state_space) > 100
    assert paths.moves <= search.transitions
    assert sum(len(path) for path in paths) > 5 * paths.moves
    assert pickle.loads(pickle.dumps(paths)) == paths
    merged = Paths.of(search.paths[:10])
    merged.extend(Paths.of(search.paths[10:]))
    assert merged == paths


def test_a_state_graph_crosses_to_another_process_whole_and_compact() -> None:
    # A search in several processes ships each process's graph back: as objects it pickled
    # to 4.4 MB for 18,000 states; as columns, each key, label and name once, a third.
    report = ys.explore(
        ys.load_scenario("booking-race"), strategy="exhaustive", max_faults=1, confirm=None,
        stop_at_first=False,
    )  # fmt: skip
    space = report.state_space
    assert space is not None
    assert space.violating()
    space.cut_by.append("a test cut it")
    back = pickle.loads(pickle.dumps(space))
    assert (back.root, back.limit, back.cut_by) == (space.root, space.limit, space.cut_by)
    assert back.nodes == space.nodes
    assert list(back.nodes) == list(space.nodes)
    assert back.edges == space.edges
    assert list(back.edges) == list(space.edges)
    # The edges hold their states' own key strings, as a search's do.
    assert all(edge.source is back.nodes[edge.source].key for edge in back.edges.values())
    assert len(pickle.dumps(space)) * 2 < len(pickle.dumps((space.nodes, space.edges)))


def test_cancelled_deadlines_do_not_pile_up_while_the_first_one_is_far_off() -> None:
    """A search cancels a deadline a run; the watchdog sleeps until the first is due."""
    watchdog = deadline_module._WATCHDOG
    far = Deadline(3_600)
    with far:
        for _ in range(5_000):
            with Deadline(600):
                pass
        assert len(watchdog._heap) < 1_000
