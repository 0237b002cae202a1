"""Each adapter counts an execution's recoveries at claim (a claim that takes it over from a
holder whose lease ran out), and stores a dead-lettered outcome as a terminal status."""

from __future__ import annotations

import os
from typing import Any

import pytest

from yieldstar_sim import DuckDBRuntime, ManualClock, MemoryRuntime
from yieldstar_sim.core.model import (
    MAX_RECOVERY_ATTEMPTS_EXCEEDED,
    DeadLettered,
    ErrorInfo,
    ExecutionStatus,
    Suspended,
)
from yieldstar_sim.runtime import Runtime


def _postgres(clock: ManualClock) -> Any:
    from yieldstar_sim.runtime.postgres import PostgresRuntime

    return PostgresRuntime(os.environ["YIELDSTAR_PG_DSN"], clock=clock)


ADAPTERS = {
    "memory": lambda clock: MemoryRuntime(clock=clock),
    "duckdb": lambda clock: DuckDBRuntime(clock=clock),
    "postgres": _postgres,
}


@pytest.fixture(
    params=[
        pytest.param(name, marks=[pytest.mark.postgres] if name == "postgres" else [], id=name)
        for name in ADAPTERS
    ]
)
def runtime(request: pytest.FixtureRequest) -> Any:
    if request.param == "postgres" and not os.environ.get("YIELDSTAR_PG_DSN"):
        pytest.skip("no PostgreSQL server: set YIELDSTAR_PG_DSN")
    clock = ManualClock()
    made: Runtime = ADAPTERS[request.param](clock)
    yield made, clock
    made.close()


def test_a_claim_after_the_holders_lease_ran_out_counts_as_a_recovery(runtime: Any) -> None:
    made, clock = runtime
    made.trigger("poison", execution_id="p-1")
    first = made.claim("w1", lease_seconds=10)
    assert first is not None
    assert first.execution.recoveries == 0
    clock.advance(11)  # w1 crashed: its lease runs out
    second = made.claim("w2", lease_seconds=10)
    assert second is not None
    assert second.execution.recoveries == 1
    clock.advance(11)
    third = made.claim("w1", lease_seconds=10)
    assert third is not None
    assert third.execution.recoveries == 2
    record = made.execution("p-1")
    assert record is not None
    assert record.recoveries == 2


def test_a_claim_after_a_release_or_a_suspension_is_no_recovery(runtime: Any) -> None:
    made, clock = runtime
    made.trigger("calm", execution_id="c-1")
    first = made.claim("w1", lease_seconds=10)
    assert first is not None
    made.release(first.lease, delay=1)
    clock.advance(2)
    second = made.claim("w2", lease_seconds=10)
    assert second is not None
    made.record_wake(second.lease, clock.now() + 1)
    made.acknowledge(second.lease, Suspended())
    clock.advance(2)
    third = made.claim("w1", lease_seconds=10)
    assert third is not None
    assert third.execution.recoveries == 0


def test_a_dead_lettered_execution_is_terminal_with_its_error_and_can_be_pruned(
    runtime: Any,
) -> None:
    made, clock = runtime
    made.trigger("poison", execution_id="p-2")
    delivery = made.claim("w1", lease_seconds=10)
    assert delivery is not None
    error = ErrorInfo(
        "MaxRecoveryAttemptsExceeded", "recovered 4 times", MAX_RECOVERY_ATTEMPTS_EXCEEDED
    )
    record = made.acknowledge(delivery.lease, DeadLettered(error))
    assert record.status == ExecutionStatus.DEAD_LETTERED
    assert record.terminal
    assert record.error == error
    clock.advance(100)
    assert made.claim("w2", lease_seconds=10) is None  # never run again
    made.prune("p-2")
    assert made.execution("p-2") is None
