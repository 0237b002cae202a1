"""The records folded into each event's changed rows: replaying them forwards or backwards
gives the same tables at every event, and the graph's edges folded beside them are
``graph_from_trace``'s."""

from __future__ import annotations

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation import SimulationRun
from yieldstar_sim.views.evidence import edge_line
from yieldstar_sim.views.graph import graph_from_trace
from yieldstar_sim.views.records import RecordBook, Snapshot

SCENARIOS = ["durable-start", "frozen-worker", "join-child", "spawn-after-prune", "retry-backoff"]


def run_of(name: str) -> SimulationRun:
    return ys.simulate(ys.load_scenario(name), seed=0, runtime="memory")


def plain(snapshot: Snapshot) -> object:
    return [(t.name, [(r.key, r.cells, r.mark) for r in t.rows]) for t in snapshot.tables]


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_event_s_records_are_the_same_however_the_cursor_got_there(name: str) -> None:
    run = run_of(name)
    last = len(run.trace) - 1
    forwards = [plain(RecordBook.of_run(run).at(seq)) for seq in range(last + 1)]
    backwards_book = RecordBook.of_run(run)
    backwards_book.at(last)
    backwards = [plain(backwards_book.at(seq)) for seq in reversed(range(last + 1))]
    assert backwards[::-1] == forwards
    fresh = [plain(RecordBook.of_run(run).at(seq)) for seq in range(last + 1)]
    assert fresh == forwards


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_folded_links_are_the_execution_graph_s_edges_at_every_event(name: str) -> None:
    run = run_of(name)
    book = RecordBook.of_run(run)
    links: dict[object, tuple[str, ...]] = {}
    for seq in range(len(run.trace)):
        for change in book.changes(seq):
            if change.table != "links":
                continue
            if change.cells is None:
                del links[change.ident]
            else:
                links[change.ident] = change.cells
        graph = graph_from_trace(run.trace, seq)
        assert links == {
            (source, target, key): (
                source, target, data["step_key"], edge_line(data),
                "duplicate" if data["duplicate"] else "", str(data.get("calls", 1)),
            )
            for source, target, key, data in graph.edges(keys=True, data=True)
        }, seq  # fmt: skip


def test_an_event_changes_only_the_rows_it_touched() -> None:
    run = run_of("durable-start")
    book = RecordBook.of_run(run)
    total_rows = sum(len(t.rows) for t in book.at(len(run.trace) - 1).tables)
    changed = [len(book.changes(seq)) for seq in range(len(run.trace))]
    assert max(changed) < total_rows
    marked = [sum(len(t.marked) for t in book.at(seq).tables) for seq in range(len(run.trace))]
    tables_rows = [
        len([c for c in book.changes(seq) if c.table != "links" and c.cells is not None])
        for seq in range(len(run.trace))
    ]
    assert marked == tables_rows
