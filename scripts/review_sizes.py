"""Measure the design-review page of every bundled scenario: its size, and what its steppers
carry (events, row changes the script replays, distinct strings).

Prints a Markdown table for docs/review.md::

    MPLBACKEND=Agg .venv/bin/python scripts/review_sizes.py

The run page is ``run.export("review.html")`` of seed 0 on the memory runtime (the pictures
and records do not depend on the runtime); the report page is ``report.export(...)`` of
``explore(scenario, max_faults=1, stop_at_first=False, confirm=None)``.
"""

from __future__ import annotations

import time

import yieldstar_sim as ys
from yieldstar_sim.simulation.scenario_files import bundled_scenarios
from yieldstar_sim.views.review import review_page, review_report_page, stepper_html


def kilobytes(size: int) -> str:
    return f"{size / 1000:,.0f} kB"


def main() -> None:
    print(
        "| scenario | events | row changes | strings | run page | violations | report page | time |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in bundled_scenarios():
        started = time.perf_counter()
        scenario = ys.load_scenario(name)
        run = ys.simulate(scenario, seed=0, runtime="memory")
        _, shared = stepper_html(run)
        page = len(review_page(run).encode())
        report = ys.explore(scenario, max_faults=1, stop_at_first=False, confirm=None)
        report_page = len(review_report_page(report, scenario=scenario).encode())
        elapsed = time.perf_counter() - started
        print(
            f"| {name} | {shared.events} | {shared.changes} | {shared.names} | "
            f"{kilobytes(page)} | {len(report.violations)} | {kilobytes(report_page)} | "
            f"{elapsed:.1f} s |"
        )


if __name__ == "__main__":
    main()
