"""A fix checked against the failure it fixes: an artifact's schedule and faults replayed against
code edited since. Before, ``ys.replay(artifact, scenario=fixed)`` and ``replay ARTIFACT
--scenario FILE`` refused ("the code of scenario ... changed since the artifact was made ...
explore again"), naming the edited scenario as the artifact's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation import ReplayArtifact
from yieldstar_sim.simulation.artifact import MAX_TRACE_EVENTS

SAGA = """
import yieldstar_sim as ys


@ys.workflow("payment")
def payment(step, params):
    order = params["order"]
    yield from step.run(
        "charge", lambda: step.world.effect("card.charged", order=order{key})
    )
    yield from step.run("reserve", lambda: step.world.effect("stock.reserved", order=order))
    return "done"


scenario = ys.Scenario(
    name="{name}",
    workflows=[payment],
    triggers=[ys.Trigger("payment", {{"order": 7}}, execution_id="pay-7")],
    invariants=[ys.at_most_once("card.charged", by="order")],
)
"""
KEY = ', idempotency_key=f"charge-{order}"'


def saga(folder: Path, name: str, *, key: str = "", step: str = "charge") -> Path:
    source = SAGA.format(name=name, key=key).replace('"charge", lambda', f'"{step}", lambda')
    path = folder / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    return path


@pytest.fixture
def found(tmp_path: Path) -> ReplayArtifact:
    """The saga's double charge, found by the explorer and saved beside its scenario file (an
    artifact replays its file alone only from its own folder), as a user gets it."""
    report = ys.explore(
        ys.load_scenario(saga(tmp_path, "payment-saga")), max_faults=1, confirm=None,
        out=tmp_path,
    )  # fmt: skip
    (violation,) = report.violations
    assert violation.artifact_path is not None
    return ReplayArtifact.load(violation.artifact_path)


def test_a_fix_replayed_against_the_failing_schedule_says_the_violation_is_gone(
    found: ReplayArtifact, tmp_path: Path
) -> None:
    fixed = ys.load_scenario(saga(tmp_path, "payment-saga-fixed", key=KEY))
    run = ys.replay(found, scenario=fixed)
    assert run.verdict == "ok", run.explain()
    regression = run.regression
    assert regression is not None
    assert regression.fixed
    assert regression.gone == ("at_most_once(card.charged, by=order)",)
    assert (regression.still, regression.new, regression.unfired) == ((), (), ())
    # Where the edited code first did something else: the charge now carries its key.
    assert regression.parted_at is not None
    parted = run.trace.events[regression.parted_at]
    assert (parted.kind, parted.step_key) == ("effect", "charge")
    assert 'whose idempotency_key was null, is "charge-7"' in regression.parting
    assert run.explain().splitlines()[:3] == [
        "the recorded run of 'payment-saga' replayed against scenario 'payment-saga-fixed':",
        f"  {regression.parting}",
        "  the violation is gone: at_most_once(card.charged, by=order) held",
    ]
    # The crash fired at the call it was recorded at, and its body ran again: one charge.
    # (Point #1 is the charge's effect landing: a body's calls to the world are points.)
    assert [f.describe() for f in run.faults] == [
        "crash before choice point #2 (w2 put_step pay-7/charge)"
    ]
    assert len(run.effects_named("card.charged")) == 2  # made twice, counted once by its key


def test_an_edit_that_does_not_fix_it_says_the_violation_is_still_there(
    found: ReplayArtifact, tmp_path: Path
) -> None:
    edited = saga(tmp_path, "payment-saga-edited")
    edited.write_text(edited.read_text() + "\n# a comment changes nothing\n", encoding="utf-8")
    source = edited.read_text().replace('"reserve"', '"reserve-stock"')
    edited.write_text(source, encoding="utf-8")
    run = ys.replay(found, scenario=ys.load_scenario(edited))
    assert run.verdict == "violated"
    assert run.regression is not None
    assert not run.regression.fixed
    assert run.regression.still == ("at_most_once(card.charged, by=order)",)
    assert "the violation is still there: at_most_once(card.charged, by=order)" in run.explain()


def test_a_fix_that_removes_the_faults_call_tested_nothing_and_says_so(
    found: ReplayArtifact, tmp_path: Path
) -> None:
    renamed = ys.load_scenario(saga(tmp_path, "payment-saga-renamed", step="pay"))
    run = ys.replay(found, scenario=renamed)
    assert run.regression is not None
    assert run.regression.unfired == ("crash before w2's put_step of step charge in pay-7",)
    assert not run.regression.fixed
    assert run.verdict == "incomplete"  # never ok: the schedule did not test the fix
    assert (
        run.incomplete == "1 recorded fault(s) no longer fire, so the replay did not test the fix"
    )


def test_the_same_code_replays_exactly_as_before(found: ReplayArtifact) -> None:
    run = ys.replay(found)
    assert run.regression is None
    assert run.trace_digest() == found.trace_digest
    assert run.verdict == "violated"


def test_an_artifact_keeps_the_recorded_trace_within_its_bound(
    found: ReplayArtifact, tmp_path: Path
) -> None:
    assert found.trace is not None
    assert [event.facts() for event in found.trace] == [
        event.facts() for event in ys.replay(found).trace
    ]
    long = ys.simulate(ys.load_scenario(Path(__file__).parents[1] / "scenarios" / "verdicts"
                                        / "loop_steps.py"), runtime="memory")  # fmt: skip
    assert len(long.trace) <= MAX_TRACE_EVENTS  # 300 points: kept
    data = json.loads(json.dumps(long.artifact().to_json()))
    assert len(data["trace"]) == len(long.trace)
    del data["trace"]  # an artifact saved before artifacts kept their trace
    old = ReplayArtifact.from_json(data)
    assert old.trace is None


def test_an_artifact_without_a_trace_still_says_whether_the_violation_is_gone(
    found: ReplayArtifact, tmp_path: Path
) -> None:
    data = found.to_json(folder=tmp_path / "exp")
    del data["trace"]
    old = ReplayArtifact.from_json(data, folder=tmp_path / "exp")
    fixed = ys.load_scenario(saga(tmp_path, "payment-saga-fixed", key=KEY))
    run = ys.replay(old, scenario=fixed)
    assert run.regression is not None
    assert run.regression.fixed
    assert run.regression.parted_at is None
    assert "kept no trace of the recorded run" in run.regression.parting


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "yieldstar_sim.cli", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_the_cli_replays_an_artifact_against_the_file_as_fixed(tmp_path: Path) -> None:
    """As a user does it: explore, edit the scenario file, replay the artifact against it."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    path = saga(project, "payment-saga")
    explored = cli("explore", str(path), "--no-confirm", "--out", "exp", "--format", "json",
                   "--quiet", cwd=elsewhere)  # fmt: skip
    assert explored.returncode == 1, explored.stderr
    artifact = "exp/payment-saga-violation-1.replay.json"
    path.write_text(SAGA.format(name="payment-saga", key=KEY), encoding="utf-8")  # the fix
    refused = cli("replay", artifact, "--format", "json", cwd=elsewhere)
    assert refused.returncode == 2
    assert "replay with it: `yieldstar-sim replay ARTIFACT --scenario FILE`" in refused.stderr
    replayed = cli("replay", artifact, "--scenario", str(path), "--format", "json", "--quiet",
                   cwd=elsewhere)  # fmt: skip
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    lines = replayed.stdout.splitlines()
    assert lines[0] == "the recorded run of 'payment-saga' replayed against its code as it is now:"
    assert lines[1].startswith("  the run leaves the recorded one at event #")
    assert lines[2] == "  the violation is gone: at_most_once(card.charged, by=order) held"
    as_json = ("replay", artifact, "--scenario", str(path), "--format", "json", "--json")
    report = json.loads(cli(*as_json, cwd=elsewhere).stdout)
    assert report["regression"]["fixed"] is True
    assert report["regression"]["gone"] == ["at_most_once(card.charged, by=order)"]
