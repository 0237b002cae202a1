"""The searches before and after the rebuild around one Execution (issue 48), in one run.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_rebuild.py                 # the issue's figures, ~1 hour
    .venv/bin/python benchmarks/bench_rebuild.py --only chain-300 --reps 5
    .venv/bin/python benchmarks/bench_rebuild.py --only 'systematic 100 x 3' --paired --reps 5
    .venv/bin/python benchmarks/bench_rebuild.py --profile 'systematic 100 x 3'
    .venv/bin/python benchmarks/bench_rebuild.py --smoke         # against HEAD, tiny (CI)

The baseline (default ``4fcd271``, the revision before ``7857e99`` rebuilt the search) is
unpacked with ``git archive`` beside its bundled scenarios (``bench_baseline.unpack``); each
search runs in a child process of its own on that code or on this tree (``PYTHONPATH``), the
two sides alternating (then/now, now/then, ...) so that load on a shared machine falls on both.
The cases are the issue's, every one on the memory runtime with ``confirm=None`` and
``stop_at_first=False`` (the whole bound), every fault kind:

* **exhaustive 2 x 3** and **exhaustive 3 x 3**: ``bench_exhaustive.py``'s orders scenario
  (durable-start's ``charge-order`` with one trigger per order) on 3 workers, the exhaustive
  search with one fault; counted in distinct states;
* **systematic 100 x 3**: the same scenario at 100 orders, 3 workers, the systematic search
  with one fault; counted in schedules run (and skipped as equivalent);
* **chain-300**: one workflow of 300 ``step.run`` steps (``_explorer_kit.chain_scenario``), 2
  workers, the systematic search with one fault; counted in schedules.

For each: the median seconds of the ``ys.explore`` call on each side (the child's imports and
the scenario's making left out), wall clock and CPU (``time.process_time`` around the same
call), the count on each side, and now / then; the target: no search slower than at the
baseline, a ratio up to 1.05 counting as equal (PASS/MISS, never asserted), judged on the CPU
seconds. A search is one single-threaded process: its CPU seconds are what it takes on a core
of its own, where on a shared 2-core machine its wall clock also counts how long it waited for
one, which other sessions' load decides; both ratios are printed. With ``--paired``, the two
sides of each repetition run at once, each pinned to a CPU of its own (swapped from one
repetition to the next), and PASS/MISS reads the median of the repetitions' ratios: what slows
a shared machine down while a pair runs (other sessions, the host) slows both sides of it,
where alternating runs minutes apart meet different loads. But the two sides share the
machine's caches while they run, which a search alone does not: a revision that walks more
memory loses more to the sharing (docs/performance.md). Pairs compare revisions whose memory use
is alike; the issue's figures are taken from alternating runs.
Then the lines of the explorer (``simulation/explorer/*.py``) and of the kernel
(``simulation/kernel.py``) at both revisions, and of the files the search moved out of the
explorer or added beside it, so that the explorer's lines are not read as the whole story.

With ``--profile CASE``, instead: the case once on each side under ``cProfile``, the functions
with the most time of their own (``tottime``) on each side, and where this tree's time goes by
file. With ``--instructions``, instead: smaller searches of the same kinds (the exhaustive
search of 2 x 2 with one fault, the systematic search of 10 orders on 3 workers, the 100-step
chain's) in machine instructions, counted by valgrind's callgrind on each side (a child with
no search taken off): a ratio other sessions' load cannot move.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _harness import count_instructions, footer, header, parser, progress, show, sizes, targets
from bench_baseline import ROOT, unpack

if TYPE_CHECKING:
    from collections.abc import Sequence

BASELINE = "4fcd271"
#: The issue's target: now / then at most this (a ratio up to 1.05 counts as equal).
MAX_RATIO = 1.05

Case = tuple[str, int, int, int]
"""A case: the strategy (or ``chain``), the orders (the chain's steps), the workers, the
faults."""

CASES: dict[str, Case] = {
    "exhaustive 2 x 3": ("exhaustive", 2, 3, 1),
    "exhaustive 3 x 3": ("exhaustive", 3, 3, 1),
    "systematic 100 x 3": ("systematic", 100, 3, 1),
    "chain-300": ("chain", 300, 2, 1),
}
#: ``--smoke``: every strategy once, at its tiniest.
SMOKE_CASES: dict[str, Case] = {
    "exhaustive 1 x 2": ("exhaustive", 1, 2, 1),
    "systematic 3 x 3": ("systematic", 3, 3, 1),
    "chain-20": ("chain", 20, 2, 1),
}

CHILD = """
import dataclasses, json, resource, sys, time
sys.path.append(sys.argv[2])  # the benchmarks' folder, after the side's package
import yieldstar_sim as ys
from _explorer_kit import chain_scenario
strategy, size, workers, faults = json.loads(sys.argv[1])
if strategy == "chain":
    scenario, strategy = chain_scenario(size), "systematic"
else:
    base = ys.load_scenario("durable-start")
    triggers = [ys.Trigger("charge-order", {"order": 40 + n}, execution_id=f"order-{40 + n}")
                for n in range(size)]
    scenario = dataclasses.replace(base, name=f"orders-{size}x{workers}", faults=[],
                                   workers=workers, triggers=triggers)
profiler = None
if sys.argv[3:] == ["-"]:
    raise SystemExit(0)  # everything but the search (--instructions takes it off)
if len(sys.argv) > 3:
    import cProfile
    profiler = cProfile.Profile()
    profiler.enable()
started, cpu = time.perf_counter(), time.process_time()
report = ys.explore(scenario, strategy=strategy, max_faults=faults, runtime="memory",
                    confirm=None, stop_at_first=False)
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
if profiler is not None:
    profiler.disable()
    profiler.dump_stats(sys.argv[3])
section = getattr(report, "exhaustive", None)
progress = getattr(section, "progress", None) or getattr(report, "search_progress", None) or {}
print(json.dumps({
    "seconds": seconds, "cpu": cpu, "schedules": report.schedules_run,
    "states": report.distinct_states if strategy == "exhaustive" else None,
    "skipped": report.skipped_equivalent if strategy == "systematic" else None,
    "exhausted": report.exhausted, "verdict": report.verdict,
    "transitions": progress.get("transitions"), "restores": progress.get("restores"),
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def start_side(
    path: Path, case: Case, profile: Path | None = None, cpu: int | None = None
) -> subprocess.Popen[str]:
    """A child searching ``case`` with the package imported from ``path`` (with ``profile``,
    under cProfile, its stats written there; with ``cpu``, on that CPU alone)."""
    more = [] if profile is None else [str(profile)]
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(case), str(ROOT / "benchmarks"), *more],
        cwd=path, env=dict(os.environ, PYTHONPATH=str(path)), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    if cpu is not None:
        os.sched_setaffinity(child.pid, {cpu})  # long before its search starts: it imports first
    return child


def side_result(child: subprocess.Popen[str], case: Case, path: Path) -> dict[str, Any]:
    """What a child of ``start_side`` printed, once it ended."""
    stdout, stderr = child.communicate()
    if child.returncode != 0:
        raise SystemExit(f"the search of {case} at {path} failed:\n{stderr}")
    result: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return result


def run_side(path: Path, case: Case, profile: Path | None = None) -> dict[str, Any]:
    """One search of ``case`` in a child importing the package from ``path`` (with
    ``profile``, under cProfile, its stats written there)."""
    return side_result(start_side(path, case, profile), case, path)


def count(result: dict[str, Any]) -> str:
    """What a search covered: its distinct states, or its schedules (and those skipped)."""
    if result["states"] is not None:
        return f"{int(result['states']):,} states"
    skipped = int(result["skipped"] or 0)
    return f"{int(result['schedules']):,} schedules" + (
        f" ({skipped:,} skipped)" if skipped else ""
    )


def measure(
    cases: dict[str, Case], then: Path, reps: int, *, paired: bool = False
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Every case ``reps`` times a side, the sides alternating within each repetition (with
    ``paired``, running at once, each on a CPU of its own)."""
    found: dict[str, dict[str, list[dict[str, Any]]]] = {
        name: {"then": [], "now": []} for name in cases
    }
    paths = {"then": then, "now": ROOT}
    for rep in range(reps):
        order = ("then", "now") if rep % 2 == 0 else ("now", "then")
        for name, case in cases.items():
            if paired:
                # Both sides at once, each on a CPU of its own, the CPUs swapped each time:
                # what slows the machine down while they run slows both.
                cpus = sorted(os.sched_getaffinity(0))[:2]
                children = {
                    side: start_side(paths[side], case, cpu=cpu)
                    for side, cpu in zip(order, cpus, strict=True)
                }
                got_now = {side: side_result(c, case, paths[side]) for side, c in children.items()}
            else:
                got_now = {side: run_side(paths[side], case) for side in order}
            for side in order:
                got = got_now[side]
                found[name][side].append(got)
                progress(
                    f"{name}: {side} ({rep + 1}/{reps}): {got['seconds']:.1f} s, CPU "
                    f"{got['cpu']:.1f} s, {count(got)}"
                )
    return found


def report(
    found: dict[str, dict[str, list[dict[str, Any]]]], baseline: str, *, paired: bool = False
) -> None:
    """The table, and the target per case: on the ratio of the sides' median CPU seconds, or
    with ``paired`` (the sides run at once) on the median of each pair's ratio."""
    rows = [["case", f"{baseline} s", "now s", "now / then", f"{baseline} CPU s", "CPU now s",
             "CPU now / then", "each pair's", f"at {baseline}", "now", "same",
             "each then (wall/CPU)", "each now (wall/CPU)", "RSS MB then / now"]]  # fmt: skip
    lines = []
    for name, sides in found.items():
        then_s = statistics.median(r["seconds"] for r in sides["then"])
        now_s = statistics.median(r["seconds"] for r in sides["now"])
        ratio = now_s / then_s
        then_cpu = statistics.median(r["cpu"] for r in sides["then"])
        now_cpu = statistics.median(r["cpu"] for r in sides["now"])
        pairs = [
            now["cpu"] / then["cpu"] for then, now in zip(sides["then"], sides["now"], strict=True)
        ]
        cpu = statistics.median(pairs) if paired else now_cpu / then_cpu
        last_then, last_now = sides["then"][-1], sides["now"][-1]
        same = count(last_then) == count(last_now) and last_then["verdict"] == last_now["verdict"]
        rss = "{:.0f} / {:.0f}".format(
            max(r["rss_mb"] for r in sides["then"]), max(r["rss_mb"] for r in sides["now"])
        )
        rows.append([
            name, f"{then_s:.2f}", f"{now_s:.2f}", f"{ratio:.3f}x", f"{then_cpu:.2f}",
            f"{now_cpu:.2f}", f"{now_cpu / then_cpu:.3f}x",
            " ".join(f"{pair:.3f}" for pair in pairs), count(last_then), count(last_now),
            "yes" if same else "NO",
            " ".join(f"{r['seconds']:.1f}/{r['cpu']:.1f}" for r in sides["then"]),
            " ".join(f"{r['seconds']:.1f}/{r['cpu']:.1f}" for r in sides["now"]), rss,
        ])  # fmt: skip
        lines.append((
            cpu <= MAX_RATIO,
            f"{name}: {cpu:.3f}x of {baseline}'s CPU seconds"
            f"{' (the median pair)' if paired else ''} (target <= {MAX_RATIO}; wall "
            f"clock {ratio:.3f}x, {now_s:.2f} s against {then_s:.2f} s)",
        ))  # fmt: skip
    how = "pairs run at once, a CPU each" if paired else "alternating repetitions"
    print(f"\nThe searches now against {baseline} (memory, confirm=None, stop_at_first=False; "
          f"medians of {how})\n")  # fmt: skip
    show(rows, [False, *[True] * 6, False, True, True, False, False, False, True], "  ")
    print(
        "  s: wall-clock seconds of the explore call; CPU: its process's CPU seconds (what other "
        "sessions' load moves least);\n  each pair's: now / then in CPU, repetition by "
        "repetition; same: the same count and verdict on both\n  sides; each: every "
        "repetition's seconds, in order; RSS: the child's peak, the interpreter and the "
        "package included"
    )
    targets(lines)


#: The files the rebuild moved out of the explorer or added beside it, and those it removed:
#: counted apart, so that the explorer's lines are not read as the whole search.
#: ``statekeys.py``, ``terms.py`` and ``grid.py`` were the explorer's at 4fcd271 (counted there);
#: ``trail.py`` and ``restore_check.py`` left ``execution.py``, and ``statespace_paths.py`` the
#: explorer's state space, after 7857e99.
AROUND = (
    "simulation/execution.py", "simulation/trail.py", "simulation/restore_check.py",
    "simulation/moves.py", "simulation/saving.py", "simulation/statekeys.py",
    "simulation/terms.py", "simulation/finish.py", "views/grid.py", "views/statespace_paths.py",
    "simulation/simulator.py", "simulation/recorder.py", "simulation/checkpoint.py",
)  # fmt: skip
#: Where the explorer's files that left it went (by name alone a file could seem to have moved:
#: ``simulation/footprints.py``, this round's, has nothing of 4fcd271's ``explorer/footprints.py``).
MOVED_TO = {"statekeys.py": "simulation", "terms.py": "simulation", "grid.py": "views"}


def lines_of(package: Path, files: Sequence[str]) -> int:
    """The lines of ``files`` (paths under ``package``) that exist there."""
    return sum(
        len((package / name).read_text(encoding="utf-8").splitlines())
        for name in files
        if (package / name).exists()
    )


#: ``--instructions``: searches small enough for callgrind (about 50x slower than a run).
COUNTED_CASES: dict[str, Case] = {
    "exhaustive 2 x 2": ("exhaustive", 2, 2, 1),
    "systematic 10 x 3": ("systematic", 10, 3, 1),
    "chain-100": ("chain", 100, 2, 1),
}


def instructions(cases: dict[str, Case], then: Path, baseline: str) -> None:
    """Machine instructions of each search on each side (callgrind), now / then."""
    import shutil

    if shutil.which("valgrind") is None:
        print("instructions: skipped (no valgrind; `apt-get install valgrind`)")
        return
    rows = [["case", f"{baseline}", "now", "now / then"]]
    for name, case in cases.items():
        counts: dict[str, int | None] = {}
        for side, path in (("then", then), ("now", ROOT)):
            progress(f"{name}: {side} (callgrind)")
            made = [
                count_instructions(
                    ["-c", CHILD, json.dumps(case), str(ROOT / "benchmarks"), *more],
                    pythonpath=str(path), cwd=str(path),
                )
                for more in (["-"], [])
            ]  # fmt: skip
            counts[side] = None if None in made else made[1] - made[0]  # type: ignore[operator]
        old, new = counts["then"], counts["now"]
        if old is None or new is None:
            rows.append([name, "?", "?", "valgrind printed no count"])
            continue
        rows.append([name, f"{old / 1e9:.3f}G", f"{new / 1e9:.3f}G", f"{new / old:.3f}x"])
    print(f"\nInstructions per search, now against {baseline} (callgrind)\n")
    show(rows, [False, True, True, True], "  ")


def print_lines(then: Path, baseline: str) -> None:
    """The explorer's and the kernel's lines at both revisions, and the files around them."""
    print(f"\nLines, {baseline} against this tree")
    rows = [["code", baseline, "now", "now - then"]]
    for label, pick in (
        ("simulation/explorer/*.py", lambda package: sorted(
            f"simulation/explorer/{path.name}"
            for path in (package / "simulation" / "explorer").glob("*.py")
        )),
        ("simulation/kernel.py", lambda package: ["simulation/kernel.py"]),
        ("around the search (below)", lambda package: [
            name for name in AROUND if (package / name).exists()
        ]),
    ):  # fmt: skip
        old, new = then / "yieldstar_sim", ROOT / "yieldstar_sim"
        before, after = lines_of(old, pick(old)), lines_of(new, pick(new))
        rows.append([label, f"{before:,}", f"{after:,}", f"{after - before:+,}"])
    show(rows, [False, True, True, True], "  ")
    old, new = then / "yieldstar_sim", ROOT / "yieldstar_sim"
    explorer_then = {p.name for p in (old / "simulation" / "explorer").glob("*.py")}
    explorer_now = {p.name for p in (new / "simulation" / "explorer").glob("*.py")}
    around = [
        f"{Path(name).name} {lines_of(old, [name]) or '-'}/{lines_of(new, [name]) or '-'}"
        for name in AROUND
    ]
    gone = sorted(explorer_then - explorer_now)
    moved = [f"{name} to {MOVED_TO[name]}/" for name in gone if name in MOVED_TO]
    print(
        f"  around the search, {baseline}/now: {', '.join(around)};\n  explorer files gone: "
        f"{', '.join(gone) or 'none'}"
        + (f" (moved: {', '.join(moved)})" if moved else "")
        + f"; new: {', '.join(sorted(explorer_now - explorer_then)) or 'none'}"
    )


def profile_case(name: str, case: Case, then: Path, top: int = 25) -> None:
    """``case`` once a side under cProfile: the top functions by their own time, and this
    tree's time by file."""
    import pstats

    with tempfile.TemporaryDirectory() as folder:
        for side, path in (("then", then), ("now", ROOT)):
            out = Path(folder) / f"{side}.prof"
            progress(f"{name}: {side} under cProfile")
            got = run_side(path, case, out)
            stats = pstats.Stats(str(out))
            total = sum(entry[2] for entry in stats.stats.values())  # type: ignore[attr-defined]
            print(f"\n{name}, {side}: {got['seconds']:.1f} s profiled, {count(got)}; "
                  f"the top {top} functions by their own time")  # fmt: skip
            rows = [["function", "calls", "tottime s", "share", "cumtime s"]]
            ranked = sorted(
                stats.stats.items(),  # type: ignore[attr-defined]
                key=lambda item: -item[1][2],
            )
            for (filename, line, function), (_, calls, tottime, cumtime, _) in ranked[:top]:
                where = _short(filename, path)
                rows.append([
                    f"{where}:{line} {function}", f"{calls:,}", f"{tottime:.2f}",
                    f"{tottime / total:.1%}", f"{cumtime:.2f}",
                ])  # fmt: skip
            show(rows, [False, True, True, True, True], "  ")
            files: dict[str, float] = {}
            for (filename, _, _), entry in stats.stats.items():  # type: ignore[attr-defined]
                short = _short(filename, path).split(":")[0]
                files[short] = files.get(short, 0.0) + entry[2]
            ranked_files = sorted(files.items(), key=lambda item: -item[1])[:15]
            print("  by file (own time): " + ", ".join(
                f"{file} {seconds / total:.1%}" for file, seconds in ranked_files
            ))  # fmt: skip


def _short(filename: str, path: Path) -> str:
    """A profiled file's name, short: within the package, from ``yieldstar_sim/`` on."""
    marker = "yieldstar_sim/"
    if marker in filename:
        return filename[filename.index(marker) + len(marker) :]
    if filename == "~":
        return "builtins"
    return Path(filename).name


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table, the targets and the lines; returns 0."""
    made = parser(__doc__, reps="repetitions a side (default 3; quick 2; smoke 1)")
    made.add_argument("--baseline", help=f"the revision to compare with ({BASELINE}; smoke HEAD)")
    made.add_argument(
        "--only", action="append", metavar="CASE", choices=[*CASES, *SMOKE_CASES],
        help="this case only (repeatable)",
    )  # fmt: skip
    made.add_argument(
        "--profile", metavar="CASE", choices=[*CASES, *SMOKE_CASES],
        help="instead: the case once a side under cProfile, where the time goes",
    )  # fmt: skip
    made.add_argument(
        "--instructions", action="store_true",
        help="instead: smaller searches in machine instructions (valgrind), now against then",
    )  # fmt: skip
    made.add_argument(
        "--paired", action="store_true",
        help="both sides at once, each on a CPU of its own (two CPUs at least), judged on the "
        "median of the pairs' ratios (the sides share the caches: see the docstring)",
    )  # fmt: skip
    args = made.parse_args(argv)
    if args.paired and len(os.sched_getaffinity(0)) < 2:
        made.error("--paired runs the two sides at once: it needs two CPUs")
    baseline = args.baseline or ("HEAD" if args.smoke else BASELINE)
    cases = dict(SMOKE_CASES if args.smoke else CASES)
    if args.only:
        every = {**CASES, **SMOKE_CASES}
        cases = {name: every[name] for name in args.only}
    reps = args.reps or (1 if args.smoke else 2 if args.quick else 3)
    began = header("rebuild", details=f"against {baseline}, {reps} repetitions a side{sizes(args)}")
    with tempfile.TemporaryDirectory(prefix="ys-rebuild-") as folder:
        then = Path(folder)
        unpack(baseline, then)
        # Both sides compiled before any is timed: a module imported inside a search (lazily)
        # would otherwise be compiled in the first timed search of the unpacked side.
        for path in (then, ROOT):
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", str(path / "yieldstar_sim")],
                check=True, capture_output=True,
            )  # fmt: skip
        if args.profile:
            every = {**CASES, **SMOKE_CASES}
            profile_case(args.profile, every[args.profile], then)
        elif args.instructions:
            counted = {"exhaustive 1 x 1": ("exhaustive", 1, 1, 0)} if args.smoke else COUNTED_CASES
            instructions(counted, then, baseline)
        else:
            report(measure(cases, then, reps, paired=args.paired), baseline, paired=args.paired)
        print_lines(then, baseline)
    footer(began)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
