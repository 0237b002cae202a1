"""bench_explorer's memory section: a 10,000-schedule exploration of ``durable-start``
(random strategy, ``max_faults=2``; and systematic, ``max_faults=3``) in a fresh child process
(``bench_explorer.py --memory-child``), sampled every 1,000 schedules (``--quick``: 800
schedules, every 200) through the ``progress`` callback: peak RSS (``ru_maxrss``) and resident
memory now (``/proc/self/statm``; the peak alone hides growth below the peak the imports left)
in one child, and the traced Python heap (``tracemalloc`` current and peak) in another.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _harness import show

import yieldstar_sim as ys

if TYPE_CHECKING:
    from collections.abc import Sequence

MAX_PEAK_MB = 300.0
MAX_GROWTH = 1.25
SCRIPT = Path(__file__).with_name("bench_explorer.py")
"""The script whose hidden ``--memory-child`` flag runs ``memory_child``."""


def resident_mb() -> float:
    """Resident memory now, in MB (Linux ``/proc/self/statm``; else the peak)."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def memory_child(strategy: str, budget: int, every: int, trace: bool) -> None:
    """In a fresh process: explore, sampling memory every ``every`` schedules; print JSON."""
    scenario = ys.load_scenario("durable-start")
    options: dict[str, Any] = (
        {"strategy": "random", "max_faults": 2}
        if strategy == "random"
        else {"strategy": "systematic", "max_faults": 3}
    )
    samples: list[dict[str, float]] = []

    def sample(count: int) -> None:
        if count % every:
            return
        point: dict[str, float] = {
            "schedules": count,
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "now_mb": resident_mb(),
        }
        if trace:
            current, peak = tracemalloc.get_traced_memory()
            point.update(current_mb=current / 2**20, peak_mb=peak / 2**20)
        samples.append(point)

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    resident = resident_mb()
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    report = ys.explore(
        scenario, budget=budget, stop_at_first=False, confirm=None, progress=sample, **options
    )
    print(
        json.dumps(
            {
                "before_mb": before,
                "resident_mb": resident,
                "seconds": time.perf_counter() - start,
                "schedules": report.schedules_run,
                "samples": samples,
            }
        )
    )


@dataclass
class MemoryRun:
    strategy: str
    rss: dict[str, Any]
    traced: dict[str, Any]

    @property
    def peak(self) -> float:
        """Peak RSS over the whole child, in MB."""
        return float(max(s["rss_mb"] for s in self.rss["samples"]))

    @property
    def flatness(self) -> float:
        """Resident memory after the last sample over resident memory after the first."""
        samples = self.rss["samples"]
        return float(samples[-1]["now_mb"] / samples[0]["now_mb"])

    @property
    def per_schedule(self) -> float:
        """Bytes the traced heap grows per schedule, first sample to last."""
        first, last = self.traced["samples"][0], self.traced["samples"][-1]
        grown = (last["current_mb"] - first["current_mb"]) * 2**20
        return float(grown / (last["schedules"] - first["schedules"]))

    @property
    def ok(self) -> bool:
        return self.peak < MAX_PEAK_MB and self.flatness <= MAX_GROWTH


def run_child(strategy: str, budget: int, every: int, *, trace: bool) -> dict[str, Any]:
    command = [sys.executable, str(SCRIPT), "--memory-child", strategy, str(budget), str(every)]
    if trace:
        command.append("--trace")
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return data


def print_memory(runs: Sequence[MemoryRun], budget: int, every: int) -> bool:
    print(
        f"\nMemory over a {budget:,}-schedule exploration of durable-start, fresh process each, "
        f"sampled every {every:,} schedules"
    )
    ok = True
    for run in runs:
        label = "random, max_faults=2" if run.strategy == "random" else "systematic, max_faults=3"
        print(
            f"  {label}: {run.rss['schedules']:,} schedules in {run.rss['seconds']:.1f} s "
            f"({run.traced['seconds']:.1f} s under tracemalloc); before exploring: peak RSS "
            f"{run.rss['before_mb']:.1f} MB, resident {run.rss['resident_mb']:.1f} MB"
        )
        rows = [["schedules", "peak RSS MB", "RSS now MB", "traced now MB", "traced peak MB"]]
        for rss, traced in zip(run.rss["samples"], run.traced["samples"], strict=True):
            rows.append(
                [
                    f"{rss['schedules']:,}",
                    f"{rss['rss_mb']:.1f}",
                    f"{rss['now_mb']:.1f}",
                    f"{traced['current_mb']:.2f}",
                    f"{traced['peak_mb']:.2f}",
                ]
            )
        show(rows, [True] * 5, "    ")
        print(
            f"    resident after {budget:,} / after {every:,}: {run.flatness:.3f}x; the traced "
            f"heap grows {run.per_schedule:,.0f} bytes per schedule (the plans and outcomes the "
            f"search keeps), about {run.per_schedule * 1e6 / 2**30:.1f} GB per million schedules"
        )
        ok = ok and run.ok
    return ok
