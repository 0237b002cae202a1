"""The ``yieldstar-sim`` command line.

Exit codes: 0 ok (every invariant held and the run, or the search, finished), 1 violated,
2 bad input, 3 incomplete (a budget or the wall-clock limit cut it), 130 interrupted (Ctrl-C),
143 stopped by SIGTERM (``cli_signals``: what was found is kept, every child process ended).
Errors a user can cause print one line naming the problem (a traceback only with ``--debug``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import sys
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, NoReturn, TypeVar

from yieldstar_sim import cli_signals
from yieldstar_sim.cli_faults import FAULT_HELP, fault, fault_kinds
from yieldstar_sim.cli_files import (
    EXIT_CODES,
    FlagError,
    UsageError,
    for_terminal,
)
from yieldstar_sim.core.error_words import error_words
from yieldstar_sim.core.suggest import did_you_mean
from yieldstar_sim.simulation.deadline import RunTimedOut

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


NameT = TypeVar("NameT", bound=str)


def _timeout(text: str) -> float | None:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise argparse.ArgumentTypeError(f"a timeout is 0 (none) or more seconds, not {text!r}")
    return seconds or None


def _timeout_option(command: argparse.ArgumentParser, what: str) -> None:
    from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT

    command.add_argument(
        "--timeout", type=_timeout, default=DEFAULT_TIMEOUT, metavar="SECONDS",
        help=f"wall-clock limit of {what} (default {DEFAULT_TIMEOUT:g}; 0: none); a run it cuts "
        "is incomplete (exit 3)",
    )  # fmt: skip


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are also one JSON object on stdout under ``--json``
    (``{"error": ..., "exit": 2}``), so a script that reads the JSON reads the mistake too.
    Subcommands' parsers are of this class as well, and print their own usage."""

    json_errors = False
    """Whether the command line being parsed asks for JSON (set by ``main``)."""

    def error(self, message: str) -> NoReturn:
        message += _choice_suggestion(message)
        if self.json_errors:
            print(json.dumps({"error": f"{self.prog}: {message}", "exit": 2}))
        super().error(message)


# argparse's words for a value outside an argument's choices (with or without quotes, which
# vary between Python versions). A wording this does not match gets no suggestion, no worse.
_INVALID_CHOICE = re.compile(
    r"invalid choice: '?(?P<word>[^' ]*)'? \(choose from (?P<choices>.*)\)$"
)


def _choice_suggestion(message: str) -> str:
    """`` (did you mean 'run'?)`` for argparse's invalid-choice error, when a choice is near."""
    found = _INVALID_CHOICE.search(message)
    if found is None:
        return ""
    choices = [choice.strip(" '") for choice in found["choices"].split(",")]
    return did_you_mean(found["word"], choices)


