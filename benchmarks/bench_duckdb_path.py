"""The DuckDB path against an earlier revision, in one run: whole runs and searches, alternating.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_duckdb_path.py            # full run, a few minutes
    .venv/bin/python benchmarks/bench_duckdb_path.py --quick    # fewer repetitions
    .venv/bin/python benchmarks/bench_duckdb_path.py --smoke    # every section, tiny (CI)

The code at ``--baseline`` (default ``b9007de``, before issue 34) is unpacked with ``git archive``
into a temporary folder; every measurement runs in a fresh worker process on that code or on
this tree (``PYTHONPATH``), the two alternating, so both meet the same machine. A worker warms
up with one untimed call, then times ``--reps`` calls and prints their seconds; the tables quote
medians over every call of every worker, and now / then is the ratio of the medians.

* **duckdb run**: ``ys.simulate(durable-start, runtime="duckdb")``, the runtime left open as a
  user leaves it (``run.sql()`` can still query it); the run is dropped before the next.
* **duckdb explore**: ``ys.explore(durable-start, runtime="duckdb", confirm=None)``, a
  single-fault systematic search.
* **memory run**: ``ys.simulate(durable-start, runtime="memory")``.
* **postgres run**: as the DuckDB run, on ``YIELDSTAR_PG_DSN`` (left out without it).

Runs per second are 1 / the median run. Targets (issue 34; reported as PASS/MISS, never
asserted): a DuckDB run at most 0.4x and a DuckDB single-fault exploration at most 0.35x of the
baseline's, and ``run.sql("select * from executions")`` answering on this tree.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from _harness import footer, header, parser, progress, show, sizes, targets

if TYPE_CHECKING:
    from collections.abc import Sequence

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "b9007de"
MAX_RUN_RATIO = 0.4
MAX_EXPLORE_RATIO = 0.35

#: What a worker can time: the name, and how many calls a repetition count means for it.
MEASURES = ("duckdb run", "duckdb explore", "memory run", "postgres run")


def _worker(measure: str, reps: int) -> None:
    """Time ``reps`` calls of ``measure`` after one untimed warm-up; print their seconds."""
    import yieldstar_sim as ys

    scenario = ys.load_scenario("durable-start")
    runtime = measure.split(maxsplit=1)[0]

    def call() -> None:
        if measure.endswith("explore"):
            ys.explore(scenario, runtime=runtime, confirm=None)
        else:
            ys.simulate(scenario, 0, runtime=runtime)

    call()
    seconds = []
    for _ in range(reps):
        began = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - began)
    print(json.dumps(seconds))


def _answers_sql() -> bool:
    """Whether a DuckDB run of this tree still answers ``select * from executions``."""
    import yieldstar_sim as ys

    run = ys.simulate(ys.load_scenario("durable-start"), 0, runtime="duckdb")
    return len(run.sql("select * from executions")) == len(run.executions) > 0


def _time(code: Path, measure: str, reps: int) -> list[float]:
    """The seconds of a worker process on ``code`` (a tree holding ``yieldstar_sim``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), str(ROOT / "benchmarks")])}
    done = subprocess.run(
        [sys.executable, __file__, "--worker", measure, str(reps)],
        cwd=code, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    seconds: list[float] = json.loads(done.stdout.strip().splitlines()[-1])
    return seconds


def _unpack(revision: str, into: Path) -> Path:
    """The package and bundled scenarios at ``revision``, unpacked into ``into``."""
    archive = subprocess.run(
        ["git", "archive", revision, "yieldstar_sim", "scenarios"],
        cwd=ROOT, capture_output=True, check=True,
    )  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def main(argv: Sequence[str] | None = None) -> int:
    args_parser = parser(__doc__, reps="worker processes per measurement and side")
    args_parser.add_argument("--baseline", default=BASELINE, help="git revision to compare with")
    args_parser.add_argument("--calls", type=int, help="timed calls per worker")
    args_parser.add_argument("--worker", nargs=2, help="(internal) time MEASURE, CALLS times")
    args = args_parser.parse_args(argv)
    if args.worker:
        _worker(args.worker[0], int(args.worker[1]))
        return 0
    workers: int = args.reps or (1 if args.smoke else 2 if args.quick else 3)
    calls: int = args.calls or (1 if args.smoke else 5 if args.quick else 10)
    began = header(
        "DuckDB path",
        details=f"{workers} workers x {calls} calls per side, against {args.baseline}"
        + sizes(args),
    )
    measures = [m for m in MEASURES if m != "postgres run" or os.environ.get("YIELDSTAR_PG_DSN")]
    times: dict[str, dict[str, list[float]]] = {m: {"then": [], "now": []} for m in measures}
    with tempfile.TemporaryDirectory(prefix="ys-baseline-") as folder:
        then = _unpack(args.baseline, Path(folder))
        sides = {"then": then, "now": ROOT}
        for rep in range(workers):
            order = ("then", "now") if rep % 2 == 0 else ("now", "then")
            for measure in measures:
                # An exploration is ~70 runs: a few calls are as many samples as a run's ten.
                count = max(1, calls // 3) if measure.endswith("explore") else calls
                for side in order:
                    progress(f"{measure}: {side} ({rep + 1}/{workers})")
                    times[measure][side].extend(_time(sides[side], measure, count))
    print(f"\nNow against {args.baseline} (durable-start; medians, ms; runs per second)\n")
    rows = [["measure", f"at {args.baseline}", "now", "now / then", "per s then", "per s now"]]
    ratios: dict[str, float] = {}
    for measure, by in times.items():
        then_s, now_s = statistics.median(by["then"]), statistics.median(by["now"])
        ratios[measure] = now_s / then_s
        rows.append(
            [
                measure,
                f"{then_s * 1e3:.1f}",
                f"{now_s * 1e3:.1f}",
                f"{ratios[measure]:.2f}x",
                f"{1 / then_s:.1f}",
                f"{1 / now_s:.1f}",
            ]
        )
    show(rows, [False, True, True, True, True, True], "  ")
    targets(
        [
            (
                ratios["duckdb run"] <= MAX_RUN_RATIO,
                f"a DuckDB run at most {MAX_RUN_RATIO}x of {args.baseline}'s: "
                f"{ratios['duckdb run']:.2f}x",
            ),
            (
                ratios["duckdb explore"] <= MAX_EXPLORE_RATIO,
                f"a single-fault exploration on DuckDB at most {MAX_EXPLORE_RATIO}x: "
                f"{ratios['duckdb explore']:.2f}x",
            ),
            (_answers_sql(), 'run.sql("select * from executions") answers'),
        ]
    )
    footer(began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
