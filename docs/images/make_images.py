"""Regenerate the README's and the docs' pictures: `.venv/bin/python docs/images/make_images.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order
from yieldstar_sim.views import draw_divergence, draw_exploration, draw_run

HERE = Path(__file__).parent


@ys.workflow("line")
def line(step: ys.StepRunner, params: Any) -> Any:
    """One line item: pick it."""
    return (yield from step.run("pick", lambda: step.world.effect("picked", line=params["line"])))


@ys.workflow("order")
def order(step: ys.StepRunner, params: Any) -> Any:
    """An order starts one line-item workflow per line."""
    for number in range(1, 100):
        yield from step.start(f"line-{number}", "line", {"line": number})
    return "ok"


#: One order starts 99 line items; the worker crashes at the start of line-50.
FAN_OUT = ys.Scenario(
    name="fan-out",
    workflows=[order, line],
    triggers=[ys.Trigger("order", {}, execution_id="order-1")],
    faults=[ys.Fault("crash", op="start", step_key="line-50")],
)


def orders(count: int) -> ys.Scenario:
    """``count`` orders on 4 workers; a crash makes order-1 replay its start of ship-order."""
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


def main() -> None:
    for name in ("trigger-in-step", "durable-start", "frozen-worker"):
        run = ys.simulate(ys.load_scenario(name), seed=0, runtime="duckdb")
        draw_run(run).savefig(HERE / f"{name}.png", dpi=100)
    draw_run(ys.simulate(FAN_OUT, seed=0, runtime="memory")).savefig(HERE / "fan-out.png", dpi=80)
    thousand = ys.simulate(orders(1_000), seed=0, runtime="memory")
    draw_run(thousand).savefig(HERE / "orders-1000.png", dpi=70)
    report = ys.explore(ys.load_scenario("trigger-in-step"), confirm=None, stop_at_first=False)
    draw_exploration(report).savefig(HERE / "explore-trigger-in-step.png", dpi=100)
    courier = next(v for v in report.violations if v.invariant.startswith("at_most_once"))
    draw_divergence(courier).savefig(HERE / "divergence-trigger-in-step.png", dpi=80)


if __name__ == "__main__":
    main()
