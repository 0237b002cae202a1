"""Cost of building and rendering the views of a run (graph beside timeline) as runs grow.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_views.py            # full run, about 1-1.5 minutes
    .venv/bin/python benchmarks/bench_views.py --quick    # fewer repetitions, about 25 s
    .venv/bin/python benchmarks/bench_views.py --smoke    # 10 and 100 only, once each (CI)

The runs: a synthetic fan-out scenario, one trigger, 2 workers, memory runtime, seed 0. One
``fan-out`` parent starts N-1 ``child`` executions in a loop (``step.start(f"child-{i}",
"child", {"i": i})``); each child runs one ``step.run``. N = 10, 100 and 500 executions;
``max_points`` is raised with N so the run always finishes.

What it measures, per run size, with ``time.perf_counter`` (the garbage collector stays on, as
a user has it; a full collection runs before every repetition):

* **graph**: ``graph_from_trace(run.trace)``;
* **timeline**: ``build_timeline(run.trace, run.scenario.worker_names)``;
* **drawing**: ``draw_run(run)`` (Figure construction: axes, artists; no pixels yet) *minus*
  the graph and timeline builds of the same repetition, since ``draw_run`` builds both itself;
* **PNG**: ``figure.savefig(BytesIO(), format="png", dpi=100)`` on the Agg canvas: constrained
  layout, rasterising and encoding;
* **total**: ``draw_run`` + ``savefig`` of the repetition, i.e. build + drawing + PNG.

Every figure is the median over repetitions (7, 5, 3 for the three sizes; fewer with
``--quick``); the medians of the parts need not add up to the median total. One untimed
``draw_run`` + ``savefig`` first pays for imports and font caches.

Then, on fresh figures (median of fewer repetitions), what the PNG time is made of: one
``FigureCanvasAgg.draw()`` (layout and rasterising; ``savefig`` lays out once more with drawing
disabled before it rasterises) and the PNG encoding of the resulting RGBA buffer
(``matplotlib.image.imsave``, the call ``savefig`` makes).

Then the readability of the 100-execution picture: on its Agg renderer
(``figure.canvas.get_renderer()`` after a draw), the window extents of the graph's node labels
(text only, and the visible box drawn around it), of its edge labels, and of the timeline's
delivery labels; the number of overlapping pairs of each (touching is not overlapping); and how
tall the text would be with the picture scaled to fit a 1920-pixel-wide screen. The picture is
saved to ``/tmp/views-100.png`` (``--picture``) for a look.

Then the timeline alone, drawn and saved as PNG (``draw_timeline`` + ``savefig``), as it is
(bars batched: one ``broken_barh`` collection per lane and look) beside one artist per bar (as
it was: ``Axes.broken_barh`` patched for the measurement to make one collection per bar),
alternating, medians; ``--timeline-only`` runs just this section (and saves both pictures next
to ``--picture`` for a look).

Then the views at review size (``_views_orders.py``): 10, 100, 1,000 and 10,000 independent
orders (10,000 only in the full run, 10 and 100 with ``--smoke``), seconds, bytes and pixels
of each export format beside a plain run; ``--orders-only`` runs just this section.

Targets, reported as PASS/MISS (never asserted): build + render (total) under 1 s for 100
executions; at 1,000 orders, PNG + SVG + review page within 10x a plain run (issue 33), the
PNG alone (the drawing ``yieldstar-sim run`` makes) within 3x (issue 53), and the PNG at most
4,000 px a side.

Then the review page at 10 / 40 / 100 / 1,000 orders (``benchmarks/_views_review.py``: bytes
per trace event, seconds, against the plain run); ``--review-only`` runs just that section.

And the review page's targets (see ``_views_review.py``).

Then every bundled scenario copied to 1,000 triggers (``_views_copies.py``, issue 53): as
told and with a crash of its first copy, the plain run and the run's PNG, its pixels, whether
each execution a violation names is drawn alone in red with its sentence, and the review
page's bytes per event (200 triggers with ``--quick``, 20 with ``--smoke``);
``--copies-only`` runs just that section. Targets: every PNG at most 4,000 px a side, every
page at most 1,000 bytes per event, drawing within 3x the plain run.

Then a big state space drawn bounded (``_views_states.py``): a made-up 20,000-state space and,
in the full run, the 20,600 states of an exhaustive search of the booking race with 4
bookings; seconds to build, draw and save it, what the picture draws (target: under 5 s);
``--states-only`` runs just that section.
"""

