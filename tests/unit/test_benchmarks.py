"""The benchmarks still import and take ``--smoke``: a cheap guard in the normal test command.

CI runs every benchmark at its smallest (``make bench-smoke``, benchmarks/smoke.py); this only
imports each script and asks its argument parser for ``--help``, so that a benchmark an API
change broke at import time fails ``make test`` too, in a second or two.
"""

from __future__ import annotations

import doctest
import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Sequence

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"
SCRIPTS = sorted(path.stem for path in BENCHMARKS.glob("bench_*.py"))


@pytest.fixture
def benchmarks_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scripts import their helpers (``_harness`` ...) from their own folder."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))


def test_every_benchmark_is_found() -> None:
    assert len(SCRIPTS) >= 8, SCRIPTS


@pytest.mark.usefixtures("benchmarks_path")
@pytest.mark.parametrize("name", SCRIPTS)
def test_a_benchmark_imports_and_takes_smoke(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    module = importlib.import_module(name)
    with pytest.raises(SystemExit) as exited:
        module.main(["--help"])
    assert exited.value.code == 0
    assert "--smoke" in capsys.readouterr().out


@pytest.mark.usefixtures("benchmarks_path")
def test_the_smoke_run_runs_every_benchmark() -> None:
    smoke = importlib.import_module("smoke")
    assert sorted({script.removesuffix(".py") for script, *_ in smoke.RUNS}) == SCRIPTS


@pytest.mark.usefixtures("benchmarks_path")
def test_a_benchmark_that_crashes_fails_the_smoke_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    smoke = importlib.import_module("smoke")
    monkeypatch.setattr(smoke, "RUNS", (("bench_that_is_not_there.py",),))
    assert smoke.main() == 1
    assert "bench_that_is_not_there.py --smoke  FAILED (exit 2)" in capsys.readouterr().out


@pytest.mark.usefixtures("benchmarks_path")
def test_smoke_implies_quick_in_every_parser() -> None:
    harness = importlib.import_module("_harness")
    args = harness.parser("A benchmark.").parse_args(["--smoke"])
    assert (args.quick, args.smoke) == (True, True)
    assert harness.sizes(args) == ", smoke"


@pytest.mark.usefixtures("benchmarks_path")
def test_the_harness_docstring_examples() -> None:
    result = doctest.testmod(importlib.import_module("_harness"), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0


@pytest.mark.usefixtures("benchmarks_path")
def test_instructions_are_counted_for_the_key_section_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    explorer = importlib.import_module("bench_explorer")
    with pytest.raises(SystemExit) as exited:
        explorer.main(["--quick", "--instructions"])
    assert exited.value.code == 2
    assert "add --keys-only" in capsys.readouterr().err
    counter = importlib.import_module("_key_instructions")
    assert counter.MODES == ("plain", "after", "every", "whole")


@pytest.mark.usefixtures("benchmarks_path")
def test_the_key_instruction_children_run_every_mode(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The children ``--keys-only --instructions`` counts under valgrind run on this tree in
    every mode (the smoke run never counts instructions), and their counts make the table:
    here each child runs plainly, counted as 100 instructions a run plus 10 a keyed one."""
    counter = importlib.import_module("_key_instructions")
    ran: list[tuple[str, str]] = []

    def plainly(args: Sequence[str], *, pythonpath: str, cwd: str | None = None) -> int:
        workload, mode, runs = args[2], args[3], int(args[4])
        if runs:  # the child with no run (start-up, subtracted) is the same minus the loop
            subprocess.run(
                [sys.executable, *args], env=dict(os.environ, PYTHONPATH=pythonpath), cwd=cwd,
                check=True, capture_output=True,
            )  # fmt: skip
            ran.append((workload, mode))
        return 1_000 + runs * (100 if mode == "plain" else 110)

    monkeypatch.setattr(counter.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(counter, "count_instructions", plainly)
    assert counter.key_instructions(smoke=True) is True
    assert sorted(set(ran)) == sorted(("10", mode) for mode in counter.MODES)
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.strip().startswith("10 steps"))
    assert row.split()[2:] == ["1", "0.00M", "1.100x", "1.100x", "1.100x"]
    assert out.count("[PASS]") == 2


def _side(cpu: float) -> dict[str, object]:
    return {"seconds": cpu, "cpu": cpu, "schedules": 10, "states": None, "skipped": 0,
            "verdict": "ok", "rss_mb": 80.0}  # fmt: skip


@pytest.mark.usefixtures("benchmarks_path")
@pytest.mark.parametrize(("paired", "judged"), [(True, "1.050x"), (False, "1.091x")])
def test_the_rebuild_benchmark_judges_pairs_by_their_median_ratio(
    paired: bool, judged: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """In pairs, the sides' seconds drift together and each pair's ratio is what is judged; the
    ratio of the sides' medians would mix repetitions that met different loads."""
    rebuild = importlib.import_module("bench_rebuild")
    then, now = [100.0, 110.0, 130.0], [105.0, 120.0, 136.5]  # pairs 1.050, 1.091, 1.050
    found = {"case": {"then": [_side(s) for s in then], "now": [_side(s) for s in now]}}
    rebuild.report(found, "base", paired=paired)
    out = capsys.readouterr().out
    assert "1.050 1.091 1.050" in out  # each pair's ratio, in the table
    assert f"case: {judged} of base's CPU seconds" in out
