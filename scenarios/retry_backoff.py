"""Retry policies on the virtual clock: backoff, a permanent error, a derived variant.

The welcome message fails three times before it goes through: send-welcome allows five
attempts with delays of 1, 2, 4 and 8 seconds (the steps guide's example), so it is sent at
t=7 on the fourth attempt. The loyalty card cannot be issued (a permanent error stops retries
at once). A derived single-attempt variant of the same step is used for the reminder, which
fails once and is not retried; the workflow records what happened.
"""

from __future__ import annotations

import yieldstar_sim as ys


def send_welcome(world, user, failures):
    if world.attempt <= failures:
        raise ConnectionError(f"mail server busy (attempt {world.attempt})")
    world.effect("welcome.sent", user=user, idempotency_key=f"welcome-{user}")
    return f"msg-{user}"


SEND_WELCOME = ys.define_step(
    "send-welcome", send_welcome, lambda s: s.retry(5).backoff(1, 2, 60).timeout(30)
)
SINGLE_ATTEMPT = SEND_WELCOME.derive(lambda s: s.retry(1))


def issue_card():
    raise ys.Permanent(LookupError("no loyalty programme in this country"))


@ys.workflow("onboard")
def onboard(step, params):
    welcome = yield from step.run("welcome", SEND_WELCOME, step.world, params["user"], 3)
    try:
        yield from step.run("card", issue_card)
        card = "issued"
    except ys.StepError as error:
        card = f"not issued after {error.attempts} attempt(s): {error.error.message}"
    try:
        yield from step.run("reminder", SINGLE_ATTEMPT, step.world, "reminder", 1)
        reminder = "sent"
    except ys.StepError as error:
        reminder = f"not sent after {error.attempts} attempt(s)"
    return {"welcome": welcome, "card": card, "reminder": reminder}


scenario = ys.Scenario(
    name="retry-backoff",
    workflows=[onboard],
    steps=[SEND_WELCOME],
    triggers=[ys.Trigger("onboard", {"user": "ada"}, execution_id="onboard-ada")],
    invariants=[ys.at_most_once("welcome.sent", by="user")],
)
