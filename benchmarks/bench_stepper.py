"""How fast the stepper follows its slider, on a run of about 100 events.

Run it from the repository root::

    MPLBACKEND=Agg .venv/bin/python benchmarks/bench_stepper.py            # about a minute
    MPLBACKEND=Agg .venv/bin/python benchmarks/bench_stepper.py --quick    # about 15 s
    MPLBACKEND=Agg .venv/bin/python benchmarks/bench_stepper.py --smoke    # 10 events (CI)

The run: four orders, each charged and shipped with ``step.start`` and settled with a durable
20 s delay, on two workers, one of which freezes for 40 s before recording a ship step (its
lease expires, the other worker replays, the frozen one is fenced), on the DuckDB runtime.

What it measures, without a kernel (the widgets are driven from Python, as the tests do):

* **build**: ``ys.Stepper(run)``, which shows the first event;
* **cold, in order**: setting ``slider.value`` to each event in turn on a fresh stepper, i.e.
  pressing *play*: every event shows for the first time (its records, its words, the timeline
  with the cursor; the graph picture only where the graph changed);
* **cold, random jumps**: the same, visiting the events in a random order (dragging the slider
  about);
* **warm**: visiting every event again (everything cached);
* **naive**: what the cache avoids, drawing the graph and timeline with ``draw_run`` and saving
  a PNG at each event (a few events only).

Each figure is the median over repetitions (3, 5 by default) of that repetition's per-event
median; the worst single event is reported too. Target, printed as PASS/MISS and never
asserted: under 200 ms per event, cold, for a 100-event run.

Then the issue's big run (``--orders``, 1,000 by default; 20 with ``--smoke``): N independent
orders (``charge-order -> step.start ship-order``), 4 workers, one crash, memory runtime. A
run that big shows the graph around each event (``widgets/graph_window.py``) and each table's
first rows and the event's changes. Measured on one fresh stepper: its build, the first move
(which folds the trace up to the event), then 200 random jumps and 200 events in order from the
middle, cold. Target: under 200 ms per event (median) at 1,000 orders.
"""

from __future__ import annotations

import gc
import random
import statistics
import sys
import time
from typing import TYPE_CHECKING

from _harness import footer, header, parser, sizes, timed, verdict

import yieldstar_sim as ys
from yieldstar_sim.views import draw_run
from yieldstar_sim.widgets import figure_png

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

TARGET_SECONDS = 0.200
ORDERS = (41, 42, 43, 44)
BIG_ORDERS = 1_000
VISITS = 200


@ys.workflow("ship-order")
def ship_order(step, params):  # type: ignore[no-untyped-def]
    return (
        yield from step.run(
            "book-courier",
            lambda: step.world.effect(
                "courier.booked", order=params["order"], idempotency_key=step.execution_id
            ),
        )
    )


@ys.workflow("charge-order")
def charge_order(step, params):  # type: ignore[no-untyped-def]
    order = params["order"]
    yield from step.run("charge", lambda: step.world.effect("card.charged", order=order))
    target = yield from step.start("ship", "ship-order", {"order": order})
    yield from step.delay("settle", 20)
    return {"shipment": target.execution_id}


SCENARIO = ys.Scenario(
    name="four-orders",
    workflows=[charge_order, ship_order],
    triggers=[ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}") for n in ORDERS],
    faults=[ys.Fault("freeze", op="put_step", step_key="ship", seconds=40)],
    invariants=[ys.at_most_once("courier.booked", by="order")],
)


def many_orders(count: int) -> ys.Scenario:
    """N independent orders on 4 workers; order-1's worker crashes before its ship step."""
    from yieldstar_sim.examples import charge_order as charge
    from yieldstar_sim.examples import ship_order as ship

    return ys.Scenario(
        name=f"orders-{count}",
        workflows=[charge, ship],
        triggers=[
            ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}")
            for n in range(1, count + 1)
        ],
        workers=4,
        faults=[ys.Fault("crash", op="put_step", execution_id="order-1", step_key="ship")],
        max_points=40 * count + 1_000,
    )


