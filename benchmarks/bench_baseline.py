"""A whole memory run against the same run at another git revision (default: ``main``).

Run it from the repository root::

    .venv/bin/python benchmarks/bench_baseline.py --quick
    .venv/bin/python benchmarks/bench_baseline.py --smoke    # against HEAD, once (CI)
    .venv/bin/python benchmarks/bench_baseline.py --baseline b7db4fa --scenario durable-start

The baseline's ``yieldstar_sim`` package is unpacked with ``git archive`` into a temporary
directory; each side is timed in its own child process (one per repetition, the two sides
alternating so load on a shared machine falls on both), ``simulate(scenario, 0,
runtime="memory")`` as a user calls it (its default wall-clock limit armed), then with
``timeout=None`` (no limit, as ``bench_runtime.py`` times it), in batches after a warm-up run,
in wall-clock seconds. The figures are the ratios of the medians and of the minima (the
minimum is the figure least touched by other sessions' load), now / baseline; the target is
at most 0.6x.

With ``--instructions``, instead: machine instructions per run (``timeout=None``), each side
counted by valgrind's callgrind (a child with no run and one with 100, the difference divided
out): a deterministic ratio where the timed one swings with other sessions' load (on a quiet
machine the two agree to about 0.01). Needs ``valgrind`` (skipped, in a line, without it).

With ``--views``, instead: ``draw_run(run, group=False)`` + ``savefig(png, dpi=100)`` of
``bench_views.py``'s 100-execution fan-out (every execution its own box: a 4320 x 2300 picture;
``bench_views.py`` draws the grouped one), medians of 3 after a warm-up, against the 1 s target.

With ``--jobs``, instead: ``explore(durable-start, max_faults=2)`` with ``jobs=1`` and
``jobs=2`` (alternating, 3 repetitions), beside the CPU ceiling of the moment: two forked
processes of pure-Python arithmetic against one (``bench_explorer.py``'s parallel section
measures the same, but its ``--quick`` run stops earlier, at a stall fault its throughput
section places where no step elapses); then the command a user types, end to end:
``yieldstar-sim explore durable-start --max-faults 2 --jobs N --json`` in a child process
(imports, the search, the DuckDB confirmation, the grid picture), ``--jobs 1`` and ``--jobs 2``
alternating (5 repetitions; 3 with ``--quick``), each pair between two measures of the CPU
ceiling (their mean is the pair's), and the two commands' answers compared (the report, the
artifacts' and the grid picture's bytes). The target: ``--jobs 2`` at least 1.7x ``--jobs 1``,
or at least 0.9 of the ceiling measured in the same run. ``--cli`` measures the command only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING

from _harness import add_smoke, count_instructions

if TYPE_CHECKING:
    from collections.abc import Sequence

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ("durable-start", "cancel-owner", "retry-backoff")
MAX_RATIO = 0.6
#: ``--jobs 2`` end to end against ``--jobs 1``: this speed-up, or this share of the CPU ceiling.
MIN_SPEEDUP, MIN_OF_CEILING = 1.7, 0.9

CHILD = """
import gc, inspect, json, sys, time
import yieldstar_sim as ys
names, batch = json.loads(sys.argv[1]), int(sys.argv[2])
# A revision without the wall-clock limit (a4d8c19) runs unlimited either way.
limited = "timeout" in inspect.signature(ys.simulate).parameters
out = {}
for name in names:
    scenario = ys.load_scenario(name)
    unlimited = {"timeout": None} if limited else {}
    for mode, options in (("as called", {}), ("timeout=None", unlimited)):
        ys.simulate(scenario, 0, runtime="memory", **options)
        gc.collect()
        start = time.perf_counter()
        for _ in range(batch):
            ys.simulate(scenario, 0, runtime="memory", **options)
        out[f"{name}, {mode}"] = (time.perf_counter() - start) / batch
print(json.dumps(out))
"""


def unpack(revision: str, into: Path) -> None:
    """The package and its bundled scenarios as they are at ``revision``, under ``into``: before
    the scenarios moved into the package, ``load_scenario`` looked for them beside it."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision, "yieldstar_sim", "scenarios"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout  # fmt: skip
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")


