"""Non-determinism caught the way Temporal and Hypothesis catch it (issue 35, item 3): replay
compares each recorded step's identity with what the code asks for, the explorer runs a
schedule twice before it blames a runtime, and replay of a flaky artifact says the same."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import yieldstar_sim as ys
from yieldstar_sim.cli import main
from yieldstar_sim.core.identity import params_digest
from yieldstar_sim.errors import ArtifactError
from yieldstar_sim.simulation.determinism import CAUSE, first_difference

#: Not bundled: every bundled scenario is run twice by the suites that compare runs.
FLAKY = Path(__file__).parents[1] / "scenarios" / "uuid_in_step_key.py"
FIXED = FLAKY.with_name("uuid_in_step_key_fixed.py")


def test_a_recorded_childs_changed_params_stop_the_replay() -> None:
    run = ys.simulate(ys.load_scenario("deploy-changes-params"), seed=0)
    assert run.ok, run.explain()
    order = run.execution("order-42")
    assert order is not None
    assert order.error is not None
    assert order.error.name == "NondeterminismError"
    before = params_digest({"order": 42, "items": ["mug"]})
    after = params_digest({"order": 42, "items": ["mug"], "gift_wrap": True})
    assert order.error.message == (
        "execution 'order-42' replayed differently at step #0: step 'pack' is not the one "
        "recorded: the code asks for a child of workflow 'pack' as 'pack-42' with other params "
        f"than recorded (params digest {before} recorded, {after} now)"
    )
    assert run.effects_named("parcel.packed"), "the child itself ran as created"


def test_the_recorded_identity_names_kind_workflow_child_and_params() -> None:
    run = ys.simulate(ys.load_scenario("cancel-owner"), seed=0)
    values = {s.step_key: s.value for s in run.steps_of("order-42")}
    assert values["survey"]["step"] == {
        "kind": "spawn",
        "workflow": "survey",
        "child": "survey-42",
        "params": params_digest({"order": 42}),
    }
    assert "step" not in values["pack"], "a cancellation thrown there names no target"


@pytest.mark.xfail(
    strict=True,
    reason="start steps are left to the runtime's START_REQUEST_MISMATCH (RFC 003, the bundled "
    "deploy-mismatch story), which a recorded start never reaches without a fault: open",
)
def test_a_changed_target_workflow_is_named() -> None:
    @ys.workflow("ship-a")
    def ship_a(step, params):
        return "a"

    @ys.workflow("ship-b")
    def ship_b(step, params):
        return "b"

    def order(target):
        @ys.workflow("order")
        def placed(step, params):
            shipment = yield from step.start("ship", target, {"order": 1})
            yield from step.delay("wait", 10)
            return shipment.execution_id

        return placed

    scenario = ys.Scenario(
        name="changed-target",
        workflows=[order("ship-a"), ship_a, ship_b],
        deploys=[ys.Deploy(5.0, [order("ship-b"), ship_a, ship_b])],
        triggers=[ys.Trigger("order", execution_id="o")],
        expected=[ys.expect("order", error="NondeterminismError")],
    )
    record = ys.simulate(scenario, seed=0).execution("o")
    assert record is not None
    assert record.error is not None
    assert record.error.message.endswith(
        "step 'ship' is not the one recorded: the record has a start of workflow 'ship-a', "
        "the code asks for a start of workflow 'ship-b'"
    )


def test_the_explorer_says_the_scenario_is_not_deterministic(tmp_path: Path) -> None:
    scenario = ys.load_scenario(FLAKY)
    for confirm in ("duckdb", None):
        report = ys.explore(scenario, max_faults=1, confirm=confirm, out=tmp_path)
        assert report.verdict == "violated"
        assert report.runtime_mismatches == []
        (said,) = report.nondeterminism
        assert said.startswith(
            'the scenario is not deterministic: first difference at event #2 ("effect '
            "card.charged {'order': 7}\": its step_key is \"charge-"
        )
        assert said.endswith(f"; {CAUSE}")
        assert f"NOT DETERMINISTIC: {said}" in report.summary()
    artifact = report.violations[0].artifact_path
    assert artifact is not None
    with pytest.raises(ArtifactError, match="the scenario is not deterministic: first"):
        ys.replay(artifact, scenario=scenario)


def test_the_fixed_scenario_is_deterministic_and_holds() -> None:
    scenario = ys.load_scenario(FIXED)
    report = ys.explore(scenario, max_faults=1, confirm="duckdb")
    assert report.verdict == "ok"
    assert report.nondeterminism == []
    first = ys.simulate(scenario, seed=0)
    second = ys.simulate(scenario, seed=0)
    assert first_difference(first.trace, second.trace) is None


SHAPES = Path(__file__).parents[1] / "scenarios" / "steps_counted_per_process.py"


def test_a_schedule_that_no_longer_fits_its_scenario_is_said_not_deterministic() -> None:
    # Run twice, the schedule names a move the second run never offers: that is the first
    # difference, not an error of the search.
    report = ys.explore(ys.load_scenario(SHAPES), max_faults=1, confirm=None)
    assert report.verdict == "violated"
    (said,) = report.nondeterminism
    assert said.startswith("the scenario is not deterministic: first difference at choice point ")
    assert "(the run that made the schedule went on there)" in said
    assert said.endswith(f"; {CAUSE}")


def test_explore_of_such_a_scenario_keeps_its_report_and_says_which_graph_it_could_not_draw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["explore", str(SHAPES), "--max-faults", "1", "--no-confirm", "--out", str(tmp_path)]
    )
    out, err = capsys.readouterr()
    assert code == 1, err
    assert "NOT DETERMINISTIC: the scenario is not deterministic" in out
    assert "violation 1 graph: not drawn: the artifact does not replay: ScheduleMismatch" in out
    assert "error" not in err


def test_a_search_whose_runs_made_again_take_another_path_stops_saying_why() -> None:
    # With no violation to stop at, the search restores runs, whose workflow code counts its
    # steps again; no count of states after that would mean anything.
    scenario = dataclasses.replace(ys.load_scenario(SHAPES), invariants=[])
    with pytest.raises(ys.ScenarioError) as caught:
        ys.explore(scenario, max_faults=1, confirm=None)
    message = str(caught.value)
    assert message.startswith(
        "the search cannot go on: a run made again did not offer the move it offered before "
        "(choice point "
    )
    assert message.endswith(
        f"the scenario is not deterministic, or its runtime adapter does "
        f"not save what it keeps; {CAUSE}"
    )
