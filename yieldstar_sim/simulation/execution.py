"""One run of a scenario, driven a move at a time: the model every search is a client of.

An ``Execution`` is in the shape of Stateright's ``Model`` and shuttle's ``Execution``: it says
what can happen next as data (``moves``: an actor going, with a fault or none, or the value of a
draw, or which of a ``step.all``'s bodies completes next), takes the move its caller chose
(``take``: the run goes on to its next choice point), reads its state's one key (``key``), saves
and restores its state (``save``, ``restore``), and says when it is over (``done``) and what the
run was (``result``). It never calls back into its caller, and nothing in the kernel exists for
a search: the kernel yields its ready actors and takes the chosen one.

A plain run takes ``default_move`` at each point: the seed's random choice among the ready
actors (and among a point's options), struck by the fault the scenario's plan places there.
A *schedule* is the tuple of moves a run took; ``simulation.run.simulate`` follows one.

Whether a saved state is restored or replayed is decided here, and nowhere else: on a runtime
that snapshots itself (``saving.Snapshots``: the memory runtime) the state is put back
(``saving.restore``), and the first restores of a run, then a sample, are checked against a
replay of the same path (``RestoreMismatch``); on any other (DuckDB, PostgreSQL, an adapter of
your own that does not say it can) the path is replayed from the start. A saved state travels
to another process as ``shipping.ship`` makes it. (An ``Execution`` is one run of a scenario,
in shuttle's sense; a workflow execution, in RFC 003's, is something a run holds many of.)
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass
from functools import partial
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.clock import ManualClock
from yieldstar_sim.engine.invoker import Registry
from yieldstar_sim.engine.world import Ledger, WorldStore
from yieldstar_sim.runtime.factory import open_runtime, resolve_runtime
from yieldstar_sim.simulation.clients import client_actor, client_requests
from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT, Deadline, RunTimedOut
from yieldstar_sim.simulation.faults import FaultKind, FaultPlan, applies_at, placed
from yieldstar_sim.simulation.finish import finish
from yieldstar_sim.simulation.footprints import Footprint, RecordedRuntime, Touches, trusted
from yieldstar_sim.simulation.kernel import PARKED, Kernel, Point
from yieldstar_sim.simulation.moves import BARE, Move, ScheduleMismatch, new_move, plain_move
from yieldstar_sim.simulation.restore_check import check_restore, checked
from yieldstar_sim.simulation.runtime_actions import reports
from yieldstar_sim.simulation.saving import (
    Journal,
    Saved,
    can_snapshot,
    restore,
    save,
)
from yieldstar_sim.simulation.scheduled import SCHEDULED, scheduled_actor
from yieldstar_sim.simulation.state import RunState, WorkerClocks
from yieldstar_sim.simulation.statekeys import StateKeys
from yieldstar_sim.simulation.trace import Trace
from yieldstar_sim.simulation.trail import Choices, Step, Trail, faults_of, schedule_of, unwound
from yieldstar_sim.simulation.workers import worker

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator, Sequence
    from pathlib import Path

    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.faults import Fault
    from yieldstar_sim.simulation.moves import Choice
    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.scenario import Scenario


@dataclass(frozen=True, slots=True)
class SavedExecution:
    """An ``Execution``'s state at one choice point (``Execution.save``): its path, and where
    the runtime can snapshot itself, the run's state to put back (else the path is
    replayed)."""

    path: Trail
    state: Saved | None
    rng: Any
    """The seed's random state (None: none was drawn yet)."""
    plan: tuple[tuple[int, ...], tuple[bool, ...]]
    stopped: str | None
    keys: tuple[StateKeys, int] | None

    @property
    def schedule(self) -> tuple[Move, ...]:
        """The moves taken to reach this state."""
        return schedule_of(self.path)


#: A step's move (``schedule`` reads every step of every finished run).
_move_of = itemgetter(0)


