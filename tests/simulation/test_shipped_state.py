"""A saved state ships (issue 50, item 1): ``shipping.ship`` makes a run's state at a choice
point a value that pickles, and any run of the same scenario, seed, runtime and faults, here or
in another process, restores it and goes on exactly as the run did: the same key, the same
moves, and, taking the same moves, the same key, verdict, violations and trace at the end.
Every bundled scenario is shipped at several points of a run that takes random moves (a fault
among them) and of one that takes the seed's own; a runtime that cannot snapshot itself ships
the path, which the receiving run replays; a run of another scenario refuses what it is sent."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import pickle
import random
from dataclasses import dataclass

import _scenarios
import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation import workers
from yieldstar_sim.simulation.execution import Execution, SavedExecution
from yieldstar_sim.simulation.faults import FAULT_KINDS, explored_seconds
from yieldstar_sim.simulation.moves import Move
from yieldstar_sim.simulation.scenario_files import bundled_scenarios
from yieldstar_sim.simulation.shipping import ShipMismatch, ShippedExecution, land, ship

SCENARIOS = sorted(bundled_scenarios())
KINDS = tuple(FAULT_KINDS)
SECONDS = {kind: s for kind in KINDS if (s := explored_seconds(kind, 40.0)) is not None}
#: How many states of each run are shipped (spread over it, its first and last among them).
SHIPS = 6


def _scenario(name: str) -> ys.Scenario:
    return _scenarios.orders(3, 3) if name == "orders-3x3" else ys.load_scenario(name)


def _end(execution: Execution) -> tuple[object, ...]:
    """What a run ended as: its key, verdict, violations, trace and schedule."""
    run = execution.result()
    violations = [(v.invariant, v.message) for v in run.violations]
    return execution.key(), run.verdict, violations, run.trace.to_jsonl(), execution.schedule


def _take(execution: Execution, move: Move, footprints: list[object]) -> None:
    """Take ``move``, noting what it touched (the partial-order reduction reads it)."""
    execution.take(move)
    footprints.append(execution.footprint)


def _now(execution: Execution) -> tuple[object, ...]:
    """What a run says of the state it stands in: its key, its moves, its choice points."""
    return execution.key(), execution.moves(KINDS, SECONDS), execution.points, execution.stopped


@dataclass
class Shipped:
    """A run shipped at several points (``_shipped_run``)."""

    ships: list[tuple[int, bytes, tuple[object, ...]]]
    """Each ship, pickled, with the moves taken before it and what the run said there."""
    schedule: list[Move]
    end: tuple[object, ...]
    footprints: list[object]
    """What each move touched (a run of the seed's own moves records none)."""


def _shipped_run(scenario: ys.Scenario, *, seeded: bool, runtime: str = "memory") -> Shipped:
    """A run (random moves with at most one explored fault, recording footprints, or the
    seed's own moves), shipped and pickled at ``SHIPS`` points."""
    execution = Execution(scenario, runtime=runtime, saving=True, footprints=not seeded)
    rng = random.Random(11)
    states: list[tuple[int, SavedExecution, tuple[object, ...]]] = []
    schedule: list[Move] = []
    footprints: list[object] = []
    faults = 0
    while not execution.done():
        states.append((len(schedule), execution.save(), _now(execution)))
        if seeded:
            move = execution.default_move()
        else:
            move = execution.planned(
                rng.choice(execution.moves(KINDS if not faults else (), SECONDS))
            )
            faults += move.fault is not None
        schedule.append(move)
        if seeded:
            execution.take(move)
        else:
            _take(execution, move, footprints)
    states.append((len(schedule), execution.save(), _now(execution)))
    picked = sorted({round(i * (len(states) - 1) / (SHIPS - 1)) for i in range(SHIPS)})
    # Shipped from the end of the run: each saved state is on its path to now.
    ships = [
        (states[i][0], pickle.dumps(ship(execution, states[i][1]), protocol=5), states[i][2])
        for i in picked
    ]
    end = _end(execution)
    execution.close()
    return Shipped(ships, schedule, end, footprints)


def _check_restored(
    scenario: ys.Scenario, *, seeded: bool, runtime: str = "memory"
) -> list[ShippedExecution]:
    """Restore each ship of a run into one fresh run, deepest first (each restore from wherever
    the last one went), and check it stands and ends as the run did."""
    run = _shipped_run(scenario, seeded=seeded, runtime=runtime)
    receiver = Execution(scenario, runtime=runtime, saving=True, footprints=not seeded)
    values = []
    try:
        for at, data, said in reversed(run.ships):
            value = pickle.loads(data)
            values.append(value)
            land(receiver, value)
            assert _now(receiver) == said, f"{scenario.name}: restored after {at} moves"
            footprints = run.footprints[:at]
            if seeded:
                receiver.take_defaults()
            else:
                for move in run.schedule[at:]:
                    _take(receiver, move, footprints)
            assert _end(receiver) == run.end, f"{scenario.name}: restored after {at} moves"
            assert footprints == run.footprints, f"{scenario.name}: restored after {at} moves"
    finally:
        receiver.close()
    return values


@pytest.mark.parametrize("name", [*SCENARIOS, "orders-3x3"])
def test_a_shipped_state_goes_on_in_another_run_as_the_run_went(name: str) -> None:
    scenario = _scenario(name)
    for seeded in (False, True):
        values = _check_restored(scenario, seeded=seeded)
        # The state itself travelled, not the path: nothing of it failed to pickle.
        assert all(value.state is not None for value in values), name


def _go_on_elsewhere(name: str, at: int, data: bytes, rest: list[Move]) -> tuple[object, ...]:
    """In another process: restore a pickled ship into a new run, and take the rest."""
    execution = Execution(_scenario(name), saving=True, footprints=True)
    try:
        land(execution, pickle.loads(data))
        said = _now(execution)
        footprints: list[object] = []
        for move in rest:
            _take(execution, move, footprints)
        return said, _end(execution), footprints
    finally:
        execution.close()


def test_a_shipped_state_goes_on_in_another_process_as_the_run_went() -> None:
    # A new interpreter (spawned, not forked): nothing but the pickled bytes crosses over.
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        for name in ("durable-start", "orders-3x3"):
            run = _shipped_run(_scenario(name), seeded=False)
            futures = [
                (at, said, pool.submit(_go_on_elsewhere, name, at, data, run.schedule[at:]))
                for at, data, said in run.ships
            ]
            for at, said, future in futures:
                went = (said, run.end, run.footprints[at:])
                assert future.result(timeout=120) == went, f"{name}: restored after {at} moves"


def test_a_runtime_that_cannot_snapshot_ships_the_path_and_the_receiver_replays_it() -> None:
    scenario = ys.load_scenario("durable-start")
    values = _check_restored(scenario, seeded=False, runtime="duckdb")
    assert all(value.state is None for value in values)
    assert max(len(value.steps) for value in values) > 0
    # A path weighs next to nothing: no state, no log.
    assert all(len(pickle.dumps(value, protocol=5)) < 2_000 for value in values)


def test_a_run_refuses_a_state_shipped_by_a_run_of_another_scenario_seed_or_runtime() -> None:
    ships = _shipped_run(ys.load_scenario("durable-start"), seeded=False).ships
    value = pickle.loads(ships[2][1])
    others = [
        (Execution(ys.load_scenario("trigger-in-step"), saving=True), "scenario, code;"),
        (Execution(ys.load_scenario("durable-start"), seed=1, saving=True), "seed;"),
        (Execution(ys.load_scenario("durable-start"), runtime="duckdb"), "runtime;"),
        (Execution(_scenarios.orders(1, 2), saving=True), "scenario, settings, "),
    ]
    for other, differ in others:
        with pytest.raises(ShipMismatch, match=f"durable-start.*different {differ}"):
            land(other, value)
        other.close()


def test_a_state_whose_factories_the_receiver_lacks_is_refused_naming_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A receiver whose package has no such factory (another version) cannot make the actors
    # again: it says so, never goes on from a state half put back.
    ships = _shipped_run(ys.load_scenario("durable-start"), seeded=False).ships
    receiver = Execution(ys.load_scenario("durable-start"), saving=True)
    monkeypatch.delattr(workers, "worker")
    with pytest.raises(ShipMismatch, match=r"cannot be unpickled here.*worker"):
        land(receiver, pickle.loads(ships[-2][1]))
    monkeypatch.undo()
    receiver.close()


def test_only_a_state_on_the_runs_path_to_now_ships() -> None:
    scenario = ys.load_scenario("durable-start")
    execution = Execution(scenario, saving=True)
    start = execution.save()
    first = execution.moves()
    execution.take(first[0])
    early = execution.save()
    then = ship(execution)
    execution.take(execution.moves()[0])
    # Shipped later, a state on the path ships as it did then.
    assert ship(execution, early) == then
    again = Execution(scenario, saving=True)
    land(again, ship(execution, early))
    assert again.key() == _restored_key(execution, early)
    again.close()
    # Back at the start and on along another branch, the early state is off the path.
    execution.restore(start)
    other = [move for move in execution.moves(KINDS, SECONDS) if move != first[0]]
    execution.take(other[0])
    with pytest.raises(ValueError, match="did not go on from the state saved after 1 moves"):
        ship(execution, early)
    # Taking the same move again reaches the same state: it ships again.
    execution.restore(start)
    execution.take(first[0])
    ship(execution, early)
    execution.close()


def _restored_key(execution: Execution, saved: SavedExecution) -> str:
    execution.restore(saved)
    return execution.key()