def time_side(path: Path, names: Sequence[str], batch: int) -> dict[str, float]:
    """Seconds per run of each scenario, in a child importing the package from ``path``."""
    env = dict(os.environ, PYTHONPATH=str(path))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(list(names)), str(batch)],
        cwd=path, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    result: dict[str, float] = json.loads(done.stdout)
    return result


# A revision older than the wall-clock limit (a4d8c19, the speed issue's baseline) has no
# ``timeout`` to turn off, and runs without one.
COUNTED = """
import inspect, sys
import yieldstar_sim as ys
unlimited = {"timeout": None} if "timeout" in inspect.signature(ys.simulate).parameters else {}
for name in sys.argv[2:]:
    scenario = ys.load_scenario(name)
    for _ in range(int(sys.argv[1])):
        ys.simulate(scenario, 0, runtime="memory", **unlimited)
"""


def count_side(path: Path, name: str, runs: int) -> int | None:
    """Machine instructions per memory run of ``name`` (``timeout=None``), in a child importing
    the package from ``path``, counted by valgrind's callgrind: the same figure on a loaded
    machine as on an idle one. The child runs twice (no run, then ``runs`` runs) and the
    difference is divided out, so imports and loading the scenario cancel."""
    counts = []
    for count in (0, runs):
        found = count_instructions(
            ["-c", COUNTED, str(count), name], pythonpath=str(path), cwd=str(path)
        )
        if found is None:
            return None
        counts.append(found)
    return (counts[1] - counts[0]) // runs


def instructions(baseline: str, names: Sequence[str], runs: int) -> None:
    """Instructions per memory run, now against ``baseline``: deterministic where timings on a
    shared machine are not (they track the timed ratios to about 0.01 when both are quiet)."""
    import shutil

    if shutil.which("valgrind") is None:
        print("instructions: skipped (no valgrind; `apt-get install valgrind`)")
        return
    print(f"Instructions per memory run (timeout=None), now against {baseline} ({runs} runs)")
    with tempfile.TemporaryDirectory() as tmp:
        unpack(baseline, Path(tmp))
        worst = 0.0
        for name in names:
            then, now = count_side(Path(tmp), name, runs), count_side(ROOT, name, runs)
            if then is None or now is None:
                print(f"  {name}: valgrind printed no count")
                continue
            worst = max(worst, now / then)
            print(f"  {name:<30} then {then / 1e6:6.2f}M  now {now / 1e6:6.2f}M  {now / then:.3f}x")
    verdict = "PASS" if worst <= MAX_RATIO else "MISS"
    print(f"  a memory run (timeout=None) at most {MAX_RATIO}x in instructions: {verdict}"
          f" (worst {worst:.3f}x)")  # fmt: skip


def views(reps: int = 3, executions: int = 100) -> None:
    """Time the ungrouped 100-execution picture (graph beside timeline) built and saved."""
    import time
    from io import BytesIO

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_views

    from yieldstar_sim.views.figures import draw_run

    run = bench_views.simulate(executions)
    draw_run(run, group=False).savefig(BytesIO(), format="png", dpi=100)
    totals, drawn, saved = [], [], []
    for _ in range(reps):
        start = time.perf_counter()
        figure = draw_run(run, group=False)
        middle = time.perf_counter()
        figure.savefig(BytesIO(), format="png", dpi=100)
        end = time.perf_counter()
        totals.append(end - start)
        drawn.append(middle - start)
        saved.append(end - middle)
    width, height = figure.get_size_inches() * 100
    total = statistics.median(totals)
    print(
        f"{executions} executions, ungrouped, {width:.0f} x {height:.0f} px: draw_run "
        f"{statistics.median(drawn) * 1e3:.0f} ms + PNG {statistics.median(saved) * 1e3:.0f} ms"
        f" = {total:.2f} s; under 1 s: {'PASS' if total < 1 else 'MISS'}"
    )


