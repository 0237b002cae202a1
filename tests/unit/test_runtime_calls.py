"""One table of the driver's runtime calls: every call the driver can yield has a row, each row
names a choice-point op, and a call crosses the worker pipe unchanged."""

from __future__ import annotations

import typing

import pytest

from yieldstar_sim.core import driver
from yieldstar_sim.core.model import ChildRequest, Lease, RequestId, StartRequest
from yieldstar_sim.engine.calls import RUNTIME_CALLS, RUNTIME_CALLS_BY_OP, runtime_call
from yieldstar_sim.simulation.faults import CHOICE_POINT_OPS

LEASE = Lease("order-42", "w1", 3, 30.0)
EXAMPLES: list[driver.Command] = [
    driver.PutStep(LEASE, "ship", "completed", {"ok": True}, 2, 12.5),
    driver.RecordWake(LEASE, 40.0),
    driver.WaitFor(LEASE, "child-1"),
    driver.CallStart(StartRequest(RequestId("order-42", "ship"), "courier", {"n": 1}, True)),
    driver.StartChild(
        ChildRequest(RequestId("order-42", "kid"), "courier", "c-1", {"n": 2}, False)
    ),
    driver.RequestCancel("order-42"),
    driver.ConsumeEvent(LEASE, "approval", "approve"),
    driver.CompleteAttempt(LEASE, "reserve", 2, "hold-2"),
]


def test_every_runtime_call_the_driver_yields_has_one_row() -> None:
    assert set(RUNTIME_CALLS) == set(typing.get_args(driver.RuntimeCall))
    assert {type(command) for command in EXAMPLES} == set(RUNTIME_CALLS)


def test_each_row_names_a_choice_point_op_once() -> None:
    ops = [call.op for call in RUNTIME_CALLS.values()]
    assert len(set(ops)) == len(ops)
    assert set(ops) <= set(CHOICE_POINT_OPS)
    assert set(RUNTIME_CALLS_BY_OP) == set(ops)


@pytest.mark.parametrize("command", EXAMPLES, ids=lambda command: type(command).__name__)
def test_a_call_crosses_the_worker_pipe_unchanged(command: driver.Command) -> None:
    call = runtime_call(command)
    assert RUNTIME_CALLS_BY_OP[call.op].decode(call.encode(command), LEASE) == command


def test_a_clock_read_or_a_body_is_no_runtime_call() -> None:
    with pytest.raises(TypeError, match="not a runtime call"):
        runtime_call(driver.ReadClock())
