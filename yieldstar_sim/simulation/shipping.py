"""A saved state that travels: ``ship`` turns an ``Execution``'s state (or one it saved) into
a ``ShippedExecution``, a value that pickles, and ``land`` puts it back into any run of the same
scenario, seed, runtime and faults, in this process or another. It holds the run's data and
each actor's log, never a generator; where the runtime cannot snapshot itself, it holds the
path, and the receiving run replays it. docs/decisions.md says what travels and why ("A saved
state that travels").
"""

from __future__ import annotations

import contextlib
import hashlib
import pickle
import struct
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.execution import SavedExecution
from yieldstar_sim.simulation.saving import land as land_state
from yieldstar_sim.simulation.saving import ship as ship_state
from yieldstar_sim.simulation.trail import schedule_of, unwound

if TYPE_CHECKING:
    from yieldstar_sim.simulation.execution import Execution
    from yieldstar_sim.simulation.faults import Fault
    from yieldstar_sim.simulation.moves import Move
    from yieldstar_sim.simulation.trail import Trail

#: What each run ships as (``ShippedExecution.run``), made once a run.
_RUNS: weakref.WeakKeyDictionary[Execution, tuple[object, ...]] = weakref.WeakKeyDictionary()


class ShipMismatch(Exception):
    """A shipped state was restored into a run of another scenario (by its name, its code or
    its settings), seed, runtime or faults than the run that shipped it, or could not be
    unpickled there: it would go on as neither run does."""


#: What a ``ShippedExecution.run`` holds, part by part, in words.
_RUN_PARTS = ("scenario", "code", "settings", "seed", "runtime", "faults")


@dataclass(frozen=True, slots=True)
class ShippedExecution:
    """An ``Execution``'s state at one choice point as a value that pickles
    (``ship``), for any run of the same scenario, seed, runtime and faults, in this
    process or another, to ``land``: its path, and where the runtime can snapshot itself,
    the run's state (else the receiving run replays the path)."""

    run: tuple[object, ...]
    """What the run that shipped it was: its scenario's name, a hash of its code
    (``Scenario.fingerprint``) and one of its settings, the seed, the runtime and the faults;
    a run of another refuses it (``ShipMismatch``)."""
    steps: tuple[tuple[Move, int, list[str], Fault | None], ...]
    """The path: each move, its choice point's number, the actors then ready, and the fault
    it placed."""
    state: bytes | None
    """The run's state (``saving.ship``): None where the runtime cannot snapshot itself, or
    where something of the state would not pickle (the path is replayed then)."""
    rng: tuple[int, bytes, float | None] | None
    """The seed's random state, its words packed (None: none was drawn yet)."""
    plan: tuple[tuple[int, ...], tuple[bool, ...]]
    """How far the fault plan got (``FaultPlan.snapshot``)."""
    stopped: str | None
    """Why the run was over (None: it went on)."""

    @property
    def schedule(self) -> tuple[Move, ...]:
        """The moves taken to reach this state."""
        return tuple(step[0] for step in self.steps)


def ship(execution: Execution, saved: SavedExecution | None = None) -> ShippedExecution:
    """``execution``'s state now, or ``saved`` (a state it saved and went on from), as a
    value that pickles (standard ``pickle``), for any run of the same scenario, seed,
    runtime and faults to ``land``, in this process or another: the run's data and
    each actor's log, never a generator; the path alone where the runtime cannot
    snapshot itself. ``ValueError`` if the run's path does not go through ``saved``."""
    if saved is None:
        saved = execution.save()
    elif not _went_on_from(execution.trail(), saved.path):
        raise ValueError(
            f"this run did not go on from the state saved after {len(saved.schedule)} "
            "moves: only a state on its path to now can be shipped (restore it first)"
        )
    state = None
    if saved.state is not None:
        # What does not pickle (an answer of a user's own type that refuses) ships the
        # path instead: the receiving run replays it.
        with contextlib.suppress(pickle.PicklingError, TypeError, AttributeError):
            state = ship_state(execution.state, saved.state)
    steps = tuple((step[0], step[1], step[2], step[3]) for step in unwound(saved.path))
    return ShippedExecution(
        _run_of(execution), steps, state, _packed(saved.rng), saved.plan, saved.stopped
    )