def _burn(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def ceiling(burn: int = 3_000_000) -> float:
    """The speed-up two forked processes of pure-Python arithmetic reach over one, right now:
    what the machine (shared with other sessions) gives a second process at this moment."""
    import concurrent.futures
    import multiprocessing
    import time

    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as pool:
        list(pool.map(_burn, [1, 1]))
        start = time.perf_counter()
        _burn(3_000_000)
        _burn(3_000_000)
        serial = time.perf_counter() - start
        start = time.perf_counter()
        list(pool.map(_burn, [3_000_000, 3_000_000]))
        return serial / (time.perf_counter() - start)


def _verdict(speedup: float, of_ceiling: float) -> str:
    met = speedup >= MIN_SPEEDUP or of_ceiling >= MIN_OF_CEILING
    return (
        f"{'PASS' if met else 'MISS'} (target >= {MIN_SPEEDUP}x, or >= {MIN_OF_CEILING:.0%} of "
        "the CPU ceiling)"
    )


def jobs(reps: int = 3, max_faults: int = 2, burn: int = 3_000_000) -> None:
    """jobs=2 against jobs=1 on one exploration, and the CPU ceiling, per repetition."""
    import time

    import yieldstar_sim as ys

    scenario = ys.load_scenario("durable-start")
    ys.explore(scenario, max_faults=1, jobs=2)  # warm-up: imports, the DuckDB pool
    speedups, ceilings = [], []
    for rep in range(reps):
        seconds: dict[int, float] = {}
        for count in (1, 2) if rep % 2 == 0 else (2, 1):
            start = time.perf_counter()
            ys.explore(scenario, max_faults=max_faults, jobs=count)
            seconds[count] = time.perf_counter() - start
        speedups.append(seconds[1] / seconds[2])
        ceilings.append(ceiling(burn))
    speedup, of_ceiling = statistics.median(speedups), _of_ceiling(speedups, ceilings)
    print(
        f"explore(durable-start, max_faults={max_faults}): jobs=2 {speedup:.2f}x jobs=1 (per "
        f"repetition {', '.join(f'{x:.2f}' for x in speedups)}); CPU ceiling "
        f"{statistics.median(ceilings):.2f}x (per repetition "
        f"{', '.join(f'{x:.2f}' for x in ceilings)}): {of_ceiling:.0%} of it; "
        f"{_verdict(speedup, of_ceiling)}"
    )


def _of_ceiling(speedups: Sequence[float], ceilings: Sequence[float]) -> float:
    """The median of the per-repetition speed-up / ceiling (both measured back to back)."""
    return statistics.median(s / c for s, c in zip(speedups, ceilings, strict=True))


CLI_ARGS = ("explore", "durable-start", "--json")


def _command() -> list[str]:
    """The installed ``yieldstar-sim`` next to this Python, as a user runs it."""
    script = Path(sys.executable).parent / "yieldstar-sim"
    return [str(script)] if script.exists() else [sys.executable, "-m", "yieldstar_sim.cli"]


def _answer(stdout: str, out: Path) -> dict[str, object]:
    """What the command answered, without what differs by design between two runs (its
    elapsed seconds, the folder): the report, and the bytes of every file it wrote."""
    report = json.loads(stdout)
    report.pop("elapsed_seconds", None)
    files = {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(out.iterdir())
    }
    return {"report": json.dumps(report, sort_keys=True).replace(str(out), "OUT"), "files": files}


def cli_jobs(reps: int, max_faults: int = 2, burn: int = 3_000_000) -> None:
    """``yieldstar-sim explore ... --jobs 2`` against ``--jobs 1``, end to end in a child
    process, and the CPU ceiling after each pair."""
    import time

    command = _command()
    arguments = (*CLI_ARGS, "--max-faults", str(max_faults))
    seconds: dict[int, list[float]] = {1: [], 2: []}
    ceilings: list[float] = []
    starts: list[float] = []  # the serial start: Python and the package's import
    answers: dict[int, dict[str, object]] = {}
    same = True
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(reps + 1):  # the first pair warms the disk cache and is not counted
            before = ceiling(burn) if rep else 0.0
            for count in (1, 2) if rep % 2 == 0 else (2, 1):
                out = Path(tmp) / f"out-{rep}-{count}"
                start = time.perf_counter()
                done = subprocess.run(
                    [*command, *arguments, "--jobs", str(count), "--out", str(out)],
                    capture_output=True, text=True, check=True,
                )  # fmt: skip
                if rep:
                    seconds[count].append(time.perf_counter() - start)
                answers[count] = _answer(done.stdout, out)
            same = same and answers[1] == answers[2]
            if rep:  # the ceiling before and after the pair: the load moves within seconds
                ceilings.append((before + ceiling(burn)) / 2)
                start = time.perf_counter()
                subprocess.run([sys.executable, "-c", "import yieldstar_sim.cli"], check=True)
                starts.append(time.perf_counter() - start)
    speedups = [a / b for a, b in zip(seconds[1], seconds[2], strict=True)]
    speedup, of_ceiling = statistics.median(speedups), _of_ceiling(speedups, ceilings)
    print(
        f"yieldstar-sim {' '.join(arguments)} (medians of {reps}): --jobs 1 "
        f"{statistics.median(seconds[1]):.2f} s, --jobs 2 {statistics.median(seconds[2]):.2f} s: "
        f"{speedup:.2f}x (per repetition {', '.join(f'{x:.2f}' for x in speedups)}); CPU "
        f"ceiling {statistics.median(ceilings):.2f}x (per repetition "
        f"{', '.join(f'{x:.2f}' for x in ceilings)}): {of_ceiling:.0%} of it; answers "
        f"identical (report, artifacts, picture bytes): {'yes' if same else 'NO'}"
    )
    one, start, limit = (statistics.median(x) for x in (seconds[1], starts, ceilings))
    print(
        f"  serial start (python -c 'import yieldstar_sim.cli') {start:.2f} s: with the ceiling, "
        f"Amdahl's bound on --jobs 2 is {one / (start + (one - start) / limit):.2f}x"
    )
    judged = _verdict(speedup, of_ceiling) if same else "MISS (the answers differ)"
    print(f"  --jobs 2 end to end: {judged}")


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table; exit status 0 (it reports, it does not judge)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    add_smoke(parser)
    parser.add_argument(
        "--baseline", help="git revision to compare with (default main; HEAD with --smoke)"
    )
    parser.add_argument("--scenario", action="append", help="a scenario (repeatable)")
    parser.add_argument("--views", action="store_true", help="the ungrouped picture instead")
    parser.add_argument("--jobs", action="store_true", help="jobs=2 against jobs=1 instead")
    parser.add_argument(
        "--cli", action="store_true", help="only the command end to end, --jobs 2 against 1"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count machine instructions per run under valgrind instead of timing",
    )
    args = parser.parse_args(argv)
    # Smoke: once, tiny; against HEAD, which a clean clone (CI) always has.
    baseline = args.baseline or ("HEAD" if args.smoke else "main")
    if args.jobs or args.cli:
        if not args.cli:
            jobs(*((1, 1, 100_000) if args.smoke else ()))
        cli_jobs(*((1, 1, 100_000) if args.smoke else (3 if args.quick else 5,)))
        return 0
    if args.views:
        views(*((1, 10) if args.smoke else ()))
        return 0
    names = args.scenario or list(SCENARIOS)
    if args.instructions:
        instructions(baseline, names[:1] if args.smoke else names, 2 if args.smoke else 100)
        return 0
    reps, batch = (1, 1) if args.smoke else (5, 30) if args.quick else (11, 60)
    times: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        unpack(baseline, Path(tmp))
        sides = {"now": ROOT, "then": Path(tmp)}
        for rep in range(reps):
            order = ("now", "then") if rep % 2 == 0 else ("then", "now")
            for side in order:
                for name, seconds in time_side(sides[side], names, batch).items():
                    times.setdefault(name, {}).setdefault(side, []).append(seconds)
    print(f"A whole memory run, now against {baseline} (medians of {reps} x {batch} runs)")
    ratios = []
    for name in times:
        now, then = (statistics.median(times[name][s]) for s in ("now", "then"))
        best_now, best_then = (min(times[name][s]) for s in ("now", "then"))
        ratios.append(now / then)
        print(
            f"  {name:<30} then {then * 1e6:6.0f} us  now {now * 1e6:6.0f} us  {now / then:.2f}x"
            f"  (minima {best_then * 1e6:.0f} / {best_now * 1e6:.0f} us: "
            f"{best_now / best_then:.2f}x)"
        )
    for mode in ("as called", "timeout=None"):
        worst = max(ratio for name, ratio in zip(times, ratios, strict=True) if mode in name)
        verdict = "PASS" if worst <= MAX_RATIO else "MISS"
        print(f"  a memory run ({mode}) at most {MAX_RATIO}x: {verdict} (worst {worst:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
