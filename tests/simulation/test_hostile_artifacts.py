"""An artifact is data, a scenario file is code: replaying an artifact someone sends you never
runs a file outside its own folder, nor one whose bytes it cannot vouch for, and a damaged or
huge artifact is refused in one sentence."""

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


@pytest.mark.parametrize(
    ("where", "refusal"),
    [
        ("relative", "records no SHA-256 of it, so it is not run"),
        ("absolute", "by an absolute path, so it is not run"),
    ],
)
def test_an_artifact_without_a_hash_does_not_run_the_file_it_names(
    tmp_path: Path, where: str, refusal: str
) -> None:
    payload = tmp_path / "payload.py"
    payload.write_text(PAYLOAD)
    ref = "payload.py" if where == "relative" else str(payload)
    artifact = hostile_artifact(tmp_path, ref)
    with pytest.raises(ArtifactError, match=refusal):
        ys.replay(artifact)
    assert not (tmp_path / "PWNED").exists()


# A file already on the machine, with the hash it has: an artifact that names it by a path out
# of its folder, and records that hash, ran it on 4fcd271.
FOREIGN = Path(json.__file__).parent / "tool.py"


def _foreign_payload(folder: Path) -> tuple[Path, str]:
    """A payload outside ``folder`` (beside it), and the hash its bytes have."""
    outside = folder.parent / "elsewhere"
    outside.mkdir(exist_ok=True)
    payload = outside / "payload.py"
    payload.write_text(PAYLOAD)
    return payload, source_digest(payload.read_bytes())


