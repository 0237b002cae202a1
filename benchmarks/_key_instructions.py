"""``bench_explorer.py --keys-only --instructions``: the state keys' ratios of the key section
(``_explorer_scaling.py``) in machine instructions, counted by valgrind's callgrind, where the
timed ratios swing with other sessions' load and with how warm the CPU's caches are.

Two workloads: one workflow of N ``step.run`` steps (N = 10, 100, 1,000), and 50 workflows of
4 steps (a state of many rows, of which a choice point changes one or two). Each runs the
schedules of the timed section (no fault; a crash after the middle choice point; two crashes,
after the points at a third and two thirds) every way of ``_explorer_keys.MODES``: plain, with
a key after the last fault, at every point, and at every point read whole.

Each way is counted in two children, one with no run and one with ``runs``; the difference
divided by ``runs`` is the figure, so imports, set-up and finding the schedule cancel. A key
touches memory a plain run does not: in a tight loop one costs about a third of what it costs
inside a run, so the timed ratio of a long run sits above this one.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _explorer_keys import MODES
from _explorer_scaling import MAX_KEY_RATIO
from _harness import count_instructions, target

BENCHMARKS = Path(__file__).resolve().parent
ROOT = BENCHMARKS.parent

CHILD = """
import sys
sys.path.insert(0, sys.argv[4])
from _explorer_keys import keyed_run, schedule
from _explorer_kit import chain_scenario, wide_scenario
workload, mode, runs, faults = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[5])
scenario = wide_scenario(50, 4) if workload == "wide" else chain_scenario(int(workload))
plan = schedule(scenario, faults)
for _ in range(runs):
    keyed_run(scenario, plan, mode)
"""

Job = tuple[str, str, int]
"""A workload (a step count, or "wide"), a mode (``MODES``) and a number of faults."""


def _count(job: Job, runs: int) -> int:
    workload, mode, faults = job
    found = count_instructions(
        ["-c", CHILD, workload, mode, str(runs), str(BENCHMARKS), str(faults)],
        pythonpath=str(ROOT),
    )
    if found is None:
        raise RuntimeError("valgrind printed no instruction count")
    return found


def per_run(job: Job, runs: int) -> float:
    """Instructions per run of ``job``."""
    return (_count(job, runs) - _count(job, 0)) / runs


def _name(workload: str) -> str:
    return "50 x 4 steps" if workload == "wide" else f"{int(workload):,} steps"


def key_instructions(smoke: bool = False) -> bool:
    """Count and print the ratios (smoke: 10 steps, one fault, one run); returns whether every
    target is met, or True with a line saying why nothing was counted."""
    if shutil.which("valgrind") is None:
        print("key instructions: skipped (no valgrind; `apt-get install valgrind`)")
        return True
    sizes = {"10": 1} if smoke else {"10": 40, "100": 10, "1000": 2, "wide": 2}
    fault_counts = (1,) if smoke else (0, 1, 2)
    jobs: list[Job] = [(w, mode, k) for k in fault_counts for w in sizes for mode in MODES]
    # Two children at a time: each is one process counted on its own, so they do not interfere.
    with ThreadPoolExecutor(2) as pool:
        found = pool.map(lambda job: per_run(job, sizes[job[0]]), jobs)
        counts = dict(zip(jobs, found, strict=True))
    ratios: dict[str, list[float]] = {mode: [] for mode in MODES[1:]}
    print("State keys in machine instructions per run (callgrind), ratios to the plain run")
    print(
        f"  {'workload':>12}  {'faults':>6}  {'plain':>9}  {'after/plain':>11}  "
        f"{'every/plain':>11}  {'whole/plain':>11}"
    )
    for faults in fault_counts:
        for workload in sizes:
            plain = counts[(workload, "plain", faults)]
            for mode in MODES[1:]:
                ratios[mode].append(counts[(workload, mode, faults)] / plain)
            print(
                f"  {_name(workload):>12}  {faults:>6}  {plain / 1e6:8.2f}M  "
                f"{ratios['after'][-1]:10.3f}x  {ratios['every'][-1]:10.3f}x  "
                f"{ratios['whole'][-1]:10.3f}x"
            )
    print()
    met = []
    for mode, what in (
        ("after", "a schedule keyed as the systematic search keys it"),
        ("every", "a key at every point"),
    ):
        ok = all(r <= MAX_KEY_RATIO for r in ratios[mode])
        target(ok, f"in instructions, {what} at most {MAX_KEY_RATIO}x a plain run, "
                   "every workload")  # fmt: skip
        met.append(ok)
    return all(met)
