"""The exhaustive search's incremental state keys: at every choice point they equal the key read
whole, they tell states apart exactly as the full-read key before them did (so the search's
results do not change), and they follow every kind of change."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import pytest
from _keys import search_summary, state_key, whole_key

import yieldstar_sim as ys
from yieldstar_sim.engine.world import Effect
from yieldstar_sim.simulation.explorer import plans
from yieldstar_sim.simulation.explorer.exhaustive import ExhaustiveSearch
from yieldstar_sim.simulation.explorer.statekeys import StateKeys, WholeReads
from yieldstar_sim.simulation.faults import Fault, FaultKind
from yieldstar_sim.simulation.scenario_files import bundled_scenarios
from yieldstar_sim.simulation.trace_payloads import TraceKind

if TYPE_CHECKING:
    from yieldstar_sim.simulation.kernel import Point
    from yieldstar_sim.simulation.simulator import Simulator

SCENARIOS = sorted(bundled_scenarios())


class _Keyed:
    """Drives one run as the exhaustive search's probe does (a chooser for the points where
    several actors are ready, an observer for the others), feeding the trace to the keys and
    reading every kind of key at every choice point."""

    def __init__(self, simulator: Simulator, turn: int) -> None:
        self.simulator, self.turn = simulator, turn
        self.keys, self.whole_reads = StateKeys(lines=True), WholeReads()
        self.arrived, self.span = -1, 0
        self.seen: list[tuple[str, str, str, str]] = []
        """At each point: (incremental, non-memory path, read whole, the old full read)."""
        simulator.kernel.chooser = self.choose
        simulator.kernel.observers.append(self.observe)

    def choose(self, index: int, ready: list[str]) -> str:
        self._arrive(index, None)
        return ready[(index * self.turn) % len(ready)]

    def observe(self, index: int, name: str, point: Point, fault: Any) -> None:
        if self.arrived < index:
            self._arrive(index, (name, point))

    def _arrive(self, index: int, chosen: tuple[str, Point] | None) -> None:
        sim = self.simulator
        events = sim.trace.events[self.span :]
        self.span = len(sim.trace.events)
        self.keys.remember(events)
        self.whole_reads.remember(events)
        self.arrived = index
        histories = self.keys.histories
        self.seen.append(
            (
                self.keys.key(sim, chosen),
                self.whole_reads.key(sim, chosen),
                whole_key(sim, histories, chosen),
                state_key(sim, histories, chosen),
            )
        )


def _plans(scenario: ys.Scenario) -> list[plans.Plan]:
    """The fault-free run, then one per fault kind placed a third of the way in: crashes, lost
    responses and freezes write records in orders the clean run does not."""
    clean = plans.run_plan(scenario, plans.Plan(0, 0))
    at = clean.points // 3
    found = [plans.Plan(0, 0)]
    for kind in (FaultKind.CRASH_AFTER, FaultKind.LOSE_RESPONSE, FaultKind.FREEZE):
        seconds = 90.0 if kind is FaultKind.FREEZE else None
        found.append(plans.Plan(0, 0, (Fault(kind, at=at, seconds=seconds),)))
    return found


@pytest.mark.parametrize("name", SCENARIOS)
def test_incremental_keys_equal_whole_reads_and_part_states_as_before(name: str) -> None:
    scenario = ys.load_scenario(name)
    pairs: set[tuple[str, str]] = set()
    for plan in _plans(scenario):
        for turn in (0, 1):  # the first ready actor, then each in turn
            simulator = plans._simulator(scenario, plan, "memory")
            keyed = _Keyed(simulator, turn)
            simulator.run()
            simulator.runtime.close()
            assert keyed.seen, plan
            for index, (cached, reads, whole, old) in enumerate(keyed.seen):
                assert cached == whole == reads, (plan, turn, index)
                pairs.add((old, cached))
    # Across every point of every run: two points share a new key exactly when they shared
    # the old one (the new keys are another name for the same classes of states).
    assert len({o for o, _ in pairs}) == len({c for _, c in pairs}) == len(pairs)


class _OldKeys(StateKeys):
    """The search's key before ``StateKeys``: everything read whole at every point."""

    def __init__(self) -> None:
        super().__init__(lines=True)

    def key(
        self, simulator: Simulator, chosen: tuple[str, Point] | None, *, ended: bool = False
    ) -> str:
        return state_key(simulator, self.histories, chosen, ended=ended)


