"""``at_most_once``: an effect in the outside world happens at most once (per value of a
data field), and when it happened twice, why."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.suggest import did_you_mean, misspelt
from yieldstar_sim.engine.world import WORKFLOW_CODE
from yieldstar_sim.simulation.invariants.evidence import listed, why_again
from yieldstar_sim.simulation.invariants.protocol import Violation
from yieldstar_sim.simulation.narration import body_words
from yieldstar_sim.simulation.trace_payloads import BodyData, SkewData, StallData, TraceKind

if TYPE_CHECKING:
    from yieldstar_sim.engine.world import Effect
    from yieldstar_sim.simulation.invariants.protocol import RunView
    from yieldstar_sim.simulation.trace import TraceEvent


@dataclass(frozen=True, slots=True)
class AtMostOnce:
    """The effect ``effect`` happened at most once per value of its data field ``by``.

    Effects that share an idempotency key count once: the outside service deduplicated them.
    """

    effect: str
    by: str | None = None
    final_only = False  # a safety property: a cut run can break it too

    @property
    def name(self) -> str:
        """``at_most_once(courier.booked, by=order)``."""
        return f"at_most_once({self.effect}" + (f", by={self.by})" if self.by else ")")

    def check(self, run: RunView) -> list[Violation]:
        """Count the effects per value of ``by``."""
        groups: dict[str, list[Any]] = defaultdict(list)
        keys: set[tuple[str, str]] = set()
        for effect in run.effects:
            if effect.name == self.effect:
                key = repr(effect.data.get(self.by)) if self.by else ""
                if effect.idempotency_key is not None:
                    if (key, effect.idempotency_key) in keys:
                        continue  # the same effect again, deduplicated by the service
                    keys.add((key, effect.idempotency_key))
                groups[key].append(effect)
        violations = []
        for key, effects in groups.items():
            if len(effects) < 2:
                continue
            which = f" for {self.by}={key}" if self.by else ""
            times = listed(
                [_effect_words(e) for e in effects], " and ", where="run.effects has every one"
            )
            violations.append(
                Violation(
                    self.name,
                    f"{self.effect} happened {len(effects)} times{which}: {times}; "
                    f"{_why_repeated(run, effects[0], effects[1])}",
                    # Every execution that did it, past what the sentence lists: the views
                    # mark each one (views.evidence.mark_violations reads the data too).
                    {
                        "count": len(effects),
                        "executions": list(dict.fromkeys(e.execution_id for e in effects)),
                    },
                )
            )
        return violations

    def misnamed(self, run: RunView) -> str | None:
        """A scenario mistake: the effect watched is one the run made, misspelt, or ``by``
        names a field none of its effects carry (each would count under None, and two of
        different orders would read as one order's twice)."""
        made = {effect.name for effect in run.effects}
        meant = misspelt(self.effect, made)
        if meant is not None:
            return (
                f"{self.name} watches the effect {self.effect!r}, which the run never made; it "
                f"made {meant!r} (the effects it made: {', '.join(sorted(made))})"
            )
        named = [effect.data for effect in run.effects if effect.name == self.effect]
        if self.by is None or not named or any(self.by in data for data in named):
            return None
        fields = sorted({field for data in named for field in data})
        carry = (
            "its one effect does not" if len(named) == 1 else f"none of its {len(named)} effects"
        )
        return (
            f"{self.name} counts {self.effect} by its field {self.by!r}"
            f"{did_you_mean(self.by, fields)}, which {carry} carry (their fields: "
            f"{', '.join(fields) or 'none'})"
        )

    def unwatched(self, run: RunView) -> str | None:
        """A warning when the run made no effect of this name (a name one slip from an effect
        the run made is an error: ``misnamed``)."""
        if any(effect.name == self.effect for effect in run.effects):
            return None
        names = sorted({effect.name for effect in run.effects})
        return (
            f"{self.name} watched nothing: the run made no effect named {self.effect!r} "
            f"(the effects it made: {', '.join(names) or 'none'})"
        )


def _effect_words(effect: Effect) -> str:
    token = f", token {effect.token}" if effect.token is not None else ""
    return (
        f"at t={effect.at:g} by {effect.worker} ({effect.execution_id} / {effect.step_key}, "
        f"attempt {effect.attempt}{token})"
    )


def _effect_event(run: RunView, effect: Effect) -> TraceEvent | None:
    """The trace event that recorded ``effect`` (effects and their events are in one order)."""
    for number, event in enumerate(run.trace.of_kind(TraceKind.EFFECT)):
        if number < len(run.effects) and run.effects[number] is effect:
            return event
    return None


def _admitted_how(run: RunView, execution_id: str) -> str:
    admissions = [a for a in run.admissions if a.execution_id == execution_id]
    if not admissions:
        return "admitted before the run"
    words = []
    for admission in admissions:
        by = f" ({admission.by[0]}, {admission.by[1]})" if admission.by else ""
        words.append(
            {
                "trigger": "triggered by the scenario",
                "body trigger": f"triggered without a request identity from step{by}",
                "start": f"started by request{by}",
                "child": f"created as an owned child by step{by}",
                "spawn": f"spawned by step{by}",
                "client trigger": f"triggered by a client for its request{by}",
            }.get(admission.how, f"admitted ({admission.how}{by})")
            + f" at t={admission.at:g}"
        )
    if len(admissions) > 1:
        return f"admitted {len(admissions)} times, " + ", then ".join(words)
    return words[0]


def _older(later: Effect, earlier: Effect) -> bool:
    """Whether ``later`` came from an older delivery (token), or an older attempt under one."""
    if later.token is None or earlier.token is None:
        return False
    return (later.token, later.attempt) < (earlier.token, earlier.attempt)


def _why_repeated(run: RunView, first: Effect, second: Effect) -> str:
    """Why an effect happened again: a replay, a retry, or another execution."""
    dedup = (
        "the service does not deduplicate it (an idempotency_key= on the effect models one that "
        "does)"
    )
    if first.execution_id != second.execution_id:
        return (
            f"two different executions did it: {first.execution_id}, "
            f"{_admitted_how(run, first.execution_id)}, and {second.execution_id}, "
            f"{_admitted_how(run, second.execution_id)}; one execution, not two, is the fix "
            "(a durable start, step.start, admits one), or a key the service deduplicates "
            "that is the same in both (idempotency_key= a business key, not the execution ID)"
        )
    if first.step_key != second.step_key:
        return (
            f"{first.execution_id} did it in two steps, {first.step_key} and "
            f"{second.step_key}: make it in one step, or give both one idempotency_key="
        )
    if first.step_key == WORKFLOW_CODE:
        return (
            f"it is made in workflow code, outside any step, and workflow code runs again on "
            f"every delivery of {first.execution_id} (token {first.token}, then token "
            f"{second.token}): wrap it in a step, `yield from step.run(key, lambda: "
            f"step.world.effect(...))`, so that a replay returns the recorded result"
        )
    step = f"step {first.step_key} of {first.execution_id}"
    incarnations = [a for a in run.admissions if a.execution_id == first.execution_id]
    if len(incarnations) > 1 and any(first.at < a.at <= second.at for a in incarnations):
        return (
            f"{first.execution_id} was {_admitted_how(run, first.execution_id)}: its record was "
            f"pruned and the ID admitted again, so {step} ran in a new run; {dedup}"
        )
    if _older(second, first):
        # The later effect comes from an older attempt or delivery: it outlived its timeout or
        # its lease while its retry ran.
        timed_out = any(
            isinstance(event.data, StallData)
            and event.data.timed_out
            and event.execution_id == second.execution_id
            and event.step_key == second.step_key
            and event.token == second.token
            and event.data.attempt == second.attempt
            for event in run.trace
        )
        outlived = (
            "outlived its timeout (its worker gave up on it and retried)"
            if timed_out
            else "outlived its lease"
        )
        return (
            f"a zombie attempt: attempt {second.attempt} of {step} under token {second.token} "
            f"{outlived}, the retry (attempt {first.attempt}, token {first.token}) acted, then "
            f"the stale attempt went on and acted again ("
            + (
                "its result is dropped, not its effects"
                if timed_out
                else "fencing refuses its writes, not its effects"
            )
            + f"); {dedup}"
        )
    if first.attempt != second.attempt:
        ended = next(
            (
                body_words(event.data) or "ran"
                for event in run.trace
                if isinstance(event.data, BodyData)
                and event.execution_id == first.execution_id
                and event.step_key == first.step_key
                and event.token == first.token
                and event.data.attempt == first.attempt
            ),
            "failed",
        )
        timeout = "timeout" in ended
        return (
            f"a retry: attempt {first.attempt} of {step} acted and then "
            + ("ran past its timeout" if timeout else ended)
            + f", so attempt {second.attempt} ran the body again"
            + ("" if first.token == second.token else f" (in delivery token {second.token})")
            + f"; {dedup}"
        )
    if first.token != second.token:
        cause = "on a replay"
        before, after = _effect_event(run, first), _effect_event(run, second)
        if before is not None and after is not None:
            cause = why_again(run, before, after)
        return (
            f"the same execution ran {step} again in a new delivery (token {second.token} after "
            f"token {first.token}) {cause}{_skewed(run, first)}: the body acted before its "
            f"result was recorded, and {dedup}"
        )
    return f"the body of {step} made it twice in one attempt"


def _skewed(run: RunView, effect: Effect) -> str:
    """Words for a worker whose clock ran behind when it made ``effect`` (it went on by its
    own clock while its lease had truly run out), or nothing."""
    behind = None
    for event in run.trace:
        if event.t > effect.at:
            break
        if isinstance(event.data, SkewData) and event.worker == effect.worker:
            behind = event.data.behind
    if not behind:
        return ""
    return (
        f" ({effect.worker}'s clock ran {behind:g}s behind: at true t={effect.at:g} it read "
        f"t={effect.at - behind:g} and believed its lease still held)"
    )


def at_most_once(effect: str, *, by: str | None = None) -> AtMostOnce:
    """The effect named ``effect`` happens at most once (per value of data field ``by``).

    >>> at_most_once("courier.booked", by="order").name
    'at_most_once(courier.booked, by=order)'
    """
    if not isinstance(effect, str) or not effect:
        raise ValueError(f"at_most_once needs an effect name, not {effect!r}")
    return AtMostOnce(effect, by)
