"""The built-in "recorded history never changes" (issue 54, item 5): a final step record, a
terminal outcome and a start request's target are written once; a runtime that rewrites one
is caught with a sentence naming the record, its first value and the write that changed it
(or, when no call of the run shows one, what the record says now)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.model import ExecutionStatus, StartRequestRecord
from yieldstar_sim.examples.flawed_runtimes import StaleStepWritesRuntime
from yieldstar_sim.runtime.memory import MemoryRuntime
from yieldstar_sim.simulation.invariants import BUILT_IN, RecordedHistoryNeverChanges
from yieldstar_sim.simulation.invariants.history import _same

HISTORY = "recorded history never changes"


def history_violations(run: Any) -> list[str]:
    return [v.message for v in run.violations if v.invariant == HISTORY]


def test_it_is_built_in() -> None:
    assert any(isinstance(each, RecordedHistoryNeverChanges) for each in BUILT_IN)


def test_a_superseded_write_over_a_completed_step_names_both_values_and_the_write() -> None:
    run = ys.simulate(ys.load_scenario("stale-step-write"), seed=0)
    (message,) = history_violations(run)
    assert message.startswith(
        "step charge of order-42 was recorded completed with {'confirmed_at': 30, 'receipt': "
        "'rc-42'} at t=30 by w1; w2's put_step at t=40 under token 1 rewrote it to completed "
        "with {'confirmed_at': 0, 'receipt': 'rc-42'}"
    )
    assert "--check-adapter" in message
    fixed = ys.simulate(ys.load_scenario("stale-step-write-fixed"), seed=0, runtime="memory")
    assert fixed.ok, fixed.explain()


def test_the_same_scenario_on_the_flawed_runtime_is_found_with_one_fault() -> None:
    scenario = ys.load_scenario("stale-step-write-fixed")
    report = ys.explore(scenario, runtime=StaleStepWritesRuntime, max_faults=1, confirm=None)
    assert report.verdict == "violated"
    assert report.violations[0].invariant == HISTORY


class _Rewrites(MemoryRuntime):
    """Rewrites records behind the calls' backs, as a runtime with a bug in its own upkeep."""

    def executions(self) -> list[Any]:
        records = super().executions()
        return [
            dataclasses.replace(record, status=ExecutionStatus.CANCELLED)
            if record.terminal
            else record
            for record in records
        ]

    def steps(self, execution_id: str) -> list[Any]:
        return [
            dataclasses.replace(step, value="rewritten") for step in super().steps(execution_id)
        ]

    def start_requests(self) -> list[StartRequestRecord]:
        return [
            dataclasses.replace(request, target_execution_id="@elsewhere")
            for request in super().start_requests()
        ]


def test_a_record_rewritten_where_no_call_shows_it_is_caught_from_the_final_records() -> None:
    run = ys.simulate(ys.load_scenario("durable-start"), seed=0, runtime=_Rewrites)
    messages = history_violations(run)
    assert any(
        m.startswith("step charge of order-42 was recorded completed with None at t=0 by ")
        and "the runtime's record now says completed with 'rewritten', and no call of the run "
        "wrote that"
        in m
        for m in messages
    ), messages
    assert any(m.startswith("the outcome of order-42 was recorded completed") for m in messages)
    assert any(
        m.startswith(
            "the target of start request (order-42, ship) was recorded @ship-order:order-42/ship"
        )
        and "now says @elsewhere" in m
        for m in messages
    ), messages


def test_pruning_an_execution_forgets_its_records() -> None:
    # spawn-after-prune admits a business ID again after its record was pruned: its new steps
    # are a new execution's, not a rewrite.
    run = ys.simulate(ys.load_scenario("spawn-after-prune"), seed=0, runtime="memory")
    assert not history_violations(run)


@pytest.mark.parametrize(
    ("first", "now", "same"),
    [
        ({"a": [1, "x"], "b": None}, {"b": None, "a": (1, "x")}, True),  # the same JSON
        (1, 1.0, True),  # ECMAScript's numbers: both are 1
        (-0.0, 0.0, True),
        (1, "1", False),
        ([1], [True], False),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ("x", "y", False),
    ],
)
def test_a_step_value_is_the_same_when_its_canonical_json_is(
    first: object, now: object, same: bool
) -> None:
    # Told alike without encoding them where they are plainly alike (encoding every step
    # written cost a search a tenth of its time), else as their canonical JSON tells.
    assert _same(("completed", first, None, None), ("completed", now, None, None)) is same
    assert _same(("completed", first, None, None), ("failed", first, None, None)) is False
