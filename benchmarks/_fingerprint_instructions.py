"""``bench_explorer.py --fingerprints-only --instructions``: the ratios of both searches' state
keys in machine instructions, counted by valgrind's callgrind, where the timed ratios swing
with other sessions' load and with how warm the CPU's caches are.

Two workloads: one workflow of N ``step.run`` steps (N = 10, 100, 1,000), and 50 workflows of
4 steps (a state of many rows, of which a choice point changes one or two). Each runs:

- for the systematic search's fingerprints, the schedules of the timed section (a crash after
  the middle choice point; two crashes, after the points at a third and two thirds) plain, as
  the search runs them (keys after the last fault) and with every point fingerprinted;
- for the exhaustive search's state keys, one fault-free schedule plain and with a key at
  every choice point, the trace fed to the keys as the search's probe feeds it.

Each way is counted in two children, one with no run and one with ``runs``; the difference
divided by ``runs`` is the figure, so imports and set-up cancel. A key touches memory a plain
run does not: in a tight loop one costs about a third of what it costs inside a run, so the
timed ratio of a long run sits above this one.
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
from _explorer_kit import chain_scenario, wide_scenario
from _explorer_scaling import faulted_plan
from yieldstar_sim.simulation.explorer import plans
workload, mode, runs, faults = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[5])
scenario = wide_scenario(50, 4) if workload == "wide" else chain_scenario(int(workload))
if mode in ("free", "exhaustive"):
    from _exhaustive import _Keyed
    for _ in range(runs):
        simulator = plans._simulator(scenario, plans.Plan(0, 0), "memory", None)
        if mode == "exhaustive":
            _Keyed(simulator, whole=False)
        simulator.run()
        simulator.runtime.close()
    raise SystemExit
plan = faulted_plan(scenario, faults)
if mode == "every":
    plans.keys_from = lambda plan: 0  # every point, as a parent run
for _ in range(runs):
    plans.run_plan(scenario, plan, expand=mode != "plain")
"""

MODES = ("plain", "search", "every", "free", "exhaustive")
"""The systematic search's schedule plain, as the search runs it and fingerprinted at every
point; the fault-free schedule plain ("free") and with an exhaustive state key at every
point."""

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


def fingerprint_instructions(smoke: bool = False) -> bool:
    """Count and print the ratios (smoke: 10 steps, one run); returns whether every target is
    met, or True with a line saying why nothing was counted."""
    if shutil.which("valgrind") is None:
        print("fingerprint instructions: skipped (no valgrind; `apt-get install valgrind`)")
        return True
    sizes = {"10": 1} if smoke else {"10": 40, "100": 10, "1000": 2, "wide": 2}
    jobs: list[Job] = [(workload, mode, 1) for workload in sizes for mode in MODES]
    jobs += [(w, mode, 2) for w in sizes if w != "wide" for mode in ("plain", "search", "every")]
    # Two children at a time: each is one process counted on its own, so they do not interfere.
    with ThreadPoolExecutor(2) as pool:
        found = pool.map(lambda job: per_run(job, sizes[job[0]]), jobs)
        counts = dict(zip(jobs, found, strict=True))
    ratios: dict[str, list[float]] = {mode: [] for mode in ("search", "every", "exhaustive")}
    print("Fingerprints (the systematic search) in machine instructions per run (callgrind)")
    print(
        f"  {'workload':>12}  {'faults':>6}  {'plain':>9}  {'search/plain':>12}  "
        f"{'every/plain':>11}"
    )
    for faults in (1, 2):
        for workload in sizes:
            if (workload, "plain", faults) not in counts:
                continue
            plain = counts[(workload, "plain", faults)]
            for mode in ("search", "every"):
                ratios[mode].append(counts[(workload, mode, faults)] / plain)
            print(
                f"  {_name(workload):>12}  {faults:>6}  {plain / 1e6:8.2f}M  "
                f"{ratios['search'][-1]:11.3f}x  {ratios['every'][-1]:10.3f}x"
            )
    print("Exhaustive state keys, a key at every point of the fault-free run")
    print(f"  {'workload':>12}  {'plain':>9}  {'keys/plain':>10}")
    for workload in sizes:
        free = counts[(workload, "free", 1)]
        ratios["exhaustive"].append(counts[(workload, "exhaustive", 1)] / free)
        print(f"  {_name(workload):>12}  {free / 1e6:8.2f}M  {ratios['exhaustive'][-1]:9.3f}x")
    print()
    met = []
    for mode, what in (
        ("search", "a schedule as the systematic search runs it"),
        ("every", "every point fingerprinted"),
        ("exhaustive", "an exhaustive state key at every point"),
    ):
        ok = all(r <= MAX_FINGERPRINT_RATIO for r in ratios[mode])
        target(ok, f"in instructions, {what} at most {MAX_FINGERPRINT_RATIO}x a plain run, "
                   "every workload")  # fmt: skip
        met.append(ok)
    return all(met)
