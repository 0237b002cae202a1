"""An event sent while its instance continues as new waits for the next run: no add is lost.

An eternal counter, the Durable Task framework's own example of continue-as-new: instance
``counter`` waits for an ``add`` event (60 s at most), adds its payload in a step that works
20 s, and continues as new with the total, so that its history never grows; a run that waits
60 s for nothing closes the counter. A sender adds 1 at t=0 and 2 at t=30. An event raised to
the instance while a run works on the last one, and is about to continue as new, is kept for
the instance, and the next run takes it (``step.wait_for_event`` takes the oldest event sent to
its run or to its instance): the fix of Azure/azure-functions-durable-extension#67 and
cschleiden/go-workflows#493, which bound it to the run that was ending and lost it.
The built-in "every accepted event is consumed or reported" holds under any one fault, the
event's own (lost, delivered twice, held back) among them: a lost event was never accepted,
a second copy carries the same event ID, and one that comes after the counter closed is
refused. continue-as-new-event is the engine with the bug.
"""

from __future__ import annotations

import yieldstar_sim as ys

WORK = 20
IDLE = 60


def add(step, total, event):
    """Add the event's payload to the total: the work takes 20 s."""
    step.world.elapse(WORK)
    return total + event.payload


@ys.workflow("counter")
def counter(step, params):
    total = params["total"]
    event = yield from step.wait_for_event("next", "add", timeout=IDLE)
    if event is None:
        return {"total": total, "runs": params["run"]}
    total = yield from step.run("add", lambda: add(step, total, event))
    yield from step.continue_as_new({"total": total, "run": params["run"] + 1})


scenario = ys.Scenario(
    name="continue-as-new-event-fixed",
    description=__doc__,
    workflows=[counter],
    triggers=[ys.Trigger("counter", {"total": 0, "run": 1}, execution_id="counter")],
    sends=[
        ys.SendEvent("add", 1, instance_id="counter", event_id="add-1"),
        ys.SendEvent("add", 2, instance_id="counter", event_id="add-2", at=30),
    ],
    # The add computes and touches nothing outside: two attempts of it at once (one stalled
    # past its lease, its retry elsewhere) are harmless, and only one records its total.
    overlap_safe=["add"],
)
