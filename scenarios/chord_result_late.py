"""A chord whose parts count as done before their result is stored: the callback sums less.

The story of chord-result-late-fixed with the parts' two writes the other way round, as a
task's post-run once made them (celery/celery#703: the chord's part was counted before its
result was stored). Each part works 20 s and marks itself done (``chord.done.N``, landing at
t=20), then spends 10 s storing its result (``chord.result.N``, landing at t=30). The callback
polls at t=20 or t=25, sees both marks, reads the results, finds none, and records the sum of
nothing. No fault is needed: a store write lands when the work reaches it, as an effect does
(before issue 54 it landed when the body started, and this bug could not be seen).
"""

from __future__ import annotations

import yieldstar_sim as ys

PARTS = (1, 2)


def work(step, part):
    step.world.elapse(20)  # the part's work
    step.world.write(f"chord.done.{part}", True)  # the bug: counted before its result is stored
    step.world.elapse(10)  # storing its result takes time
    step.world.write(f"chord.result.{part}", part * 10)


def results_if_done(step):
    """The parts' results once every part says it is done, else None (poll again)."""
    if not all(step.world.read(f"chord.done.{part}", False) for part in PARTS):
        return None
    return [step.world.read(f"chord.result.{part}") for part in PARTS]


@ys.workflow("part")
def part(step, params):
    yield from step.run("work", work, step, params["part"])


@ys.workflow("callback")
def callback(step, params):
    results = None
    for poll in range(40):  # up to 200 s: long enough for a part delivered again
        results = yield from step.run(f"poll-{poll}", results_if_done, step)
        if results is not None:
            break
        yield from step.delay(f"wait-{poll}", 5)
    yield from step.run(
        "sum",
        lambda: step.world.effect("chord.summed", results=results, idempotency_key="chord-7"),
    )


def the_sum_has_every_part(run):
    """The callback summed a result from every part: none was missing when it read."""
    for effect in run.effects:
        if effect.name == "chord.summed" and (
            effect.data["results"] is None or None in effect.data["results"]
        ):
            summed = effect.data["results"]
            return f"the callback summed {summed} at t={effect.at:g}: a part's result was missing"
    return None


scenario = ys.Scenario(
    name="chord-result-late",
    workflows=[part, callback],
    triggers=[
        ys.Trigger("part", {"part": 1}, execution_id="part-1"),
        ys.Trigger("part", {"part": 2}, execution_id="part-2"),
        ys.Trigger("callback", {}, execution_id="chord-7"),
    ],
    workers=3,
    invariants=[the_sum_has_every_part],
    overlap_safe=["work"],
)
