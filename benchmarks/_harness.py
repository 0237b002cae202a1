"""What every benchmark shares: its flags, header and footer, timing, and the plain-text report.

The benchmarks run as scripts (``python benchmarks/bench_runtime.py``), so this module is
imported from the script's own folder rather than from the package: it is not part of
yieldstar_sim's public surface. A benchmark keeps only what it measures and the figures it
reports; everything here is the same for all of them:

* ``parser`` makes the ``--quick``, ``--smoke`` and ``--reps`` flags every benchmark takes, and
  ``sizes`` names the sizes chosen (for the first line);
* ``header`` prints the first line (versions, machine, CPUs, load) and ``footer`` the last
  (``(took N s)``); ``progress`` writes a progress line to stderr, so stdout holds figures only;
* ``timed``, ``per_call`` and ``median`` time with ``time.perf_counter`` and summarise with
  ``statistics.median``;
* ``us``, ``ms``, ``pct``, ``table``, ``show``, ``verdict``, ``target`` and ``targets`` format
  the report: aligned columns, and the PASS/MISS lines of targets that are reported, never
  asserted.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

TARGETS = "Targets (reported, not asserted)"
"""The heading above every benchmark's PASS/MISS lines."""


# --------------------------------------------------------------------------- flags and frame


SMOKE_HELP = (
    "the tiniest sizes and one repetition (implies --quick): every section runs and every "
    "target line is printed, but the figures mean nothing (CI: make bench-smoke)"
)
"""The help text of ``--smoke``."""


class _Smoke(argparse.Action):
    """``--smoke`` sets ``smoke`` and ``quick`` both, so that a benchmark only shrinks below
    its quick sizes where it says so, and runs at its quick sizes everywhere else."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=False, help=SMOKE_HELP)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        namespace.smoke = True
        namespace.quick = True


def add_smoke(made: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``--smoke`` (see ``SMOKE_HELP``) to a parser not made by ``parser``; return it."""
    made.add_argument("--smoke", action=_Smoke)
    return made


def parser(
    doc: str | None, *, reps: str = "repetitions per measurement"
) -> argparse.ArgumentParser:
    """An argument parser described by the first paragraph of ``doc``, with ``--quick``,
    ``--smoke`` and ``--reps`` (its help text ``reps``) already added.

    >>> made = parser("A benchmark.")
    >>> made.parse_args(["--smoke"])
    Namespace(quick=True, smoke=True, reps=None)
    >>> made.parse_args(["--quick"])
    Namespace(quick=True, smoke=False, reps=None)
    """
    made = argparse.ArgumentParser(description=doc.split("\n\n")[0] if doc else None)
    made.add_argument("--quick", action="store_true", help="fewer iterations (a quick look)")
    add_smoke(made)
    made.add_argument("--reps", type=int, help=reps)
    return made


def sizes(args: argparse.Namespace) -> str:
    """``', smoke'``, ``', quick'`` or nothing: the sizes ``args`` chose, for ``header``'s
    details.

    >>> sizes(parser(None).parse_args(["--smoke"]))
    ', smoke'
    """
    return ", smoke" if args.smoke else ", quick" if args.quick else ""


def load() -> str:
    """The 1, 5 and 15-minute load averages, or ``?`` where the platform has none."""
    try:
        return ", ".join(f"{value:.2f}" for value in os.getloadavg())
    except (AttributeError, OSError):
        return "?"


def header(name: str, *versions: str, details: str = "") -> float:
    """Print the benchmark's first line and return the time it started (for ``footer``).

    The line names python, every ``versions`` entry (``"duckdb 1.2.0"``), the machine, its CPUs
    and load, then ``details`` (repetitions, sizes) after a semicolon.
    """
    parts = [f"python {platform.python_version()}", *versions, platform.machine()]
    parts.append(f"{os.cpu_count()} CPUs (load {load()})")
    tail = f"; {details}" if details else ""
    print(f"yieldstar_sim {name} benchmark: {', '.join(parts)}{tail}")
    return time.perf_counter()


def footer(began: float, note: str = "") -> None:
    """Print the last line: how long the benchmark took (after ``note``, if any)."""
    before = f"{note}; " if note else ""
    print(f"\n({before}took {time.perf_counter() - began:.1f} s)")