from __future__ import annotations

import contextlib
import gc
import io
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import matplotlib
from _harness import footer, header, ms, parser, progress, show, sizes, targets
from _views_copies import copies_section
from _views_labels import DPI, Readability, rasterised, readability
from _views_orders import ORDER_SIZES, measure_orders, print_orders
from _views_review import review_section
from _views_states import states_section
from matplotlib.axes import Axes
from matplotlib.image import imsave

import yieldstar_sim as ys
from yieldstar_sim.views import (
    build_timeline,
    draw_execution_graph,
    draw_run,
    draw_timeline,
    graph_from_trace,
)

if TYPE_CHECKING:
    from collections.abc import Generator, Sequence

    from matplotlib.figure import Figure

    from yieldstar_sim.simulation import SimulationRun

SIZES = (10, 100, 500)
"""Executions per run: the parent and N-1 children."""
TARGET_SIZE = 100
TARGET_SECONDS = 1.0
SCREEN_WIDTH = 1920
"""Pixels: the width the picture is scaled to for the 'fit to screen' text height."""


# --------------------------------------------------------------------------- the runs


@ys.workflow("child")
def child(step: ys.StepRunner, params: dict[str, int]) -> Generator[Any, Any, int]:
    """One step, returning the child's index."""
    index = params["i"]
    value: int = yield from step.run("work", lambda: index)
    return value


@ys.workflow("fan-out")
def fan_out(step: ys.StepRunner, params: dict[str, int]) -> Generator[Any, Any, dict[str, int]]:
    """Start ``params["children"]`` children, one ``step.start`` each."""
    for i in range(params["children"]):
        yield from step.start(f"child-{i}", "child", {"i": i})
    return {"children": params["children"]}


def scenario(executions: int) -> ys.Scenario:
    """A parent that starts ``executions - 1`` children, on 2 workers."""
    return ys.Scenario(
        name=f"fan-out-{executions}",
        workflows=[fan_out, child],
        triggers=[ys.Trigger("fan-out", {"children": executions - 1}, execution_id="parent")],
        workers=2,
        max_points=20 * executions + 1_000,  # about 5 choice points per execution are needed
    )


def simulate(executions: int) -> SimulationRun:
    """The run with ``executions`` executions; refuses a run that did not finish cleanly."""
    run = ys.simulate(scenario(executions), seed=0, runtime="memory")
    finished = sum(1 for record in run.executions if str(record.status) == "completed")
    if not run.ok or finished != executions:
        raise RuntimeError(
            f"benchmark set-up: {run.scenario.name}: {run.verdict_text}, "
            f"{finished} of {executions} executions completed ({run.points} choice points)"
        )
    return run


# --------------------------------------------------------------------------- timing


