"""How a process of a search on a Dask cluster waits for a partition's answer
(``simulation/dask_visited.py``): as long as the partition's worker is in the cluster, and not
once the scheduler says it left. Dask leaves a call to an actor whose worker died unanswered
for good, and a process waiting on it held its worker a minute. No cluster: the answers and
the scheduler's word are played here."""

from __future__ import annotations

from typing import Any

import pytest

from yieldstar_sim.simulation import dask_visited
from yieldstar_sim.simulation.dask_visited import PartitionLost, answer


class _Answer:
    """A call's answer that comes after ``looks`` waits that found nothing (never: None)."""

    def __init__(self, looks: int | None, value: Any = "answered") -> None:
        self.looks, self.value, self.waits = looks, value, 0

    def result(self, timeout: float | None = None) -> Any:
        self.waits += 1
        if self.looks is None or self.waits <= self.looks:
            raise TimeoutError
        return self.value


@pytest.fixture
def scheduler(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The workers each asking of the scheduler was about (tcp://a:1 and tcp://b:1 are in
    the cluster), asked between waits that found nothing."""
    here = ["tcp://a:1", "tcp://b:1"]
    asked: list[str] = []

    def in_cluster(worker: str) -> bool:
        asked.append(worker)
        return worker in here

    monkeypatch.setattr(dask_visited, "in_cluster", in_cluster)
    monkeypatch.setattr(dask_visited, "ANSWER_SECONDS", 3600.0)
    monkeypatch.setattr(dask_visited, "LOOK_SECONDS", 0.0)
    return asked


def test_a_slow_answer_from_a_worker_still_there_is_waited_for(scheduler: list[str]) -> None:
    slow = _Answer(looks=5)
    assert answer(slow, 1, "tcp://b:1") == "answered"
    assert scheduler == ["tcp://b:1"] * 5  # asked after each wait that found nothing


def test_an_answer_from_a_worker_that_left_is_not_waited_for(scheduler: list[str]) -> None:
    never = _Answer(looks=None)
    with pytest.raises(PartitionLost, match=r"partition 1 .* its worker tcp://gone:1 left"):
        answer(never, 1, "tcp://gone:1")
    assert never.waits == 1  # one wait, then the scheduler's word
    assert scheduler == ["tcp://gone:1"]


def test_an_answer_that_never_comes_from_a_worker_still_there_ends_at_the_deadline(
    scheduler: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dask_visited, "ANSWER_SECONDS", 0.0)
    with pytest.raises(PartitionLost, match=r"partition 0 .* did not answer in 0s"):
        answer(_Answer(looks=None), 0, "tcp://a:1")


def test_an_answer_there_at_once_asks_the_scheduler_nothing(scheduler: list[str]) -> None:
    assert answer(_Answer(looks=0, value=(b"", 3, False)), 0, "tcp://a:1") == (b"", 3, False)
    assert scheduler == []
