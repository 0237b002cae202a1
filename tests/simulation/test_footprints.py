"""Footprints: what each move reads and writes, and the independence relation built from them.

The relation is checked against its definition: from states reached by random walks (faults
included), every pair of moves by two actors that the footprints call independent is taken in
both orders, and both orders must reach the same state key. A pair called dependent may
commute too (the relation may say less than is true, never more)."""

from __future__ import annotations

import collections
import dataclasses
import random

import pytest
from _scenarios import more_starts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import yieldstar_sim as ys
from yieldstar_sim.runtime.memory import MemoryRuntime
from yieldstar_sim.simulation.execution import Execution
from yieldstar_sim.simulation.faults import FAULT_KINDS, FaultKind, explored_seconds
from yieldstar_sim.simulation.footprints import (
    FAULTS,
    QUEUE,
    Footprint,
    RecordedRuntime,
    Touches,
    lease,
    status,
    steps,
    stored,
    trusted,
)
from yieldstar_sim.simulation.kernel import PARKED
from yieldstar_sim.simulation.moves import Move, plain_move

SECONDS = {k: s for k in FAULT_KINDS if (s := explored_seconds(k, 40.0)) is not None}


def take(run: Execution, move: Move) -> Footprint:
    """Take ``move``, then the moves its actor (and any other) must take alone at solo
    points: a search chooses only where no actor waits its turn. Their footprints, joined."""
    run.take(move)
    assert run.footprint is not None
    footprint = run.footprint
    # Only while one actor is alone at its solo points: two that reached them at one instant
    # are a choice, which each order leaves the same.
    while not run.done() and run.kernel.turns and len(run.ready()) == 1:
        run.take(plain_move(run.ready()[0]))
        footprint = footprint | run.footprint
    return footprint


def commutes(
    scenario: ys.Scenario, *, seed: int, walks: int, pairs: int
) -> collections.Counter[str]:
    """Walk ``walks`` random runs of ``scenario`` with at most one fault; at each state where
    two actors can go, take ``pairs`` random pairs of their moves both ways. Fails on a pair
    called independent whose orders reach different states; counts the pairs checked."""
    rng = random.Random(seed)
    run = Execution(scenario, saving=True, footprints=True, scenario_faults=False)
    start = run.save()
    counted: collections.Counter[str] = collections.Counter()
    for _ in range(walks):
        run.restore(start)
        faults = 0
        while not run.done():
            moves = run.moves(FAULT_KINDS if faults < 1 else (), SECONDS)
            if len({move.actor for move in moves}) >= 2 and not run.kernel.turns:
                here = run.save()
                for _ in range(pairs):
                    first, second = rng.sample(moves, 2)
                    if first.actor == second.actor:
                        continue
                    orders = []
                    for one, other in ((first, second), (second, first)):
                        run.restore(here)
                        footprint = take(run, one)
                        if run.done() or not run.fits(other):
                            break
                        take(run, other)
                        orders.append((footprint, run.key()))
                    if len(orders) < 2:
                        counted["one ends the run"] += 1
                        continue
                    (ours, key), (theirs, other_key) = orders
                    if ours.independent_of(theirs):
                        counted["independent"] += 1
                        assert key == other_key, (
                            f"{scenario.name}: {first.describe()} ({ours.describe()}) and "
                            f"{second.describe()} ({theirs.describe()}) are called independent, "
                            "but their two orders reach different states"
                        )
                    else:
                        counted["dependent"] += 1
                run.restore(here)
            move = rng.choice(moves)
            faults += move.fault is not None
            take(run, move)
    run.close()
    return counted


