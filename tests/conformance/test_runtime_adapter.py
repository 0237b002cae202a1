"""RFC 003's runtime-adapter table, row by row, and the runtime rules of DESIGN.md, on every
adapter through the public conformance suite."""

from __future__ import annotations

import pytest

from yieldstar_sim import DuckDBRuntime, ManualClock, MemoryRuntime, Runtime
from yieldstar_sim.testing import (
    RFC003_RUNTIME_ADAPTER_CASES,
    RUNTIME_RULE_CASES,
    Case,
    RuntimeFactory,
    check_runtime_adapter,
)


def _memory(clock: ManualClock) -> Runtime:
    return MemoryRuntime(clock=clock)


def _duckdb(clock: ManualClock) -> Runtime:
    return DuckDBRuntime(clock=clock)


ADAPTERS: dict[str, RuntimeFactory] = {"memory": _memory, "duckdb": _duckdb}


@pytest.fixture(params=sorted(ADAPTERS), ids=sorted(ADAPTERS))
def make(request: pytest.FixtureRequest) -> RuntimeFactory:
    return ADAPTERS[request.param]


@pytest.mark.parametrize(
    "case", list(RFC003_RUNTIME_ADAPTER_CASES.values()), ids=list(RFC003_RUNTIME_ADAPTER_CASES)
)
def test_rfc003_runtime_adapter_table(make: RuntimeFactory, case: Case) -> None:
    case(make)


@pytest.mark.parametrize("case", list(RUNTIME_RULE_CASES.values()), ids=list(RUNTIME_RULE_CASES))
def test_runtime_rules(make: RuntimeFactory, case: Case) -> None:
    case(make)


def test_the_table_has_every_row_of_the_rfc() -> None:
    assert list(RFC003_RUNTIME_ADAPTER_CASES) == [
        "Failure before a new start commits",
        "Start commit followed by a lost response",
        "Two concurrent calls with one start-request ID",
        "Two different start-request IDs",
        "A new start commits",
        "A start with detached: true",
        "Invalid start parameters",
        "Parameter objects have different key order",
        "A repeated request changes the workflow ID or parameters",
        "A matching request repeats after the target is terminal",
    ]


def test_check_runtime_adapter_passes_both_adapters(make: RuntimeFactory) -> None:
    check_runtime_adapter(make)


def test_check_runtime_adapter_names_the_failing_case() -> None:
    class ForgetfulRuntime(MemoryRuntime):
        """Starts a new target on every call, like a trigger."""

        def start(self, request):  # type: ignore[no-untyped-def]
            from yieldstar_sim import StartAccepted

            return StartAccepted(self.trigger(request.workflow_id, request.params))

    with pytest.raises(AssertionError, match=r"^Failure before a new start commits: "):
        check_runtime_adapter(lambda clock: ForgetfulRuntime(clock=clock))