def png(figure: Figure) -> bytes:
    """The figure as PNG bytes, as the views' users save it."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


@dataclass
class Timings:
    """Every repetition of one run size, in seconds."""

    executions: int
    events: int
    graph: list[float] = field(default_factory=list)
    timeline: list[float] = field(default_factory=list)
    drawing: list[float] = field(default_factory=list)
    png: list[float] = field(default_factory=list)
    total: list[float] = field(default_factory=list)
    raster: list[float] = field(default_factory=list)
    encode: list[float] = field(default_factory=list)
    draw_graph: list[float] = field(default_factory=list)
    draw_timeline: list[float] = field(default_factory=list)
    marks: int = 0
    spans: int = 0
    pixels: tuple[int, int] = (0, 0)
    png_bytes: int = 0


def measure(timings: Timings, run: SimulationRun) -> None:
    """One repetition: build both views, draw the run, save it as PNG."""
    gc.collect()
    t0 = time.perf_counter()
    graph_from_trace(run.trace)
    t1 = time.perf_counter()
    build_timeline(run.trace, run.scenario.worker_names)
    t2 = time.perf_counter()
    figure = draw_run(run)
    t3 = time.perf_counter()
    data = png(figure)
    t4 = time.perf_counter()
    graph, timeline, drawn, saved = t1 - t0, t2 - t1, t3 - t2, t4 - t3
    timings.graph.append(graph)
    timings.timeline.append(timeline)
    timings.drawing.append(drawn - graph - timeline)
    timings.png.append(saved)
    timings.total.append(drawn + saved)
    timings.png_bytes = len(data)
    width, height = figure.get_size_inches() * DPI
    timings.pixels = (round(width), round(height))


def measure_split(timings: Timings, run: SimulationRun) -> None:
    """What ``savefig`` spends: one layout-and-rasterise draw, then the PNG encoding."""
    _, canvas, raster = rasterised(run)
    buffer = io.BytesIO()
    started = time.perf_counter()
    rgba = canvas.buffer_rgba()  # type: ignore[no-untyped-call]
    imsave(buffer, rgba, format="png", dpi=DPI)
    timings.encode.append(time.perf_counter() - started)
    timings.raster.append(raster)
    graph = graph_from_trace(run.trace)
    timeline = build_timeline(run.trace, run.scenario.worker_names)
    gc.collect()
    started = time.perf_counter()
    draw_execution_graph(graph)
    timings.draw_graph.append(time.perf_counter() - started)
    gc.collect()
    started = time.perf_counter()
    draw_timeline(timeline)
    timings.draw_timeline.append(time.perf_counter() - started)
    timings.marks, timings.spans = len(timeline.marks), len(timeline.spans)


# --------------------------------------------------------------------------- batched bars


@contextlib.contextmanager
def one_artist_per_bar() -> Generator[None, None, None]:
    """Make ``Axes.broken_barh`` draw one collection per bar, as the timeline did before its
    bars were batched."""
    original = Axes.broken_barh

    def per_bar(self: Axes, xranges: Any, yrange: Any, **options: Any) -> Any:
        return [original(self, [bar], yrange, **options) for bar in xranges][-1]

    Axes.broken_barh = per_bar  # type: ignore[method-assign]
    try:
        yield
    finally:
        Axes.broken_barh = original  # type: ignore[method-assign]


def timeline_png(run: SimulationRun, *, batched: bool, save: str | None = None) -> float:
    """Seconds to build, draw and save the run's timeline alone as PNG."""
    gc.collect()
    with contextlib.nullcontext() if batched else one_artist_per_bar():
        started = time.perf_counter()
        figure = draw_timeline(build_timeline(run.trace, run.scenario.worker_names))
        data = png(figure)
        seconds = time.perf_counter() - started
    if save:
        with open(save, "wb") as file:
            file.write(data)
    return seconds


def measure_bars(
    runs: dict[int, SimulationRun], reps: int, picture: str
) -> dict[int, dict[str, float]]:
    """Median seconds of the timeline alone, batched and one artist per bar, by run size."""
    results = {}
    for executions, run in runs.items():
        if executions < TARGET_SIZE:
            continue
        times: dict[str, list[float]] = {"per bar": [], "batched": []}
        stem = picture.removesuffix(".png")
        for rep in range(reps):
            order = ("per bar", "batched") if rep % 2 == 0 else ("batched", "per bar")
            for mode in order:
                save = None
                if rep == 0 and executions == TARGET_SIZE:
                    save = f"{stem}-timeline-{mode.replace(' ', '-')}.png"
                times[mode].append(timeline_png(run, batched=mode == "batched", save=save))
        results[executions] = {mode: statistics.median(t) for mode, t in times.items()}
    return results


def print_bars(results: dict[int, dict[str, float]]) -> None:
    print("\nThe timeline alone, built, drawn and saved as PNG (medians, ms)")
    rows = [["executions", "one artist per bar", "batched", "batched / per bar"]]
    rows += [
        [
            str(executions),
            ms1(times["per bar"]),
            ms1(times["batched"]),
            f"{times['batched'] / times['per bar']:.2f}x",
        ]
        for executions, times in results.items()
    ]
    show(rows, [True] * 4, "  ")


# --------------------------------------------------------------------------- report


def ms1(seconds: float) -> str:
    """Milliseconds with one decimal."""
    return ms(seconds, 1)


