"""A dropped run is freed by reference counting, at once: no reference cycle keeps its kernel,
runtime and trace alive until the cyclic collector runs.

Cycles cost twice: the collector's passes (about a sixth of a short memory run's time, when
every run left ~200 cyclic objects behind) and, on DuckDB, a database that comes back to the
pool only when a collection happens to run. The usual culprits are an error whose traceback
holds the frame that holds it, and a step runner holding a body that refers to ``step``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from collections import Counter
from collections.abc import Iterator

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation.scenario_files import bundled_scenarios


@contextlib.contextmanager
def _collector_off() -> Iterator[None]:
    gc.collect()  # what earlier tests and loading the scenario (a module is a cycle) left
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _left_in_cycles() -> Counter[str]:
    """What the cyclic collector finds now, by type: with the collector off since
    ``_collector_off`` collected, what reference counting could not free."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        found = Counter(type(each).__name__ for each in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    return found


#: The bundled scenarios whose run never ends on its own: it is cut, and that is the bug.
CUT_ON_PURPOSE = {"poison-workflow"}


@pytest.mark.parametrize("runtime", ["memory", "duckdb"])
@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_a_dropped_run_of_every_bundled_scenario_leaves_no_reference_cycle(
    name: str, runtime: str
) -> None:
    scenario = ys.load_scenario(name)
    with _collector_off():
        run = ys.simulate(scenario, seed=0, runtime=runtime)
        assert run.incomplete is None or name in CUT_ON_PURPOSE
        del run
        assert _left_in_cycles() == Counter()


def test_a_step_body_that_raises_and_refers_to_step_leaves_no_reference_cycle() -> None:
    @ys.workflow("flaky")
    def flaky(step: ys.StepRunner, params: object) -> object:
        def body() -> None:
            try:
                step.world.effect("tried")
                raise ConnectionError("refused")
            except ConnectionError as error:
                raise RuntimeError("gave up") from error  # a chain, each with a traceback

        policy = ys.RetryPolicy(max_attempts=2, initial_interval=1.0)
        yield from step.run("call", ys.StepDefinition(body, policy))

    scenario = ys.Scenario(
        name="flaky", workflows=[flaky], triggers=[ys.Trigger("flaky", None)], workers=1
    )
    with _collector_off():
        run = ys.simulate(scenario, seed=0, runtime="memory")
        assert [execution.status for execution in run.executions] == ["failed"]
        del run
        assert _left_in_cycles() == Counter()


def test_an_exhaustive_search_leaves_no_reference_cycle_per_delivery_it_makes_again() -> None:
    """A delivery made again from where it last stood (``workers._Midway``) used to close a
    cycle through its restart: ~1.8 objects for the collector per transition of a search, 8%
    of a 2 x 3 one-fault search's time. What the collector finds now is the search's one live
    run (its kernel and recorder hold each other), whatever the number of deliveries."""
    scenario = dataclasses.replace(ys.load_scenario("durable-start"), faults=[], workers=2)
    with _collector_off():
        report = ys.explore(
            scenario, strategy=ys.Exhaustive(reduction=False), max_faults=1, runtime="memory",
            confirm=None, stop_at_first=False,
        )  # fmt: skip
        assert report.exhausted
        found = _left_in_cycles()
    assert report.distinct_states > 200
    assert found["_Restart"] == found["_Midway"] == 0
    assert found["Kernel"] <= 1