def _json_error(args: argparse.Namespace, message: str) -> None:
    """Under ``--json``, the error as one JSON object on stdout (besides stderr's line)."""
    if getattr(args, "json", False):
        print(json.dumps({"error": message, "exit": 2}))


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
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

    listing = commands.add_parser(
        "list",
        help="list the bundled scenarios and their stories (or, with --faults, the faults)",
    )
    listing.add_argument(
        "--faults",
        action="store_true",
        help="list the fault kinds and the runtime calls (ops) a fault can be placed at",
    )
    listing.add_argument("--json", action="store_true", help="print one JSON object")

    run = commands.add_parser(
        "run",
        help="run a scenario once, check its invariants, draw its graph",
        description="Run SCENARIO (a bundled scenario's name, or a .py file that defines "
        "`scenario`) with its fault plan; exit 0 when every invariant held and the run "
        "finished, 1 when one was violated, 3 when the run was cut (incomplete).",
    )
    run.add_argument("scenario", metavar="SCENARIO")
    run.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    run.add_argument(
        "--fault", type=fault, action="append", default=[], metavar="KIND[:FIELD=VALUE,...]",
        help=FAULT_HELP,
    )  # fmt: skip
    _runtime_options(run, default=None, words="the scenario's own runtime, else duckdb")
    _focus_option(run)
    _timeout_option(run, "the run (and of the scenario file's import)")
    _trace_options(run, "print the verdict only, not the trace")

    explore = commands.add_parser(
        "explore",
        help="search faults and interleavings for invariant violations",
        description="Explore SCENARIO's faults (its own fault plan is left out) and "
        "interleavings; shrink each violation to a replay artifact saved in --out. Exit 0 when "
        "the search covered its bound and no invariant was violated, 1 when one was, 3 when a "
        "budget or the wall-clock limit cut it, 130 on Ctrl-C, 143 on SIGTERM (what was found is "
        "saved).",
    )
    explore.add_argument("scenario", metavar="SCENARIO")
    explore.add_argument(
        "--max-faults", type=int, default=1, metavar="K",
        help="faults per schedule (default 1; systematic and exhaustive: more than 3 need "
        "--budget or --time-budget)",
    )  # fmt: skip
    explore.add_argument(
        "--strategy", choices=("systematic", "random", "pct", "exhaustive"), default="systematic",
        help="systematic (default): every fault at every point of one interleaving, and every "
        "option of its draws and completion orders; random, pct: samples; exhaustive: every "
        "interleaving, draw and fault up to --max-faults",
    )  # fmt: skip
    explore.add_argument(
        "--kinds", type=fault_kinds, default=None, metavar="KIND,...",
        help="the fault kinds to try (default: every kind; `yieldstar-sim list --faults`)",
    )  # fmt: skip
    explore.add_argument("--budget", type=int, metavar="N", help="at most N schedules")
    explore.add_argument(
        "--max-depth", type=int, metavar="N",
        help="exhaustive: branch at the first N choice points of each schedule only",
    )  # fmt: skip
    explore.add_argument(
        "--time-budget", type=float, metavar="SECONDS",
        help="stop searching after SECONDS (the report says the budget cut it)",
    )  # fmt: skip
    explore.add_argument(
        "--order", choices=("dfs", "shortest"), default="dfs",
        help="exhaustive: depth first (default), or shortest first: the violation with the "
        "fewest faults, then events",
    )  # fmt: skip
    explore.add_argument(
        "--no-cache", action="store_true",
        help="exhaustive: no state caching (the naive search, to compare)",
    )  # fmt: skip
    explore.add_argument(
        "--no-reduction", action="store_true",
        help="exhaustive: no partial-order reduction (every move at every state, to compare)",
    )  # fmt: skip
    explore.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    explore.add_argument(
        "--jobs", type=int, default=1, metavar="N",
        help="worker processes (exhaustive: processes sharing one search's states)",
    )  # fmt: skip
    explore.add_argument(
        "--dask", metavar="ADDRESS", default=None,
        help="search on a Dask cluster: a scheduler's address (tcp://host:8786), or local:N for "
        "N worker processes on this machine (exhaustive: one search, its states partitioned over "
        "the workers; needs the dask extra, docs/cluster.md)",
    )  # fmt: skip
    explore.add_argument(
        "--all",
        action="store_true",
        help="run to the end instead of stopping at the first violation",
    )
    explore.add_argument(
        "--runtime", type=_runtime_choice, default=None, metavar="RUNTIME",
        help="runtime to explore on: memory (default, the fast path, unless the scenario names "
        "its own runtime), duckdb, postgres (YIELDSTAR_PG_DSN), or your own runtime's factory "
        "as package.module:factory",
    )  # fmt: skip
    explore.add_argument(
        "--confirm", type=_runtime_choice, default=None, metavar="RUNTIME",
        help="runtime to replay findings and a sample of passing schedules on (default duckdb; "
        "for a scenario that names its own runtime, its confirm_runtime, else none)",
    )  # fmt: skip
    explore.add_argument(
        "--no-confirm", action="store_true", help="do not replay findings on another runtime"
    )
    explore.add_argument(
        "--check-adapter", action="store_true",
        help="run the runtime-adapter conformance cases on --runtime first; failures are "
        "violations",
    )  # fmt: skip
    _output_options(
        explore,
        "folder for the replay artifacts and the pictures (default: out)",
        "formats of the pictures, as for run: the exploration grid and each violation's "
        "divergence figure (in the picture formats among them) and execution graph "
        "(default png); review: one self-contained HTML page of the whole exploration",
    )
    explore.add_argument("--progress", action="store_true", help="show a progress bar")
    explore.add_argument(
        "--quiet", action="store_true", help="print the verdict only, not each violation"
    )
    _timeout_option(explore, "each schedule")

    replay = commands.add_parser(
        "replay",
        help="replay a saved artifact: its run exactly, or against code edited since (a fix)",
        description="Replay ARTIFACT (a JSON file written by run or explore); with --scenario "
        "FILE edited since (a fix), its schedule and faults run against the code as it is and "
        "the output says where the run leaves the recorded one and whether the violation is "
        "gone. Exit 0 when every invariant held and the run finished, 1 when one was "
        "violated, 3 when cut (or when a recorded fault no longer fires: the replay did not "
        "test the fix).",
    )
    replay.add_argument("artifact", metavar="ARTIFACT")
    replay.add_argument(
        "--scenario", metavar="FILE",
        help="the scenario to replay the artifact with (a file you trust, or a bundled name), "
        "as it is now: code edited since the artifact was made (a fix) runs the recorded "
        "schedule and says whether the violation is gone; needed when the artifact's scenario "
        "file is not in the artifact's folder",
    )  # fmt: skip
    _runtime_options(replay, default=None)
    _focus_option(replay)
    _timeout_option(replay, "the replay")
    _trace_options(replay, "print the verdict only")
    for command in (demo, listing, run, explore, replay):
        # A mistake found after parsing (flags that do not go together) is reported by the
        # subcommand's parser, with its usage, as argparse reports its own.
        command.set_defaults(command_parser=command)
    return parser


