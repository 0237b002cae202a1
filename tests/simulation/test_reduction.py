"""Partial-order reduction in the exhaustive search: the reduced search finds every violation
the full search finds and ends in the same states, in fewer moves; its statement says what it
left out, and a search that cannot be reduced is not."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from _scenarios import bookings, more_starts, orders
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import yieldstar_sim as ys
from yieldstar_sim.cli_explore import report_json
from yieldstar_sim.runtime.memory import MemoryRuntime
from yieldstar_sim.simulation.execution import Execution
from yieldstar_sim.simulation.explorer.strategy import Exhaustive
from yieldstar_sim.simulation.moves import plain_move
from yieldstar_sim.simulation.persistent import Vouch, _unreached, vouch


def search(
    scenario: ys.Scenario,
    *,
    reduction: bool,
    faults: int,
    runtime: Any = "memory",
    stop_at_first: bool = False,
    **options: Any,
) -> Any:
    return ys.explore(
        scenario, strategy=Exhaustive(reduction=reduction, **options), max_faults=faults,
        runtime=runtime, confirm=None, stop_at_first=stop_at_first,
    )  # fmt: skip


def ends(report: Any) -> set[str]:
    """The keys of the states the search's runs ended in."""
    space = report.exhaustive.state_space
    assert not space.full
    return {key for key, node in space.nodes.items() if node.terminal}


def found(report: Any) -> list[str]:
    return sorted({violation.invariant for violation in report.violations})


def agree(scenario: ys.Scenario, faults: int) -> Any:
    """Search ``scenario`` with and without reduction: the same verdict, the same invariants
    violated, the same end states. The reduced report."""
    reduced = search(scenario, reduction=True, faults=faults)
    full = search(scenario, reduction=False, faults=faults)
    assert reduced.verdict == full.verdict
    assert found(reduced) == found(full)
    assert ends(reduced) == ends(full)
    assert reduced.distinct_states <= full.distinct_states
    return reduced


@pytest.mark.parametrize(
    "name",
    [
        "booking-race",
        "call-child-fails",
        "cancel-owner",
        "client-retry-new-request-id",
        "concurrent-clients",
        "fan-out-order",
        "heartbeat-zombie",
        "join-child",
        "leader-rollback",
        "orphan-after-cancel",
        "random-replica",
        "spawn-after-prune",
        "trigger-in-step",
        "zombie-attempt",
        "continue-as-new-event-fixed",
        "stale-completion-fixed",
    ],
)
def test_the_reduced_search_finds_what_the_full_search_finds(name: str) -> None:
    scenario = dataclasses.replace(ys.load_scenario(name), faults=[])
    agree(scenario, faults=1)


@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(
    base=st.sampled_from(
        ["durable-start", "booking-race", "join-child", "random-replica", "call-child-fails"]
    ),
    starts=st.integers(1, 3),
    workers=st.integers(1, 3),
    faults=st.integers(0, 1),
)
def test_on_random_small_scenarios_the_reduced_and_full_searches_agree(
    base: str, starts: int, workers: int, faults: int
) -> None:
    """Orders 1-3, workers 1-3, faults 0-1, with draws, waits and children (the largest
    kept small enough to search twice)."""
    assume(starts * workers * (1 + 2 * faults) <= 12)
    agree(more_starts(base, starts, workers), faults)


def test_a_reduced_search_says_what_it_left_out() -> None:
    report = agree(orders(2, 2), faults=1)
    covered = report.exhaustive
    assert covered.spared_by_reduction > 0
    assert covered.reduced_states > 0
    statement = report.coverage()
    assert "distinct states searched" in statement
    assert "up to worker symmetry and the order of independent moves" in statement
    assert f"left {covered.spared_by_reduction:,} moves untaken" in statement
    completeness = report_json(report)["completeness"]
    assert completeness["spared_by_reduction"] == covered.spared_by_reduction


def test_without_reduction_every_state_is_claimed_and_nothing_is_left_out() -> None:
    report = search(orders(2, 2), reduction=False, faults=1)
    assert report.exhaustive.spared_by_reduction == 0
    assert report.coverage().startswith("verified: all ")  # every state there is
    assert "independent moves" not in report.coverage()


