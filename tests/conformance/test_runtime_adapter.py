"""RFC 003's runtime-adapter table, row by row, and the runtime rules of docs/decisions.md, on every
adapter through the public conformance suite (PostgreSQL where YIELDSTAR_PG_DSN names a
server)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from yieldstar_sim import DuckDBRuntime, ManualClock, MemoryRuntime, RequestId, StartRequest
from yieldstar_sim.core.model import Cancelled, ChildAccepted, ChildRequest, StartAccepted
from yieldstar_sim.runtime import Runtime
from yieldstar_sim.testing import (
    RETURN_EXISTING_ID_CASES,
    RFC003_RUNTIME_ADAPTER_CASES,
    RUNTIME_RULE_CASES,
    Case,
    RuntimeFactory,
    check_runtime_adapter,
)
from yieldstar_sim.testing.attempts import ATTEMPT_CASES, check_attempt_adapter
from yieldstar_sim.testing.events import EVENT_CASES, check_event_adapter


def _memory(clock: ManualClock) -> Runtime:
    return MemoryRuntime(clock=clock)


def _duckdb(clock: ManualClock) -> Runtime:
    return DuckDBRuntime(clock=clock)


def _postgres(clock: ManualClock | None = None, **options: Any) -> Runtime:
    from yieldstar_sim.runtime.postgres import PostgresRuntime

    return PostgresRuntime(os.environ["YIELDSTAR_PG_DSN"], clock=clock, **options)


ADAPTERS: dict[str, RuntimeFactory] = {
    "memory": _memory,
    "duckdb": _duckdb,
    "postgres": _postgres,
}
#: The adapters, each marked so that the postgres one is skipped without a server.
ADAPTER_PARAMS = [
    pytest.param(name, marks=[pytest.mark.postgres] if name == "postgres" else [], id=name)
    for name in sorted(ADAPTERS)
]


@pytest.fixture(params=ADAPTER_PARAMS)
def make(request: pytest.FixtureRequest) -> RuntimeFactory:
    return ADAPTERS[request.param]


#: The same adapters made with the DBOS-style business-ID policy.
RETURNING_EXISTING: dict[str, RuntimeFactory] = {
    "memory": lambda clock: MemoryRuntime(clock=clock, on_existing_id="return_existing"),
    "duckdb": lambda clock: DuckDBRuntime(clock=clock, on_existing_id="return_existing"),
    "postgres": lambda clock: _postgres(clock, on_existing_id="return_existing"),
}


@pytest.fixture(params=ADAPTER_PARAMS)
def make_returning_existing(request: pytest.FixtureRequest) -> RuntimeFactory:
    return RETURNING_EXISTING[request.param]


@pytest.mark.parametrize(
    "case", list(RFC003_RUNTIME_ADAPTER_CASES.values()), ids=list(RFC003_RUNTIME_ADAPTER_CASES)
)
def test_rfc003_runtime_adapter_table(make: RuntimeFactory, case: Case) -> None:
    case(make)


@pytest.mark.parametrize("case", list(RUNTIME_RULE_CASES.values()), ids=list(RUNTIME_RULE_CASES))
def test_runtime_rules(make: RuntimeFactory, case: Case) -> None:
    case(make)


@pytest.mark.parametrize(
    "case", list(RETURN_EXISTING_ID_CASES.values()), ids=list(RETURN_EXISTING_ID_CASES)
)
def test_the_return_existing_business_id_policy(
    make_returning_existing: RuntimeFactory, case: Case
) -> None:
    case(make_returning_existing)


@pytest.mark.parametrize("adapter", ["memory", "duckdb"])
def test_an_unknown_business_id_policy_is_refused_in_one_line(adapter: str) -> None:
    runtime_class = {"memory": MemoryRuntime, "duckdb": DuckDBRuntime}[adapter]
    with pytest.raises(ValueError, match="on_existing_id must be one of 'refuse', 'return_exist"):
        runtime_class(on_existing_id="merge")


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
            return StartAccepted(self.trigger(request.workflow_id, request.params))

    with pytest.raises(AssertionError, match=r"^Failure before a new start commits: "):
        check_runtime_adapter(lambda clock: ForgetfulRuntime(clock=clock))


RUNTIME_CLASSES: dict[str, Any] = {
    "memory": MemoryRuntime,
    "duckdb": DuckDBRuntime,
    "postgres": _postgres,
}


@pytest.mark.parametrize("kind", ADAPTER_PARAMS)
def test_without_the_orphan_guard_a_terminal_caller_admits_an_orphan(kind: str) -> None:
    """orphan_guard=False (for the orphan-after-cancel scenario) shows the hazard: a cancelled
    caller's new child is admitted, owned by a terminal owner and never asked to cancel, and a
    target of a cancel-requested owner does not follow it."""
    runtime = RUNTIME_CLASSES[kind](orphan_guard=False)
    runtime.trigger("order", execution_id="order-42")
    runtime.trigger("order", execution_id="order-43")
    delivery = runtime.claim("w1", lease_seconds=30, execution_id="order-42")
    assert delivery is not None
    runtime.acknowledge(delivery.lease, Cancelled())
    orphan = runtime.start_child(ChildRequest(RequestId("order-42", "pack"), "pack", "pack-42"))
    assert orphan == ChildAccepted("pack-42", created=True)
    runtime.cancel("order-43")
    target = runtime.start(StartRequest(RequestId("order-43", "ship"), "ship-order"))
    assert isinstance(target, StartAccepted)
    flags = {r.execution_id: r.cancel_requested for r in runtime.executions()}
    assert flags == {
        "order-42": False,
        "order-43": True,
        "pack-42": False,
        target.execution_id: False,
    }


@pytest.mark.parametrize("kind", ADAPTER_PARAMS)
def test_the_orphan_guard_is_a_bool(kind: str) -> None:
    with pytest.raises(TypeError, match=r"^orphan_guard must be True or False, not 'no'$"):
        RUNTIME_CLASSES[kind](orphan_guard="no")  # type: ignore[arg-type]


@pytest.mark.parametrize("case", list(EVENT_CASES.values()), ids=list(EVENT_CASES))
def test_external_events_and_continue_as_new(make: RuntimeFactory, case: Case) -> None:
    case(make)


def test_check_event_adapter_names_the_failing_case() -> None:
    class DropsInstanceEvents(MemoryRuntime):
        """Takes only events sent to the run by ID."""

        def wait_for_event(self, lease, step_key, name):  # type: ignore[no-untyped-def]
            return None

    with pytest.raises(AssertionError, match=r"^An event is taken once and recorded"):
        check_event_adapter(lambda clock: DropsInstanceEvents(clock=clock))


@pytest.mark.parametrize("case", list(ATTEMPT_CASES.values()), ids=list(ATTEMPT_CASES))
def test_attempts_that_complete_by_token(make: RuntimeFactory, case: Case) -> None:
    case(make)


def test_check_attempt_adapter_names_the_failing_case() -> None:
    from yieldstar_sim.examples.flawed_runtimes import CompletesAnyAttemptRuntime

    with pytest.raises(AssertionError, match=r"^A stale attempt's completion is refused"):
        check_attempt_adapter(lambda clock: CompletesAnyAttemptRuntime(clock=clock))