def _trace_options(command: argparse.ArgumentParser, quiet: str) -> None:
    """``--quiet`` and ``--full-trace``: how much of a run's trace ``run`` and ``replay`` print."""
    from yieldstar_sim.views.trace_excerpt import TRACE_LINES

    command.add_argument("--quiet", action="store_true", help=quiet)
    command.add_argument(
        "--full-trace", action="store_true",
        help=f"print every event of the trace (past {TRACE_LINES} events the command prints "
        "the stories of the executions the violations name, or a fault struck, and the trace "
        "file holds every event)",
    )  # fmt: skip


def _runtime_options(
    command: argparse.ArgumentParser,
    default: str | None = "duckdb",
    words: str = "the one the artifact used, if bundled, or the scenario's own",
) -> None:
    command.add_argument(
        "--runtime", type=_runtime_choice, default=default, metavar="RUNTIME",
        help="duckdb, memory, postgres (the server YIELDSTAR_PG_DSN names), or your own "
        "runtime's factory as package.module:factory "
        f"(default: {default or words})",
    )  # fmt: skip
    command.add_argument(
        "--db", metavar="PATH", help="DuckDB file to keep the run in (default: in memory)"
    )
    command.add_argument(
        "--continue-db", action="store_true",
        help="run on a --db file that already holds records (by default it is refused: the "
        "run would mix with the earlier one's records)",
    )  # fmt: skip
    _output_options(
        command,
        "folder for graph, trace and artifact",
        "what to draw, comma-separated among svg,png,pdf,graphml,json,dot,mermaid,html,review "
        "(default png: the graph beside the timeline; review: one self-contained HTML page "
        "with a stepper, for design reviews)",
    )


