"""Regenerate the README's pictures: `.venv/bin/python docs/images/make_images.py`."""

from __future__ import annotations

from pathlib import Path

import yieldstar_sim as ys
from yieldstar_sim.views import draw_divergence, draw_exploration, draw_run

HERE = Path(__file__).parent


def main() -> None:
    for name in ("trigger-in-step", "durable-start", "frozen-worker"):
        run = ys.simulate(ys.load_scenario(name), seed=0, runtime="duckdb")
        draw_run(run).savefig(HERE / f"{name}.png", dpi=100)
    report = ys.explore(ys.load_scenario("trigger-in-step"), confirm=None, stop_at_first=False)
    draw_exploration(report).savefig(HERE / "explore-trigger-in-step.png", dpi=100)
    courier = next(v for v in report.violations if v.invariant.startswith("at_most_once"))
    draw_divergence(courier).savefig(HERE / "divergence-trigger-in-step.png", dpi=80)


if __name__ == "__main__":
    main()
