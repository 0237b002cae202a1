"""Is the scenario deterministic? One schedule run twice on one runtime must give one trace.

Everything the simulator does is a function of the seed and the schedule, so two runs that
differ were told apart by something outside them: workflow code reading ``uuid4()``, the wall
clock or ``random`` outside a step. The explorer runs a schedule twice before it blames a
runtime for a trace that differs (Hypothesis's "Flaky" is the model), and ``replay`` of an
artifact whose trace it does not reproduce says the same when two replays differ.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from yieldstar_sim.simulation.narration import parting_words

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.trace import Trace

#: What a trace that differs between two runs of one schedule is, and its usual cause.
CAUSE = "workflow code reading uuid, time or random outside a step is the usual cause"


def first_difference(first: Trace, second: Trace) -> str | None:
    """Where two traces first differ, in words (None when they are the same)."""
    for number, (a, b) in enumerate(zip(first.events, second.events, strict=False)):
        if _form(a.to_json()) != _form(b.to_json()):
            return parting_words(number, a, b)
    shorter = min(len(first.events), len(second.events))
    if len(first.events) == len(second.events):
        return None
    longer = first if len(first.events) > shorter else second
    return parting_words(shorter, None, longer.events[shorter])


def _form(event: object) -> str:
    return json.dumps(event, sort_keys=True, default=str)


def not_deterministic(where: str) -> str:
    """The sentence for a scenario whose two runs of one schedule differ at ``where``."""
    return f"the scenario is not deterministic: first difference at {where}; {CAUSE}"


def twice(run: Callable[[], SimulationRun]) -> str | None:
    """Run ``run`` twice and return the sentence for the first difference (None when the two
    traces are the same). A run whose schedule no longer fits it (a move for an actor that
    waits at no point there) took another path than the run that made the schedule: that is
    the difference."""
    from yieldstar_sim.simulation.artifact import ArtifactError
    from yieldstar_sim.simulation.moves import ScheduleMismatch

    try:
        first = run()
        first.runtime.close()
        second = run()
        second.runtime.close()
    except (ScheduleMismatch, ArtifactError) as error:
        # ys.replay says a mismatch as an ArtifactError caused by it.
        mismatch = error if isinstance(error, ScheduleMismatch) else error.__cause__
        if not isinstance(mismatch, ScheduleMismatch):
            raise
        return not_deterministic(f"{mismatch} (the run that made the schedule went on there)")
    where = first_difference(first.trace, second.trace)
    return None if where is None else not_deterministic(where)