def progress(text: str) -> None:
    """A progress line on stderr, so that stdout holds only the figures."""
    print(f"  {text}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- timing


@contextmanager
def gc_paused(collect: bool = True) -> Iterator[None]:
    """Pause the garbage collector (after a full collection, if ``collect``) for a timing."""
    if collect:
        gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def timed(fn: Callable[[], object], *, pause_gc: bool = True) -> float:
    """Seconds one call of ``fn`` takes (garbage collector paused unless ``pause_gc`` is off)."""
    if not pause_gc:
        began = time.perf_counter()
        fn()
        return time.perf_counter() - began
    with gc_paused(collect=False):
        began = time.perf_counter()
        fn()
        return time.perf_counter() - began


def per_call(calls: Sequence[Callable[[], object]], *, pause_gc: bool = True) -> float:
    """Seconds per call of running ``calls`` in order, after a full collection; the collector
    stays paused while they run unless ``pause_gc`` is off."""
    gc.collect()
    with gc_paused(collect=False) if pause_gc else nullcontext():
        began = time.perf_counter()
        for call in calls:
            call()
        elapsed = time.perf_counter() - began
    return elapsed / len(calls)


def median(values: Iterable[float]) -> float:
    """``statistics.median`` of any iterable (a generator too)."""
    return statistics.median(list(values))


# --------------------------------------------------------------------------- report


def us(seconds: float) -> str:
    """Seconds as microseconds with one decimal: ``us(0.0012)`` is ``'1,200.0'``."""
    return f"{seconds * 1e6:,.1f}"


def ms(seconds: float, digits: int = 2) -> str:
    """Seconds as milliseconds with ``digits`` decimals: ``ms(0.0012)`` is ``'1.20'``."""
    return f"{seconds * 1e3:,.{digits}f}"


def pct(share: float) -> str:
    """A share as a percentage with one decimal: ``pct(0.1234)`` is ``'12.3%'``."""
    return f"{share:.1%}"


def spread(values: Iterable[float]) -> str:
    """The range of some counts: ``'2'`` when they all agree, else ``'1-3'``."""
    seen = list(values)
    low, high = min(seen), max(seen)
    return f"{low:g}" if low == high else f"{low:g}-{high:g}"


def verdict(ok: bool) -> str:
    """The word a benchmark prints beside a target: PASS when it was met, else MISS."""
    return "PASS" if ok else "MISS"


def table(rows: Sequence[Sequence[str]], right: Sequence[bool], indent: str = "") -> list[str]:
    """Format rows as aligned plain-text columns (the first row is the header).

    ``right`` says, column by column, whether to right-align (numbers) or left-align (names);
    every line starts with ``indent``.

    >>> print("\\n".join(table([["call", "us"], ["claim", "12.5"]], [False, True])))
    call     us
    -----  ----
    claim  12.5
    """
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    lines = []
    for r, row in enumerate(rows):
        cells = [
            cell.rjust(width) if align else cell.ljust(width)
            for cell, width, align in zip(row, widths, right, strict=True)
        ]
        lines.append(indent + "  ".join(cells).rstrip())
        if r == 0:
            lines.append(indent + "  ".join("-" * width for width in widths))
    return lines


def show(rows: Sequence[Sequence[str]], right: Sequence[bool] | bool, indent: str = "") -> None:
    """Print ``table(rows, right, indent)``; ``right=True`` right-aligns every column."""
    if isinstance(right, bool):
        right = [right] * len(rows[0])
    print("\n".join(table(rows, right, indent)))


def target(ok: bool, text: str) -> None:
    """Print one target line: ``  [PASS] text`` or ``  [MISS] text``."""
    print(f"  [{verdict(ok)}] {text}")


def targets(lines: Sequence[tuple[bool, str]]) -> None:
    """Print the targets heading, then one ``target`` line each."""
    print(f"\n{TARGETS}")
    for ok, text in lines:
        target(ok, text)


def count_instructions(
    args: Sequence[str], *, pythonpath: str, cwd: str | None = None
) -> int | None:
    """Machine instructions of one ``python ARGS`` child, counted by valgrind's callgrind with
    ``PYTHONHASHSEED=0`` (the same count on a loaded machine as on an idle one); None when
    valgrind printed no count. Callers count a child with no work and one with N runs and
    divide the difference, so start-up cancels."""
    with tempfile.NamedTemporaryFile("r", suffix=".log") as log:
        subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
             f"--log-file={log.name}", sys.executable, *args],
            cwd=cwd or tempfile.gettempdir(),
            env=dict(os.environ, PYTHONPATH=pythonpath, PYTHONHASHSEED="0"),
            capture_output=True, check=True,
        )  # fmt: skip
        found = [line for line in log.read().splitlines() if "Collected :" in line]
    return int(found[-1].rsplit(":", 1)[1]) if found else None
