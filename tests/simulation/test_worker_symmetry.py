"""Worker symmetry in the exhaustive search: a move of a worker interchangeable with another is
cut without running it once the other's same move reached a choice point. The search finds the
same states, runs the same schedules and finds the same violations with and without the cut;
only the runs it spares are gone."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import yieldstar_sim as ys
from yieldstar_sim.simulation.explorer.exhaustive import ExhaustiveSearch
from yieldstar_sim.simulation.explorer.report import ExplorationReport


def orders(count: int, workers: int) -> ys.Scenario:
    """charge-order -> step.start ship-order, one trigger per order (the issue's case)."""
    base = ys.load_scenario("durable-start")
    triggers = [
        ys.Trigger("charge-order", {"order": 40 + n}, execution_id=f"order-{40 + n}")
        for n in range(count)
    ]
    return dataclasses.replace(
        base, name=f"orders-{count}x{workers}", faults=[], workers=workers, triggers=triggers
    )


def bookings(count: int, workers: int) -> ys.Scenario:
    """The booking race (an interleaving-only oversell) with ``count`` bookings."""
    race = ys.load_scenario("booking-race")
    triggers = [
        ys.Trigger("book-seat", {"booking": f"booking-{n}"}, execution_id=f"booking-{n}")
        for n in range(1, count + 1)
    ]
    return dataclasses.replace(
        race, name=f"booking-race-{count}x{workers}", triggers=triggers, workers=workers
    )


def search(
    scenario: ys.Scenario, monkeypatch: pytest.MonkeyPatch, *, symmetric: bool, **options: Any
) -> ExplorationReport:
    monkeypatch.setattr(ExhaustiveSearch, "symmetric_workers", symmetric)
    return ys.explore(scenario, strategy="exhaustive", confirm=None, stop_at_first=False, **options)


def what_was_found(report: ExplorationReport) -> tuple[object, ...]:
    return (
        report.distinct_states,
        report.schedules_run,
        report.pruned_by_cache,
        report.pruned_by_reduction,
        report.naive_schedules,
        report.searched_to_the_end,
        sorted(report.verdicts.items()),
        [(v.invariant, v.message, v.faults) for v in report.violations],
        sorted(report.state_space.nodes) if report.state_space else [],
    )


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    case=st.one_of(
        st.tuples(st.just("orders"), st.integers(1, 2), st.integers(1, 3), st.just(0)),
        st.tuples(st.just("orders"), st.just(1), st.integers(2, 3), st.just(1)),
        st.tuples(st.just("bookings"), st.integers(2, 3), st.integers(2, 3), st.just(0)),
        st.tuples(st.just("bookings"), st.just(2), st.just(2), st.just(1)),
    ),
    kinds=st.sampled_from([("crash",), ("crash", "freeze"), ("lose_response", "infra_error")]),
)
def test_the_search_cut_by_worker_symmetry_finds_what_the_uncut_one_finds(
    case: tuple[str, int, int, int], kinds: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    shape, count, workers, faults = case
    scenario = orders(count, workers) if shape == "orders" else bookings(count, workers)
    options: dict[str, Any] = {"max_faults": faults, "kinds": list(kinds)}
    cut = search(scenario, monkeypatch, symmetric=True, **options)
    whole = search(scenario, monkeypatch, symmetric=False, **options)
    assert what_was_found(cut) == what_was_found(whole)
    assert whole.pruned_by_symmetry == 0
    # The runs spared are the only difference: one attempt fewer for each.
    assert len(cut.state_paths) == len(whole.state_paths) - cut.pruned_by_symmetry


def test_interchangeable_idle_workers_are_tried_once(monkeypatch: pytest.MonkeyPatch) -> None:
    cut = search(orders(1, 3), monkeypatch, symmetric=True, max_faults=0)
    assert cut.pruned_by_symmetry > 0
    assert "up to worker symmetry" in cut.coverage()
    assert f"{cut.pruned_by_symmetry:,} of them by worker symmetry" in cut.coverage()


def test_the_booking_race_is_still_found_with_three_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = search(bookings(3, 3), monkeypatch, symmetric=True, max_faults=0)
    assert {v.invariant for v in found.violations} == {"no_oversell"}
    assert found.pruned_by_symmetry > 0


def test_a_search_cut_by_its_budget_says_how_far_it_got(monkeypatch: pytest.MonkeyPatch) -> None:
    cut = search(orders(1, 2), monkeypatch, symmetric=True, max_faults=1, budget=5)
    got = cut.search_progress
    assert not cut.exhausted
    assert got["states"] == cut.distinct_states > 0
    assert got["depth"] > 0
    assert got["frontier"] > 0
    assert 0 <= got["root_moves_done"] < got["root_moves"]
    assert got["max_depth_reached"] >= got["depth"] - 1
    assert got["kernel_steps"] >= got["transitions"] > 0
    statement = cut.coverage()
    assert f"{got['root_moves_done']} of the first choice point's {got['root_moves']} moves" in (
        statement
    )
    assert cut.completeness()["progress"] == got


def test_a_finished_search_reports_its_rate_and_an_empty_frontier(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr("yieldstar_sim.simulation.explorer.exhaustive.WATCH_SECONDS", 0.0)
    original = ExhaustiveSearch.__init__

    def watched(self: ExhaustiveSearch, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.watch = seen.append

    monkeypatch.setattr(ExhaustiveSearch, "__init__", watched)
    done = search(orders(1, 2), monkeypatch, symmetric=True, max_faults=0)
    got = done.search_progress
    assert done.exhausted
    assert got["frontier"] == got["depth"] == 0
    assert got["states"] == done.distinct_states
    assert got["states_per_second"] > 0
    # The watch saw the states grow, run after run.
    assert len(seen) == len(done.state_paths)
    assert [s["states"] for s in seen] == sorted(s["states"] for s in seen)
    assert "where it stopped" not in done.coverage()
