"""Worker symmetry in the exhaustive search: the state keys are blind to which worker is which,
so a state and its mirror (the workers' names swapped) are one state. The search with those
keys finds what a search with keys that name the workers finds (the same violations, and the
states of that search, each up to the workers' names), in no more states."""

from __future__ import annotations

import re
from typing import Any

import pytest
from _scenarios import bookings, orders
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import yieldstar_sim as ys
from yieldstar_sim.simulation.execution import Execution
from yieldstar_sim.simulation.explorer.exhaustive import ExhaustiveSearch
from yieldstar_sim.simulation.explorer.report import ExplorationReport
from yieldstar_sim.simulation.statekeys import StateKeys


class NamingKeys(StateKeys):
    """State keys that name the workers: each actor's term holds its own name, and no name is
    blinded in a history."""

    def _learn(self, worker: str) -> None:
        self._workers = self._workers | {worker}
        self._names = re.compile(r"(?!)")

    def _actor(self, name: str, wait: str, behind: float, *, fresh: bool = False) -> int:
        return super()._actor(name, f"{wait} as {name}", behind, fresh=fresh)


def search(
    scenario: ys.Scenario, monkeypatch: pytest.MonkeyPatch, *, symmetric: bool, **options: Any
) -> ExplorationReport:
    with monkeypatch.context() as patch:
        if not symmetric:
            patch.setattr(Execution, "state_keys", NamingKeys)
        return ys.explore(
            scenario, strategy="exhaustive", confirm=None, stop_at_first=False, **options
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
def test_the_search_blind_to_worker_names_finds_what_a_search_naming_them_finds(
    case: tuple[str, int, int, int], kinds: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    shape, count, workers, faults = case
    scenario = orders(count, workers) if shape == "orders" else bookings(count, workers)
    options: dict[str, Any] = {"max_faults": faults, "kinds": list(kinds)}
    blind = search(scenario, monkeypatch, symmetric=True, **options)
    named = search(scenario, monkeypatch, symmetric=False, **options)
    assert blind.exhausted
    assert named.exhausted
    assert {v.invariant for v in blind.violations} == {v.invariant for v in named.violations}
    assert blind.distinct_states <= named.distinct_states
    if workers == 1:
        assert blind.distinct_states == named.distinct_states


def test_interchangeable_idle_workers_are_one_state(monkeypatch: pytest.MonkeyPatch) -> None:
    blind = search(orders(1, 3), monkeypatch, symmetric=True, max_faults=0)
    named = search(orders(1, 3), monkeypatch, symmetric=False, max_faults=0)
    assert blind.distinct_states < named.distinct_states
    assert "up to worker symmetry" in blind.coverage()


def test_the_booking_race_is_still_found_with_three_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = search(bookings(3, 3), monkeypatch, symmetric=True, max_faults=0)
    assert {v.invariant for v in found.violations} == {"no_oversell"}


def test_a_search_cut_by_its_budget_says_how_far_it_got(monkeypatch: pytest.MonkeyPatch) -> None:
    cut = search(orders(1, 2), monkeypatch, symmetric=True, max_faults=1, budget=5)
    assert cut.exhaustive is not None
    got = cut.exhaustive.progress
    assert not cut.exhausted
    assert got["states"] == cut.distinct_states > 0
    assert got["depth"] > 0
    assert got["frontier"] > 0
    assert got["max_depth_reached"] >= got["depth"] - 1
    assert got["transitions"] > 0
    statement = cut.coverage()
    assert f"{got['frontier']:,} moves left on a path {got['depth']} choice points deep" in (
        statement
    )
    assert cut.exhaustive is not None
    assert cut.exhaustive.progress == got


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
    assert done.exhaustive is not None
    got = done.exhaustive.progress
    assert done.exhausted
    assert got["frontier"] == got["depth"] == 0
    assert got["states"] == done.distinct_states
    assert got["states_per_second"] > 0
    # The watch saw the states grow, transition after transition.
    assert len(seen) == got["transitions"]
    assert [s["states"] for s in seen] == sorted(s["states"] for s in seen)
    assert "where it stopped" not in done.coverage()