@pytest.mark.parametrize("how", ["absolute", "dot-dot", "symlink", "symlinked folder"])
def test_an_artifact_never_runs_a_file_outside_its_folder_whatever_its_hash(
    tmp_path: Path, how: str
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    payload, digest = _foreign_payload(inbox)
    if how == "absolute":
        ref, words = str(payload), "by an absolute path"
    elif how == "dot-dot":
        ref, words = "../elsewhere/payload.py", "outside the artifact's folder"
    elif how == "symlink":
        (inbox / "shop.py").symlink_to(payload)
        ref, words = "shop.py", "through a symlink that leads out of the artifact's folder"
    else:
        (inbox / "scenarios").symlink_to(payload.parent, target_is_directory=True)
        ref, words = "scenarios/payload.py", "through a symlink that leads out"
    artifact = hostile_artifact(inbox, ref, digest)
    with pytest.raises(ArtifactError, match=f"{words}.*so it is not run.*--scenario FILE"):
        ys.replay(artifact)
    assert not (payload.parent / "PWNED").exists()
    assert not (inbox / "PWNED").exists()


def test_a_file_of_the_standard_library_with_its_own_hash_is_not_run(tmp_path: Path) -> None:
    digest = source_digest(FOREIGN.read_bytes())
    for ref in (str(FOREIGN), os.path.relpath(FOREIGN, tmp_path)):
        artifact = hostile_artifact(tmp_path, ref, digest)
        with pytest.raises(ArtifactError, match="so it is not run"):
            ys.replay(artifact)


def test_a_symlink_that_stays_inside_the_folder_is_followed(tmp_path: Path) -> None:
    inside = tmp_path / "inside"
    inside.mkdir()
    shutil.copy(bundled_scenarios()["trigger-in-step"], inside / "shop.py")
    run = ys.simulate(ys.load_scenario(inside / "shop.py"), seed=1, runtime="memory")
    saved = run.artifact().save(tmp_path / "shop.replay.json")
    (tmp_path / "link.py").symlink_to(inside / "shop.py")
    data = json.loads(saved.read_text())
    data["scenario"]["ref"] = "link.py"
    saved.write_text(json.dumps(data))
    assert ys.replay(saved).trace_digest() == run.trace_digest()


def test_an_artifact_whose_hash_does_not_match_does_not_run_the_file(tmp_path: Path) -> None:
    payload = tmp_path / "payload.py"
    payload.write_text(PAYLOAD)
    innocent = source_digest(b"scenario = None\n")
    artifact = hostile_artifact(tmp_path, "payload.py", innocent)
    with pytest.raises(ArtifactError, match="--scenario FILE"):
        ys.replay(artifact)
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize(
    ("ref", "refusal"),
    [
        ("/dev/zero", "by an absolute path"),
        (".", "cannot read the artifact's scenario file"),
        ("loop.py", "cannot read the artifact's scenario file"),
        ("nul\x00.py", "cannot read the artifact's scenario file"),
    ],
)
def test_an_artifact_naming_something_that_is_not_a_file_is_refused(
    tmp_path: Path, ref: str, refusal: str
) -> None:
    (tmp_path / "loop.py").symlink_to(tmp_path / "loop.py")
    artifact = hostile_artifact(tmp_path, ref, source_digest(b""))
    with pytest.raises(ArtifactError, match=refusal):
        ys.replay(artifact)


def test_an_artifact_replays_from_any_folder_beside_its_scenario_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = tmp_path / "made"
    (made / "scenarios").mkdir(parents=True)
    shutil.copy(bundled_scenarios()["trigger-in-step"], made / "scenarios" / "shop.py")
    monkeypatch.chdir(made)
    run = ys.simulate(ys.load_scenario("scenarios/shop.py"), seed=1, runtime="memory")
    saved = run.artifact().save(made / "shop.replay.json")
    data = json.loads(saved.read_text())
    assert data["scenario"]["ref"] == os.path.join("scenarios", "shop.py")  # from the artifact
    assert data["scenario"]["sha256"] == source_digest((made / "scenarios/shop.py").read_bytes())
    moved = tmp_path / "elsewhere"
    shutil.copytree(made, moved)
    shutil.rmtree(made)
    monkeypatch.chdir(tmp_path)
    again = ys.replay(moved / "shop.replay.json")
    assert again.trace_digest() == run.trace_digest()


def test_an_artifact_saved_apart_from_its_scenario_file_replays_with_the_file_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(bundled_scenarios()["trigger-in-step"], tmp_path / "shop.py")
    monkeypatch.chdir(tmp_path)
    run = ys.simulate(ys.load_scenario("shop.py"), seed=1, runtime="memory")
    (tmp_path / "out").mkdir()
    saved = run.artifact().save(tmp_path / "out" / "shop.replay.json")
    assert json.loads(saved.read_text())["scenario"]["ref"] == os.path.join("..", "shop.py")
    with pytest.raises(ArtifactError, match="outside the artifact's folder"):
        ys.replay(saved)
    again = ys.replay(saved, scenario=ys.load_scenario("shop.py"))
    assert again.trace_digest() == run.trace_digest()
    # Made in this process from the run, the artifact names the file that run loaded.
    assert ys.replay(run.artifact()).trace_digest() == run.trace_digest()


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


def test_the_replay_command_names_a_scenario_file_outside_the_artifacts_folder(
    tmp_path: Path,
) -> None:
    shutil.copy(bundled_scenarios()["trigger-in-step"], tmp_path / "shop.py")
    run = ys.simulate(ys.load_scenario(tmp_path / "shop.py"), seed=1, runtime="memory")
    artifact = run.artifact()
    beside = tmp_path / "shop.replay.json"
    assert artifact.replay_command(beside) == f"yieldstar-sim replay {beside}"
    apart = tmp_path / "out" / "shop.replay.json"
    assert artifact.replay_command(apart) == (
        f"yieldstar-sim replay {apart} --scenario {(tmp_path / 'shop.py').resolve()}"
    )
    bundled = ys.simulate(ys.load_scenario("trigger-in-step"), runtime="memory").artifact()
    assert bundled.replay_command(apart) == f"yieldstar-sim replay {apart}"
