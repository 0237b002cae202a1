"""The ``yieldstar-sim`` command line.

Exit codes: 0 when the promise held, 1 when an invariant was violated, 2 on bad input.
Errors a user can cause print one line naming the problem (a traceback only with ``--debug``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.runtime.protocol import Runtime


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit code 2."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="yieldstar-sim",
        description="See durable-workflow semantics (RFC 003: durable workflow start) "
        "fail and hold.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="replay a start whose response was lost, and draw the execution graph",
        description=(
            "RFC 003's conformance demo: w1's start commits but its response is lost, the "
            "delivery is released, w2 replays it and gets the same ship-order back."
        ),
    )
    demo.add_argument(
        "--runtime", choices=("duckdb", "memory"), default="duckdb", help="runtime adapter"
    )
    demo.add_argument(
        "--db", metavar="PATH", help="DuckDB file to keep the records in (default: in memory)"
    )
    demo.add_argument(
        "--out", metavar="DIR", default="out", help="folder for the graph (default: out)"
    )
    demo.add_argument("--json", action="store_true", help="print one JSON object")

    listing = commands.add_parser("list", help="list the bundled scenarios and their stories")
    listing.add_argument("--json", action="store_true", help="print one JSON object")

    run = commands.add_parser(
        "run",
        help="run a scenario once, check its invariants, draw its graph",
        description="Run SCENARIO (a bundled scenario's name, or a .py file that defines "
        "`scenario`) with its fault plan; exit 0 when every invariant held, 1 when one was "
        "violated.",
    )
    run.add_argument("scenario", metavar="SCENARIO")
    run.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    _runtime_options(run)
    run.add_argument("--quiet", action="store_true", help="print the verdict only, not the trace")

    explore = commands.add_parser(
        "explore",
        help="search faults and interleavings for invariant violations",
        description="Explore SCENARIO's faults (its own fault plan is left out) and "
        "interleavings; shrink each violation to a replay artifact saved in --out. Exit 0 when "
        "no invariant was violated, 1 when one was.",
    )
    explore.add_argument("scenario", metavar="SCENARIO")
    explore.add_argument(
        "--max-faults", type=int, default=1, metavar="K", help="faults per schedule (default 1)"
    )
    explore.add_argument(
        "--strategy", choices=("systematic", "random", "pct"), default="systematic"
    )
    explore.add_argument("--budget", type=int, metavar="N", help="at most N schedules")
    explore.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    explore.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes")
    explore.add_argument(
        "--all",
        action="store_true",
        help="run to the end instead of stopping at the first violation",
    )
    explore.add_argument(
        "--runtime", choices=("memory", "duckdb"), default="memory",
        help="runtime to explore on (default memory, the fast path)",
    )  # fmt: skip
    explore.add_argument(
        "--no-confirm", action="store_true", help="do not replay findings on DuckDB"
    )
    explore.add_argument("--out", metavar="DIR", default="out", help="folder for artifacts")
    explore.add_argument("--json", action="store_true", help="print one JSON object")
    explore.add_argument("--progress", action="store_true", help="show a progress bar")

    replay = commands.add_parser(
        "replay",
        help="replay a saved artifact and check it reproduces its run",
        description="Replay ARTIFACT (a JSON file written by run or explore); exit 0 when "
        "every invariant held, 1 when one was violated.",
    )
    replay.add_argument("artifact", metavar="ARTIFACT")
    _runtime_options(replay, default=None)
    replay.add_argument("--quiet", action="store_true", help="print the verdict only")
    return parser


def _runtime_options(command: argparse.ArgumentParser, default: str | None = "duckdb") -> None:
    command.add_argument(
        "--runtime", choices=("duckdb", "memory"), default=default,
        help=f"runtime adapter (default: {default or 'the one the artifact used'})",
    )  # fmt: skip
    command.add_argument(
        "--db", metavar="PATH", help="DuckDB file to keep the run in (default: in memory)"
    )
    command.add_argument(
        "--out", metavar="DIR", default="out", help="folder for graph, trace and artifact"
    )
    command.add_argument(
        "--format", default="png", metavar="LIST", type=_format_list,
        help="what to draw, comma-separated among svg,png,pdf,graphml,json,dot,mermaid,html "
        "(default png: the graph beside the timeline)",
    )  # fmt: skip
    command.add_argument("--json", action="store_true", help="print one JSON object")


def _demo(args: argparse.Namespace) -> int:
    from yieldstar_sim.clock import ManualClock
    from yieldstar_sim.demo import lost_response_demo
    from yieldstar_sim.model import AdmissionErrorCode, ExecutionAdmissionError
    from yieldstar_sim.runtime.duckdb_runtime import DuckDBRuntime
    from yieldstar_sim.runtime.memory import MemoryRuntime
    from yieldstar_sim.views.graph import draw_execution_graph, execution_graph

    out = _output_folder(args.out)
    clock = ManualClock()
    runtime: Runtime
    if args.runtime == "memory":
        if args.db:
            raise UsageError("--db needs --runtime duckdb")
        runtime = MemoryRuntime(clock=clock)
    else:
        runtime = DuckDBRuntime(_database_path(args.db), clock=clock)
    try:
        result = lost_response_demo(runtime)
        graph = execution_graph(runtime)
    except ExecutionAdmissionError as error:
        if error.code != AdmissionErrorCode.EXECUTION_EXISTS:
            raise
        raise UsageError(
            f"the database {args.db!r} already holds order-42 from an earlier run; "
            "give a new --db file, or delete that one"
        ) from error
    finally:
        runtime.close()
    verdict = (
        "one ship-order, one courier: the promise held"
        if result.ok
        else f"{len(result.ship_orders)} ship-orders, {result.couriers} couriers"
    )
    figure = draw_execution_graph(
        graph, title=f"order-42 after a lost start response ({args.runtime})\n{verdict}"
    )
    image = out / "order-42-graph.png"
    figure.savefig(image, dpi=120)
    if args.json:
        print(
            json.dumps(
                {
                    "scenario": "lost-response-demo",
                    "runtime": args.runtime,
                    "ok": result.ok,
                    "ship_orders": result.ship_orders,
                    "couriers": result.couriers,
                    "events": result.lines,
                    "graph": str(image),
                }
            )
        )
    else:
        print("\n".join(result.lines))
        print(f"\n{verdict}; graph written to {image}")
    return 0 if result.ok else 1


def _format_list(text: str) -> list[str]:
    from yieldstar_sim.views.export import FORMATS

    chosen = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [part for part in chosen if part not in FORMATS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"unknown format {unknown[0] if unknown else text!r}; choose among {','.join(FORMATS)}"
        )
    return chosen


def _list(args: argparse.Namespace) -> int:
    from yieldstar_sim.simulation.scenario import bundled_scenarios, load_scenario

    stories = {}
    for name in bundled_scenarios():
        try:
            stories[name] = load_scenario(name).story
        except Exception as error:  # one broken file should not hide the others
            stories[name] = f"(cannot load: {error})"
    if args.json:
        print(json.dumps({"scenarios": stories}))
    else:
        width = max(map(len, stories), default=0)
        for name, story in stories.items():
            print(f"{name:<{width}}  {story}")
    return 0


def _run(args: argparse.Namespace) -> int:
    import time

    from yieldstar_sim.simulation.artifact import ArtifactError, ReplayArtifact, replay
    from yieldstar_sim.simulation.run import SimulationRun, simulate
    from yieldstar_sim.simulation.scenario import ScenarioError, load_scenario
    from yieldstar_sim.views.export import export

    out = _output_folder(args.out)
    db = _database_path(args.db) if args.db else None
    if db is not None and args.runtime == "memory":
        raise UsageError("--db needs --runtime duckdb")
    started = time.perf_counter()
    run: SimulationRun
    try:
        if args.command == "run":
            scenario = load_scenario(args.scenario)
            run = simulate(scenario, args.seed, runtime=args.runtime, db=db)
        else:
            artifact = ReplayArtifact.load(args.artifact)
            run = replay(artifact, runtime=args.runtime)
    except (ScenarioError, ArtifactError) as error:
        raise UsageError(str(error)) from error
    elapsed = time.perf_counter() - started
    name = run.scenario.name
    stem = out / f"{name}-seed{run.seed}"
    drawn = export(run, out, args.format, stem=f"{stem.name}-graph")
    image = next(iter(drawn.values()))
    trace_file = stem.with_name(stem.name + "-trace.jsonl")
    trace_file.write_text(run.trace.to_jsonl(), encoding="utf-8")
    artifact_file = run.artifact().save(stem.with_name(stem.name + ".replay.json"))
    if args.json:
        print(
            json.dumps(
                {
                    "scenario": name,
                    "seed": run.seed,
                    "runtime": run.runtime_kind,
                    "ok": run.ok,
                    "violations": [
                        {
                            "invariant": v.invariant,
                            "message": v.message,
                            "artifact": str(artifact_file),
                        }
                        for v in run.violations
                    ],
                    "choice_points": run.points,
                    "faults": [f.describe() for f in run.faults],
                    "graph": str(image),
                    "exports": {format: str(path) for format, path in drawn.items()},
                    "trace": str(trace_file),
                    "artifact": str(artifact_file),
                    "elapsed_seconds": round(elapsed, 3),
                }
            )
        )
    else:
        if not args.quiet:
            print(f"{name}: {run.scenario.story}")
            print("\n".join(run.trace.lines()))
            print()
        print(run.explain())
        for format, path in drawn.items():
            print(f"{format}: {path}")
        print(f"trace: {trace_file}\nreplay artifact: {artifact_file}")
    run.runtime.close()
    return 0 if run.ok else 1


def _explore(args: argparse.Namespace) -> int:
    from yieldstar_sim.simulation.explorer import explore
    from yieldstar_sim.simulation.scenario import ScenarioError, load_scenario

    if args.max_faults < 0:
        raise UsageError(f"--max-faults must be 0 or more, not {args.max_faults}")
    if args.budget is not None and args.budget < 1:
        raise UsageError(f"--budget must be at least 1, not {args.budget}")
    if args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, not {args.jobs}")
    out = _output_folder(args.out)
    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as error:
        raise UsageError(str(error)) from error
    report = explore(
        scenario,
        max_faults=args.max_faults,
        strategy=args.strategy,
        budget=args.budget,
        seed=args.seed,
        stop_at_first=not args.all,
        runtime=args.runtime,
        confirm=None if args.no_confirm else "duckdb",
        jobs=args.jobs,
        out=out,
        progress=args.progress,
    )
    if args.json:
        print(json.dumps(report.to_json()))
    else:
        print(report.summary())
    return 0 if report.ok else 1


def _output_folder(path: str) -> Path:
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot create the output folder {path!r}: {error.strerror}") from error
    if not folder.is_dir():
        raise UsageError(f"the output path {path!r} is not a folder")
    return folder


def _database_path(path: str | None) -> str:
    if path is None:
        return ":memory:"
    db = Path(path)
    if db.is_dir():
        raise UsageError(f"--db {path!r} is a folder; give a file path such as run.duckdb")
    if not db.parent.is_dir():
        raise UsageError(f"--db {path!r}: the folder {str(db.parent)!r} does not exist")
    return str(db)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return _dispatch(parser, args)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as command-line tools do.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - replaces the broken stdout
        return 0


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        if args.command == "demo":
            return _demo(args)
        if args.command == "list":
            return _list(args)
        if args.command in ("run", "replay"):
            return _run(args)
        if args.command == "explore":
            return _explore(args)
        parser.error(f"unknown command {args.command!r}")  # argparse exits
    except UsageError as error:
        if args.debug:
            raise
        print(f"yieldstar-sim: error: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        if args.debug:
            raise
        print(f"yieldstar-sim: error: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    return 2


if __name__ == "__main__":
    sys.exit(main())
