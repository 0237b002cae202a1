"""The continue-as-new-event pair at the command line, by the scenario files' paths: the
engine that binds an instance's event to the run current when it is sent is found with one
fault, and the fix passes a one-fault systematic search and a one-fault exhaustive one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "yieldstar_sim.cli"]
SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def explore(file: str, *options: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "explore", str(SCENARIOS / file), "--max-faults", "1", *options],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_an_event_lost_to_a_continue_as_new_is_found_with_one_fault(tmp_path: Path) -> None:
    result = explore("continue_as_new_event.py", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "every accepted event is consumed or reported: event 'add' (add-2)" in result.stdout
    assert "continued as new" in result.stdout


def test_the_fix_passes_one_fault_systematic_and_exhaustive_searches(tmp_path: Path) -> None:
    systematic = explore("continue_as_new_event_fixed.py", cwd=tmp_path)
    assert systematic.returncode == 0, systematic.stdout + systematic.stderr
    assert "exhausted the bound" in systematic.stdout
    exhaustive = explore("continue_as_new_event_fixed.py", "--strategy", "exhaustive", cwd=tmp_path)
    assert exhaustive.returncode == 0, exhaustive.stdout + exhaustive.stderr
    assert "verified:" in exhaustive.stdout