def median_ms(values: Sequence[float]) -> str:
    """The median of ``values`` in milliseconds, or ``-`` when there are none."""
    return ms1(statistics.median(values)) if values else "-"


def print_timings(results: Sequence[Timings]) -> None:
    header = ["executions", "events", "reps", "graph ms", "timeline ms", "drawing ms", "PNG ms",
              "total ms", "picture px", "PNG KB"]  # fmt: skip
    rows = [header]
    for t in results:
        width, height = t.pixels
        rows.append(
            [
                str(t.executions),
                str(t.events),
                str(len(t.total)),
                median_ms(t.graph),
                median_ms(t.timeline),
                median_ms(t.drawing),
                median_ms(t.png),
                median_ms(t.total),
                f"{width:,} x {height:,}" if width else "-",
                f"{t.png_bytes / 1024:,.0f}",
            ]
        )
    show(rows, [True] * len(header))
    print(
        "\n  medians over the repetitions; drawing = draw_run - the graph and timeline builds;"
        "\n  PNG = savefig(png, dpi=100); total = draw_run + savefig (it includes both builds)."
    )


def print_split(results: Sequence[Timings]) -> None:
    rows = [["executions", "reps", "PNG ms", "layout+raster ms", "encode ms", "encode share"]]
    for t in results:
        if not t.raster:
            continue
        saved, encode = statistics.median(t.png), statistics.median(t.encode)
        rows.append(
            [
                str(t.executions),
                str(len(t.raster)),
                ms1(saved),
                median_ms(t.raster),
                ms1(encode),
                f"{encode / saved:.0%}",
            ]
        )
    print("\nWhat savefig spends (fresh figures; its extra layout pass is the rest of 'PNG ms')")
    show(rows, True, "  ")
    rows = [["executions", "reps", "drawing ms", "graph alone ms", "timeline alone ms", "marks",
             "spans"]]  # fmt: skip
    rows += [
        [
            str(t.executions),
            str(len(t.draw_graph)),
            median_ms(t.drawing),
            median_ms(t.draw_graph),
            median_ms(t.draw_timeline),
            str(t.marks),
            str(t.spans),
        ]
        for t in results
        if t.draw_graph
    ]
    print(
        "\nFigure construction by view: draw_execution_graph(graph) and draw_timeline(timeline),"
        "\neach on its own figure (the timeline adds one scatter collection per mark)"
    )
    show(rows, True, "  ")


def print_readability(seen: Readability, picture: str) -> None:
    width, height = seen.pixels
    scale = min(1.0, SCREEN_WIDTH / width)
    print(
        f"\nLabels of the {TARGET_SIZE}-execution picture ({width:,} x {height:,} px at {DPI} dpi, "
        f"saved to {picture})"
    )
    rows = [["labels", "count", "overlapping pairs", "labels overlapped", "font pt", "px",
             f"px at {SCREEN_WIDTH} wide"]]  # fmt: skip
    for item in seen.labels:
        px = item.fontsize * DPI / 72
        rows.append(
            [
                item.name,
                str(item.count),
                str(item.overlapping_pairs),
                str(item.labels_involved),
                f"{item.fontsize:g}",
                f"{px:.1f}",
                f"{px * scale:.1f}",
            ]
        )
    show(rows, [False, *[True] * 6], "  ")
    print(
        "\n  window extents on the figure's Agg renderer; 'px' is the font size in pixels, the"
        f"\n  last column the same with the whole picture scaled down to {SCREEN_WIDTH} px wide."
    )
    print(
        f"  edge labels standing nearer to a node that is neither end of their edge: "
        f"{seen.stray_edge_labels} of {seen.edge_labels}"
    )


# --------------------------------------------------------------------------- main


def orders_section(args: Any) -> list[tuple[bool, str]]:
    """The review-size orders section; 10,000 orders only in the full run (it takes minutes)."""
    order_sizes = ORDER_SIZES[:2] if args.smoke else ORDER_SIZES[:3] if args.quick else ORDER_SIZES
    rows = [measure_orders(n, 1 if args.smoke or n >= 1_000 else 3) for n in order_sizes]
    return print_orders(rows)