def _went_on_from(mine: Trail, path: Trail) -> bool:
    """Whether the path ``mine`` goes through ``path``: the trace, the effects and the
    admissions a run has are then, up to a length saved there, what they were there."""
    if path is None:
        return True
    while mine is not None and mine[1] > path[1]:
        mine = mine[4]
    # The same moves (a run restored before the save and gone on alike) reach the same
    # state: a run is a function of its moves.
    return mine is path or schedule_of(mine) == schedule_of(path)


def _run_of(execution: Execution) -> tuple[object, ...]:
    """What a shipped state says of the run that shipped it (``ShippedExecution.run``)."""
    run = _RUNS.get(execution)
    if run is None:
        scenario = execution.scenario
        settings = repr(
            (
                scenario.triggers, scenario.cancels, scenario.prunes, scenario.sends,
                [deploy.at for deploy in scenario.deploys], scenario.worker_names,
                scenario.lease_seconds, scenario.redelivery_delay, scenario.restart_delay,
                sorted(scenario.runtime_options.items()), scenario.max_time,
                scenario.point_limit, scenario.profile, scenario.world_in_workflow_code,
                scenario.stop_after_failed_renewals, scenario.max_recovery_attempts,
                scenario.overlap_safe,
            )
        )  # fmt: skip
        run = _RUNS[execution] = (
            scenario.name, scenario.fingerprint(),
            hashlib.sha256(settings.encode()).hexdigest()[:16], execution.seed,
            execution.runtime_kind, execution.faults,
        )  # fmt: skip
    return run


def _landed(execution: Execution, shipped: ShippedExecution) -> SavedExecution:
    """``shipped`` as a state ``execution`` restores: its state bound to the run's (or its
    path alone, where it holds none or the run cannot restore one)."""
    theirs, mine = shipped.run, _run_of(execution)
    if theirs != mine:
        differ = [part for part, a, b in zip(_RUN_PARTS, theirs, mine, strict=True) if a != b]
        raise ShipMismatch(
            f"a state shipped by a run of {theirs[0]!r} (seed {theirs[3]}, on {theirs[4]}) "
            f"cannot be restored into a run of {mine[0]!r} (seed {mine[3]}, on {mine[4]}): "
            f"different {', '.join(differ)}; restore it into a run of the same scenario, "
            "seed, runtime and faults"
        )
    path: Trail = None
    for move, index, ready, fault in shipped.steps:
        path = (move, index, ready, fault, path)
    state = None
    if shipped.state is not None and execution.can_restore:
        try:
            state = land_state(execution.state, shipped.state)
        except Exception as error:
            raise ShipMismatch(
                f"a state shipped by a run of {theirs[0]!r} cannot be unpickled here "
                f"({type(error).__name__}: {error}): is this the same version of "
                "yieldstar_sim, with the scenario loaded as it was there?"
            ) from error
    rng = _unpacked(shipped.rng)
    return SavedExecution(path, state, rng, shipped.plan, shipped.stopped, None)


def land(execution: Execution, shipped: ShippedExecution) -> None:
    """Restore ``shipped`` into ``execution``, a run of the same scenario, seed, runtime and
    faults as the run that shipped it (``ShipMismatch`` if not): put back where the runtime
    can snapshot itself, else replayed along its path."""
    execution.restore(_landed(execution, shipped))


def _packed(rng: Any) -> tuple[int, bytes, float | None] | None:
    """A ``random.Random`` state with its words as bytes (2,500 where pickled ints take 3,800)."""
    if rng is None:
        return None
    version, words, gauss = rng
    return version, struct.pack(f"<{len(words)}I", *words), gauss


def _unpacked(packed: tuple[int, bytes, float | None] | None) -> Any:
    """The ``random.Random`` state ``_packed`` packed."""
    if packed is None:
        return None
    version, words, gauss = packed
    return version, struct.unpack(f"<{len(words) // 4}I", words), gauss
