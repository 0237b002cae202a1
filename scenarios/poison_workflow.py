"""A report whose rendering kills its worker is recovered for ever, and takes a worker down
each time.

A reporting service renders each report in one step. Report report-huge has 250,000 pages:
rendering it runs its worker out of memory, 5 s in, on every attempt
(``step.world.crash_worker()``, the workflow's own code). The worker dies holding the lease;
when the lease runs out, the next claim recovers the execution, runs the step again, and
that worker dies too. Nothing ever ends it: it is recovered every 30 s until the run is cut,
each time taking a worker (and whatever else it would have run) down. This is DBOS before
its recovery limit: "buggy workflows that crash the execution environment ... will be
retried indefinitely, wasting resources and disrupting other work" (dbos-inc/dbos-transact-py
#113, the dead letter queue; run-llama/llama-agents#607 met it as an out-of-memory
crash-loop). Found with no fault: the crash is the scenario's own code, so every run and
every search keeps it. poison-workflow-fixed bounds its recoveries.
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
    name="poison-workflow",
    workflows=[render_report],
    triggers=[
        ys.Trigger("render-report", {"pages": 12}, execution_id="report-1"),
        ys.Trigger("render-report", {"pages": 250_000}, execution_id="report-huge"),
        ys.Trigger("render-report", {"pages": 40}, execution_id="report-2"),
    ],
    # Ten minutes of a crash-loop are enough to see it; the run is cut there.
    max_time=600,
    # The rendering service deduplicates by report: two attempts at once render it once.
    overlap_safe=["render"],
)
