"""Every benchmark once, at its smallest (``--smoke``): what CI runs (``make bench-smoke``).

Run it from the repository root::

    MPLBACKEND=Agg .venv/bin/python benchmarks/smoke.py

A smoke run proves that every section of every benchmark still runs against today's API, not
how fast anything is: the sizes are the tiniest that reach every section, workload and target
line, with one repetition, and the figures mean nothing. Targets are printed, never judged; a
benchmark that crashes (an exception, a nonzero exit) fails the whole run, after the others
have run too. ``bench_postgres.py`` runs its PostgreSQL sections when ``YIELDSTAR_PG_DSN``
names a server (CI starts one) and says in one line that it skipped them otherwise;
``bench_baseline.py`` compares against ``HEAD`` (a clean clone always has it).

Each benchmark's output is shown as it runs, then one line per invocation with its seconds.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

RUNS: tuple[tuple[str, ...], ...] = (
    ("bench_runtime.py",),
    ("bench_duckdb_path.py", "--baseline", "HEAD"),
    ("bench_engine.py",),
    ("bench_simulation.py",),
    ("bench_explorer.py",),
    ("bench_explorer.py", "--only", "exhaustive"),
    ("bench_exhaustive.py",),
    ("bench_exhaustive.py", "--jobs", "2"),
    ("bench_exhaustive.py", "--memory"),
    ("bench_exhaustive.py", "--reductions"),
    ("bench_rebuild.py",),
    ("bench_reduction.py",),
    ("bench_cluster.py",),
    ("bench_views.py",),
    ("bench_stepper.py",),
    ("bench_postgres.py",),
    ("bench_baseline.py",),
    ("bench_baseline.py", "--views"),
    ("bench_baseline.py", "--jobs"),
)
"""Every invocation, each with ``--smoke`` added: every script, and the flags that run a
section its default run leaves out."""


def main() -> int:
    """Run every invocation of ``RUNS``; 1 if any failed, else 0."""
    began = time.perf_counter()
    times: list[tuple[str, float, int]] = []
    for script, *flags in RUNS:
        line = " ".join([script, "--smoke", *flags])
        print(f"\n==> {line}", flush=True)
        started = time.perf_counter()
        # check=False: a failure is counted and reported after every other benchmark ran.
        command = [sys.executable, str(HERE / script), "--smoke", *flags]
        status = subprocess.run(command, check=False).returncode
        times.append((line, time.perf_counter() - started, status))
    print("\nSmoke run of every benchmark (seconds; a crash fails it, a missed target does not)")
    for line, seconds, status in times:
        print(f"  {seconds:6.1f}  {line}{'' if status == 0 else f'  FAILED (exit {status})'}")
    failed = sum(status != 0 for _, _, status in times)
    print(f"  {time.perf_counter() - began:6.1f}  in all; {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
