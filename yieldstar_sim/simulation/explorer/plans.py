"""Plans and their outcomes: one schedule to run (a seed, faults at choice points, PCT
priorities), what running it gave, and the state fingerprint that makes two choice points
equivalent."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT
from yieldstar_sim.simulation.explorer.terms import Executions, key_text, kind, store_text, term
from yieldstar_sim.simulation.kernel import describe
from yieldstar_sim.simulation.run import finish
from yieldstar_sim.simulation.simulator import Simulator

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from yieldstar_sim.engine.world import Effect
    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.faults import Fault, PointInfo
    from yieldstar_sim.simulation.kernel import Kernel, Point
    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.scenario import Scenario


@dataclass(frozen=True, slots=True)
class Plan:
    """One schedule to run: a seed, faults placed at choice points, and (PCT) priorities."""

    index: int
    seed: int
    faults: tuple[Fault, ...] = ()
    priorities: tuple[str, ...] = ()
    change_points: tuple[int, ...] = ()
    schedule: tuple[str, ...] = ()
    """The actor to choose at each choice point (the exhaustive search's schedules): followed
    while it names a ready actor, so a shrunk plan with fewer faults still runs."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What running a plan gave, small enough to cross a process boundary.

    ``ok`` is true only when the run finished and every invariant held; ``incomplete`` says
    why a run did not finish (a budget, the wall-clock limit).
    """

    index: int
    ok: bool
    violations: tuple[tuple[str, str], ...]
    digest: str
    points: int
    faults: tuple[Fault, ...]
    labels: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    incomplete: str | None = None
    warnings: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    """The op of each choice point: which fault kinds apply there."""

    @property
    def verdict(self) -> str:
        """``ok``, ``violated`` or ``incomplete``, as for a run."""
        if self.violations:
            return "violated"
        return "incomplete" if self.incomplete is not None else "ok"

    def violates(self, invariant: str) -> bool:
        """Whether this run violated the invariant named ``invariant``."""
        return any(name == invariant for name, _ in self.violations)


class _PctChooser:
    """PCT: the ready actor with the highest priority goes; at each change point the actor that
    goes drops to the lowest priority."""

    def __init__(self, priorities: Sequence[str], change_points: Sequence[int]) -> None:
        self.rank = {name: len(priorities) - i for i, name in enumerate(priorities)}
        self.change_points = set(change_points)
        self.lowest = 0

    def __call__(self, index: int, ready: list[str]) -> str:
        chosen = max(ready, key=lambda name: (self.rank.get(name, 0), name))
        if index in self.change_points:
            self.lowest -= 1
            self.rank[chosen] = self.lowest
        return chosen


class _ScheduleChooser:
    """Follows a recorded schedule while it names a ready actor, else takes the first one."""

    def __init__(self, schedule: Sequence[str]) -> None:
        self.schedule = schedule

    def __call__(self, index: int, ready: list[str]) -> str:
        wanted = self.schedule[index] if index < len(self.schedule) else None
        return wanted if wanted is not None and wanted in ready else ready[0]


#: The empty hashes of the fingerprints' running ledger and of their terms (``terms.kind``).
_LEDGER = kind("ledger")
_SHARED = kind("shared")
_CALL = kind("call")
_CLOCKS = kind("clocks")


class Fingerprints:
    """One run's state fingerprints, each in time proportional to what changed since the last.

    A fingerprint is a sum of terms (``terms``): each execution's record and each of its steps
    (a step's term covers its position, key, status and attempt; ``terms.Executions``), the
    clock, the ledger, the store and the other actors together, the call, and the workers'
    clocks. On the memory runtime, which logs each row written (``MemoryRuntime.row_writes``)
    and which steps each write touched (``step_writes``), only the rows written since the
    last fingerprint are read again, and of their steps only those written since; any other
    runtime is read whole at every point, to the same fingerprint. The ledger's effects, only
    ever appended, are chained into one hash, each once; the clock, the ledger, the store and
    the other actors share one term, made again only when one of them changed (the other
    actors: the kernel's ``waits``, compared with a copy; each described again only when it
    waits on another object).
    """

    follows_changes = True
    """Whether to follow the memory runtime's rows and the kernel's ``waits`` (a subclass that
    reads whole says no)."""

    __slots__ = (
        "_effects", "_executions", "_ledger", "_ledger_hex", "_name", "_now", "_now_text",
        "_others", "_others_text", "_shared", "_store", "_store_text",
        "_texts", "_waits",
    )  # fmt: skip

    def __init__(self) -> None:
        self._executions = Executions(values=False)
        self._effects = 0
        self._ledger = _LEDGER.copy()
        self._ledger_hex = self._ledger.hexdigest()
        self._now: float | None = None
        self._now_text = ""
        self._others: list[str] | None = None
        self._others_text = ""
        self._waits: dict[str, object] | None = None
        self._name = ""
        self._store: dict[str, str] | None = None
        self._store_text = ""
        self._shared = 0
        self._texts: dict[str, tuple[object, str]] = {}
        """Each waiting actor's last wait (``Kernel.waits``) and its text, its name blinded."""

    def key(self, simulator: Simulator, name: str, point: Point) -> str:
        """The fingerprint of the state at a choice point, blind to which worker is which:
        the runtime's records, the clock, the ledger, the world's store, what every other
        actor is doing, the call, and how far behind each skewed worker's clock runs."""
        total = self._executions.of(simulator.runtime, follow=self.follows_changes)
        # The clock, the ledger, the store and the other actors share one term, made again
        # only when one of them changed (most points change only a record).
        moved = False
        waits = simulator.kernel.waits if self.follows_changes else None
        if waits is None or name != self._name or waits != self._waits:
            moved = self._describe_others(simulator.kernel, name, waits)
        now = simulator.clock.now()
        if now != self._now:
            self._now, self._now_text, moved = now, repr(now), True
        effects = simulator.ledger.effects
        if len(effects) != self._effects:
            self._fold(effects)
            moved = True
        store = simulator.store.canonical
        if store != self._store:
            self._store, self._store_text, moved = dict(store), store_text(store), True
        if moved:
            shared = (self._now_text, self._ledger_hex, self._store_text, self._others_text)
            self._shared = term(_SHARED, "\n".join(shared))
        info: PointInfo = point.info
        total += self._shared + _call_term(info.op, info.execution_id, info.step_key)
        if simulator.clocks.behind:
            total += term(_CLOCKS, _clocks(simulator, name))
        return key_text(total)

    def _describe_others(self, kernel: Kernel, name: str, waits: dict[str, Any] | None) -> bool:
        """Describe the actors other than ``name`` again (someone moved, or another actor
        asks; equal waits describe alike, and the acting actor's own move between two of its
        points is not seen); whether their text changed."""
        if waits is None:
            others = sorted(
                state.replace(other, "~") for other, state in kernel.waiting() if other != name
            )
        else:
            # Each actor described again only when it waits on another object (waits holds
            # what waiting() describes: a test compares the two at every point).
            texts, others = self._texts, []
            for other, state in waits.items():
                if other != name:
                    seen = texts.get(other)
                    if seen is None or seen[0] is not state:
                        seen = texts[other] = (state, describe(state).replace(other, "~"))
                    others.append(seen[1])
            others.sort()
            self._waits, self._name = dict(waits), name
        if others == self._others:
            return False
        self._others, self._others_text = others, repr(others)
        return True

    def _fold(self, effects: list[Effect]) -> None:
        """Chain the effects added since the last point into the ledger's hash."""
        if len(effects) < self._effects:
            # Not this run's ledger: start again.
            self._effects, self._ledger = 0, _LEDGER.copy()
        for effect in effects[self._effects :]:
            self._ledger.update(_effect_text(effect).encode() + b"\n")
        self._effects = len(effects)
        self._ledger_hex = self._ledger.hexdigest()


@lru_cache(maxsize=1 << 14)
def _call_term(op: str, execution_id: str | None, step_key: str | None) -> int:
    """The term of a call: every run of a search passes the same calls (cached: the ops,
    executions and step keys of one scenario are few)."""
    # Each part its repr (self-delimiting) but the op, which is one of ours.
    return term(_CALL, f"{op}\x1e{execution_id!r}\x1e{step_key!r}")


def _effect_text(effect: Effect) -> str:
    return repr((effect.name, sorted(effect.data.items()), effect.execution_id, effect.step_key))


def _clocks(simulator: Simulator, name: str) -> str:
    """How far behind true time the acting worker's clock runs, and the others' (blind to
    which is which): a skewed worker acts on its own belief, so two states that differ only
    there are not one state."""
    behind = simulator.clocks.behind
    if not behind:
        return ""
    return repr((behind.get(name, 0.0), sorted(v for w, v in behind.items() if w != name)))


def run_plan(
    scenario: Scenario,
    plan: Plan,
    runtime: RuntimeChoice = "memory",
    *,
    expand: bool = False,
    digest: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> Outcome:
    """Run one plan; with ``expand``, also record each choice point's label and state key;
    with ``digest``, the trace's digest (serialising a trace costs a fifth of a schedule, so
    the search leaves it out and confirmation asks for it)."""
    simulator = _simulator(scenario, plan, runtime, timeout)
    seen = observe_points(simulator, expand=expand, first_key=keys_from(plan))
    simulator.run()
    return outcome_of(simulator, plan.index, seen, digest=digest)


def keys_from(plan: Plan) -> int:
    """The first choice point whose state key the systematic search can read of ``plan``'s run:
    the one after its last fault. It places the next fault only after that one, and before it
    the run is its parent's, whose keys were read already.

    >>> from yieldstar_sim.simulation.faults import Fault
    >>> keys_from(Plan(0, 0)), keys_from(Plan(1, 0, (Fault("crash", at=7),)))
    (0, 8)
    """
    placed = [fault.at for fault in plan.faults if fault.at is not None]
    return max(placed) + 1 if placed else 0


def observe_points(
    simulator: Simulator, *, expand: bool, first_key: int = 0
) -> tuple[list[str], list[str], list[str]]:
    """Record each choice point's op, and with ``expand`` its label and state key, as the
    simulator passes it: the lists ``(labels, keys, ops)`` ``outcome_of`` reports. The keys of
    the points before ``first_key`` (``keys_from(plan)``) are left empty (``""``): nothing
    reads them, and the first key computed catches up with everything before it at once."""
    labels: list[str] = []
    keys: list[str] = []
    ops: list[str] = []
    if expand:
        key = Fingerprints().key

        def observe(index: int, name: str, point: Point, fault: Any) -> None:
            ops.append(point.info.op)
            labels.append(point.label)
            keys.append(key(simulator, name, point) if index >= first_key else "")

    else:

        def observe(index: int, name: str, point: Point, fault: Any) -> None:
            ops.append(point.info.op)

    simulator.kernel.observers.append(observe)
    return labels, keys, ops


def outcome_of(
    simulator: Simulator,
    index: int,
    seen: tuple[list[str], list[str], list[str]],
    *,
    digest: bool = False,
    close: bool = True,
) -> Outcome:
    """The outcome of plan number ``index`` from its finished simulator (whose runtime it
    closes, unless ``close`` is False: a run restored to go on) and what ``observe_points``
    saw."""
    labels, keys, ops = seen
    run = finish(simulator)
    outcome = Outcome(
        index=index,
        ok=run.ok,
        violations=tuple((v.invariant, v.message) for v in run.violations),
        digest=run.trace_digest() if digest else "",
        points=run.points,
        faults=tuple(run.faults),
        labels=tuple(labels),
        keys=tuple(keys),
        incomplete=run.incomplete,
        warnings=tuple(run.warnings),
        ops=tuple(ops),
    )
    if close:
        run.runtime.close()
    return outcome


def _simulator(
    scenario: Scenario,
    plan: Plan,
    runtime: RuntimeChoice,
    timeout: float | None = DEFAULT_TIMEOUT,
    *,
    restorable: bool = False,
) -> Simulator:
    chooser: Callable[[int, list[str]], str] | None = None
    if plan.priorities:
        chooser = _PctChooser(plan.priorities, plan.change_points)
    elif plan.schedule:
        chooser = _ScheduleChooser(plan.schedule)
    return Simulator(
        scenario, seed=plan.seed, runtime=runtime, faults=plan.faults, scenario_faults=False,
        chooser=chooser, timeout=timeout, restorable=restorable,
    )  # fmt: skip


def simulate_plan(
    scenario: Scenario, plan: Plan, runtime: RuntimeChoice = "memory", timeout: float | None = None
) -> SimulationRun:
    """Run one plan and keep the whole run (trace, records) for reading."""
    simulator = _simulator(scenario, plan, runtime, timeout)
    simulator.run()
    return finish(simulator)
