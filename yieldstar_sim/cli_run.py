"""``yieldstar-sim run`` and ``replay``: one run, its files and its verdict (``cli.py`` parses the
command line and dispatches here)."""

from __future__ import annotations

import json
import sys
from functools import partial
from typing import TYPE_CHECKING

from yieldstar_sim import cli_signals
from yieldstar_sim.cli_files import (
    EXIT_CODES,
    FlagError,
    UsageError,
    check_database,
    database_path,
    for_terminal,
    not_written,
    output_folder,
    output_stem,
    unwritten,
)
from yieldstar_sim.core.files import write_whole

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping
    from pathlib import Path

    from matplotlib.figure import Figure

    from yieldstar_sim.simulation.result import SimulationRun


def run_command(args: argparse.Namespace) -> int:
    """``run`` and ``replay``: the run, its files (the data whole, then the pictures) and its
    words; the exit code of its verdict."""
    import time

    out = output_folder(args.out)
    db = database_path(args.db) if args.db else None
    if db is not None and args.runtime not in ("duckdb", None):
        raise FlagError("--db needs --runtime duckdb")
    if db is not None:
        check_database(db, continuing=args.continue_db)
    started = time.perf_counter()
    run = _simulated(args, db)
    elapsed = time.perf_counter() - started
    try:
        return _write_and_print(args, run, out, elapsed)
    finally:
        run.runtime.close()


def _simulated(args: argparse.Namespace, db: str | None) -> SimulationRun:
    """The run ``run`` or ``replay`` asks for."""
    from yieldstar_sim.simulation.artifact import ArtifactError, ReplayArtifact
    from yieldstar_sim.simulation.regression import replay
    from yieldstar_sim.simulation.run import simulate
    from yieldstar_sim.simulation.scenario import ScenarioError
    from yieldstar_sim.simulation.scenario_files import load_scenario

    try:
        if args.command == "run":
            scenario = load_scenario(args.scenario, timeout=args.timeout)
            return simulate(
                scenario, args.seed, runtime=args.runtime, db=db, timeout=args.timeout,
                faults=args.fault,
            )  # fmt: skip
        artifact = ReplayArtifact.load(args.artifact)
        chosen = load_scenario(args.scenario, timeout=args.timeout) if args.scenario else None
        return replay(artifact, runtime=args.runtime, scenario=chosen, db=db, timeout=args.timeout)
    except (ScenarioError, ArtifactError) as error:
        raise UsageError(str(error)) from error


def _write_and_print(
    args: argparse.Namespace, run: SimulationRun, out: Path, elapsed: float
) -> int:
    """Write the run's trace and artifact (whole: a signal waits), then its pictures (a signal
    stops them), then print it; a file that cannot be written is one line more, exit 2."""
    from yieldstar_sim.views.export import export

    stem = out / output_stem(run.scenario.name, run.seed, replayed=args.command == "replay")
    trace_file = stem.with_name(stem.name + "-trace.jsonl")
    artifact_file = stem.with_name(stem.name + ".replay.json")
    try:
        figures = _focus_figures(run, args)
    except ValueError as error:  # --focus names an execution the run never had
        raise UsageError(str(error)) from error
    failed: list[str] = []
    with cli_signals.deferred():  # the run's data first: the pictures are drawn from it
        for write in (
            partial(write_whole, trace_file, run.trace.to_jsonl()),
            partial(run.artifact().save, artifact_file),
        ):
            try:
                write()
            except OSError as error:
                failed.append(unwritten(error))
    drawn: dict[str, Path] = {}
    focused: dict[str, dict[str, Path]] = {}
    interrupted = False
    try:
        focused = _write_focus(figures, args, stem)
        drawn = export(run, out, args.format, stem=f"{stem.name}-graph")
    except KeyboardInterrupt:
        interrupted = True  # the trace and the artifact are written: say so
    except OSError as error:
        failed.append(unwritten(error))
    except Exception:
        if not cli_signals.stopped():
            raise
        interrupted = True  # on its way out of a signal
    with cli_signals.deferred():
        _print_run(
            args, run, elapsed=elapsed, drawn=drawn, focused=focused,
            files=(trace_file, artifact_file),
        )  # fmt: skip
        if failed:
            print(f"yieldstar-sim: error: {for_terminal(not_written(failed))}", file=sys.stderr)
    if interrupted:
        print("yieldstar-sim: interrupted while drawing; what was found is above", file=sys.stderr)
        return cli_signals.exit_code()
    return 2 if failed else EXIT_CODES[run.verdict]


