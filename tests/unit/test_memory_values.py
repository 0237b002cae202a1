"""The memory runtime keeps decoded values, yet what a reader gets is its own: changing a
record's parameters or result changes nothing stored, as on DuckDB (which decodes anew)."""

from __future__ import annotations

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.model import Completed, ExecutionStatus
from yieldstar_sim.runtime import _common as common
from yieldstar_sim.runtime.duckdb_runtime import DuckDBRuntime
from yieldstar_sim.runtime.memory import MemoryRuntime
from yieldstar_sim.runtime.protocol import Runtime
from yieldstar_sim.simulation.scenario_files import bundled_scenarios


@pytest.mark.parametrize("make", [MemoryRuntime, DuckDBRuntime], ids=["memory", "duckdb"])
def test_changing_what_a_read_returns_changes_nothing_stored(make: type[Runtime]) -> None:
    runtime = make()
    params = {"order": 42, "items": [{"sku": "A-1", "qty": 2}], "total": 1.0}
    runtime.trigger("charge-order", params, execution_id="order-42")
    params["order"] = 0  # the caller's own object is not stored either
    delivery = runtime.claim("w1", lease_seconds=30.0)
    assert delivery is not None
    assert delivery.execution.params == {
        "order": 42,
        "items": [{"sku": "A-1", "qty": 2}],
        "total": 1,
    }
    delivery.execution.params["items"][0]["qty"] = 99  # type: ignore[index]
    record = runtime.acknowledge(delivery.lease, Completed({"ok": [1, 2]}))
    assert record.status == ExecutionStatus.COMPLETED
    record.result["ok"].append(3)  # type: ignore[index]
    again = runtime.execution("order-42")
    assert again is not None
    assert again.params == {"order": 42, "items": [{"sku": "A-1", "qty": 2}], "total": 1}
    assert again.result == {"ok": [1, 2]}
    assert again.params is not record.params
    runtime.close()


@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_records_built_from_decoded_values_equal_records_decoded_from_json(name: str) -> None:
    # The memory runtime builds records from values it decoded once; reading its canonical
    # columns as the DuckDB adapter does must give the very same records, field by field.
    runtime = ys.simulate(ys.load_scenario(name), runtime="memory").runtime
    assert isinstance(runtime, MemoryRuntime)
    rows = [*runtime._rows.values(), *runtime._tombstones.values()]
    assert rows
    for row in rows:
        built, decoded = row.record(), common.execution_record(row.columns())
        assert built == decoded
        assert [type(getattr(built, f)) for f in ("created_at", "finished_at", "due_at")] == [
            type(getattr(decoded, f)) for f in ("created_at", "finished_at", "due_at")
        ]
