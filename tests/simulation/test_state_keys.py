"""The state keys (``simulation/statekeys.py``): at every choice point they equal the key read
whole, they tell states apart exactly as the full read does (so the searches' results do not
depend on how keys are read), and they follow every kind of change."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from _keys import search_summary, state_key, whole_key

import yieldstar_sim as ys
from yieldstar_sim.engine.world import Effect
from yieldstar_sim.simulation.execution import Execution
from yieldstar_sim.simulation.faults import Fault, FaultKind
from yieldstar_sim.simulation.moves import Move
from yieldstar_sim.simulation.scenario_files import bundled_scenarios
from yieldstar_sim.simulation.statekeys import StateKeys, WholeReads, holds_no_past
from yieldstar_sim.simulation.trace_payloads import TraceKind

SCENARIOS = sorted(bundled_scenarios())


class _Keyed:
    """Drives one run, taking at each choice point one of its moves in turn, and reads every
    kind of key at every point."""

    def __init__(self, execution: Execution, turn: int) -> None:
        self.execution, self.turn = execution, turn
        self.lines, self.whole_reads = StateKeys(lines=True), WholeReads()
        self.span = 0
        self.seen: list[tuple[str, str, str, str]] = []
        """At each point: (the run's own, read whole incrementally, read whole, full read)."""

    def run(self) -> None:
        execution = self.execution
        while not execution.done():
            self.read()
            moves = execution.moves()
            move = moves[(execution.points * self.turn) % len(moves)]
            execution.take(execution.planned(move))

    def read(self) -> None:
        execution = self.execution
        state = execution.state
        events = state.trace.events[self.span :]
        self.span = len(state.trace.events)
        self.lines.remember(events)
        self.whole_reads.remember(events)
        self.seen.append(
            (
                execution.key(),
                self.whole_reads.key(state),
                whole_key(state, state.trace.events),
                state_key(state, self.lines.histories),
            )
        )


def _runs(scenario: ys.Scenario) -> list[tuple[Fault, ...]]:
    """The fault-free run, then one per fault kind placed a third of the way in: crashes, lost
    responses and freezes write records in orders the clean run does not."""
    clean = ys.simulate(scenario, runtime="memory", scenario_faults=False)
    clean.runtime.close()
    at = clean.points // 3
    found: list[tuple[Fault, ...]] = [()]
    for kind in (FaultKind.CRASH_AFTER, FaultKind.LOSE_RESPONSE, FaultKind.FREEZE):
        seconds = 90.0 if kind is FaultKind.FREEZE else None
        found.append((Fault(kind, at=at, seconds=seconds),))
    return found


def _execution(scenario: ys.Scenario, faults: tuple[Fault, ...] = (), **options: Any) -> Execution:
    options.setdefault("runtime", "memory")
    return Execution(scenario, faults=faults, scenario_faults=False, **options)


@pytest.mark.parametrize("name", SCENARIOS)
def test_incremental_keys_equal_whole_reads_and_part_states_as_before(name: str) -> None:
    scenario = ys.load_scenario(name)
    pairs: set[tuple[str, str]] = set()
    for faults in _runs(scenario):
        for turn in (0, 1):  # the first move, then each in turn
            keyed = _Keyed(_execution(scenario, faults), turn)
            keyed.run()
            keyed.execution.close()
            assert keyed.seen, faults
            for index, (cached, reads, whole, old) in enumerate(keyed.seen):
                assert cached == whole == reads, (faults, turn, index)
                pairs.add((old, cached))
    # Across every point of every run: two points share a new key exactly when they shared
    # the old one (the new keys are another name for the same classes of states).
    assert len({o for o, _ in pairs}) == len({c for _, c in pairs}) == len(pairs)


class _FullReads(StateKeys):
    """Keys read in full at every point (``_keys.state_key``), as a search could read them."""

    def __init__(self, **options: Any) -> None:
        super().__init__(lines=True, **options)

    def key(self, state: Any, *, ended: bool = False) -> str:
        return state_key(state, self.histories, ended=ended)


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
        ("fan-out-order", 1),
        ("random-replica", 1),
        ("continue-as-new-event-fixed", 1),
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
    assert incremental.exhaustive.progress["transitions"] > 10
    summaries = {}
    for keys in (_FullReads, WholeReads):
        monkeypatch.setattr(Execution, "state_keys", keys)
        summaries[keys.__name__] = search_summary(ys.explore(scenario, **options))
    assert summaries == dict.fromkeys(summaries, search_summary(incremental))


def _finished(name: str) -> tuple[Execution, StateKeys]:
    """A run of ``name`` to its end, its keys read at every point, its runtime left open."""
    keyed = _Keyed(_execution(ys.load_scenario(name)), 0)
    keyed.run()
    keyed.lines.remember(keyed.execution.state.trace.events[keyed.span :])
    return keyed.execution, keyed.lines


def test_every_kind_of_change_moves_the_key_and_the_cache_follows_it() -> None:
    """After a run, change each part of the state as the code that owns it does: the key moves
    each time, and stays the key read whole (a cache that stopped following a part fails)."""
    execution, keys = _finished("durable-start")
    state = execution.state
    runtime: Any = state.runtime
    rows = runtime.rows_view()
    seen = [keys.key(state)]

    def moved(what: str) -> None:
        key = keys.key(state)
        assert key == whole_key(state, state.trace.events), what
        assert key not in seen, what
        seen.append(key)

    assert seen[0] == whole_key(state, state.trace.events)
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
    state.store.write("seats", 7)
    moved("the store")
    state.ledger.effects.append(Effect("charged", {"amount": 1}, "x", "s", 1, "w", 0.0))
    moved("the ledger")
    state.world_draws += 1
    moved("the world's random draws")
    state.clocks.behind["w1"] = 5.0
    moved("a worker's clock")
    # An event that adds to a history counts for an actor that waits: the worker's history
    # grows, and its term with it.
    worker = next(name for name in state.kernel.waits if name.startswith("w"))
    # Idle at its claim, a worker holds nothing of its past and its history is not in its
    # key: asleep, it is.
    assert holds_no_past(state.kernel.waits[worker])
    state.kernel.waits[worker] = 99.0
    moved("a worker asleep instead of idle at its claim")
    event = next(
        e for e in reversed(state.trace.events) if e.kind == TraceKind.CALL and e.op != "claim"
    )
    state.trace.events.append(dataclasses.replace(event, worker=worker, seq=len(state.trace)))
    keys.remember(state.trace.events[-1:])
    moved("a worker's history")
    state.clock.advance(5.0)
    moved("the clock")
    execution.close()


def test_the_memory_runtime_is_followed_not_read_whole() -> None:
    """On the memory runtime the keys follow the rows that changed: no key asks it for every
    record or start request (so the comparison with whole reads above compares two ways)."""
    execution = _execution(ys.load_scenario("durable-start"))
    runtime: Any = execution.runtime
    reads: list[str] = []
    executions, requests = runtime.executions, runtime.start_requests

    def counted_executions() -> Any:
        reads.append("executions")
        return executions()

    def counted_requests() -> Any:
        reads.append("start requests")
        return requests()

    runtime.executions, runtime.start_requests = counted_executions, counted_requests
    points = 0
    while not execution.done():
        execution.key()
        points += 1
        execution.take(execution.default_move())
    runtime.executions, runtime.start_requests = executions, requests
    execution.close()
    assert points > 5
    assert "executions" not in reads
    # Read again only when an execution was admitted (durable-start admits a few).
    assert 0 < reads.count("start requests") < points // 2


@pytest.mark.parametrize("name", ["durable-start", "booking-race", "spawn-after-prune"])
def test_a_runtime_read_whole_gives_the_keys_the_memory_runtime_s_rows_give(name: str) -> None:
    """DuckDB reports no changes, so its records and start requests are read whole at every
    point: the keys are those of the same schedule on the memory runtime, followed by rows."""
    keys = {}
    for runtime in ("memory", "duckdb"):
        keyed = _Keyed(_execution(ys.load_scenario(name), runtime=runtime), 1)
        keyed.run()
        keyed.execution.close()
        assert all(cached == whole for cached, _, whole, _ in keyed.seen)
        keys[runtime] = [cached for cached, *_ in keyed.seen]
    assert keys["duckdb"] == keys["memory"]


def test_a_restored_run_goes_on_with_the_keys_its_state_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A search that restores states makes its keys once: each run after the first goes on
    with a copy of the keys kept with the state it was restored to (none is read whole
    again), and the results are those of the whole read (above)."""
    made: list[StateKeys] = []

    class Counted(StateKeys):
        def __init__(self, **options: Any) -> None:
            super().__init__(**options)
            made.append(self)

    monkeypatch.setattr(Execution, "state_keys", Counted)
    report = ys.explore(
        ys.load_scenario("cancel-owner"), strategy="exhaustive", max_faults=1, confirm=None,
        stop_at_first=False, kinds=["crash"],
    )  # fmt: skip
    assert report.exhaustive is not None
    assert len(report.exhaustive.state_paths) > 100
    assert report.exhaustive.progress["restores"] > 100
    # One for the search's run, and one per check of a restore against a replay.
    assert len(made) < 40


def _states_reached(name: str, part: int) -> bytes:
    """The fingerprints of the states one exhaustive search of ``name`` (1 fault) reaches,
    taking each state's moves in the order of process ``part`` of a parallel search."""
    from yieldstar_sim.simulation.explorer.exhaustive import ExhaustiveSearch
    from yieldstar_sim.simulation.explorer.shards import Runner
    from yieldstar_sim.simulation.explorer.strategy import Exhaustive, SearchConfig

    scenario = ys.load_scenario(name)
    config = SearchConfig(
        strategy=Exhaustive(), max_faults=1, stop_at_first=False,
        freeze=scenario.lease_seconds + scenario.redelivery_delay,
    )  # fmt: skip
    runner = Runner(scenario, "memory")
    try:
        search = ExhaustiveSearch(runner, config)
        search.part = part
        search.search()
        raw = search.states.fingerprints()
    finally:
        runner.close()
    return b"".join(sorted(raw[i : i + 16] for i in range(0, len(raw), 16)))


@pytest.mark.parametrize(
    "name",
    [
        "zombie-attempt",
        "heartbeat-zombie",
        "durable-start",
        "trigger-in-step",
        "deploy-changes-params",
    ],
)
def test_a_search_reaches_the_same_states_in_any_order(name: str) -> None:
    # A key that merged two states with different futures let the order decide which of them
    # was searched: zombie-attempt reached 3,247 or 3,250 states (the skew of the worker
    # holding the lease, or the other's, summed apart), heartbeat-zombie 616 or 608 (a
    # stalled attempt with no worker: the now-idle one's, or the busy one's). The reduction
    # did too, where it vouched for the first worker by name in two states that mirror each
    # other, or took a failed claim back to its own state for a state whose runs were unknown
    # (durable-start 204 or 199 states, trigger-in-step 210 or 191). And a worker frozen at
    # its claim was keyed with the history of the delivery before it: deploy-changes-params
    # reached 366 states in each of three orders, 373 in all.
    reached = _states_reached(name, 0)
    assert all(_states_reached(name, part) == reached for part in (1, 2, 3))


def test_a_worker_frozen_at_its_claim_is_keyed_by_what_followed_its_claim() -> None:
    # Two workers idle at their claims hold nothing of their past, and are keyed alike
    # whichever delivered before: w1 delivering, or w1 crashing at once and w2 delivering. A
    # freeze at the claim of the one that did not deliver must give one key too; when the
    # freeze went on the crashed worker's old history, the two mirrored states went on to two
    # keys, and the order of a search decided which it counted (deploy-changes-params reached
    # 366 states in each of three orders, 373 in all).
    scenario = ys.load_scenario("deploy-changes-params")

    def frozen(path: list[Move], idle: str) -> tuple[str, str]:
        execution = Execution(scenario, scenario_faults=False)
        try:
            for move in path:
                execution.take(move)
            idle_key = execution.key()
            execution.take(Move(idle, FaultKind.FREEZE, 30.0))
            return idle_key, execution.key()
        finally:
            execution.close()

    delivered = frozen([Move("w1")] * 8, "w2")
    crashed_first = frozen([Move("w1", FaultKind.CRASH)] + [Move("w2")] * 8, "w1")
    assert delivered == crashed_first
    assert delivered[0] != delivered[1]


def test_which_worker_runs_behind_is_part_of_the_state() -> None:
    # Two workers, one skewed: the skewed one holding the lease, or the other.
    scenario = ys.load_scenario("zombie-attempt")

    def key_after(skewed: str) -> str:
        execution = Execution(scenario, scenario_faults=False)
        try:
            execution.take(Move("w1"))  # w1 claims order-42
            execution.state.clocks.behind[skewed] = 30.0
            return execution.key()
        finally:
            execution.close()

    assert key_after("w1") != key_after("w2")


def test_two_states_that_differ_only_in_their_events_have_two_keys() -> None:
    """At the first point the counter is due now, so an event sent to it changes nothing but
    the runtime's events (its wake was due already): the key must still move, and move
    differently for another payload, as the runs looking for it would go on differently."""
    from yieldstar_sim.core.events import EventRequest
    from yieldstar_sim.runtime.protocol import events_of

    scenario = ys.load_scenario("continue-as-new-event-fixed")
    keys: list[str] = []
    for payload in (None, 5, 7):
        run = _execution(scenario)
        rows = [(r.execution_id, r.due_at, r.status) for r in run.runtime.executions()]
        if payload is not None:
            request = EventRequest("add", payload, instance_id="counter", event_id="extra")
            events_of(run.runtime).send_event(request)
        # Nothing else of the state changed: the records read as before.
        assert [(r.execution_id, r.due_at, r.status) for r in run.runtime.executions()] == rows
        keys.append(run.key())
        assert run.key() == whole_key(run.state, run.state.trace.events)
        run.close()
    assert len(set(keys)) == 3, keys
