"""Failure points count every pass, armed or not, and fire what was armed in order."""

from __future__ import annotations

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.model import InjectedFailure


def test_failure_point_hits_are_counted_and_read_as_a_copy() -> None:
    runtime = ys.MemoryRuntime()
    runtime.trigger("order", {"n": 1}, execution_id="order-1")
    hits = runtime.failpoints.hits
    assert hits == {"trigger.before_commit": 1, "trigger.after_commit": 1}
    hits.clear()  # the reader's copy: the runtime's own count is untouched
    assert runtime.failpoints.hits["trigger.after_commit"] == 1


def test_an_armed_point_fires_once_per_arming_and_counts_each_pass() -> None:
    runtime = ys.MemoryRuntime()
    runtime.failpoints.arm("trigger.before_commit", times=2)
    for _ in range(2):
        with pytest.raises(InjectedFailure, match=r"trigger\.before_commit"):
            runtime.trigger("order", {}, execution_id="order-1")
    runtime.trigger("order", {}, execution_id="order-1")
    assert runtime.failpoints.hits["trigger.before_commit"] == 3
    assert runtime.failpoints.armed == {}
