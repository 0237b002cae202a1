"""``bench_explorer.py --fingerprints-only --instructions``: the fingerprint section's ratios in
machine instructions, counted by valgrind's callgrind, where the timed ratios swing with other
sessions' load and with how warm the CPU's caches are.

The same schedule as the timed section (one workflow of N ``step.run`` steps, a crash after
the middle choice point) runs three ways: plain, as the systematic search runs it (keys after
the fault) and with every point fingerprinted. Each way is counted in two children, one with
no run and one with ``runs``; the difference divided by ``runs`` is the figure, so imports and
set-up cancel. A key touches memory a plain run does not: in a tight loop one costs about a
third of what it costs inside a run, so the timed ratio of a long run sits above this one.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _explorer_scaling import MAX_FINGERPRINT_RATIO
from _harness import count_instructions, target

BENCHMARKS = Path(__file__).resolve().parent
ROOT = BENCHMARKS.parent

CHILD = """
import sys
sys.path.insert(0, sys.argv[4])
from _explorer_kit import chain_scenario, fault
from yieldstar_sim.simulation import FaultKind
from yieldstar_sim.simulation.explorer import plans
steps, mode, runs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
scenario = chain_scenario(steps)
base = plans.run_plan(scenario, plans.Plan(0, 0))
plan = plans.Plan(0, 0, (fault(FaultKind.CRASH_AFTER, base.points // 2, scenario),))
if mode == "every":
    plans.keys_from = lambda plan: 0  # every point, as a parent run
for _ in range(runs):
    plans.run_plan(scenario, plan, expand=mode != "plain")
"""

MODES = ("plain", "search", "every")


def _count(steps: int, mode: str, runs: int) -> int:
    found = count_instructions(
        ["-c", CHILD, str(steps), mode, str(runs), str(BENCHMARKS)], pythonpath=str(ROOT)
    )
    if found is None:
        raise RuntimeError("valgrind printed no instruction count")
    return found


def per_run(steps: int, mode: str, runs: int) -> float:
    """Instructions per run of the schedule of ``steps`` steps, fingerprinted as ``mode``."""
    return (_count(steps, mode, runs) - _count(steps, mode, 0)) / runs


def fingerprint_instructions(smoke: bool = False) -> bool:
    """Count and print the ratios (smoke: 10 steps, one run); returns whether both targets
    are met, or True with a line saying why nothing was counted."""
    if shutil.which("valgrind") is None:
        print("fingerprint instructions: skipped (no valgrind; `apt-get install valgrind`)")
        return True
    sizes = {10: 1} if smoke else {10: 40, 100: 10, 1000: 2}
    jobs = [(steps, mode) for steps in sizes for mode in MODES]
    # Two children at a time: each is one process counted on its own, so they do not interfere.
    with ThreadPoolExecutor(2) as pool:
        counts = dict(
            zip(jobs, pool.map(lambda job: per_run(*job, sizes[job[0]]), jobs), strict=True)
        )
    print("Fingerprints in machine instructions per run (callgrind), ratios to the plain run")
    print(f"  {'N':>5}  {'plain':>9}  {'search/plain':>12}  {'every/plain':>11}")
    ratios = {mode: [] for mode in MODES[1:]}  # type: dict[str, list[float]]
    for steps in sizes:
        plain = counts[(steps, "plain")]
        for mode in MODES[1:]:
            ratios[mode].append(counts[(steps, mode)] / plain)
        print(
            f"  {steps:>5,}  {plain / 1e6:8.2f}M  {ratios['search'][-1]:11.3f}x  "
            f"{ratios['every'][-1]:10.3f}x"
        )
    print()
    search = all(r <= MAX_FINGERPRINT_RATIO for r in ratios["search"])
    every = all(r <= MAX_FINGERPRINT_RATIO for r in ratios["every"])
    target(search, f"in instructions, a schedule as the search runs it at most "
                   f"{MAX_FINGERPRINT_RATIO}x a plain run at every length")  # fmt: skip
    target(every, f"in instructions, every point fingerprinted at most "
                  f"{MAX_FINGERPRINT_RATIO}x a plain run at every length")  # fmt: skip
    return search and every
