"""The ``yieldstar-sim`` command line.

Exit codes: 0 when the promise held, 1 when an invariant was violated, 2 on bad input.
Errors a user can cause print one line naming the problem (a traceback only with ``--debug``).
"""

from __future__ import annotations

import argparse
import json
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
    return parser


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
        if args.command == "demo":
            return _demo(args)
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