def big_run(count: int, visits: int) -> tuple[bool, str]:
    """The stepper over ``count`` orders: build, first move, random jumps, in order."""
    run = ys.simulate(many_orders(count), seed=0, runtime="memory")
    last = len(run.trace) - 1
    started = time.perf_counter()
    stepper = ys.Stepper(run)
    build = time.perf_counter() - started
    first = visit(stepper, [last])[0]
    jumps = list(range(1, last))
    random.Random(0).shuffle(jumps)
    jumped = visit(stepper, jumps[:visits])
    middle = last // 2
    in_order = visit(stepper, range(middle, min(middle + visits, last)))
    print(f"\nthe big run: {count:,} orders, {len(run.trace):,} events, "
          f"{len(run.executions):,} executions (the graph around each event)")  # fmt: skip
    print(f"{'per event (build: per stepper)':<34}{'median':>10}{'worst':>11}")
    print(f"{'build':<34}{ms(build):>10}{ms(build):>11}")
    print(f"{'first move (folds the trace)':<34}{ms(first):>10}{ms(first):>11}")
    for name, times in (("cold, random jumps", jumped), ("cold, in order", in_order)):
        print(f"{name:<34}{ms(statistics.median(times)):>10}{ms(max(times)):>11}")
    cold = max(statistics.median(jumped), statistics.median(in_order))
    run.runtime.close()
    return cold < TARGET_SECONDS, (
        f"under {TARGET_SECONDS * 1000:.0f} ms per event, cold, at {count:,} orders: "
        f"{ms(cold).strip()} median"
    )


def visit(stepper: ys.Stepper, order: Iterable[int]) -> list[float]:
    """Seconds to show each event, in the order given."""
    times = []
    for seq in order:

        def move(target: int = seq) -> None:
            stepper.slider.value = target

        times.append(timed(move, pause_gc=False))
    return times


def ms(seconds: float) -> str:
    """Milliseconds, padded for the table: ``'   12.5 ms'``."""
    return f"{seconds * 1000:7.1f} ms"


def main(argv: Sequence[str] | None = None) -> int:
    made = parser(__doc__)
    made.add_argument("--orders", type=int, default=None, help="orders in the big run")
    args = made.parse_args(argv)
    reps = args.reps or (1 if args.smoke else 3 if args.quick else 5)
    naive_events = 1 if args.smoke else 3 if args.quick else 6

    run = ys.simulate(SCENARIO, seed=0)
    # Smoke: every pass over the first 10 events only (the figures mean nothing then).
    events = min(len(run.trace), 10) if args.smoke else len(run.trace)
    began = header("stepper", details=f"{sys.platform}{sizes(args)}")
    visited = f" ({events} visited)" if events < len(run.trace) else ""
    print(
        f"run: {SCENARIO.name}, {len(run.trace)} events{visited}, {run.points} choice points, "
        f"{run.verdict_text}"
    )
    # The first stepper pays for importing ipywidgets, matplotlib and PIL: keep that out.
    ys.Stepper(run).view.pictures.timeline_png(0)

    rows: dict[str, list[float]] = {"build": [], "cold, in order": [], "cold, random jumps": [],
                                    "warm": []}  # fmt: skip
    worst: dict[str, float] = dict.fromkeys(rows, 0.0)
    rng = random.Random(0)
    gc.disable()
    try:
        for _ in range(reps):
            started = time.perf_counter()
            stepper = ys.Stepper(run)
            rows["build"].append(time.perf_counter() - started)
            times = visit(stepper, range(1, events))
            rows["cold, in order"].append(statistics.median(times))
            worst["cold, in order"] = max(worst["cold, in order"], *times)
            times = visit(stepper, range(events))
            rows["warm"].append(statistics.median(times))
            worst["warm"] = max(worst["warm"], *times)
            jumps = list(range(1, events))
            rng.shuffle(jumps)
            times = visit(ys.Stepper(run), jumps)
            rows["cold, random jumps"].append(statistics.median(times))
            worst["cold, random jumps"] = max(worst["cold, random jumps"], *times)
            gc.collect()
    finally:
        gc.enable()
    worst["build"] = max(rows["build"])
    naive = [
        timed(lambda seq=seq: figure_png(draw_run(run, upto=seq)), pause_gc=False)
        for seq in range(0, events, max(events // naive_events, 1))[:naive_events]
    ]
    rows["naive (draw_run + PNG)"] = [statistics.median(naive)]
    worst["naive (draw_run + PNG)"] = max(naive)

    print(f"\n{'per event (build: per stepper)':<34}{'median':>10}{'worst':>11}")
    for name, values in rows.items():
        print(f"{name:<34}{ms(statistics.median(values)):>10}{ms(worst[name]):>11}")
    cold = max(statistics.median(rows["cold, in order"]),
               statistics.median(rows["cold, random jumps"]))  # fmt: skip
    print(
        f"\ntarget: under {TARGET_SECONDS * 1000:.0f} ms per event, cold, for a ~100-event run: "
        f"{verdict(cold < TARGET_SECONDS)} ({ms(cold).strip()} median; worst single event {ms(max(worst['cold, in order'], worst['cold, random jumps'])).strip()})"  # noqa: E501
    )
    run.runtime.close()
    count = args.orders or (20 if args.smoke else BIG_ORDERS)
    ok, text = big_run(count, 20 if args.smoke else VISITS)
    print(f"target: {text}: {verdict(ok)}")
    footer(began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
