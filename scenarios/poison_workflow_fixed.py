"""A report whose rendering kills its worker is dead-lettered after three recoveries, and the
other reports render.

The same reporting service as poison-workflow: report-huge's rendering runs its worker out of
memory on every attempt (``step.world.crash_worker()``). The workers now bound recoveries, as
DBOS's ``max_recovery_attempts`` does (dbos-inc/dbos-transact-py#113): an execution recovered
more than three times (``Scenario(max_recovery_attempts=3)``) is not run again but
acknowledged dead-lettered, for a person to look at, and the scenario declares that it
means it (``ys.expect(..., status="dead-lettered")``). report-1 and report-2 render once each.
Verified under any one fault: a freeze or crash recovers a healthy report once, far from the
bound.
"""

from __future__ import annotations

import yieldstar_sim as ys

#: Pages past which rendering runs the worker out of memory.
MEMORY_PAGES = 1_000


def render(step, pages):
    """Render the report's pages: 5 s of work, and the memory they need."""
    step.world.elapse(5)
    if pages > MEMORY_PAGES:
        step.world.crash_worker()  # out of memory: the process dies mid-step
    step.world.effect(
        "report.rendered", report=step.execution_id, idempotency_key=step.execution_id
    )
    return pages


@ys.workflow("render-report")
def render_report(step, params):
    pages = yield from step.run("render", render, step, params["pages"])
    return {"pages": pages}


scenario = ys.Scenario(
    name="poison-workflow-fixed",
    workflows=[render_report],
    triggers=[
        ys.Trigger("render-report", {"pages": 12}, execution_id="report-1"),
        ys.Trigger("render-report", {"pages": 250_000}, execution_id="report-huge"),
        ys.Trigger("render-report", {"pages": 40}, execution_id="report-2"),
    ],
    max_time=600,
    # The rendering service deduplicates by report: two attempts at once render it once.
    overlap_safe=["render"],
    # The fix: the fourth recovery dead-letters it instead of running it again.
    max_recovery_attempts=3,
    expected=[ys.expect(execution_id="report-huge", status="dead-lettered")],
    invariants=[ys.at_most_once("report.rendered", by="report")],
)
