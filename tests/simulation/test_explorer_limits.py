"""The explorer within the machine's limits: never more worker processes than schedules."""

from __future__ import annotations

import concurrent.futures
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.cli_explore import report_json


def test_jobs_are_capped_at_the_number_of_schedules(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []
    real = concurrent.futures.ProcessPoolExecutor

    def counting(max_workers: int, **options: Any) -> concurrent.futures.ProcessPoolExecutor:
        sizes.append(max_workers)
        return real(max_workers, **options)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", counting)
    scenario = ys.load_scenario("durable-start")
    alone = ys.explore(scenario, max_faults=1, confirm=None, stop_at_first=False)
    many = ys.explore(scenario, max_faults=1, confirm=None, stop_at_first=False, jobs=1000)
    assert sizes, "jobs=1000 ran on a process pool"
    assert max(sizes) <= alone.schedules_run - 1  # the schedules after the fault-free one
    same = {"elapsed_seconds": None}
    assert report_json(many) | same == report_json(alone) | same
