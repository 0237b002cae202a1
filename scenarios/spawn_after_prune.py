"""Spawn after pruning: a business ID protects only while its record is retained.

order-42 spawns the detached survey survey-42, which runs at once and finishes. The shop prunes
finished runs at t=20, survey-42 among them. If the worker delivering order-42 crashed before it
recorded its spawn step, the replay at t=30 spawns survey-42 again: the ID is free, so it is a
new run, and the customer gets a second survey. "Protection expires with the run's retained
history" (the steps guide). Run with the fault plan, the invariant is violated; the explorer
finds the crash on its own.
"""

from __future__ import annotations

import yieldstar_sim as ys


@ys.workflow("survey")
def survey(step, params):
    yield from step.run(
        "send",
        lambda: step.world.effect(
            "survey.sent", order=params["order"], idempotency_key=step.execution_id
        ),
    )
    return "sent"


@ys.workflow("order")
def order(step, params):
    number = params["order"]
    yield from step.run("charge", lambda: step.world.effect("card.charged", order=number))
    survey_id = yield from step.spawn("survey", survey, f"survey-{number}", {"order": number})
    return {"survey": survey_id}


def one_survey_run_per_order(run):
    """The survey ID was admitted once. Counted from the runtime's records (one admission per
    incarnation), never from start_child's replies: a replayed spawn that answers for the same
    run is not a second one."""
    admitted = [a for a in run.admissions if a.execution_id == "survey-42"]
    if len(admitted) > 1:
        times = ", ".join(f"t={a.at:g}" for a in admitted)
        return (
            f"survey-42 was admitted {len(admitted)} times ({times}): it was pruned before the "
            "replayed spawn, so its business ID no longer protected it"
        )
    return None


scenario = ys.Scenario(
    name="spawn-after-prune",
    workflows=[order, survey],
    triggers=[ys.Trigger("order", {"order": 42}, execution_id="order-42")],
    faults=[ys.Fault("crash", op="put_step", step_key="survey")],
    prunes=[ys.Prune("survey-42", at=20)],
    invariants=[one_survey_run_per_order],
)
