"""A chord whose parts store their result before they count as done: the callback sums both.

A chord of two parts and a callback, as Celery runs one: each part works 20 s, then spends
10 s storing its result (``chord.result.N``) and only then marks itself done
(``chord.done.N``); the callback polls the done marks every 5 s and, once both are set, reads
the results and records their sum. A store write lands when the work reaches it (here at
t=30, after the 30 s of work), as an effect does: when the callback sees both marks, both
results are there. The explorer verifies it under any one fault (a part run again writes the
same values, so its attempts may overlap). chord-result-late marks the parts done first.
"""

from __future__ import annotations

import yieldstar_sim as ys

PARTS = (1, 2)


def work(step, part):
    step.world.elapse(20)  # the part's work
    step.world.elapse(10)  # storing its result takes time
    step.world.write(f"chord.result.{part}", part * 10)
    step.world.write(f"chord.done.{part}", True)  # done once the result is stored


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
    name="chord-result-late-fixed",
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
