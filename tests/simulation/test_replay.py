"""Replay artifacts reproduce their run exactly, and refuse clearly when they cannot."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import yieldstar_sim as ys
from yieldstar_sim.errors import ArtifactError
from yieldstar_sim.simulation.run import replay as replay_exactly
from yieldstar_sim.simulation.scenario_files import bundled_scenarios


@pytest.mark.parametrize("runtime", ["memory", "duckdb"])
def test_an_artifact_replays_the_identical_trace(tmp_path: Path, runtime: str) -> None:
    run = ys.simulate(ys.load_scenario("trigger-in-step"), seed=3, runtime="memory")
    path = run.artifact().save(tmp_path / "problem.replay.json")
    again = ys.replay(path, runtime=runtime)
    assert again.trace.to_jsonl() == run.trace.to_jsonl()
    assert [v.message for v in again.violations] == [v.message for v in run.violations]
    saved = json.loads(path.read_text())
    assert saved["format"] == "yieldstar-sim/replay"
    # A bundled scenario is package code, named without a hash.
    assert saved["scenario"] == {"name": "trigger-in-step", "ref": "trigger-in-step"}
    assert saved["faults"] == [
        {"kind": "crash", "at": run.faults[0].at, "label": run.faults[0].label}
    ]
    assert len(saved["schedule"]) == run.points


def test_a_changed_workflow_replays_exactly_only_by_choice(tmp_path: Path) -> None:
    source = bundled_scenarios()["trigger-in-step"]
    copy = tmp_path / "shop.py"
    shutil.copy(source, copy)
    run = ys.simulate(ys.load_scenario(copy), seed=0, runtime="memory")
    artifact = run.artifact().save(tmp_path / "shop.replay.json")
    assert ys.replay(artifact).trace_digest() == run.trace_digest()
    copy.write_text(copy.read_text().replace('"card.charged"', '"card.debited"'))
    with pytest.raises(ArtifactError, match=r"scenario file .* changed since the artifact"):
        ys.replay(artifact)  # the file's bytes changed: it is not even imported
    # Chosen, the edited code runs the recorded schedule (a check of a fix: test_regression.py);
    # an exact replay, as the explorer's confirmation asks, refuses it naming both scenarios.
    edited = ys.load_scenario(copy)
    assert ys.replay(artifact, scenario=edited).regression is not None
    with pytest.raises(
        ArtifactError,
        match=r"^the artifact of scenario 'trigger-in-step' was made from other code than "
        r"scenario 'trigger-in-step' has now .* ys.replay \(the CLI's replay\) runs its schedule",
    ):
        replay_exactly(artifact, scenario=edited)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "corrupt JSON"),
        ('{"format": "something-else"}', "is not a yieldstar-sim replay artifact"),
        ('{"format": "yieldstar-sim/replay", "version": 99}', "version 99 artifact"),
        ('{"format": "yieldstar-sim/replay", "version": 1}', "damaged replay artifact"),
        (
            '{"format": "yieldstar-sim/replay", "version": 1, "scenario": {"name": "x"}, '
            '"seed": 0, "schedule": [], "faults": [{"kind": "explode"}], "fingerprint": "x"}',
            "unknown fault kind 'explode'",
        ),
    ],
)
def test_a_bad_artifact_is_refused_with_its_reason(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ArtifactError, match=message):
        ys.replay(path)


def test_a_missing_artifact_is_refused() -> None:
    with pytest.raises(ArtifactError, match="no artifact file"):
        ys.replay("does/not/exist.json")


@pytest.mark.parametrize("runtime", ["memory", "duckdb"])
def test_a_run_can_be_queried_with_sql(runtime: str) -> None:
    run = ys.simulate(ys.load_scenario("trigger-in-step"), seed=0, runtime=runtime)
    assert run.sql("select count(*) from effects where name = 'courier.booked'") == [(2,)]
    assert run.sql(
        "select kind from trace_events where kind in ('fault', 'crash', 'restart') order by seq"
    ) == [("fault",), ("crash",), ("restart",)]
    assert run.sql("select workflow_id, status from executions order by seq") == [
        ("charge-order", "completed"),
        ("ship-order", "completed"),
        ("ship-order", "completed"),
    ]
    assert run.sql(
        "select execution_id, step_key, position, status from steps "
        "where execution_id = 'order-42' order by position"
    ) == [("order-42", "charge", 0, "completed"), ("order-42", "ship", 1, "completed")]
    assert run.sql("select count(*) from choices") == [(run.points,)]
