"""Hostile input at the command line: every refusal is exit 2 and one line without a
traceback, nothing is written outside --out, and an artifact never runs code it names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "yieldstar_sim.cli"]

PAYLOAD = """
from pathlib import Path
Path(__file__).with_name("PWNED").write_text("the payload ran")
"""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def refused(result: subprocess.CompletedProcess[str], words: str) -> None:
    """Exit 2, one line on stderr naming the problem, no traceback."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("yieldstar-sim: error: "), lines
    assert words in lines[0], lines[0]
    assert "Traceback" not in result.stderr


def test_replaying_a_mailed_artifact_does_not_run_its_payload(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "payload.py").write_text(PAYLOAD)
    artifact = {
        "format": "yieldstar-sim/replay",
        "version": 1,
        "scenario": {"name": "shop", "ref": "payload.py"},
        "seed": 0,
        "runtime": "memory",
        "schedule": [],
        "faults": [],
        "fingerprint": "sha256:0",
    }
    (inbox / "mailed.replay.json").write_text(json.dumps(artifact))
    result = cli("replay", "inbox/mailed.replay.json", "--out", "out", cwd=tmp_path)
    refused(result, "--scenario FILE")
    assert not (inbox / "PWNED").exists()
    assert not (tmp_path / "PWNED").exists()


def test_replay_with_a_chosen_scenario_file(tmp_path: Path) -> None:
    from yieldstar_sim.simulation.scenario import bundled_scenarios

    (tmp_path / "shop.py").write_bytes(bundled_scenarios()["trigger-in-step"].read_bytes())
    made = cli("run", "shop.py", "--runtime", "memory", "--format", "json", "--json", cwd=tmp_path)
    assert made.returncode == 1, made.stderr  # the Problem: two couriers
    artifact = json.loads(made.stdout)["artifact"]
    (tmp_path / "shop.py").write_text((tmp_path / "shop.py").read_text() + "\n# edited\n")
    refused(cli("replay", artifact, "--format", "json", cwd=tmp_path), "changed since")
    (tmp_path / "trusted.py").write_bytes(bundled_scenarios()["trigger-in-step"].read_bytes())
    again = cli(
        "replay", artifact, "--scenario", "trusted.py", "--format", "json", "--quiet",
        cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 1, again.stderr
    assert "invariant violation" in again.stdout
