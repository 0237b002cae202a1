"""The explorer's strategies share one shape: each is built from a ``SearchConfig`` (with its
own options, one small dataclass per strategy), keeps a ``Tally``, says what only it covered
in a section of the report, and the report is built in one place (``explorer.explore``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation.explorer import _strategy
from yieldstar_sim.simulation.explorer.shards import Runner
from yieldstar_sim.simulation.explorer.strategy import (
    STRATEGIES,
    SearchConfig,
    StopReason,
    Tally,
)

EXPLORER = Path(ys.__file__).parent / "simulation" / "explorer"


def test_the_report_is_built_in_one_place() -> None:
    builders = [
        path.name
        for path in sorted(EXPLORER.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "ExplorationReport"
    ]
    assert builders == ["__init__.py"]


@pytest.mark.parametrize("name", STRATEGIES)
def test_every_strategy_searches_into_its_tally_and_says_what_it_covered(name: str) -> None:
    runner = Runner(ys.load_scenario("durable-start"), "memory")
    config = SearchConfig(strategy=STRATEGIES[name](), max_faults=1, budget=5)
    strategy = _strategy(config, runner, None)
    assert isinstance(strategy.tally, Tally)
    strategy.search()
    runner.close()
    assert 0 < strategy.tally.runs <= 5
    section = strategy.section()
    assert isinstance(section["stopped"], StopReason)


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: ys.Exhaustive(order="widest"), ValueError),
        (lambda: ys.Exhaustive(max_depth=0), ValueError),
        (lambda: ys.Exhaustive(max_depth=True), ValueError),  # type: ignore[arg-type]
        (lambda: ys.Exhaustive(cache="no"), TypeError),  # type: ignore[arg-type]
        (lambda: ys.Pct(depth=0), ValueError),
        (lambda: SearchConfig(time_budget=0), ValueError),
    ],
)
def test_options_refuse_unsound_values(make: object, error: type) -> None:
    with pytest.raises(error):
        make()  # type: ignore[operator]


def test_every_stop_reason_says_itself_in_words() -> None:
    assert all(reason.describe() for reason in StopReason)


def test_a_report_names_its_distinct_states_as_the_public_surface_promises() -> None:
    report = ys.explore(
        ys.load_scenario("durable-start"), strategy="exhaustive", max_faults=0, runtime="memory",
        confirm=None,
    )  # fmt: skip
    assert report.exhausted
    assert report.states == report.distinct_states > 0
    assert report.stopped is StopReason.COVERED


def test_a_search_with_no_fault_claims_no_fault_kind() -> None:
    # It said "every fault kind at every choice point" of a search that placed none.
    report = ys.explore(ys.load_scenario("durable-start"), max_faults=0, confirm=None)
    assert report.exhausted
    assert "fault kind" not in report.coverage()
    assert "seed 0's interleaving" in report.coverage()


def test_a_sample_cut_by_its_time_budget_says_so() -> None:
    report = ys.explore(
        ys.load_scenario("durable-start"), strategy="random", time_budget=1e-9, confirm=None
    )
    assert report.stopped is StopReason.TIME_BUDGET
    assert report.coverage().endswith("not all of them, cut by the time budget of 1e-09s")


def test_the_naive_search_gives_its_count_not_an_estimate() -> None:
    # Without caching nothing is cut, so the schedules run are the count: no "about".
    naive = ys.explore(
        ys.load_scenario("durable-start"), strategy=ys.Exhaustive(cache=False), max_faults=0,
        confirm=None,
    )  # fmt: skip
    assert naive.exhausted
    assert "without caching" not in naive.coverage()
    cached = ys.explore(
        ys.load_scenario("durable-start"), strategy="exhaustive", max_faults=1, confirm=None
    )
    assert "; without caching: about " in cached.coverage()
