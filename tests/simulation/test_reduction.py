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
from yieldstar_sim.simulation.explorer.strategy import Exhaustive


def search(
    scenario: ys.Scenario, *, reduction: bool, faults: int, runtime: Any = "memory", **options: Any
) -> Any:
    return ys.explore(
        scenario, strategy=Exhaustive(reduction=reduction, **options), max_faults=faults,
        runtime=runtime, confirm=None, stop_at_first=False,
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
