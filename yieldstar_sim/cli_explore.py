"""``yieldstar-sim explore``: the search, its confirmation, its pictures and its exit code
(``cli.py`` parses the command line and dispatches here)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from yieldstar_sim import cli_signals
from yieldstar_sim.cli_files import (
    EXIT_CODES,
    FlagError,
    UsageError,
    explore_options_mistake,
    for_terminal,
    not_written,
    output_folder,
    unwritten,
)
from yieldstar_sim.views.statespace_bounds import why_not_drawn

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator
    from pathlib import Path

    from yieldstar_sim.cli_pictures import PictureProcess
    from yieldstar_sim.simulation.explorer import ExplorationReport
    from yieldstar_sim.simulation.explorer.strategy import StrategyOptions
    from yieldstar_sim.simulation.scenario import Scenario
    from yieldstar_sim.views.exploration import ExplorationPictures


def explore_command(args: argparse.Namespace) -> int:
    from yieldstar_sim.simulation.scenario import ScenarioError
    from yieldstar_sim.simulation.scenario_files import load_scenario

    mistake = explore_options_mistake(
        max_faults=args.max_faults, budget=args.budget, strategy=args.strategy,
        time_budget=args.time_budget,
    )  # fmt: skip
    if mistake is not None:
        raise FlagError(mistake)
    if args.jobs < 1:
        raise FlagError(f"--jobs must be at least 1, not {args.jobs}")
    if args.dask is not None and args.jobs > 1:
        raise FlagError("--jobs and --dask both say where the search runs: give one")
    exhaustive_only = [
        option
        for option, given in (
            ("--max-depth", args.max_depth is not None),
            ("--order", args.order != "dfs"),
            ("--no-cache", args.no_cache),
            ("--no-reduction", args.no_reduction),
        )
        if given
    ]
    if exhaustive_only and args.strategy != "exhaustive":
        raise FlagError(f"{exhaustive_only[0]} is an option of --strategy exhaustive only")
    if args.max_depth is not None and args.max_depth < 1:
        raise FlagError(f"--max-depth must be at least 1, not {args.max_depth}")
    if args.time_budget is not None and not args.time_budget > 0:
        raise FlagError(f"--time-budget must be a positive number, not {args.time_budget}")
    _warn_above_cpus(args.jobs)
    out = output_folder(args.out)
    from yieldstar_sim.simulation.restore_check import RestoreMismatch

    try:
        scenario = load_scenario(args.scenario, timeout=args.timeout)
        if args.dask is None:
            return _explore_scenario(args, scenario, out)
        with _connected(args.dask) as client:
            return _explore_scenario(args, scenario, out, client)
    except (ScenarioError, RestoreMismatch) as error:
        raise UsageError(str(error)) from error


@contextlib.contextmanager
def _connected(address: str) -> Iterator[Any]:
    from yieldstar_sim.simulation.cluster import connect

    stack = contextlib.ExitStack()
    try:
        client = stack.enter_context(connect(address))
    except ValueError as error:
        raise FlagError(f"--dask: {error}") from None
    with stack:
        yield client


def _explore_scenario(
    args: argparse.Namespace, scenario: Scenario, out: Path, client: Any = None
) -> int:
    from yieldstar_sim.cli_pictures import PictureProcess

    # Forked now, before the search's workers: it imports matplotlib while they search.
    drawer = PictureProcess(scenario, fork=args.jobs > 1)
    try:
        return _explore_and_draw(args, scenario, out, drawer, client)
    finally:
        drawer.close()


def _explore_and_draw(
    args: argparse.Namespace,
    scenario: Scenario,
    out: Path,
    drawer: PictureProcess,
    client: Any = None,
) -> int:
    from yieldstar_sim.simulation.explorer import explore
    from yieldstar_sim.simulation.scenario_runtime import BY_SCENARIO

    # DuckDB in memory and the memory runtime have no server to be missing; opening one here
    # would cost the command ~45 ms before the search (and --jobs N confirms in its workers).
    if not args.no_confirm and args.confirm not in ("duckdb", "memory", None):
        _check_confirm_runtime(args.confirm, scenario)
    # The review page is of the whole exploration, not one more file per violation.
    formats = [format for format in args.format if format != "review"]
    report = explore(
        scenario,
        max_faults=args.max_faults,
        strategy=_strategy(args),
        budget=args.budget,
        time_budget=args.time_budget,
        seed=args.seed,
        stop_at_first=not args.all,
        runtime=args.runtime,
        confirm=None if args.no_confirm else (args.confirm or BY_SCENARIO),
        check_adapter=args.check_adapter,
        jobs=args.jobs,
        executor=client,
        progress=args.progress,
        timeout=args.timeout,
        on_searched=lambda searched: drawer.start(searched, out, formats),
        **({} if args.kinds is None else {"kinds": args.kinds}),
    )
    # Saved here, not by explore: a file it cannot write (a full disk) loses nothing else, and
    # a signal waits until each artifact is whole.
    failed: list[str] = []
    with cli_signals.deferred():
        _save_artifacts(report, scenario, out, failed)
    drawn = _Drawn()
    try:
        drawn.pictures = drawer.write(report, out, formats)
        if "review" in args.format:
            from yieldstar_sim.core.filenames import file_stem

            page = out / f"{file_stem(report.scenario)}-review.html"
            drawn.review = report.export(page, scenario=scenario)
        drawn.states = _state_graph_files(report, out, formats)
    except KeyboardInterrupt:
        drawn.interrupted = True  # what was found is saved: say so, with what was drawn
    except OSError as error:
        failed.append(unwritten(error))
    except Exception:
        if not cli_signals.stopped():
            raise
        drawn.interrupted = True  # a picture process a signal ended as it drew
    with cli_signals.deferred():
        _print_report(args, report, drawn, scenario)
        if failed:
            print(f"yieldstar-sim: error: {for_terminal(not_written(failed))}", file=sys.stderr)
    if report.interrupted or drawn.interrupted:
        words = "" if not drawn.interrupted else " (while drawing: not every picture was drawn)"
        print(f"yieldstar-sim: interrupted{words}; what was found is above", file=sys.stderr)
        return cli_signals.exit_code()
    if failed:
        return 2
    return EXIT_CODES[report.verdict]


def _pictures() -> ExplorationPictures:
    from yieldstar_sim.views.exploration import ExplorationPictures

    return ExplorationPictures()


@dataclass
class _Drawn:
    """What the command drew after the search, so far: all of it, unless interrupted."""

    pictures: ExplorationPictures = field(default_factory=_pictures)
    review: Path | None = None
    states: dict[str, Path] = field(default_factory=dict)
    interrupted: bool = False


def _save_artifacts(
    report: ExplorationReport, scenario: Scenario, out: Path, failed: list[str]
) -> None:
    """Each violation's replay artifact, written whole into ``out``; a file that cannot be
    written is one line in ``failed``, the others are written all the same."""
    from yieldstar_sim.simulation.artifact import violation_file

    for number, found in enumerate(report.violations, 1):
        try:
            found.artifact_path = found.artifact.save(violation_file(out, scenario.name, number))
        except OSError as error:
            failed.append(unwritten(error))


def _print_report(
    args: argparse.Namespace, report: ExplorationReport, drawn: _Drawn, scenario: Scenario
) -> None:
    """The report as ``--json``, ``--quiet`` or in full (the runtime, and why, first), with
    every file written."""
    from yieldstar_sim.simulation.scenario_runtime import why_runtime

    pictures, review, states = drawn.pictures, drawn.review, drawn.states
    if args.json:
        data = report_json(report)
        data["grid"] = {format: str(path) for format, path in pictures.grid.items()}
        if states:
            data["state_graph"] = {format: str(path) for format, path in states.items()}
        if review is not None:
            data["review"] = str(review)
        for number, found in enumerate(data["violations"]):
            drawn_here = number < min(len(pictures.divergences), len(pictures.graphs))
            divergence = pictures.divergences[number] if drawn_here else {}
            graph = pictures.graphs[number] if drawn_here else {}
            found["divergence"] = {format: str(path) for format, path in divergence.items()}
            found["graph"] = {format: str(path) for format, path in graph.items()}
        print(json.dumps(data))
    elif args.quiet:
        print(for_terminal(_explore_verdict(report)))
    else:
        chosen = why_runtime("explore", args.runtime, scenario)
        print(for_terminal(f"runtime: {report.runtime} ({chosen})"))
        print(for_terminal(report.summary()))
        if report.violations and report.stopped_at_first and not report.exhausted:
            # Said, as the grid shows one fault kind: the tutorial's call lists them all.
            print(
                "stopped at the first violation: --all searches every point and lists every "
                "fault kind that breaks it (ys.explore(..., stop_at_first=False))"
            )
        if lines := pictures.lines():
            print("\n".join(lines))
        if states:
            print(f"state graph: {', '.join(str(path) for path in states.values())}")
        elif (why := why_not_drawn(report.state_space, report.distinct_states)) is not None:
            # Said, not silently left out: the reader looks for the file the other runs wrote.
            held = "those it kept" if report.state_space and report.state_space.full else "them all"
            print(f"state graph: not drawn: {why} (report.state_graph() has {held})")
        if review is not None:
            print(f"review page: {review}")


def _check_confirm_runtime(choice: str, scenario: Scenario) -> None:
    """Open the ``--confirm`` runtime once before the search: a server that is not there was
    found only after the whole search, and blamed on the artifact ("does not replay")."""
    from yieldstar_sim.core.clock import ManualClock
    from yieldstar_sim.core.model import InfrastructureError
    from yieldstar_sim.runtime.factory import RuntimeChoiceError, open_runtime

    try:
        open_runtime(choice, ManualClock(), options=scenario.runtime_options).close()
    except (RuntimeChoiceError, InfrastructureError) as error:
        raise UsageError(f"--confirm {choice}: {error} (or --no-confirm)") from error


def _strategy(args: argparse.Namespace) -> str | StrategyOptions:
    """The strategy's name, or its options where flags give some (only its own)."""
    if args.strategy != "exhaustive":
        return str(args.strategy)
    from yieldstar_sim.simulation.explorer import Exhaustive

    return Exhaustive(
        max_depth=args.max_depth, order=args.order, cache=not args.no_cache,
        reduction=not args.no_reduction,
    )  # fmt: skip