class Execution:
    """One run of ``scenario`` (see the module's docstring).

    ``runtime`` is ``"memory"``, ``"duckdb"`` (in the file ``db`` if given) or a factory;
    ``faults`` are placed by the default moves, beside the scenario's own plan (left out with
    ``scenario_faults=False``); ``timeout`` bounds the run's wall-clock seconds. With
    ``saving``, the run keeps what ``save`` and ``restore`` need (recording costs a sixth of
    a run, so a plain run does not). With ``footprints``, each move taken records what it
    touched (``footprint``).
    """

    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int = 0,
        runtime: RuntimeChoice = "memory",
        db: str | Path | None = None,
        faults: Sequence[Fault] = (),
        scenario_faults: bool = True,
        timeout: float | None = DEFAULT_TIMEOUT,
        saving: bool = False,
        footprints: bool = False,
    ) -> None:
        self.scenario = scenario
        self.seed = seed
        self.runtime_choice = runtime
        """What the run was asked to run on (a name or a factory): a re-run uses it again."""
        self.runtime_kind = resolve_runtime(runtime)[0]
        self.db = db
        self.faults = (*(scenario.faults if scenario_faults else ()), *faults)
        self.timeout = timeout
        self.saving = saving
        self.footprints = footprints
        self.footprint: Footprint | None = None
        """What the last move taken touched (``footprints.py``), where the run records
        footprints."""
        self.restores = 0
        """States restored (put back, or replayed to)."""
        self.replayed_steps = 0
        """Moves taken again to replay paths to restored states (on a runtime that cannot
        snapshot itself)."""
        self._build()

    state_keys: type[StateKeys] = StateKeys
    """What reads the state's keys (the tests read them whole to compare)."""

    def _build(self) -> None:
        """A fresh run: its state, its actors spawned, at its first choice point."""
        scenario = self.scenario
        clock = ManualClock()
        made = open_runtime(self.runtime_choice, clock, self.db, scenario.runtime_options)
        kernel = Kernel(clock, next_wake=made.next_wake_at)
        profile = scenario.profile
        self.state = state = RunState(
            scenario=scenario,
            seed=self.seed,
            clock=clock,
            runtime=made,
            kernel=kernel,
            trace=Trace(),
            ledger=Ledger(),
            store=WorldStore(),
            deadline=Deadline(self.timeout),
            registries=[(0.0, Registry(scenario.workflows, scenario.steps, profile))]
            + [
                (deploy.at, Registry(deploy.workflows, scenario.steps, profile))
                for deploy in scenario.deploys
            ],
            clocks=WorkerClocks(clock.now),
            reports=reports(made),
        )
        # Recorded on a runtime whose calls keep to what they name, or not at all.
        self._touches = Touches() if self.footprints and trusted(made) else None
        self.footprints = self._touches is not None
        if self._touches is not None:
            state.runtime = RecordedRuntime(made, self._touches)
        self.can_restore = self.saving and can_snapshot(made)
        if self.can_restore:
            state.journal = Journal(kernel, clock)
        self.kernel, self.clock, self.runtime = kernel, clock, made
        self.trace, self.ledger, self.store = state.trace, state.ledger, state.store
        self.deadline, self.admissions = state.deadline, state.admissions
        self.rng = random.Random(self.seed)
        self._drawn = False  # whether the seed's numbers were drawn: saved only then
        self.plan = FaultPlan(list(self.faults))
        self._path: Trail = None
        self.stopped: str | None = None
        """Why the run is over: ``quiescent`` (it finished), ``max_time``, ``max_points`` or
        ``timeout`` (the wall-clock limit); None while it goes on."""
        self._keys: StateKeys | None = None
        self._fed = 0
        self._restored: SavedExecution | None = None  # the last state put back
        self._armed = False
        self._ready_at, self._ready_list = -1, list[str]()
        self._point_limit, self._max_time = scenario.point_limit, scenario.max_time
        self._unwound: tuple[Trail, list[Step]] = (None, [])
        self._arm()
        state.spawn(SCHEDULED, partial(scheduled_actor, state))
        for name in scenario.worker_names:
            state.spawn(name, partial(worker, state, name))
        for name, requests in client_requests(scenario).items():
            state.spawn(name, partial(client_actor, state, name, requests))
        self._go(None)

    # ------------------------------------------------------------------ what can happen

    def ready(self) -> list[str]:
        """The actors waiting at a choice point, by name (none once the run is over)."""
        return [] if self.stopped is not None else self._ready()

    def _ready(self) -> list[str]:
        # Read once a point: the search, the default move and the move taken all ask.
        kernel = self.kernel
        if self._ready_at != kernel.points:
            self._ready_list, self._ready_at = kernel.ready(), kernel.points
        return self._ready_list

    def point(self, actor: str) -> Point:
        """The choice point ``actor`` waits at."""
        return self.kernel.point(actor)

    def moves(
        self, kinds: Collection[FaultKind] = (), seconds: dict[FaultKind, float] | None = None
    ) -> list[Move]:
        """Every move that can be taken now: each ready actor going (each option of a point
        that chooses among values), then each struck by each fault of ``kinds`` that the
        explorer places at its point (``seconds``: how long each timed kind lasts)."""
        if self.stopped is not None:
            return []
        kernel = self.kernel
        ready = self._ready()
        moves: list[Move] = []
        for name in ready:
            options = kernel.point(name).options
            if options:
                moves += [plain_move(name, index) for index in range(len(options))]
            else:
                moves.append(plain_move(name))
        if kinds:
            seconds = seconds or {}
            for name in ready:
                point = kernel.point(name)
                op = "" if point.info is None else point.info.op
                moves += [
                    new_move(name, kind, seconds.get(kind), None)
                    for kind in kinds
                    if not point.options and applies_at(kind, op, exploring=True)
                ]
        return moves

    def default_move(self) -> Move:
        """The move a plain run of this seed takes now: the seed's random choice among the
        ready actors (and among the chosen point's options), struck by the fault the plan
        places there. It draws the seed's next random numbers and fires the plan's fault:
        ask once per choice point."""
        move = self.seeded_move()
        return self.planned(move) if self.plan.faults else move

    def seeded_move(self) -> Move:
        """The seed's random choice among the ready actors, and among the chosen point's
        options (drawing its next random numbers), with no fault."""
        kernel = self.kernel
        ready = self._ready()
        self._drawn = True
        name = ready[0] if len(ready) == 1 else self.rng.choice(ready)
        options = kernel.point(name).options
        choice = None
        if options:
            choice = 0 if len(options) == 1 else self.rng.randrange(len(options))
        return plain_move(name, choice)

    def planned(self, move: Move) -> Move:
        """``move`` struck by the fault the plan places at this point, when it names none (a
        plan's fault there fires either way, so that a schedule whose moves carry their
        faults replays alike beside the plan of the faults they carry): ask once per point."""
        plan = self.plan
        if not plan.faults:
            return move
        fault = plan.fault_at(self.kernel.points, self.kernel.point(move.actor))
        if fault is None or move.fault is not None:
            return move
        return Move(move.actor, FaultKind(fault.kind), fault.seconds, move.choice)

    def take_defaults(self, *, until_options: bool = False) -> Move | None:
        """Take ``default_move`` at every choice point to the run's end: a plain run (spelled
        out: a run's every point passes here, and a loop of ``take(default_move())`` cost
        a tenth of a short run in calls). With ``until_options``, stop at a point whose move
        chooses among several options, and return that move, not taken (None at the end)."""
        kernel, rng, plan, points = self.kernel, self.rng, self.plan, self._point_limit
        deadline, max_time, waits = self.deadline, self._max_time, kernel.waits
        self._drawn = True
        while self.stopped is None:
            ready = kernel.ready()
            name = ready[0] if len(ready) == 1 else rng.choice(ready)
            point: Point = waits[name]  # type: ignore[assignment]  # a ready actor's point
            options = point.options
            choice = None
            if options:
                choice = 0 if len(options) == 1 else rng.randrange(len(options))
                if until_options and len(options) > 1:
                    self._ready_list, self._ready_at = ready, kernel.points
                    return plain_move(name, choice)
            fault = plan.fault_at(kernel.points, point) if plan.faults else None
            if fault is None:
                move = (BARE.get(name) or plain_move(name)) if choice is None else (
                    plain_move(name, choice)
                )  # fmt: skip
            else:
                kind = FaultKind(fault.kind)
                move = new_move(name, kind, fault.seconds, choice)
                fault = placed(kind, fault.seconds, kernel.points, point.label)
            self._path = (move, kernel.points, ready, fault, self._path)
            if not self._armed:
                self._arm()
            try:
                kernel.go(name, move)
                if kernel.points >= points:
                    self.stopped = "max_points" if kernel.pending() else "quiescent"
                elif deadline.expired:
                    self.stopped = "timeout"
                elif not kernel.settle(until=max_time):
                    self.stopped = "max_time" if kernel.pending() else "quiescent"
                elif deadline.expired:
                    self.stopped = "timeout"
            except RunTimedOut:
                self.stopped = "timeout"
        self._disarm()
        return None

    def fits(self, move: Move) -> bool:
        """Whether ``move`` can be taken now (``take`` would not refuse it)."""
        return self._misfit(move) is None

    def _misfit(self, move: Move) -> str | None:
        if self.stopped is not None:
            return f"the run is over ({self.stopped})"
        kernel = self.kernel
        try:
            point = kernel.point(move.actor)
        except KeyError:
            return (
                f"{move.actor!r} waits at no choice point; the actors waiting are {kernel.ready()}"
            )
        if move.actor not in self._ready():
            return f"{move.actor!r} waits its turn: {kernel.ready()[0]!r} goes first"
        options = point.options
        if options:
            if move.choice is None or not 0 <= move.choice < len(options):
                count = len(options)
                return f"the point {point.label!r} chooses among {count} options, not {move.choice}"
        elif move.choice is not None:
            return f"the point {point.label!r} has no options to choose among"
        if move.fault is not None:
            op = "" if point.info is None else point.info.op
            if options or not applies_at(move.fault, op):
                return f"a {move.fault} cannot strike at {point.label!r}"
        return None

    # ------------------------------------------------------------------ taking a move

    def take(self, move: Move) -> None:
        """Take ``move`` at the current choice point: the run goes on to its next one (or to
        its end). ``ScheduleMismatch`` if the move does not fit."""
        kernel = self.kernel
        point = kernel.waits.get(move.actor)
        # Checked in full only where the move or its point carries more than an actor (most
        # moves of a search are bare and the kernel's own: the check costs a tenth of a run).
        if (
            self.stopped is not None
            or type(point) is not Point
            or point.options
            or move.choice is not None
            or move.fault is not None
            or move.actor not in self._ready()
        ):
            wrong = self._misfit(move)
            if wrong is not None:
                saved, self._restored = self._restored, None
                if saved is not None:  # the restore may be to blame: check it (again) now
                    self._put_back(saved)
                    check_restore(self, saved.path, partial(self._put_back, saved), self._fresh)
                raise ScheduleMismatch(f"choice point {kernel.points}: {wrong}")
        index = kernel.points
        fault = None
        if move.fault is not None:
            fault = placed(move.fault, move.seconds, index, kernel.point(move.actor).label)
        self._path = (move, index, self._ready(), fault, self._path)
        if self._touches is None:
            self._go(move)
            return
        self.footprint = self._touches.record(
            self.state, partial(self._go, move), faulted=fault is not None,
            parked=lambda: self.kernel.waits.get(move.actor) is PARKED,
        )  # fmt: skip

    def _go(self, move: Move | None) -> None:
        """Take ``move`` (None: start the run) and go on to the next choice point."""
        kernel = self.kernel
        if not self._armed:
            self._arm()
        try:
            if move is not None:
                kernel.take(move.actor, move)
            if kernel.points >= self._point_limit:
                self.stopped = "max_points" if kernel.pending() else "quiescent"
            elif self.deadline.expired:
                self.stopped = "timeout"
            elif not kernel.settle(until=self._max_time):
                self.stopped = "max_time" if kernel.pending() else "quiescent"
            elif self.deadline.expired:
                self.stopped = "timeout"
        except RunTimedOut:
            self.stopped = "timeout"
        if self.stopped is not None:
            self._disarm()

    def _arm(self) -> None:
        self.deadline.__enter__()
        self._armed = True

    def _disarm(self) -> None:
        if self._armed:
            self._armed = False
            self.deadline.__exit__(None, None, None)

    # ------------------------------------------------------------------ reading the run

    def done(self) -> bool:
        """Whether the run is over (``stopped`` says why)."""
        return self.stopped is not None

    @property
    def points(self) -> int:
        """Choice points taken so far."""
        return self.kernel.points

    def _steps(self) -> list[Step]:
        """The path's steps in order, unwound once for the three readers of a finished run."""
        path = self._path
        if self._unwound[0] is not path:
            self._unwound = (path, unwound(path))
        return self._unwound[1]

    @property
    def schedule(self) -> tuple[Move, ...]:
        """The moves taken so far: replaying them reproduces the run."""
        return tuple(map(_move_of, self._steps()))

    def trail(self) -> Trail:
        """The moves taken so far, without copying them (``schedule_of`` reads them)."""
        return self._path

    @property
    def choices(self) -> Sequence[Choice]:
        """Every choice point taken, with the actor that went and those that could have (made
        when first read: most runs' are never read)."""
        return Choices(self._steps())

    @property
    def applied(self) -> list[Fault]:
        """Every fault that struck, placed by choice-point index and labelled."""
        return faults_of(self._steps())

    def key(self) -> str:
        """The state's one key (``statekeys``): equal for two states exactly when every part
        of them is, the workers' names blinded."""
        keys = self._keys
        if keys is None:
            keys = self._keys = self.state_keys(
                recovery_bound=self.scenario.max_recovery_attempts,
                claim_rivals=self.state.claim_rivals,
            )
        events = self.trace.events
        if self._fed < len(events):
            keys.remember(events[self._fed :])
            self._fed = len(events)
        return keys.key(self.state, ended=self.stopped is not None)

    def verdict_key(self, key: str | None = None) -> str:
        """The key under which a search lets this state stand for another: its ``key`` (read
        here unless given), with what an invariant reads of the run's past that the state
        does not hold (``StateKeys.past``; none until an execution is recovered or faulted)."""
        key = self.key() if key is None else key
        return self._keys.with_past(key, self.state)  # type: ignore[union-attr]

    def result(self) -> SimulationRun:
        """The run so far as data, checked by every invariant (``finish.finish``)."""
        return finish(self)

    def close_actors(self) -> None:
        """Close every actor (a run at its end: what their ``finally`` blocks do is part of
        the run, under its wall-clock limit)."""
        if not self._armed and not self.deadline.expired:
            self._arm()
        try:
            self.kernel.close()
        except RunTimedOut:
            self.stopped = "timeout"  # workflow code that spins as it is abandoned
        finally:
            self._disarm()

    def close(self) -> None:
        """Close the actors and the runtime."""
        try:
            self._disarm()
            self.kernel.close()
        finally:
            self.runtime.close()

    # ------------------------------------------------------------------ saving and restoring

    @contextlib.contextmanager
    def unrecorded(self) -> Iterator[None]:
        """Go on without keeping what ``save`` needs (a run that will only be restored from
        an earlier save, never saved itself: recording costs a sixth of a run). ``save`` is
        refused meanwhile."""
        journal = self.state.journal
        if journal is None:
            yield
            return
        with journal.unrecorded():
            yield

    @property
    def recording(self) -> bool:
        """Whether ``save`` may be asked now (the run keeps what it needs)."""
        journal = self.state.journal
        return journal is None or journal.recording

    def save(self) -> SavedExecution:
        """The run's state now, to ``restore`` later."""
        keys = None if self._keys is None else (self._keys.copy(), self._fed)
        return SavedExecution(
            path=self._path,
            state=save(self.state) if self.can_restore else None,
            rng=self.rng.getstate() if self._drawn else None,
            plan=self.plan.snapshot(),
            stopped=self.stopped,
            keys=keys,
        )

    def restore(self, saved: SavedExecution) -> None:
        """Put the run back as ``saved`` says (a state this run went on from, or one
        ``shipping.land`` made of a state shipped by another run): restored where the runtime
        can snapshot itself, else replayed from the start."""
        self.restores += 1
        if saved.state is None:
            self._replay_to(saved)
            return
        self._put_back(saved)
        self._restored = saved
        if checked(self.restores):
            check_restore(self, saved.path, partial(self._put_back, saved), self._fresh)

    def _put_back(self, saved: SavedExecution) -> None:
        assert saved.state is not None
        restore(self.state, saved.state)
        self._ready_at = -1
        self._path = saved.path
        self._set_rng(saved.rng)
        self.plan.restore(saved.plan)
        self.stopped = saved.stopped
        if saved.keys is None:
            self._keys, self._fed = None, 0
        else:
            keys, self._fed = saved.keys
            self._keys = keys.copy().caught_up()
        deadline = self.deadline
        if self.stopped is not None:
            self._disarm()
        elif (
            not self._armed
            or deadline.expired
            or (deadline.seconds is not None and deadline.elapsed > deadline.seconds / 2)
        ):
            # A run restored goes on with at least half its limit: arming the limit again at
            # every restore cost a tenth of a search.
            self._disarm()
            deadline.expired, deadline.where = False, None
            self._arm()

    def _fresh(self) -> Execution:
        """A new run of this one's scenario, seed, runtime and faults, at its start."""
        return Execution(
            self.scenario, seed=self.seed, runtime=self.runtime_choice, db=self.db,
            faults=self.faults, scenario_faults=False, timeout=self.timeout,
            footprints=self.footprints,
        )  # fmt: skip

    def _replay_to(self, saved: SavedExecution) -> None:
        """Make the run again and take the path's moves (a runtime that cannot snapshot)."""
        self.close()
        self._build()
        for step in unwound(saved.path):
            self.take(step[0])
            self.replayed_steps += 1
        self._set_rng(saved.rng)
        self.plan.restore(saved.plan)

    def _set_rng(self, state: Any) -> None:
        if state is not None:
            self.rng.setstate(state)
        elif self._drawn:
            self.rng.seed(self.seed)  # saved before any was drawn
        self._drawn = state is not None
