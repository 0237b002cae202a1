"""The review page at scale: bytes per trace event and seconds per page, 10 to 1,000 orders.

``bench_views.py`` prints this section (``--review-only`` runs just it). The runs are the
issue's: N independent orders (``charge-order -> step.start ship-order``), 4 workers, one crash
(order-1's worker before it records its ship step), memory runtime, seed 0. Each page is
``review_page(run)`` (the run's trace folded into changed rows, the timeline drawn as SVG,
the HTML written); the figure is the median over repetitions with the garbage collector on,
after one untimed page pays for imports. Beside it, the plain run (``ys.simulate``) of the
same scenario, for the ratio the issue asks about.

Targets (reported, never asserted): at most 1,000 bytes per trace event, every execution
named in the page, and linear cost: the 40-order page within 6x the seconds of the 10-order.
"""

from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass

from _harness import progress, show

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order
from yieldstar_sim.views.review import review_page

ORDERS = (10, 40, 100, 1_000)
SMOKE_ORDERS = (10, 40)
BYTES_PER_EVENT = 1_000
LINEAR_RATIO = 6.0


def orders(count: int) -> ys.Scenario:
    """N independent orders on 4 workers; order-1's worker crashes before its ship step."""
    return ys.Scenario(
        name=f"orders-{count}",
        workflows=[charge_order, ship_order],
        triggers=[
            ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}")
            for n in range(1, count + 1)
        ],
        workers=4,
        faults=[ys.Fault("crash", op="put_step", execution_id="order-1", step_key="ship")],
        invariants=[ys.at_most_once("courier.booked", by="order")],
        max_points=40 * count + 1_000,
    )


@dataclass
class PageFigures:
    """One size's page: events, bytes, median seconds, the plain run's median seconds."""

    orders: int
    events: int
    bytes: int
    seconds: float
    run_seconds: float
    names_all: bool


def measure(count: int, reps: int) -> PageFigures:
    scenario = orders(count)
    run_times, page_times = [], []
    page = ""
    run = ys.simulate(scenario, seed=0, runtime="memory")
    for rep in range(reps):
        progress(f"review page, {count} orders: repetition {rep + 1}/{reps}")
        gc.collect()
        started = time.perf_counter()
        run = ys.simulate(scenario, seed=0, runtime="memory")
        run_times.append(time.perf_counter() - started)
        gc.collect()
        started = time.perf_counter()
        page = review_page(run)
        page_times.append(time.perf_counter() - started)
    if not run.ok:
        raise RuntimeError(f"benchmark set-up: {scenario.name}: {run.verdict_text}")
    named = all(record.execution_id in page for record in run.executions)
    return PageFigures(count, len(run.trace), len(page.encode()), statistics.median(page_times),
                       statistics.median(run_times), named)  # fmt: skip


def review_section(*, smoke: bool, quick: bool) -> list[tuple[bool, str]]:
    """Measure and print the review-page rows; returns the target lines."""
    review_page(ys.simulate(orders(4), seed=0, runtime="memory"))  # imports, font caches
    sizes = SMOKE_ORDERS if smoke else ORDERS
    figures = [measure(n, 1 if smoke or n >= 1_000 else 2 if quick else 3) for n in sizes]
    print("\nThe review page (review_page(run)) of N independent orders, 4 workers, one crash")
    rows = [["orders", "events", "page bytes", "bytes/event", "page s", "plain run s",
             "page / run", "names all"]]  # fmt: skip
    rows += [
        [
            f"{f.orders:,}",
            f"{f.events:,}",
            f"{f.bytes:,}",
            f"{f.bytes / f.events:,.0f}",
            f"{f.seconds:.2f}",
            f"{f.run_seconds:.2f}",
            f"{f.seconds / f.run_seconds:.1f}x",
            "yes" if f.names_all else "NO",
        ]
        for f in figures
    ]
    show(rows, [True] * 7 + [False], "  ")
    by_size = {f.orders: f for f in figures}
    worst = max(f.bytes / f.events for f in figures)
    ratio = by_size[40].seconds / by_size[10].seconds
    return [
        (worst <= BYTES_PER_EVENT,
         f"review page at most {BYTES_PER_EVENT:,} bytes per trace event: worst {worst:,.0f}"),
        (all(f.names_all for f in figures), "the review page names every execution"),
        (ratio <= LINEAR_RATIO,
         f"review page linear: 40 orders within {LINEAR_RATIO:g}x of 10 orders: {ratio:.2f}x "
         f"(bytes {by_size[40].bytes / by_size[10].bytes:.2f}x)"),
    ]  # fmt: skip
