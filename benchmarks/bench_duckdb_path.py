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

With ``--speed-issue``, instead: the figures of the speed issue (issue 18) that issue 34 names,
against its baseline ``a4d8c19`` by default, with its targets: the DuckDB run (at most 0.8x)
and the memory run (0.6x) as above, and

* **chain-300 explore**: ``ys.explore`` of one 300-step workflow on memory, single fault,
  ``confirm=None`` (the whole bound, about 1,800 schedules; one call per worker), at most 0.6x;
* **fan-out-100 png**: a finished 100-execution fan-out run on memory (a parent starting 99
  children, as ``bench_views.py`` makes it) drawn with every execution its own box
  (``draw_run``, ``group=False`` where the code has grouping) and saved as PNG at 100 dpi, at
  most 0.5x.
* **fan-out-100 png, as drawn**: the same run drawn as each revision draws it by default
  (``draw_run(run)``: every execution its own box at the baseline, a family of alike siblings
  one box now) and saved alike: what a user waits for, against the same 0.5x.

The workers build these scenarios themselves, with only what both revisions' public API has.
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
from typing import TYPE_CHECKING, Any

from _harness import footer, header, parser, progress, show, sizes, targets

if TYPE_CHECKING:
    from collections.abc import Generator, Sequence

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "b9007de"
MAX_RUN_RATIO = 0.4
MAX_EXPLORE_RATIO = 0.35

#: What a worker can time: the name, and how many calls a repetition count means for it.
MEASURES = ("duckdb run", "duckdb explore", "memory run", "postgres run")
#: ``--speed-issue``: the speed issue's figures that issue 34 names, its baseline and targets.
SPEED_MEASURES = (
    "duckdb run", "memory run", "chain-300 explore", "fan-out-100 png",
    "fan-out-100 png, as drawn",
)  # fmt: skip
SPEED_BASELINE = "a4d8c19"
SPEED_TARGETS = {"duckdb run": 0.8, "memory run": 0.6, "chain-300 explore": 0.6,
                 "fan-out-100 png": 0.5, "fan-out-100 png, as drawn": 0.5}  # fmt: skip
#: Measures of which one call is already many runs: a few calls are as many samples.
HEAVY = {"duckdb explore": 3, "chain-300 explore": 10}


def _chain(steps: int) -> object:
    """One workflow of ``steps`` ``step.run`` steps, one trigger, 2 workers."""
    import yieldstar_sim as ys

    @ys.workflow("chain")
    def chain(step: ys.StepRunner, params: object) -> Generator[Any, Any, int]:
        total = 0
        for i in range(steps):
            total += yield from step.run(f"s{i}", lambda i=i: i)
        return total

    trigger = ys.Trigger("chain", {"steps": steps}, execution_id="chain-1")
    return ys.Scenario(
        name=f"chain-{steps}", workflows=[chain], triggers=[trigger], workers=2,
        max_points=100 * steps + 1_000,
    )  # fmt: skip


def _fan_out(executions: int) -> object:
    """A parent that starts ``executions - 1`` children, on 2 workers (``bench_views.py``)."""
    import yieldstar_sim as ys

    @ys.workflow("child")
    def child(step: ys.StepRunner, params: dict[str, int]) -> Generator[Any, Any, Any]:
        index = params["i"]
        value = yield from step.run("work", lambda: index)
        return value

    @ys.workflow("fan-out")
    def fan_out(step: ys.StepRunner, params: dict[str, int]) -> Generator[Any, Any, Any]:
        for i in range(params["children"]):
            yield from step.start(f"child-{i}", "child", {"i": i})
        return {"children": params["children"]}

    trigger = ys.Trigger("fan-out", {"children": executions - 1}, execution_id="parent")
    return ys.Scenario(
        name=f"fan-out-{executions}", workflows=[fan_out, child], triggers=[trigger],
        workers=2, max_points=20 * executions + 1_000,
    )  # fmt: skip


