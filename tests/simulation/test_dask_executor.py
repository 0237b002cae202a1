"""The explorer's shards run on a Dask cluster and give the very report one process gives.

A local cluster of two worker processes (one thread each) is started in the test; the explorer
gets the client's ``concurrent.futures`` executor. The scenario crosses to the workers by
reference (``trigger-in-step``): each worker process loads it by name. Needs the ``dask``
extra (``pip install "yieldstar-sim[dask]"``); skipped without it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation import ExplorationReport

if TYPE_CHECKING:
    from collections.abc import Iterator

distributed = pytest.importorskip("distributed")


@pytest.fixture
def client() -> Iterator[Any]:
    """A fresh local cluster per test: its worker processes hold no scenario yet."""
    with (
        distributed.LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def _essentials(report: ExplorationReport) -> tuple[Any, ...]:
    return (
        report.ok,
        report.schedules_run,
        report.skipped_equivalent,
        report.total_under_bound,
        [
            (v.invariant, v.message, v.faults, v.found_at, v.nearest_passing, v.divergence)
            for v in report.violations
        ],
        [v.artifact.trace_digest for v in report.violations],
        report.verdicts,
    )


def _explore(name: str, max_faults: int = 2, **options: Any) -> ExplorationReport:
    return ys.explore(
        ys.load_scenario(name),
        max_faults=max_faults,
        stop_at_first=False,
        confirm=None,
        **options,
    )


def test_a_dask_executor_gives_the_report_of_one_process(client: Any) -> None:
    # jobs=2: one shard per Dask worker. (With the default jobs=1 the explorer submits one
    # task per schedule and runs nothing in parallel: correct, but about 10x slower.)
    on_dask = _explore("trigger-in-step", executor=client.get_executor(), jobs=2)
    alone = _explore("trigger-in-step", jobs=1)
    assert _essentials(on_dask) == _essentials(alone)
    assert not on_dask.ok
    assert on_dask.schedules_run + on_dask.skipped_equivalent == on_dask.total_under_bound
    assert {v.invariant for v in on_dask.violations} == {
        "at most one admitted execution per step",
        "at_most_once(courier.booked, by=order)",
    }


def test_a_worker_reused_by_a_second_exploration_runs_the_second_scenario(client: Any) -> None:
    # A Dask worker outlives an exploration: the next one, of another scenario, must not run
    # the scenario the worker loaded first. Both explorations go to the same worker, so the
    # outcome does not depend on Dask's placement.
    worker = sorted(client.scheduler_info()["workers"])[0]
    executor = client.get_executor(workers=[worker])
    first = _explore("durable-start", executor=executor, jobs=2, max_faults=1)
    assert first.ok
    second = _explore("trigger-in-step", executor=executor, jobs=2, max_faults=1)
    assert _essentials(second) == _essentials(_explore("trigger-in-step", max_faults=1))


def test_an_exhaustive_search_on_dask_reaches_the_states_one_process_reaches(client: Any) -> None:
    # Dask's workers run on this machine here: they share the visited states' table.
    options: dict[str, Any] = {"strategy": "exhaustive", "max_faults": 1}
    on_dask = _explore("booking-race", executor=client.get_executor(), jobs=2, **options)
    alone = _explore("booking-race", **options)
    assert on_dask.exhausted == alone.exhausted
    assert on_dask.distinct_states == alone.distinct_states
    assert {v.invariant for v in on_dask.violations} == {v.invariant for v in alone.violations}
    assert on_dask.exhaustive.progress["processes"] == 2
