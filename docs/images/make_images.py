"""Regenerate the README's and the docs' pictures: `.venv/bin/python docs/images/make_images.py`
(`--gallery` for the gallery of docs/pictures.md alone: each bundled pattern copied to 1,000
triggers, violated and passing, as benchmarks/_views_copies.py copies it)."""

from __future__ import annotations

import sys
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


@ys.workflow("charge-order")
def charge_in_step(step: ys.StepRunner, params: Any) -> Any:
    """RFC 003's Problem: the shipment triggered inside a step, without a request ID."""
    order = params["order"]
    yield from step.run("charge", lambda: step.world.effect("card.charged", order=order))
    return (yield from step.run("ship", lambda: step.world.trigger("ship-order", params)))


def trigger_in_step_orders(count: int) -> ys.Scenario:
    """Issue 53's run: the Problem copied to ``count`` orders on 3 workers, order-150's worker
    crashing before it records the ship step."""
    return ys.Scenario(
        name=f"trigger-in-step-{count}",
        workflows=[charge_in_step, ship_order],
        triggers=[
            ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}")
            for n in range(1, count + 1)
        ],
        faults=[ys.Fault("crash", op="put_step", execution_id="order-150", step_key="ship")],
        invariants=[ys.at_most_once("courier.booked", by="order")],
        workers=3,
    )


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


#: The gallery: each bundled pattern whose story breaks, beside the one that holds, copied to
#: 1,000 triggers (the story's fault strikes the first copy).
GALLERY = (
    ("trigger-in-step", "durable-start"),
    ("client-retry-new-request-id", "client-retry-same-request-id"),
    ("cancel-in-backoff", "cancel-in-backoff-fixed"),
    ("orphan-after-cancel", "orphan-after-cancel-fixed"),
    ("effect-in-workflow-code", "effect-in-workflow-code-fixed"),
    ("random-in-workflow-code", "random-in-workflow-code-fixed"),
    ("random-replica", "random-replica-fixed"),
    ("skewed-lease-unfenced", "skewed-lease"),
    ("zombie-attempt", "zombie-attempt-fixed"),
)
GALLERY_TRIGGERS = 1_000


def gallery() -> None:
    """Each pattern of ``GALLERY`` copied to 1,000 triggers, drawn as `yieldstar-sim run` draws
    it, into docs/images/gallery/."""
    sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))
    from _views_copies import copied

    folder = HERE / "gallery"
    folder.mkdir(exist_ok=True)
    for pair in GALLERY:
        for name in pair:
            scenario = copied(ys.load_scenario(name), GALLERY_TRIGGERS)
            run = ys.simulate(scenario, seed=0, runtime="memory", timeout=None)
            draw_run(run).savefig(folder / f"{name}-1000.png", dpi=70)
            run.runtime.close()


def main() -> None:
    if "--gallery" in sys.argv[1:]:
        gallery()
        return
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
    bug = ys.simulate(trigger_in_step_orders(300), seed=0, runtime="memory")
    draw_run(bug).savefig(HERE / "trigger-in-step-300.png", dpi=70)
    bug.timeline("order-150").savefig(HERE / "order-150-timeline.png", dpi=80)
    gallery()


if __name__ == "__main__":
    main()
