"""A dropped run is freed by reference counting, at once: no reference cycle keeps its kernel,
runtime and trace alive until the cyclic collector runs.

Cycles cost twice: the collector's passes (about a sixth of a short memory run's time, when
every run left ~200 cyclic objects behind) and, on DuckDB, a database that comes back to the
pool only when a collection happens to run. The usual culprits are an error whose traceback
holds the frame that holds it, and a step runner holding a body that refers to ``step``.
"""

from __future__ import annotations

import contextlib
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


@pytest.mark.parametrize("runtime", ["memory", "duckdb"])
@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_a_dropped_run_of_every_bundled_scenario_leaves_no_reference_cycle(
    name: str, runtime: str
) -> None:
    scenario = ys.load_scenario(name)
    with _collector_off():
        run = ys.simulate(scenario, seed=0, runtime=runtime)
        assert run.incomplete is None
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
