"""Big step values stay out of the trace: it holds their digest and size, the runtime's
records hold the value."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.codec import durable_value_codec
from yieldstar_sim.simulation.trace_values import TRACE_VALUE_LIMIT

BIG = "x" * (5 * 1024 * 1024)


@ys.workflow("export")
def export(step: ys.StepRunner, params: Any) -> Any:
    blob = yield from step.run("blob", lambda: BIG)
    small = yield from step.run("small", lambda: {"n": 1})
    return {"size": len(blob), "small": small}


@pytest.mark.parametrize("runtime", ["memory", "duckdb"])
def test_a_big_step_value_is_a_digest_and_a_size_in_the_trace(runtime: str) -> None:
    scenario = ys.Scenario(
        name="big-values", workflows=[export], triggers=[ys.Trigger("export")], workers=1
    )
    run = ys.simulate(scenario, seed=0, runtime=runtime)
    assert run.ok, run.explain()
    canonical = durable_value_codec.encode_or_raise(BIG).encode()
    (recorded,) = [
        e for e in run.trace.of_kind("call") if e.op == "put_step" and e.step_key == "blob"
    ]
    assert "value" not in recorded.data
    assert recorded.data["value_bytes"] == len(canonical)
    assert recorded.data["value_digest"] == "sha256:" + hashlib.sha256(canonical).hexdigest()
    (small,) = [
        e for e in run.trace.of_kind("call") if e.op == "put_step" and e.step_key == "small"
    ]
    assert small.data["value"] == {"n": 1}  # small values stay, byte for byte as before
    assert len(run.trace.to_jsonl()) < 64 * 1024
    assert all(len(line) < 1024 for line in run.trace.lines())
    steps = {s.step_key: s.value for s in run.runtime.steps(run.executions[0].execution_id)}
    assert steps["blob"] == BIG  # the value lives in the runtime's records
    assert len(canonical) > TRACE_VALUE_LIMIT