def _focus_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--focus", action="append", default=[], metavar="ID",
        help="also draw execution ID's own timeline (its deliveries, the executions it "
        "started, what befell their workers), in the picture formats of --format (default "
        "png); repeat for more",
    )  # fmt: skip


def _output_options(command: argparse.ArgumentParser, out: str, formats: str) -> None:
    """``--out``, ``--format`` and ``--json``: where and what a command that draws writes, in
    ``out`` and ``formats``' words."""
    command.add_argument("--out", metavar="DIR", default="out", help=out)
    command.add_argument("--format", default="png", metavar="LIST", type=_format_list, help=formats)
    command.add_argument("--json", action="store_true", help="print one JSON object")


def _runtime_choice(text: str) -> str:
    """``memory``, ``duckdb``, ``postgres`` or ``package.module:factory`` (imported now, to
    refuse a typo)."""
    from yieldstar_sim.runtime.factory import RuntimeChoiceError, resolve_runtime

    try:
        return resolve_runtime(text)[0]
    except RuntimeChoiceError as error:
        near = "" if ":" in text else did_you_mean(text, ("memory", "duckdb", "postgres"))
        raise argparse.ArgumentTypeError(f"{error}{near}") from None


def _format_list(text: str) -> list[str]:
    from yieldstar_sim.views.formats import FORMATS  # not views.export: networkx stays unloaded

    chosen = [part.strip().lower() for part in text.split(",") if part.strip()]
    unknown = [part for part in chosen if part not in FORMATS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"unknown format {unknown[0] if unknown else text!r}; choose among {','.join(FORMATS)}"
        )
    return chosen


def _list(args: argparse.Namespace) -> int:
    from yieldstar_sim.simulation.scenario_files import bundled_scenarios, load_scenario

    if args.faults:
        return _list_faults(args)
    stories = {}
    for name in bundled_scenarios():
        try:
            stories[name] = load_scenario(name).story
        except Exception as error:  # one broken file should not hide the others
            stories[name] = f"(cannot load: {error})"
    if args.json:
        print(json.dumps({"scenarios": stories}))
    else:
        _print_columns(stories)
    return 0


def _print_columns(rows: Mapping[NameT, str], indent: str = "") -> None:
    """Each name and its words, the words lined up in a column after the longest name."""
    width = max(map(len, rows), default=0)
    for name, words in rows.items():
        print(f"{indent}{name:<{width}}  {words}")