def _print_run(
    args: argparse.Namespace,
    run: SimulationRun,
    *,
    elapsed: float,
    drawn: Mapping[str, Path],
    focused: Mapping[str, Mapping[str, Path]],
    files: tuple[Path, Path],
) -> None:
    """A run as ``--json`` or for people: the runtime and why, its story, trace, verdict and
    totals, and every file written (``files``: the trace and the artifact)."""
    from yieldstar_sim.simulation.scenario_runtime import why_runtime

    name = run.scenario.name
    trace_file, artifact_file = files
    totals = run.totals()
    if args.json:
        print(
            json.dumps(
                {
                    "scenario": name,
                    "seed": run.seed,
                    "runtime": run.runtime_kind,
                    "ok": run.ok,
                    "verdict": run.verdict,
                    "incomplete": run.incomplete,
                    "warnings": run.warnings,
                    "violations": [
                        {
                            "invariant": v.invariant,
                            "message": v.message,
                            "artifact": str(artifact_file),
                        }
                        for v in run.violations
                    ],
                    "choice_points": run.points,
                    "totals": totals.to_json(),
                    "faults": [f.describe() for f in run.faults],
                    "graph": next((str(path) for path in drawn.values()), None),
                    "exports": {format: str(path) for format, path in drawn.items()},
                    "focus": {
                        execution: {format: str(path) for format, path in paths.items()}
                        for execution, paths in focused.items()
                    },
                    "trace": str(trace_file),
                    "artifact": str(artifact_file),
                    "elapsed_seconds": round(elapsed, 3),
                    **_regression_json(run),
                }
            )
        )
        return
    if not args.quiet:
        why = why_runtime(args.command, args.runtime, run.scenario)
        print(for_terminal(f"runtime: {run.runtime_kind} ({why})"))
        story = run.scenario.story
        print(for_terminal(f"{name}: {story}" if story else name))  # no description: its name
        print(for_terminal("\n".join(_trace_lines(run, trace_file, whole=args.full_trace))))
        print()
    print(for_terminal(run.explain()))
    print("totals:")
    print(for_terminal("\n".join(f"  {line}" for line in totals.lines())))
    for format, path in drawn.items():
        print(f"{format}: {path}")
    for execution, paths in focused.items():
        print(for_terminal(f"{execution}'s timeline: " + ", ".join(map(str, paths.values()))))
    print(f"trace: {trace_file}\nreplay artifact: {artifact_file}")


def _trace_lines(run: SimulationRun, trace_file: Path, *, whole: bool) -> list[str]:
    """The trace as printed: every event of a story-size run (or with ``--full-trace``); at
    review size, a heading and the stories of the executions a reader looks for, since
    thousands of lines buried the verdict (``views.trace_excerpt``)."""
    from yieldstar_sim.views.trace_excerpt import trace_excerpt

    if whole:
        return run.trace.lines()
    excerpt = trace_excerpt(run)
    if excerpt.whole:
        return excerpt.lines
    where = f"{trace_file} (--full-trace prints them all)"
    return [excerpt.heading(where), *excerpt.lines]


def _focus_figures(run: SimulationRun, args: argparse.Namespace) -> dict[str, Figure]:
    """``--focus ID``: each execution's own timeline, drawn; an ID the run never had is a
    ValueError naming the nearest it has, before anything is written."""
    from yieldstar_sim.views.figures import draw_focus

    return {execution: draw_focus(run, execution) for execution in dict.fromkeys(args.focus)}


def _write_focus(
    figures: Mapping[str, Figure], args: argparse.Namespace, stem: Path
) -> dict[str, dict[str, Path]]:
    """Each focused timeline in the picture formats among ``--format`` (PNG if none), as
    ``STEM-ID-timeline.png``."""
    from yieldstar_sim.core.filenames import file_stem
    from yieldstar_sim.views.figures import figure_bytes
    from yieldstar_sim.views.formats import EXTENSIONS, FIGURE_FORMATS

    formats = [format for format in args.format if format in FIGURE_FORMATS] or ["png"]
    written: dict[str, dict[str, Path]] = {}
    for execution, figure in figures.items():
        paths = {}
        for format in formats:
            path = stem.with_name(f"{stem.name}-{file_stem(execution)}-timeline")
            path = path.with_name(path.name + EXTENSIONS[format])
            paths[format] = write_whole(path, figure_bytes(figure, format))
        written[execution] = paths
    return written


def _regression_json(run: SimulationRun) -> dict[str, object]:
    """A replay against edited code: how its run compares with the recorded one."""
    found = run.regression
    if found is None:
        return {}
    return {
        "regression": {
            "recorded_scenario": found.recorded_scenario,
            "fixed": found.fixed,
            "parted_at": found.parted_at,
            "parting": found.parting,
            "gone": list(found.gone),
            "still": list(found.still),
            "new": list(found.new),
            "unfired": list(found.unfired),
        }
    }