def _worker(measure: str, reps: int) -> None:
    """Time ``reps`` calls of ``measure`` after one untimed warm-up; print their seconds."""
    import yieldstar_sim as ys

    scenario = ys.load_scenario("durable-start")
    runtime = measure.split(maxsplit=1)[0]

    def call() -> None:
        if measure == "chain-300 explore":
            ys.explore(chain, confirm=None)  # type: ignore[arg-type]
        elif measure.startswith("fan-out-100 png"):
            figure = draw_run(run, **options)
            figure.savefig(io.BytesIO(), format="png", dpi=100)
            pyplot.close(figure)
        elif measure.endswith("explore"):
            ys.explore(scenario, runtime=runtime, confirm=None)
        else:
            ys.simulate(scenario, 0, runtime=runtime)

    if measure == "chain-300 explore":
        chain = _chain(300)
    elif measure.startswith("fan-out-100 png"):
        import inspect
        import io

        from matplotlib import pyplot

        from yieldstar_sim.views.figures import draw_run

        run = ys.simulate(_fan_out(100), seed=0, runtime="memory")  # type: ignore[arg-type]
        # At a4d8c19 every execution had its own box; since then group=False asks for that.
        grouping = "group" in inspect.signature(draw_run).parameters
        as_drawn = measure.endswith("as drawn")
        options = {"group": False} if grouping and not as_drawn else {}

    if measure != "chain-300 explore":  # a call of tens of seconds needs no warm-up
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
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(code), str(ROOT / "benchmarks")]),
        "MPLBACKEND": "Agg",
    }
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
    args_parser.add_argument(
        "--baseline", help=f"git revision to compare with ({BASELINE}; {SPEED_BASELINE} with "
        "--speed-issue)"
    )  # fmt: skip
    args_parser.add_argument(
        "--speed-issue", action="store_true",
        help=f"the speed issue's figures against {SPEED_BASELINE} instead",
    )  # fmt: skip
    args_parser.add_argument("--calls", type=int, help="timed calls per worker")
    args_parser.add_argument(
        "--only", action="append", metavar="MEASURE",
        help="time only this measure (repeatable); its target is reported alone",
    )  # fmt: skip
    args_parser.add_argument("--worker", nargs=2, help="(internal) time MEASURE, CALLS times")
    args = args_parser.parse_args(argv)
    if args.worker:
        _worker(args.worker[0], int(args.worker[1]))
        return 0
    args.baseline = args.baseline or (SPEED_BASELINE if args.speed_issue else BASELINE)
    workers: int = args.reps or (1 if args.smoke else 2 if args.quick else 3)
    calls: int = args.calls or (1 if args.smoke else 5 if args.quick else 10)
    began = header(
        "DuckDB path",
        details=f"{workers} workers x {calls} calls per side, against {args.baseline}"
        + sizes(args),
    )
    measures = (
        list(SPEED_MEASURES)
        if args.speed_issue
        else [m for m in MEASURES if m != "postgres run" or os.environ.get("YIELDSTAR_PG_DSN")]
    )
    if args.only:
        unknown = sorted(set(args.only) - set(measures))
        if unknown:
            args_parser.error(f"no measure {unknown[0]!r} here; one of {', '.join(measures)}")
        measures = [m for m in measures if m in args.only]
    times: dict[str, dict[str, list[float]]] = {m: {"then": [], "now": []} for m in measures}
    with tempfile.TemporaryDirectory(prefix="ys-baseline-") as folder:
        then = _unpack(args.baseline, Path(folder))
        sides = {"then": then, "now": ROOT}
        for rep in range(workers):
            order = ("then", "now") if rep % 2 == 0 else ("now", "then")
            for measure in measures:
                # An exploration is ~70 runs: a few calls are as many samples as a run's ten.
                count = max(1, calls // HEAVY.get(measure, 1))
                for side in order:
                    progress(f"{measure}: {side} ({rep + 1}/{workers})")
                    times[measure][side].extend(_time(sides[side], measure, count))
    what = "medians, ms" if args.speed_issue else "durable-start; medians, ms"
    print(f"\nNow against {args.baseline} ({what}; runs per second)\n")
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
    if args.speed_issue:
        targets(
            [
                (ratios[m] <= most, f"{m}: at most {most}x of {args.baseline}'s: {ratios[m]:.2f}x")
                for m, most in SPEED_TARGETS.items()
                if m in ratios
            ]
        )
        footer(began)
        return 0
    if args.only:
        footer(began)  # the targets below need every measure
        return 0
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
