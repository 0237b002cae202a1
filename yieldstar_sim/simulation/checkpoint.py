"""A run's state saved at a choice point and put back later: the exhaustive search restores a
state instead of replaying the path to it.

What is data is copied: the clock, the runtime's records (a runtime that can ``snapshot``
itself: the memory runtime), the trace, the ledger and the world's store (by length where
they only grow), each worker's clock and each lease's end, the admissions, the completion
orders, the world's random state, the faults applied, and the kernel's queue. What is not
data, the actors' generators, is made again from what each was told (``recorder.Recorder``):
only the actors that moved since the save, each from its last ``reset`` (a worker's current
delivery at most). Everything is put back in place, into the same objects, since the actors
that did not move hold them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.kernel import Deferred
from yieldstar_sim.simulation.recorder import ActorLog

if TYPE_CHECKING:
    from yieldstar_sim.simulation.kernel import KernelState
    from yieldstar_sim.simulation.state import RunState


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A run's state at one choice point (``take``), to ``put_back``."""

    kernel: KernelState
    runtime: Any
    trace: int
    effects: int
    store: dict[str, str]
    behind: dict[str, float]
    lease_ends: dict[tuple[str, int], float]
    admissions: int
    admitted: frozenset[tuple[str, int]]
    groups: dict[int, tuple[str, ...]]
    world_random: Any
    plan: tuple[int, tuple[int, ...], tuple[bool, ...]]
    chooser_random: Any
    logs: dict[str, tuple[ActorLog, int]]


def restorable(state: RunState) -> bool:
    """Whether ``state`` can be saved and restored: its actors are recorded and its runtime
    can ``snapshot`` and ``restore`` its records (the memory runtime can; a database cannot,
    cheaply)."""
    runtime = state.runtime
    return (
        state.recorder is not None
        and callable(getattr(runtime, "snapshot", None))
        and callable(getattr(runtime, "restore", None))
    )


def take(state: RunState) -> Checkpoint:
    """Save ``state`` as it is now (between two choice points, or while one is chosen)."""
    recorder = state.recorder
    assert recorder is not None, "a run saved for restoring records its actors"
    made = state._world_random
    return Checkpoint(
        kernel=state.kernel.snapshot(),
        runtime=state.runtime.snapshot(),  # type: ignore[attr-defined]
        trace=len(state.trace.events),
        effects=len(state.ledger.effects),
        store=dict(state.store.canonical),
        behind=dict(state.clocks.behind),
        lease_ends=dict(state.lease_ends),
        admissions=len(state.admissions),
        admitted=frozenset(state.admitted),
        groups={number: tuple(order) for number, order in state.groups.items()},
        world_random=None if made is None else made.getstate(),
        plan=state.plan.snapshot(),
        # The kernel's own random choices, when it makes them (a search chooses itself).
        chooser_random=state.kernel.rng.getstate() if state.kernel.chooser is None else None,
        logs=recorder.snapshot(),
    )


def put_back(state: RunState, checkpoint: Checkpoint) -> int:
    """Put ``state`` back as ``checkpoint`` saved it; returns how many actors moved since, each
    made again from its log when it next moves (``kernel.Deferred``)."""
    recorder = state.recorder
    assert recorder is not None, "a run saved for restoring records its actors"
    _put_back_data(state, checkpoint)
    kernel = state.kernel
    running = kernel.generators()
    actors: dict[str, Any] = {}
    made = 0
    for name in sorted(checkpoint.kernel.actors):
        log, length = checkpoint.logs[name]
        actor = running.get(name)
        if actor is not None and recorder.logs.get(name) is log and len(log.entries) == length:
            actors[name] = actor  # it has not moved since: it stands where it stood
            continue
        again = ActorLog(log.factory, log.entries[:length])
        recorder.logs[name] = again
        # Made when it next moves: most restored runs are cut at their next choice point,
        # before any actor but the one that moves there has moved.
        # Its log is told nothing more before it is made (nothing logs for an actor that has
        # not run again), so the one just installed is the one it is made from.
        actors[name] = Deferred(partial(recorder.rebuild, name, again))
        made += 1
    for name, actor in running.items():
        if actors.get(name) is not actor and type(actor) is not Deferred:
            recorder.discard(actor)
    for name in [name for name in recorder.logs if name not in checkpoint.kernel.actors]:
        del recorder.logs[name]
    kernel.restore(checkpoint.kernel, actors)
    return made


def _put_back_data(state: RunState, checkpoint: Checkpoint) -> None:
    state.clock.rewind(checkpoint.kernel.now)
    state.runtime.restore(checkpoint.runtime)  # type: ignore[attr-defined]
    state.trace.truncate(checkpoint.trace)
    del state.ledger.effects[checkpoint.effects :]
    _put_back(state.store.canonical, checkpoint.store)
    _put_back(state.clocks.behind, checkpoint.behind)
    _put_back(state.lease_ends, checkpoint.lease_ends)
    del state.admissions[checkpoint.admissions :]
    state.admitted.clear()
    state.admitted.update(checkpoint.admitted)
    groups = state.groups
    for number in [number for number in groups if number not in checkpoint.groups]:
        del groups[number]
        del state.group_names[number]
    for number, order in checkpoint.groups.items():
        groups.setdefault(number, [])[:] = order
    if checkpoint.world_random is None:
        state._world_random = None  # made again on first use, from the seed
    else:
        if state._world_random is None:
            state._world_random = random.Random()
        state._world_random.setstate(checkpoint.world_random)
    state.plan.restore(checkpoint.plan)
    if checkpoint.chooser_random is not None:
        state.kernel.rng.setstate(checkpoint.chooser_random)


def _put_back(mapping: dict[Any, Any], saved: dict[Any, Any]) -> None:
    mapping.clear()
    mapping.update(saved)
