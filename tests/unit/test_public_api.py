"""The public surface is a promise (docs/decisions.md): users, notebooks, bundled scenarios and
outside test suites depend on it."""

from __future__ import annotations

import pytest

import yieldstar_sim as ys

#: Names the design promised from the start; the package may add names, never drop these.
PROMISED = {
    "workflow",
    "Scenario",
    "Trigger",
    "at_most_once",
    "simulate",
    "explore",
    "durable_value_codec",
    "WorkflowStartError",
    "WorkflowStartErrorCode",
    "ExecutionAdmissionError",
    "InvalidIDError",
    "WorkflowCancelledError",
    "NondeterminismError",
    "DuckDBRuntime",
    "MemoryRuntime",
    "StartRequest",
    "RequestId",
}


#: Everything ``ys.X`` exports: the names the README, notebooks, docs and bundled scenarios use.
#: A name joins only when the documentation starts using it at the top level.
EXPORTED = {
    "Cancel",
    "Client",
    "ClientRetry",
    "ChildFailedError",
    "Completed",
    "Deploy",
    "DriverProfile",
    "DuckDBRuntime",
    "Engine",
    "EventRequest",
    "ExecutionAdmissionError",
    "ExecutionClient",
    "Exhaustive",
    "Fault",
    "FaultPlanError",
    "InvalidIDError",
    "ManualClock",
    "MemoryRuntime",
    "NondeterminismError",
    "Pct",
    "Permanent",
    "ProfileError",
    "Prune",
    "Random",
    "ReceivedEvent",
    "RequestId",
    "Scenario",
    "ScenarioError",
    "SendEvent",
    "StartRequest",
    "StepError",
    "StepRunner",
    "Stepper",
    "Systematic",
    "Trigger",
    "WorkflowCancelledError",
    "WorkflowStartClient",
    "WorkflowStartError",
    "WorkflowStartErrorCode",
    "WorldError",
    "__version__",
    "at_most_once",
    "define_step",
    "durable_value_codec",
    "expect",
    "explore",
    "load_scenario",
    "replay",
    "simulate",
    "workflow",
}


def test_the_top_level_exports_exactly_the_documented_names() -> None:
    assert set(ys.__all__) == EXPORTED
    assert len(ys.__all__) == len(EXPORTED), "a name is listed twice in __all__"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        _ = ys.NoSuchThing  # type: ignore[attr-defined]


def test_the_promised_names_are_exported() -> None:
    missing = PROMISED - set(ys.__all__)
    assert not missing, f"the public surface promises {sorted(missing)}"
    for name in ys.__all__:
        assert hasattr(ys, name), f"__all__ names {name} but the package has no such attribute"


def test_every_exported_name_has_a_docstring() -> None:
    for name in ys.__all__:
        value = getattr(ys, name)
        if callable(value) and not isinstance(value, type(ys.durable_value_codec.encode)):
            assert (value.__doc__ or "").strip(), f"ys.{name} has no docstring"


def test_the_codec_and_error_shapes_of_design_md() -> None:
    encoded = ys.durable_value_codec.encode({"b": 1, "a": 1.0})
    assert (encoded.status, encoded.canonical) == ("encoded", '{"a":1,"b":1}')
    invalid = ys.durable_value_codec.encode({"a": float("nan")})
    assert invalid.status == "invalid"
    assert invalid.message
    assert ys.durable_value_codec.decode('{"a":1}') == {"a": 1}
    error = ys.WorkflowStartError(ys.WorkflowStartErrorCode.START_REQUEST_MISMATCH, "changed")
    assert error.code == "START_REQUEST_MISMATCH"
    assert {code.value for code in ys.WorkflowStartErrorCode} == {
        "INVALID_START_PARAMETERS",
        "START_REQUEST_MISMATCH",
    }


def test_runtime_surface_of_design_md() -> None:
    for runtime in (ys.DuckDBRuntime(path=":memory:"), ys.MemoryRuntime()):
        caller = runtime.trigger("charge-order", None, execution_id="order-42")
        result = runtime.start(
            ys.StartRequest(
                request_id=ys.RequestId(execution_id=caller, step_key="ship"),
                workflow_id="ship-order",
                params=None,
                detached=False,
            )
        )
        assert result.status == "accepted"
        record = runtime.execution(result.execution_id)
        assert record is not None
        assert record.workflow_id == "ship-order"
        assert record.parent is not None
        assert (record.parent.execution_id, record.parent.step_key, record.parent.detached) == (
            "order-42",
            "ship",
            False,
        )
        assert len(runtime.executions()) == 2


def test_simulate_surface_of_design_md() -> None:
    run = ys.simulate(ys.load_scenario("trigger-in-step"), seed=0)
    assert run.ok is False
    assert all(v.invariant and v.message for v in run.violations)
    assert run.effects
    assert run.runtime.executions()


def test_explore_surface_of_design_md() -> None:
    scenario = ys.load_scenario("trigger-in-step")
    report = ys.explore(scenario, max_faults=1, runtime="memory", confirm=None)
    assert report.ok is False
    assert report.violations
    assert all(v.invariant and v.message for v in report.violations)
    assert report.counterexample is not None
    fix = ys.explore(ys.load_scenario("durable-start"), max_faults=1, runtime="memory",
                     confirm=None)  # fmt: skip
    assert (fix.ok, fix.violations, fix.counterexample) == (True, [], None)