@pytest.mark.parametrize(
    ("name", "max_faults"),
    [
        ("booking-race", 0),
        ("booking-race", 1),
        ("booking-race-fixed", 1),
        ("durable-start", 0),
        ("durable-start", 1),
        ("cancel-owner", 0),
        ("concurrent-starts", 1),
        ("skewed-lease", 1),
        ("orphan-after-cancel", 1),
        ("zombie-attempt", 1),
    ],
)
def test_exhaustive_explorations_do_not_depend_on_how_keys_are_read(
    name: str, max_faults: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = ys.load_scenario(name)
    options: dict[str, Any] = {
        "strategy": "exhaustive", "confirm": None, "max_faults": max_faults,
        "stop_at_first": False, "budget": 400,
    }  # fmt: skip
    if max_faults:
        options["kinds"] = ["crash", "freeze", "lose_response"]
    incremental = ys.explore(scenario, **options)
    assert incremental.schedules_run > 1
    summaries = {}
    for keys in (_OldKeys, WholeReads):
        monkeypatch.setattr(ExhaustiveSearch, "state_keys", keys)
        summaries[keys.__name__] = search_summary(ys.explore(scenario, **options))
    assert summaries == dict.fromkeys(summaries, search_summary(incremental))


def _finished(name: str) -> tuple[Simulator, StateKeys]:
    """A run of ``name`` to its end, its keys read at every point, its runtime left open."""
    simulator = plans._simulator(ys.load_scenario(name), plans.Plan(0, 0), "memory")
    keyed = _Keyed(simulator, 0)
    simulator.run()
    keyed.keys.remember(simulator.trace.events[keyed.span :])
    return simulator, keyed.keys


def test_every_kind_of_change_moves_the_key_and_the_cache_follows_it() -> None:
    """After a run, change each part of the state as the code that owns it does: the key moves
    each time, and stays the key read whole (a cache that stopped following a part fails)."""
    simulator, keys = _finished("durable-start")
    runtime: Any = simulator.runtime
    rows = runtime.rows_view()
    seen = [keys.key(simulator, None)]

    def moved(what: str) -> None:
        key = keys.key(simulator, None)
        assert key == whole_key(simulator, keys.histories, None), what
        assert key not in seen, what
        seen.append(key)

    assert seen[0] == whole_key(simulator, keys.histories, None)
    # A step's value rewritten as put_step writes one: the row's revision, its step_writes and
    # the runtime's row_writes move (MemoryRuntime._touch).
    row = next(row for row in rows.values() if row.steps)
    step_key, step = next(iter(row.steps.items()))
    row.steps[step_key] = dataclasses.replace(step, value={"changed": True})
    row.step_writes.append(step_key)
    runtime._touch(row)
    moved("a step's value")
    row.set_outcome("failed", None, None)
    runtime._touch(row)
    moved("a record's status and result")
    runtime.trigger(next(iter(rows.values())).workflow_id, {"again": 1})
    moved("a new execution")
    simulator.store.write("seats", 7)
    moved("the store")
    simulator.ledger.effects.append(Effect("charged", {"amount": 1}, "x", "s", 1, "w", 0.0))
    moved("the ledger")
    worker = next(iter(keys.histories))
    # An event that adds to a history (a claim, a crash or an outcome would start it again).
    event = next(
        e for e in reversed(simulator.trace.events) if e.kind == TraceKind.CALL and e.op != "claim"
    )
    keys.remember([dataclasses.replace(event, worker=worker)])
    # A history counts only for a waiting actor: put the worker at a point to see it.
    point: Any = type("P", (), {"label": "claim"})()
    before = keys.key(simulator, (worker, point))
    keys.remember([dataclasses.replace(event, worker=worker)])
    after = keys.key(simulator, (worker, point))
    assert after != before
    assert after == whole_key(simulator, keys.histories, (worker, point))
    simulator.clock.advance(5.0)
    moved("the clock")
    runtime.close()


def test_the_memory_runtime_is_followed_not_read_whole() -> None:
    """On the memory runtime the keys follow the rows that changed: no key asks it for every
    record or start request (so the comparison with whole reads above compares two ways)."""
    simulator = plans._simulator(ys.load_scenario("durable-start"), plans.Plan(0, 0), "memory")
    runtime: Any = simulator.runtime
    reads: list[str] = []
    executions, requests = runtime.executions, runtime.start_requests

    def counted_executions() -> Any:
        reads.append("executions")
        return executions()

    def counted_requests() -> Any:
        reads.append("start requests")
        return requests()

    runtime.executions, runtime.start_requests = counted_executions, counted_requests
    keys = StateKeys()
    points = []

    def observe(index: int, name: str, point: Point, fault: Any) -> None:
        keys.key(simulator, (name, point))
        points.append(index)

    simulator.kernel.observers.append(observe)
    simulator.run()
    runtime.close()
    assert len(points) > 10
    assert "executions" not in reads
    # Read again only when an execution was admitted (durable-start admits a few).
    assert 0 < reads.count("start requests") < len(points) // 2


@pytest.mark.parametrize("name", ["durable-start", "booking-race", "spawn-after-prune"])
def test_a_runtime_read_whole_gives_the_keys_the_memory_runtime_s_rows_give(name: str) -> None:
    """DuckDB reports no changes, so its records and start requests are read whole at every
    point: the keys are those of the same schedule on the memory runtime, followed by rows."""
    keys = {}
    for runtime in ("memory", "duckdb"):
        simulator = plans._simulator(ys.load_scenario(name), plans.Plan(0, 0), runtime)
        keyed = _Keyed(simulator, 1)
        simulator.run()
        simulator.runtime.close()
        assert all(cached == whole for cached, _, whole, _ in keyed.seen)
        keys[runtime] = [cached for cached, *_ in keyed.seen]
    assert keys["duckdb"] == keys["memory"]


def test_a_replayed_prefix_takes_up_the_histories_its_last_node_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each run after the first replays a prefix: its keys are not fed the prefix's events but
    take up the histories kept where the prefix ends (one keys object per run: none was built
    again from the whole trace), and the results are those of the whole read (above)."""
    made: list[StateKeys] = []
    restored: list[int] = []

    class Counted(StateKeys):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

        def restore(self, snapshot: Any) -> None:
            restored.append(len(made))
            super().restore(snapshot)

    monkeypatch.setattr(ExhaustiveSearch, "state_keys", Counted)
    monkeypatch.setattr(ExhaustiveSearch, "restore_states", False)  # the replaying search
    report = ys.explore(
        ys.load_scenario("cancel-owner"), strategy="exhaustive", max_faults=1, confirm=None,
        stop_at_first=False, kinds=["crash"],
    )  # fmt: skip
    runs = len(report.state_paths)
    assert runs > 100
    assert len(made) == runs
    assert restored == list(range(2, runs + 1))


def test_a_restored_run_goes_on_with_the_keys_its_node_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A search that restores states makes its keys once: each run after the first goes on
    with a copy of the keys kept at the node it was restored to (none is read whole again),
    and the results are those of the whole read (above)."""
    made: list[StateKeys] = []

    class Counted(StateKeys):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    monkeypatch.setattr(ExhaustiveSearch, "state_keys", Counted)
    report = ys.explore(
        ys.load_scenario("cancel-owner"), strategy="exhaustive", max_faults=1, confirm=None,
        stop_at_first=False, kinds=["crash"],
    )  # fmt: skip
    assert len(report.state_paths) > 100
    assert report.search_progress["restores"] > 100
    assert len(made) == 1
