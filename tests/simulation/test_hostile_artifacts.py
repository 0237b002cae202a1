"""An artifact is data, a scenario file is code: replaying an artifact someone sends you never
runs a file whose bytes it cannot vouch for, and a damaged or huge artifact is refused in one
sentence."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import yieldstar_sim as ys
from yieldstar_sim.errors import ArtifactError
from yieldstar_sim.simulation.artifact import MAX_ARTIFACT_BYTES
from yieldstar_sim.simulation.scenario_files import bundled_scenarios, source_digest

PAYLOAD = """
from pathlib import Path
Path(__file__).with_name("PWNED").write_text("the payload ran")
"""


def hostile_artifact(folder: Path, ref: str, sha256: str | None = None) -> Path:
    """A well-formed artifact that names a payload file as its scenario."""
    scenario: dict[str, object] = {"name": "shop", "ref": ref}
    if sha256 is not None:
        scenario["sha256"] = sha256
    path = folder / "mailed.replay.json"
    path.write_text(
        json.dumps(
            {
                "format": "yieldstar-sim/replay",
                "version": 1,
                "scenario": scenario,
                "seed": 0,
                "runtime": "memory",
                "schedule": [],
                "faults": [],
                "fingerprint": "sha256:0",
                "trace_digest": "",
            }
        )
    )
    return path


@pytest.mark.parametrize("where", ["relative", "absolute"])
def test_an_artifact_without_a_hash_does_not_run_the_file_it_names(
    tmp_path: Path, where: str
) -> None:
    payload = tmp_path / "payload.py"
    payload.write_text(PAYLOAD)
    ref = "payload.py" if where == "relative" else str(payload)
    artifact = hostile_artifact(tmp_path, ref)
    with pytest.raises(ArtifactError, match="records no SHA-256 of it, so it is not run"):
        ys.replay(artifact)
    assert not (tmp_path / "PWNED").exists()


def test_an_artifact_whose_hash_does_not_match_does_not_run_the_file(tmp_path: Path) -> None:
    payload = tmp_path / "payload.py"
    payload.write_text(PAYLOAD)
    innocent = source_digest(b"scenario = None\n")
    artifact = hostile_artifact(tmp_path, "payload.py", innocent)
    with pytest.raises(ArtifactError, match="--scenario FILE"):
        ys.replay(artifact)
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("ref", ["/dev/zero", "."])
def test_an_artifact_naming_something_that_is_not_a_file_is_refused(
    tmp_path: Path, ref: str
) -> None:
    artifact = hostile_artifact(tmp_path, ref, source_digest(b""))
    with pytest.raises(ArtifactError, match="cannot read the artifact's scenario file"):
        ys.replay(artifact)


def test_an_artifact_replays_from_any_folder_beside_its_scenario_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = tmp_path / "made"
    made.mkdir()
    shutil.copy(bundled_scenarios()["trigger-in-step"], made / "shop.py")
    monkeypatch.chdir(made)
    run = ys.simulate(ys.load_scenario("shop.py"), seed=1, runtime="memory")
    (made / "artifacts").mkdir()
    saved = run.artifact().save(made / "artifacts" / "shop.replay.json")
    data = json.loads(saved.read_text())
    assert data["scenario"]["ref"] == os.path.join("..", "shop.py")  # relative to the artifact
    assert data["scenario"]["sha256"] == source_digest((made / "shop.py").read_bytes())
    moved = tmp_path / "elsewhere"
    shutil.copytree(made, moved)
    shutil.rmtree(made)
    monkeypatch.chdir(tmp_path)
    again = ys.replay(moved / "artifacts" / "shop.replay.json")
    assert again.trace_digest() == run.trace_digest()


def test_a_chosen_scenario_replays_an_artifact_whose_file_is_gone(tmp_path: Path) -> None:
    shop = tmp_path / "shop.py"
    shutil.copy(bundled_scenarios()["trigger-in-step"], shop)
    run = ys.simulate(ys.load_scenario(shop), seed=2, runtime="memory")
    artifact = run.artifact().save(tmp_path / "shop.replay.json")
    kept = shop.read_bytes()
    shop.unlink()
    with pytest.raises(ArtifactError, match="cannot read the artifact's scenario file"):
        ys.replay(artifact)
    mine = tmp_path / "mine.py"
    mine.write_bytes(kept)
    again = ys.replay(artifact, scenario=ys.load_scenario(mine))
    assert again.trace_digest() == run.trace_digest()


def test_load_scenario_with_a_hash_runs_only_matching_bytes(tmp_path: Path) -> None:
    payload = tmp_path / "payload.py"
    payload.write_text(PAYLOAD)
    with pytest.raises(ys.ScenarioError, match="not the one expected"):
        ys.load_scenario(payload, sha256=source_digest(b"other"))
    assert not (tmp_path / "PWNED").exists()


def test_an_artifact_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.replay.json"
    with path.open("wb") as file:
        file.truncate(MAX_ARTIFACT_BYTES + 1)  # sparse: no disk spent
    with pytest.raises(ArtifactError, match="larger than 16 MB, the limit for a replay"):
        ys.replay(path)


def test_a_deeply_nested_artifact_is_an_artifact_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.replay.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ArtifactError, match="nested too deeply"):
        ys.replay(path)