def arguments(argv: Sequence[str] | None) -> Any:
    """The command line: the harness's flags, where to save the picture, one section only."""
    args_parser = parser(__doc__, reps="repetitions for every size")
    args_parser.add_argument("--picture", default="/tmp/views-100.png", help="where to save it")
    args_parser.add_argument(
        "--timeline-only", action="store_true", help="only the batched-bars timeline section"
    )
    args_parser.add_argument(
        "--orders-only", action="store_true", help="only the review-size orders section"
    )
    args_parser.add_argument(
        "--review-only", action="store_true", help="only the review page section (orders)"
    )
    args_parser.add_argument(
        "--states-only", action="store_true", help="only the big state space section"
    )
    args_parser.add_argument(
        "--copies-only", action="store_true",
        help="only the section of every bundled scenario copied to 1,000 triggers",
    )  # fmt: skip
    return args_parser.parse_args(argv)


def sections_only(args: Any) -> None:
    """The sections asked for alone (``--orders-only`` ...), each with its targets."""
    if args.orders_only:
        png(draw_run(simulate(SIZES[0])))  # imports, font caches
        targets(orders_section(args))
    if args.review_only:
        targets(review_section(smoke=args.smoke, quick=args.quick))
    if args.states_only:
        targets(states_section(smoke=args.smoke, quick=args.quick))
    if args.copies_only:
        targets(copies_section(smoke=args.smoke, quick=args.quick))


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    matplotlib.use("Agg")
    # Smoke: every section once, without the 500-execution run (the target's 100 stays).
    run_sizes = tuple(size for size in SIZES if size <= TARGET_SIZE) if args.smoke else SIZES
    reps = dict(zip(SIZES, (3, 2, 1) if args.quick else (7, 5, 3), strict=True))
    split_reps = dict(zip(SIZES, (1, 1, 0) if args.quick else (3, 3, 1), strict=True))
    if args.smoke:
        reps = split_reps = dict.fromkeys(SIZES, 1)
    if args.reps:
        reps = dict.fromkeys(SIZES, args.reps)
    began = header(
        "views",
        f"matplotlib {matplotlib.__version__}",
        details="fan-out runs on 2 workers, memory runtime, seed 0" + sizes(args),
    )
    print()
    if args.orders_only or args.review_only or args.states_only or args.copies_only:
        sections_only(args)
        footer(began)
        return 0
    runs = {executions: simulate(executions) for executions in run_sizes}
    png(draw_run(runs[SIZES[0]]))  # imports, font caches
    bar_reps = 1 if args.smoke else 3 if args.quick else 7
    if args.timeline_only:
        print_bars(measure_bars(runs, bar_reps, args.picture))
        footer(began)
        return 0
    results = []
    for executions, run in runs.items():
        timings = Timings(executions, len(run.trace))
        for rep in range(reps[executions]):
            progress(f"{executions} executions: repetition {rep + 1}/{reps[executions]}")
            measure(timings, run)
        for _ in range(split_reps[executions]):
            measure_split(timings, run)
        results.append(timings)
    print_timings(results)
    print_split(results)
    print_bars(measure_bars(runs, bar_reps, args.picture))
    progress("readability")
    seen = readability(runs[TARGET_SIZE], args.picture)
    print_readability(seen, args.picture)
    order_targets = orders_section(args)

    sized = next(t for t in results if t.executions == TARGET_SIZE)
    total = statistics.median(sized.total)
    node_text, node_boxes = seen.labels[0], seen.labels[1]
    review = review_section(smoke=args.smoke, quick=args.quick)
    states = states_section(smoke=args.smoke, quick=args.quick)
    copies = copies_section(smoke=args.smoke, quick=args.quick)
    targets(
        [
            *review,
            *states,
            (
                total < TARGET_SECONDS,
                f"build + render under {TARGET_SECONDS:g} s for {TARGET_SIZE} executions: "
                f"{total:.2f} s (drawing {median_ms(sized.drawing)} ms, PNG "
                f"{median_ms(sized.png)} ms)",
            ),
            *order_targets,
            *copies,
        ]
    )
    print(
        f"  [info] {TARGET_SIZE}-execution graph: {node_boxes.overlapping_pairs} overlapping "
        f"pairs of node boxes, {node_text.overlapping_pairs} of node texts"
    )
    for run in runs.values():
        run.runtime.close()
    footer(began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