def _state_graph_files(report: ExplorationReport, out: Path, formats: list[str]) -> dict[str, Path]:
    """The exhaustive search's state space, written in the requested formats it has."""
    space = report.state_space
    if space is None or len(space) == 0 or why_not_drawn(space, report.distinct_states):
        return {}  # a space kept in part could be drawn without one of its violations
    from yieldstar_sim.core.filenames import file_stem
    from yieldstar_sim.views.statespace import STATE_GRAPH_FORMATS, export_state_graph

    wanted = [format for format in formats if format in STATE_GRAPH_FORMATS]
    if not wanted:
        return {}
    return export_state_graph(
        space, out, wanted, stem=f"{file_stem(report.scenario)}-states",
        title=f"{report.scenario}: {_states_in_words(report)}",
    )  # fmt: skip


def _states_in_words(report: ExplorationReport) -> str:
    """The state graph picture's count: all there are, or those a cut search reached."""
    states = f"{report.distinct_states:,} distinct states"
    cut_by = report.state_space.cut_by if report.state_space is not None else []
    if not cut_by:
        return states
    return f"{states} reached, not all there are: {'; '.join(cut_by)}"


def _explore_verdict(report: ExplorationReport) -> str:
    """One line for ``explore --quiet``: the scenario, the verdict and what was covered."""
    if not report.violations:
        return f"{report.scenario}: {report.verdict} ({report.coverage()})"
    names = ", ".join(dict.fromkeys(found.invariant for found in report.violations))
    stopped = (
        ", stopped at the first violation (--all searches every point)"
        if report.stopped_at_first and not report.exhausted
        else ""
    )
    return (
        f"{report.scenario}: VIOLATED {names} ({report.schedules_run} schedules{stopped}); "
        "run without --quiet for the explanation"
    )