def _list_faults(args: argparse.Namespace) -> int:
    """The fault kinds and choice-point ops, from the simulator's own tables."""
    from yieldstar_sim.simulation.faults import (
        CHOICE_POINT_OPS,
        DEFAULT_DELAY,
        DEFAULT_FREEZE,
        DEFAULT_SKEW,
        DEFAULT_STALL,
        KIND_EFFECTS,
    )

    kinds = {str(kind): effect for kind, effect in KIND_EFFECTS.items()}
    if args.json:
        print(json.dumps({"fault_kinds": kinds, "ops": CHOICE_POINT_OPS}))
        return 0
    print(
        "Fault kinds (ys.Fault(kind, ...); explore tries every one at every choice point where it "
        "applies:\na stall and a skew at elapses, a crash and a freeze at calls and elapses, "
        "a world_error at a body's calls to the outside world, lose_event, duplicate_event and "
        "delay_event at a sender's send_event, the rest at calls):"
    )
    _print_columns(kinds, indent="  ")
    print(
        "\nOps: the runtime calls (a body's heartbeat renews), and a body's elapse, draws and "
        "calls to the outside world, that are choice points (op=OP):"
    )
    _print_columns(CHOICE_POINT_OPS, indent="  ")
    print(
        '\nPlace a fault by description, e.g. ys.Fault("crash", op="put_step", '
        'step_key="ship")\n(also worker=, execution_id=, occurrence=; a freeze, a stall, a '
        f"skew and a delay_event take seconds=, default {DEFAULT_FREEZE:g}, {DEFAULT_STALL:g}, "
        f"{DEFAULT_SKEW:g} and {DEFAULT_DELAY:g}), or by choice-point index with at=."
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    command = argv is None
    if command:
        # Ctrl-C and SIGTERM stop the command keeping what it found, and end its children.
        cli_signals.watch()
    try:
        parser = _parser()
        _Parser.json_errors = "--json" in (sys.argv[1:] if argv is None else argv)
        args = parser.parse_args(argv)
        try:
            code = _dispatch(parser, args)
            sys.stdout.flush()
        except BrokenPipeError:
            # The reader went away (`| head`); every file was written before the command
            # printed. End quietly as Unix tools do: as a command, killed by SIGPIPE (only now:
            # with SIGPIPE's default all along, a write to a worker process a signal had ended
            # killed the command before it could keep what it found); in-process, with the
            # status a shell shows for it.
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - replaces the broken stdout
            if command and hasattr(signal, "SIGPIPE"):
                cli_signals.done()
                signal.signal(signal.SIGPIPE, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGPIPE)
            return 128 + 13
    except KeyboardInterrupt:  # before or after the command's own work: nothing to keep
        print("yieldstar-sim: interrupted", file=sys.stderr)
        code = cli_signals.exit_code()
    finally:
        if command:
            cli_signals.done()
    if command:
        cli_signals.leave(code)
    return code


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        if args.command == "demo":
            from yieldstar_sim.demo import demo_command

            return demo_command(args)
        if args.command == "list":
            return _list(args)
        if args.command in ("run", "replay"):
            from yieldstar_sim.cli_run import run_command

            return run_command(args)
        if args.command == "explore":
            from yieldstar_sim.cli_explore import explore_command

            return explore_command(args)
        parser.error(f"unknown command {args.command!r}")  # argparse exits
    except FlagError as error:
        if args.debug:
            raise
        args.command_parser.error(str(error))  # the subcommand's usage, then the line; exits 2
    except UsageError as error:
        if args.debug:
            raise
        _json_error(args, str(error))
        print(f"yieldstar-sim: error: {for_terminal(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("yieldstar-sim: interrupted", file=sys.stderr)
        return cli_signals.exit_code()
    except BrokenPipeError:
        raise  # not an error of the user's: the reader went away
    except RunTimedOut:
        # The wall-clock limit, wherever it passed: incomplete, as a run it cuts.
        if args.debug:
            raise
        print("yieldstar-sim: incomplete: cut by the wall-clock limit (--timeout)", file=sys.stderr)
        return EXIT_CODES["incomplete"]
    except BrokenProcessPool:
        # A worker process ended under the search: killed by the system, or ended by its own
        # last resort (a schedule that outlived its limit; it said so above). Not a verdict.
        if args.debug:
            raise
        if cli_signals.stopped():  # the command's own ending of its children, on a signal
            print("yieldstar-sim: interrupted", file=sys.stderr)
            return cli_signals.exit_code()
        print(
            "yieldstar-sim: incomplete: a worker process ended in the middle of the search "
            "(killed, or stopped past its time limit); nothing it ran is reported",
            file=sys.stderr,
        )
        return EXIT_CODES["incomplete"]
    except Exception as error:
        if args.debug:
            raise
        if cli_signals.stopped():  # on its way out of a signal: DuckDB's "Interrupted!"...
            print("yieldstar-sim: interrupted", file=sys.stderr)
            return cli_signals.exit_code()
        _json_error(args, error_words(error))
        print(f"yieldstar-sim: error: {for_terminal(error_words(error))}", file=sys.stderr)
        return 2
    except SystemExit:
        raise  # argparse's exit after its usage line
    except BaseException as error:  # a class of user code's own, out of a path none caught
        if args.debug:
            raise
        print(f"yieldstar-sim: error: {for_terminal(error_words(error))}", file=sys.stderr)
        return 2
    return 2


if __name__ == "__main__":
    sys.exit(main())