@pytest.mark.parametrize(
    "name",
    [
        "durable-start",
        "booking-race",
        "join-child",
        "call-child-fails",
        "trigger-in-step",
        "chord-result-late",
        "leader-rollback",
        "poison-workflow",
        "concurrent-clients",
        "spawn-after-prune",
        "cancel-owner",
        "orphan-after-cancel",
        "continue-as-new-event-fixed",
    ],
)  # scenarios where two actors can go at once: an idle worker makes no move to pair with
def test_moves_called_independent_reach_the_same_state_in_either_order(name: str) -> None:
    scenario = dataclasses.replace(ys.load_scenario(name), faults=[])
    counted = commutes(scenario, seed=7, walks=4, pairs=5)
    assert counted["independent"] > 0, counted  # the check checked something


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(
    base=st.sampled_from(["durable-start", "booking-race", "join-child", "random-replica"]),
    orders=st.integers(1, 3),
    workers=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_on_random_small_scenarios_independent_moves_commute(
    base: str, orders: int, workers: int, seed: int
) -> None:
    """Orders 1-3, workers 1-3, at most one fault, with draws, waits and children."""
    commutes(more_starts(base, orders, workers), seed=seed, walks=2, pairs=4)


# ---------------------------------------------------------------- what a move's footprint says


def _first(scenario: ys.Scenario) -> Execution:
    return Execution(scenario, saving=True, footprints=True, scenario_faults=False)


def _at(run: Execution, op: str) -> str:
    """Take the run's default moves until an actor waits at a call of ``op``: that actor."""
    while True:
        for name in run.ready():
            info = run.point(name).info
            if info is not None and info.op == op:
                return name
        take(run, plain_move(run.ready()[0]))


def test_a_claim_reads_the_queue_and_writes_the_execution_it_got() -> None:
    run = _first(ys.load_scenario("durable-start"))
    footprint = take(run, plain_move(_at(run, "claim")))
    assert QUEUE in footprint.reads
    assert lease("order-42") in footprint.writes
    assert steps("order-42") in footprint.reads


def test_a_fault_spends_the_budget_so_two_faulted_moves_never_commute() -> None:
    run = _first(ys.load_scenario("durable-start"))
    here = run.save()
    crash = Move(run.ready()[0], FaultKind.CRASH)
    run.take(crash)
    assert run.footprint is not None
    assert FAULTS in run.footprint.writes
    run.restore(here)
    run.take(plain_move(run.ready()[0]))
    assert run.footprint is not None
    assert FAULTS not in run.footprint.writes


def test_a_move_that_leaves_its_worker_blocked_at_its_claim_reads_the_queue() -> None:
    """A worker back at its claim with nothing due blocks until the queue changes: a move that
    changes it offers the worker its claim or not, depending on which goes first."""
    scenario = dataclasses.replace(ys.load_scenario("durable-start"), workers=3)
    run = _first(scenario)
    blocked = 0
    while not run.done():
        move = run.default_move()
        footprint = take(run, move)
        if run.kernel.waits.get(move.actor) is PARKED:
            blocked += 1
            assert QUEUE in footprint.reads, move
    run.close()
    assert blocked > 0


def test_a_store_read_and_write_name_their_key() -> None:
    read = Footprint(reads=frozenset({stored("seats")}))
    assert not read.independent_of(Footprint(writes=frozenset({stored("seats")})))
    assert read.independent_of(Footprint(writes=frozenset({stored("other")})))
    assert read.independent_of(read)  # two reads commute


def test_footprints_are_off_unless_asked_and_cost_a_plain_run_nothing() -> None:
    run = Execution(ys.load_scenario("durable-start"), scenario_faults=False)
    run.take(run.default_move())
    assert run.footprint is None
    assert type(run.state.runtime) is MemoryRuntime


def test_only_the_runtimes_the_project_ships_are_trusted_to_keep_the_contract() -> None:
    class Mine(MemoryRuntime):
        pass

    assert trusted(MemoryRuntime())
    assert not trusted(Mine())


def _at_call(run: Execution, op: str, execution_id: str) -> str:
    """Take the run's default moves until an actor waits at a call of ``op`` on
    ``execution_id``: that actor."""
    while True:
        for name in run.ready():
            info = run.point(name).info
            if info is not None and info.op == op and info.execution_id == execution_id:
                return name
        take(run, plain_move(run.ready()[0]))


def test_an_acknowledgement_that_leaves_what_is_due_as_it_was_does_not_write_the_queue() -> None:
    """A suspended run due again later: a claim now takes what it took before either way."""
    run = _first(ys.load_scenario("retry-backoff"))
    footprint = take(run, plain_move(_at_call(run, "acknowledge", "onboard-ada")))
    assert {lease("onboard-ada"), status("onboard-ada")} <= footprint.writes
    assert QUEUE not in footprint.writes
    run.close()


def test_an_acknowledgement_names_the_run_it_wakes_and_writes_the_queue_it_changes() -> None:
    """A failed child wakes the order waiting for it, which is due at once."""
    run = _first(ys.load_scenario("call-child-fails"))
    while True:
        actor = _at_call(run, "acknowledge", "@charge-card:order-42/charge")
        if run.runtime.execution("order-42").waiting_on == "@charge-card:order-42/charge":  # type: ignore[union-attr]
            break
        take(run, plain_move(actor))
    footprint = take(run, plain_move(actor))
    assert {status("order-42"), QUEUE} <= footprint.writes
    run.close()


def test_a_call_the_recorder_does_not_know_touches_everything() -> None:
    """An adapter's call of its own, passed through unrecorded, would look independent of
    every move: it is named as touching every execution, the queue and the rest."""
    runtime = MemoryRuntime()
    runtime.archive_everything = lambda: "done"  # type: ignore[attr-defined]
    touches = Touches()
    recorded = RecordedRuntime(runtime, touches)
    assert recorded.archive_everything() == "done"
    footprint = touches.take()
    assert not footprint.independent_of(Footprint(reads=frozenset({lease("order-42")})))
    assert QUEUE in footprint.writes
    recorded.rows_view()  # the keys' own reads are not a move's
    assert touches.take() == Footprint()