def _warn_above_cpus(jobs: int) -> None:
    """More worker processes than CPUs only makes them wait for each other: say so (the
    explorer itself never starts more processes than it has schedules to run)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if cpus and jobs > cpus:
        print(
            f"yieldstar-sim: warning: --jobs {jobs} is more than the {cpus} CPUs this process "
            "may use; the worker processes will share them",
            file=sys.stderr,
        )


def report_json(report: ExplorationReport) -> dict[str, Any]:
    """The report as plain data: what ``--json`` prints, before the files it wrote (the CLI
    owns its JSON, as ``cli_run`` owns a run's)."""

    def plain(*names: str) -> dict[str, Any]:
        return {name: getattr(report, name) for name in names}  # in the order named

    data = {
        **plain("scenario", "strategy", "max_faults", "seed", "runtime", "ok", "verdict"),
        "coverage": report.coverage(),
        "stopped": str(report.stopped),
        **plain(
            "exhausted",
            "interrupted",
            "schedules_run",
            "skipped_equivalent",
            "total_under_bound",
            "incomplete_schedules",
            "incomplete_reasons",
            "unfair_schedules",
            "unfair_reasons",
            "warnings",
        ),
        **({"draws_branched": report.systematic.branched} if report.systematic else {}),
        "broken_by": report.broken_by(),
        "single_faults": [
            {"choice_point": label, "fault": kind, "verdict": verdict}
            for (label, kind), verdict in report.verdicts.items()
        ],
        "violations": [
            {
                "invariant": v.invariant,
                "message": v.message,
                "faults": v.faults,
                "nearest_passing": v.nearest_passing,
                "first_divergence": v.divergence,
                "artifact": None if v.artifact_path is None else str(v.artifact_path),
            }
            for v in report.violations
        ],
        **plain("runtime_mismatches", "nondeterminism", "adapter_failures", "confirmations"),
    }
    covered = report.exhaustive
    if covered is not None:
        data["completeness"] = {
            **plain("exhausted", "interrupted", "distinct_states", "schedules_run"),
            "stopped": str(report.stopped),
            "cut_by": report.cut_by,
            "states_in_graph": 0 if covered.state_space is None else len(covered.state_space),
            "pruned_by_cache": covered.pruned_by_cache,
            "spared_by_reduction": covered.spared_by_reduction,
            "lost": covered.lost,
            "progress": covered.progress,
            "naive_schedules": covered.naive_schedules,
            "max_faults": report.max_faults,
            "max_depth": covered.max_depth,
            "order": covered.order,
            "statement": report.coverage(),
        }
    data["elapsed_seconds"] = round(report.elapsed, 3)
    return data
