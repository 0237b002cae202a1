"""The views at review size, for ``bench_views.py`` (issue 33, item 6): N independent orders
(``charge-order`` starts ``ship-order`` with ``step.start``; 4 workers; a crash strikes
order-1 between its start and the record of its ship step; memory runtime, seed 0), N = 10,
100, 1,000 and 10,000.

Per size: the *plain run* (simulate, then write the trace as JSON lines and the graph as
node-link JSON, what a run without pictures keeps), then each export format on its own
(``ys.views.export(run, folder, [format])``, which builds the run's graph each time): seconds,
bytes written and, for the PNG, its pixels. Seconds are medians of the repetitions (one for
1,000 orders and up). The target: at 1,000 orders, PNG + SVG + review page within
``MAX_RATIO`` (10) times the plain run (issue 33), and the PNG, the picture ``yieldstar-sim
run`` draws, within ``MAX_DRAWING_RATIO`` (3) times (issue 53), measured in the same process
one after the other.
"""

from __future__ import annotations

import gc
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from _harness import median, progress, show

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order
from yieldstar_sim.views import execution_graph, export, to_node_link_json

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.simulation import SimulationRun

ORDER_SIZES = (10, 100, 1_000, 10_000)
#: The formats measured one by one, as ``export`` writes them (``review``: the review page).
ORDER_FORMATS = ("png", "svg", "review", "dot", "mermaid", "graphml", "json")
#: Issue 33's target at 1,000 orders: PNG + SVG + review page within this many plain runs.
MAX_RATIO = 10.0
#: Issue 53's: drawing the run, its PNG as ``yieldstar-sim run`` writes it, within this many.
MAX_DRAWING_RATIO = 3.0
#: The formats the target adds up.
RATIO_FORMATS = ("png", "svg", "review")
RATIO_AT = 1_000
#: The picture's largest side at 1,000 orders, at most (issue 33, item 3).
MAX_SIDE = 4_000


def orders(count: int) -> ys.Scenario:
    """``count`` orders, 4 workers, one crash (order-1's start is replayed)."""
    return ys.Scenario(
        name=f"orders-{count}",
        workflows=[charge_order, ship_order],
        triggers=[
            ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}")
            for n in range(1, count + 1)
        ],
        faults=[ys.Fault("crash", op="put_step", execution_id="order-1", step_key="ship")],
        workers=4,
        max_points=40 * count + 1_000,
    )


@dataclass
class OrdersRow:
    """One size's figures: seconds per format, bytes per format, the PNG's pixels."""

    orders: int
    events: int = 0
    plain: list[float] = field(default_factory=list)
    seconds: dict[str, list[float]] = field(default_factory=dict)
    size: dict[str, int] = field(default_factory=dict)
    pixels: tuple[int, int] = (0, 0)


def plain_run(count: int, folder: Path) -> SimulationRun:
    """Simulate, then write the trace and the graph JSON: what a run without pictures costs."""
    # No wall-clock limit: 10,000 orders take the simulator minutes (it is not what is measured).
    run = ys.simulate(orders(count), seed=0, runtime="memory", timeout=None)
    if not run.ok:
        raise RuntimeError(f"benchmark set-up: orders-{count}: {run.verdict_text}")
    (folder / "trace.jsonl").write_text(run.trace.to_jsonl(), encoding="utf-8")
    graph = execution_graph(run.runtime, run.effects)
    (folder / "graph.json").write_text(to_node_link_json(graph), encoding="utf-8")
    return run


def measure_orders(count: int, reps: int) -> OrdersRow:
    """The figures of one size: ``reps`` plain runs and ``reps`` exports of each format, the
    plain runs and the exports alternating."""
    from PIL import Image

    row = OrdersRow(count)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        run: SimulationRun | None = None
        for rep in range(reps):
            progress(f"{count:,} orders: repetition {rep + 1}/{reps}")
            if run is not None:
                run.runtime.close()
            began = time.perf_counter()
            run = plain_run(count, folder)
            row.plain.append(time.perf_counter() - began)
            row.events = len(run.trace)
            for format in ORDER_FORMATS:
                gc.collect()
                began = time.perf_counter()
                path = export(run, folder, [format], stem="orders")[format]
                row.seconds.setdefault(format, []).append(time.perf_counter() - began)
                row.size[format] = path.stat().st_size
                if format == "png":
                    with Image.open(path) as image:
                        row.pixels = image.size
        assert run is not None
        run.runtime.close()
    return row


def print_orders(rows: Sequence[OrdersRow]) -> list[tuple[bool, str]]:
    """The table of seconds, bytes and pixels; returns the targets' lines."""
    print(
        "\nThe views at review size: N independent orders (4 workers, one crash), each format "
        "exported on its own\n(seconds: medians; plain = simulate + trace JSONL + graph JSON)"
    )
    header = ["orders", "events", "plain s", "png px"]
    header += [f"{format} s" for format in ORDER_FORMATS]
    header += [f"{format} KB" for format in ORDER_FORMATS]
    lines = [header]
    lines.extend(
        [f"{row.orders:,}", f"{row.events:,}", f"{median(row.plain):.2f}",
         f"{row.pixels[0]:,}x{row.pixels[1]:,}"]
        + [f"{median(row.seconds[f]):.2f}" for f in ORDER_FORMATS]
        + [f"{row.size[f] / 1000:,.1f}" for f in ORDER_FORMATS]
        for row in rows
    )  # fmt: skip
    show(lines, [False, *[True] * (len(header) - 1)], indent="  ")
    lines_out: list[tuple[bool, str]] = []
    sized = next((row for row in rows if row.orders == RATIO_AT), None)
    if sized is not None:
        parts = [median(sized.seconds[format]) for format in RATIO_FORMATS]
        ratio = sum(parts) / median(sized.plain)
        lines_out.append(
            (
                ratio <= MAX_RATIO,
                f"{RATIO_AT:,} orders: PNG + SVG + review page within {MAX_RATIO:g}x a plain "
                f"run: ({' + '.join(f'{part:.2f}' for part in parts)}) s / "
                f"{median(sized.plain):.2f} s = {ratio:.1f}x",
            )
        )
        drawing = median(sized.seconds["png"]) / median(sized.plain)
        lines_out.append(
            (
                drawing <= MAX_DRAWING_RATIO,
                f"{RATIO_AT:,} orders: drawing (the PNG) within {MAX_DRAWING_RATIO:g}x a plain "
                f"run: {median(sized.seconds['png']):.2f} s / {median(sized.plain):.2f} s = "
                f"{drawing:.1f}x",
            )
        )
        side = max(sized.pixels)
        lines_out.append(
            (side <= MAX_SIDE, f"{RATIO_AT:,} orders: PNG at most {MAX_SIDE:,} px a side: {side:,}")
        )
    return lines_out
