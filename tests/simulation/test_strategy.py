"""The explorer's strategies share one shape: each is built from a ``SearchConfig``, keeps a
``Tally``, and the report is built from them in one place (``strategy.build_report``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation.explorer import _strategy
from yieldstar_sim.simulation.explorer.shards import Runner
from yieldstar_sim.simulation.explorer.strategy import STRATEGIES, SearchConfig, Tally

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
    assert builders == ["strategy.py"]


@pytest.mark.parametrize("name", STRATEGIES)
def test_every_strategy_searches_into_its_tally_and_says_what_it_covered(name: str) -> None:
    runner = Runner(ys.load_scenario("durable-start"), "memory", 1, None)
    config = SearchConfig(max_faults=1, budget=5, pct_depth=3 if name == "pct" else 0)
    strategy = _strategy(name, runner, config, None)
    assert isinstance(strategy.tally, Tally)
    strategy.search()
    runner.close()
    assert 0 < strategy.tally.schedules_run <= 5
    assert len(strategy.tally.plans) == len(strategy.tally.outcomes)
    assert isinstance(strategy.coverage(), dict)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"order": "widest"}, ValueError),
        ({"max_depth": 0}, ValueError),
        ({"max_depth": True}, ValueError),
        ({"reduce": "no"}, TypeError),
        ({"time_budget": 0}, ValueError),
    ],
)
def test_a_search_config_refuses_unsound_options(options: dict[str, object], error: type) -> None:
    with pytest.raises(error):
        SearchConfig(**options)  # type: ignore[arg-type]


def test_a_report_names_its_distinct_states_as_the_public_surface_promises() -> None:
    import yieldstar_sim as ys

    report = ys.explore(
        ys.load_scenario("durable-start"), strategy="exhaustive", max_faults=0, runtime="memory",
        confirm=None,
    )  # fmt: skip
    assert report.exhausted
    assert report.states == report.distinct_states > 0
