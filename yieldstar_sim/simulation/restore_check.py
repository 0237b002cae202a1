"""Checking a restore against a replay: the first restores of a run, then a sample, run the
restored state on (``CHECK_MOVES`` moves, or to its end) and a replay of the same path the same
way, and compare what each did. A runtime adapter whose ``snapshot`` and ``restore`` leave out
state of its own is then stopped with ``RestoreMismatch``, naming it, before a search counts
states it never reached."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from yieldstar_sim.runtime.memory import MemoryRuntime
from yieldstar_sim.simulation.determinism import CAUSE
from yieldstar_sim.simulation.moves import ScheduleMismatch
from yieldstar_sim.simulation.scenario import ScenarioError
from yieldstar_sim.simulation.trail import unwound

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager

    from yieldstar_sim.runtime.protocol import Runtime
    from yieldstar_sim.simulation.moves import Move
    from yieldstar_sim.simulation.trace import Trace
    from yieldstar_sim.simulation.trail import Trail

#: How many restores of a run are checked against a replay before sampling starts; after
#: that, the restores whose number is a power of 16 are (a search restores millions of
#: states, and a check costs two runs to their end).
CHECKED_RESTORES = 8
#: How many moves past a checked restore the two runs are compared over (then their records):
#: a state that an adapter puts back wrong shows within a few claims, and runs to their ends
#: cost a search of a few thousand schedules a twentieth of its time.
CHECK_MOVES = 200
#: How many replays of the path a restore that went on differently is compared with: replays
#: that differ from one another say the scenario is not deterministic (a workflow that tosses
#: an unseeded coin agrees with one more replay by chance half the time, with three an eighth).
REPLAYS = 4


class RestoreMismatch(Exception):
    """A state put back from a saved one went on differently from a replay of the path to
    it: the runtime adapter's ``snapshot`` and ``restore`` leave out state of its own. The
    search stops rather than count states it never reached."""


class Run(Protocol):
    """What a check reads of a run (an ``execution.Execution``)."""

    trace: Trace
    runtime: Runtime

    def take(self, move: Move) -> None: ...
    def moves(self) -> list[Move]: ...
    def done(self) -> bool: ...
    def unrecorded(self) -> AbstractContextManager[None]: ...
    def close(self) -> None: ...


def checked(count: int) -> bool:
    """Whether the ``count``-th restore of a run is checked."""
    return count <= CHECKED_RESTORES or (count & (count - 1) == 0 and count.bit_length() % 4 == 1)


def check_restore(
    execution: Run, path: Trail, put_back: Callable[[], None], fresh: Callable[[], Run]
) -> None:
    """Run ``execution`` (just put back at the end of ``path``) on, then a replay of ``path``
    on a ``fresh`` run the same way, and compare what each did
    (``RestoreMismatch`` when they differ); ``put_back`` the state in between and after."""
    restored = _run_out(execution)
    put_back()
    replayed = _replayed_out(fresh, path)
    if restored == replayed:
        return
    for _ in range(REPLAYS - 1):
        if _replayed_out(fresh, path) != replayed:
            return  # replays differ too: the scenario is not deterministic, which the
            # search's confirmation says in its own words; no adapter is to blame
    first = next(
        (i for i, (a, b) in enumerate(zip(restored, replayed, strict=False)) if a != b),
        min(len(restored), len(replayed)),
    )
    moves = len(unwound(path))
    seen = f"{_told(restored, first)} where the replays had {_told(replayed, first)}"
    if type(execution.runtime) is MemoryRuntime:
        # The reference runtime's snapshots are its own conformance cases' to vouch for: what
        # differs is the scenario's, though its replays happened to agree.
        raise ScenarioError(
            f"the search cannot go on: the scenario is not deterministic: a state put back "
            f"went on differently from {REPLAYS} replays of the same {moves} moves ({seen}), "
            f"and the memory runtime puts back all it keeps; {CAUSE}"
        )
    raise RestoreMismatch(
        f"the runtime adapter {type(execution.runtime).__name__} put back a state that went on "
        f"differently from {REPLAYS} replays of the same {moves} moves, which agreed with one "
        f"another: {seen}; its snapshot() and restore() must save and put back everything it "
        "keeps, or it must not offer them (its runs are then replayed). If the memory runtime "
        "runs the scenario with the same error, the scenario is not deterministic instead"
    )


def _replayed_out(fresh: Callable[[], Run], path: Trail) -> list[tuple[Any, ...]]:
    again = fresh()
    try:
        for step in unwound(path):
            try:
                again.take(step[0])
            except ScheduleMismatch as error:
                # The path was taken on states put back: one that a replay cannot take says
                # those states were not the ones the path reached.
                return [("replay", str(error))]
        return _run_out(again)
    finally:
        again.close()


def _run_out(execution: Run) -> list[tuple[Any, ...]]:
    """Take the first move at every point, ``CHECK_MOVES`` of them or to the end; what the run
    did since, as facts, and its records then."""
    start = len(execution.trace.events)
    with execution.unrecorded():
        for _ in range(CHECK_MOVES):
            if execution.done():
                break
            execution.take(execution.moves()[0])
    facts = [event.facts() for event in execution.trace.events[start:]]
    facts.append(("records", tuple(map(repr, execution.runtime.executions()))))
    return facts


def _told(facts: list[tuple[Any, ...]], index: int) -> str:
    """What a restore check saw at ``index``, in words."""
    if index >= len(facts):
        return "the end of the run"
    got = facts[index]
    if got[0] == "records":
        return "other records at the end"
    if got[0] == "replay":
        return f"a path it could not take again ({got[1]})"
    _, kind, worker, op, execution_id, step_key, *_ = got
    where = " ".join(str(part) for part in (worker, op, execution_id, step_key) if part)
    return f"a {kind} event ({where})"
