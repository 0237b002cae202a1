"""The poison-workflow pair at the command line: the workflow whose own code crashes its
worker on every attempt is found with no fault and with one, and its fix, a recovery limit
that dead-letters it, passes a one-fault systematic search."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "yieldstar_sim.cli"]


def explore(name: str, faults: int, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "explore", name, "--max-faults", str(faults), "--format", "json"],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("faults", [0, 1])
def test_the_poison_workflow_is_found_with_at_most_one_fault(faults: int, tmp_path: Path) -> None:
    result = explore("poison-workflow", faults, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "nothing is recovered without end: report-huge (render-report) was recovered" in (
        result.stdout
    )
    assert "still being recovered when the run was cut" in result.stdout


def test_the_poison_workflow_fixed_passes_a_one_fault_systematic_search(tmp_path: Path) -> None:
    result = explore("poison-workflow-fixed", 1, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "exhausted the bound" in result.stdout