def test_a_runtime_of_your_own_is_not_reduced() -> None:
    """Its calls may touch what they do not name: the search takes every move."""

    class Mine(MemoryRuntime):
        pass

    report = search(orders(2, 2), reduction=True, faults=0, runtime=lambda clock: Mine(clock=clock))
    assert report.exhaustive.spared_by_reduction == 0


def test_a_search_bounded_in_depth_is_not_reduced() -> None:
    report = search(orders(2, 2), reduction=True, faults=0, max_depth=40)
    assert report.exhaustive.spared_by_reduction == 0


def test_the_booking_race_is_still_found_with_four_bookings_on_three_workers() -> None:
    report = search(bookings(4, 3), reduction=True, faults=0)
    assert report.verdict == "violated"


def test_the_repaired_booking_race_is_verified_with_four_bookings_on_three_workers() -> None:
    race = bookings(4, 3)
    fixed = dataclasses.replace(ys.load_scenario("booking-race-fixed"), triggers=race.triggers)
    report = agree(dataclasses.replace(fixed, workers=3), faults=0)
    assert report.verdict == "ok"
    assert report.exhausted


@ys.workflow("ship-order")
def _unkeyed_ship_order(step: Any, params: Any) -> Any:
    """ship-order whose booking has no idempotency key: a crash between the booking and its
    record books a second courier."""
    order = params["order"]
    return (
        yield from step.run(
            "book-courier", lambda: step.world.effect("courier.booked", order=order)
        )
    )


def test_the_unkeyed_booking_is_found_with_three_orders_on_three_workers() -> None:
    from yieldstar_sim.examples import charge_order

    scenario = dataclasses.replace(orders(3, 3), workflows=[charge_order, _unkeyed_ship_order])
    report = search(scenario, reduction=True, faults=1, stop_at_first=True)
    assert found(report) == ["at_most_once(courier.booked, by=order)"]


def test_trigger_in_step_is_found_with_three_orders_on_three_workers() -> None:
    base = ys.load_scenario("trigger-in-step")
    triggers = [
        ys.Trigger("charge-order", {"order": 40 + n}, execution_id=f"order-{40 + n}")
        for n in range(3)
    ]
    scenario = dataclasses.replace(base, faults=[], workers=3, triggers=triggers)
    report = search(scenario, reduction=True, faults=1, stop_at_first=True)
    # Its crash admits a second ship-order (one invariant) that books a second courier (the
    # other): the search stops at whichever it meets first.
    assert report.verdict == "violated"
    assert set(found(report)) <= {
        "at most one admitted execution per step",
        "at_most_once(courier.booked, by=order)",
    }


def _until(run: Execution, op: str, execution_id: str, *, ready: int = 1) -> str:
    """Take the run's first ready actor's plain move until an actor waits at a call of ``op``
    on ``execution_id`` with at least ``ready`` actors ready: that actor."""
    while True:
        names = run.ready()
        for name in names:
            info = run.point(name).info
            if (
                info is not None
                and info.op == op
                and info.execution_id == execution_id
                and len(names) >= ready
            ):
                return name
        run.take(plain_move(names[0]))


def test_an_acknowledgement_nothing_else_can_reach_is_a_persistent_set() -> None:
    run = Execution(orders(2, 2), saving=True, footprints=True, scenario_faults=False)
    actor = _until(run, "acknowledge", "order-40", ready=2)
    assert vouch(run) == Vouch(actor, "order-40", ends=True)
    run.close()


def test_an_acknowledgement_that_wakes_a_waiting_run_is_not_one() -> None:
    """A failed child wakes the order that waits for it: the order's worker, claiming it,
    and the child's acknowledgement do not commute."""
    run = Execution(
        ys.load_scenario("call-child-fails"), saving=True, footprints=True, scenario_faults=False
    )
    while True:
        actor = _until(run, "acknowledge", "@charge-card:order-42/charge")
        if run.runtime.execution("order-42").waiting_on == "@charge-card:order-42/charge":  # type: ignore[union-attr]
            break
        run.take(plain_move(actor))
    assert not _unreached(run, actor, "@charge-card:order-42/charge")
    run.close()
