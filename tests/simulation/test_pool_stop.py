"""What a search in several processes does with the tasks it queued and no one asked for yet.

When the caller just stops asking, they are cancelled and the pool stays for what comes next.
When the wait ends on a stop (a signal's ``KeyboardInterrupt``) or an error, the pool's
processes may be gone, and the pool's own thread is then failing every task it holds: a task
cancelled from here meanwhile killed that thread with a traceback of Python's (before 3.12,
``InvalidStateError`` in ``terminate_broken``), so our own pool is shut down with
``cancel_futures`` instead, which drops them from that thread. A pool that is not ours (a
cluster's) is left open, its tasks cancelled.
"""

from __future__ import annotations

import concurrent.futures
import signal
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core import interrupts
from yieldstar_sim.simulation.explorer.shards import Runner


class Pool(concurrent.futures.Executor):
    """A pool whose first task ends as ``first`` says, and the others never."""

    def __init__(self, first: BaseException | None) -> None:
        self.first = first
        self.futures: list[concurrent.futures.Future[Any]] = []
        self.shutdowns: list[bool] = []

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        if not self.futures:
            if self.first is None:
                future.set_result(0)
            else:
                future.set_exception(self.first)
        self.futures.append(future)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.shutdowns.append(cancel_futures)

    def queued(self) -> list[concurrent.futures.Future[Any]]:
        """The tasks after the first."""
        assert len(self.futures) > 1
        return self.futures[1:]


def _task(item: int) -> int:
    return item


def _runner(first: BaseException | None, *, own: bool) -> tuple[Runner, Pool]:
    pool = Pool(first)
    runner = Runner(ys.load_scenario("durable-start"), "memory", jobs=2, executor=pool)
    if own:
        runner._own = pool  # as ``_pool`` makes it
    return runner, pool


@pytest.mark.parametrize("stop", [KeyboardInterrupt(), BrokenProcessPool("killed")])
def test_a_stop_or_an_error_in_the_wait_leaves_the_queued_tasks_to_our_pools_shutdown(
    stop: BaseException,
) -> None:
    runner, pool = _runner(stop, own=True)
    with pytest.raises(type(stop)):
        next(runner._ordered(_task, range(20)))
    assert not any(future.cancelled() for future in pool.queued())
    assert pool.shutdowns == [True]
    assert runner.executor is None  # the next search makes a pool of its own again


def test_a_caller_that_stops_asking_cancels_the_rest_and_keeps_the_pool() -> None:
    runner, pool = _runner(None, own=True)
    answers = runner._ordered(_task, range(20))
    assert next(answers) == 0
    answers.close()
    assert all(future.cancelled() for future in pool.queued())
    assert pool.shutdowns == []
    assert runner.executor is pool


def test_a_caller_that_lets_go_after_a_stop_signal_shuts_our_pool_down(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner, pool = _runner(None, own=True)
    answers = runner._ordered(_task, range(20))
    assert next(answers) == 0
    monkeypatch.setattr(interrupts, "_requested", signal.SIGTERM)
    answers.close()
    assert not any(future.cancelled() for future in pool.queued())
    assert pool.shutdowns == [True]


def test_a_pool_not_ours_is_left_open_its_tasks_cancelled() -> None:
    runner, pool = _runner(KeyboardInterrupt(), own=False)
    with pytest.raises(KeyboardInterrupt):
        next(runner._ordered(_task, range(20)))
    assert all(future.cancelled() for future in pool.queued())
    assert pool.shutdowns == []
    assert runner.executor is pool


def test_a_tasks_own_error_cancels_the_rest_and_leaves_the_pool_to_close() -> None:
    """Shutting the pool down from the wait, after a task that would not pickle, could wait on
    the pool's thread for ever: only a stop or a broken pool shuts it down there."""
    runner, pool = _runner(TypeError("cannot pickle 'function' object"), own=True)
    with pytest.raises(TypeError):
        next(runner._ordered(_task, range(20)))
    assert all(future.cancelled() for future in pool.queued())
    assert pool.shutdowns == []
    runner.close()
    assert pool.shutdowns == [False]
