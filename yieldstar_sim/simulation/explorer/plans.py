"""Plans and their outcomes: one schedule to run (a seed, faults at choice points, PCT
priorities), what running it gave, and the state fingerprint that makes two choice points
equivalent."""

from __future__ import annotations

from dataclasses import dataclass
from hashlib import blake2b
from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT
from yieldstar_sim.simulation.run import SimulationRun, finish
from yieldstar_sim.simulation.simulator import Simulator

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence, ValuesView

    from yieldstar_sim.core.model import ExecutionRecord, StepRecord
    from yieldstar_sim.engine.world import Effect
    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.runtime.memory_rows import Row
    from yieldstar_sim.simulation.faults import Fault, PointInfo
    from yieldstar_sim.simulation.kernel import Kernel, Point
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


#: A sum of step hashes is kept to 128 bits, their size (the exhaustive keys' too).
MASK = (1 << 128) - 1
#: Empty hashes of each size, copied where one is needed: a copy costs half of making one (the
#: constructor parses its keyword arguments each time). The exhaustive keys use them too.
HASH_16 = blake2b(digest_size=16)
HASH_12 = blake2b(digest_size=12)


class _Execution:
    """What one execution contributes to a fingerprint, kept up to date from its changes."""

    __slots__ = ("head", "head_text", "part", "revision", "step_hashes", "steps_sum", "writes")

    def __init__(self) -> None:
        self.revision = -1
        self.writes = 0
        self.step_hashes: dict[int, int] = {}
        self.steps_sum = 0
        self.head: tuple[object, ...] | None = None
        self.head_text = ""
        self.part = ""

    def update(self, steps: Iterable[StepRecord], head: tuple[object, ...]) -> None:
        """Fold in the current state of ``steps`` and take ``head`` (``record_head``) as the
        execution's head.

        A step's hash covers its position, key, status and attempt, and the steps' hashes are
        summed, so replacing one costs one hash whatever the count. A head equal to the last
        one keeps its text (each field has one type, so equal heads print alike): most
        writes are steps, which leave the head as it was.
        """
        hashes = self.step_hashes
        total = self.steps_sum
        for s in steps:
            position = s.position
            running = HASH_16.copy()
            running.update(f"{position}\x1f{s.step_key}\x1f{s.status}\x1f{s.attempt}".encode())
            new = int.from_bytes(running.digest())
            total += new - hashes.get(position, 0)
            hashes[position] = new
        self.steps_sum = total = total & MASK
        if head != self.head:
            self.head, self.head_text = head, repr(head)
        self.part = f"{self.head_text}:{len(hashes)}:{hex(total)}"


def record_head(record: ExecutionRecord) -> tuple[object, ...]:
    """What of an execution's record its fingerprint covers: the fields that change as it
    runs (``Row.head`` gives the same from the memory runtime's row)."""
    lease = record.lease
    return (
        record.execution_id,
        str(record.status),
        record.due_at,
        record.lease_token,
        None if lease is None else lease.expires_at,
        record.cancel_requested,
        record.waiting_on,
    )


class Fingerprints:
    """One run's state fingerprints, each in time proportional to what changed since the last.

    An execution's part is its record's fields and a sum of its steps' hashes (each hash
    covers a step's position, key, status and attempt), so a step written changes one term.
    On the memory runtime, whose rows say how often each was written (``revision``) and which
    steps each write touched (``step_writes``; ``MemoryRuntime.rows_view``), only the rows
    whose revision moved are read again, and of their steps only those written since; any
    other runtime is read whole at every point, to the same fingerprint. The ledger's
    effects, only ever appended, are chained into one hash, each once; the clock's and the
    store's texts are kept while they stand still, and the other actors' while none of them
    moves (the kernel's ``waits``, compared with a copy).
    """

    follows_changes = True
    """Whether to follow the memory runtime's rows and the kernel's ``waits`` (a subclass that
    reads whole says no)."""

    __slots__ = (
        "_effects", "_ledger", "_ledger_hex", "_middle", "_name", "_now", "_now_text",
        "_others", "_others_text", "_records", "_rows", "_runtime", "_store", "_store_text",
        "_waits",
    )  # fmt: skip

    def __init__(self) -> None:
        self._records: dict[int, _Execution] = {}
        self._effects = 0
        self._ledger = HASH_16.copy()
        self._ledger_hex = self._ledger.hexdigest()
        self._runtime: object = None
        self._rows: ValuesView[Row] | None = None
        self._now: float | None = None
        self._now_text = ""
        self._others: list[str] | None = None
        self._others_text = ""
        self._waits: dict[str, object] | None = None
        self._name = ""
        self._store: dict[str, str] | None = None
        self._store_text = ""
        self._middle = ""

    def key(self, simulator: Simulator, name: str, point: Point) -> str:
        """The fingerprint of the state at a choice point, blind to which worker is which:
        the runtime's records, the clock, the ledger, the world's store, what every other
        actor is doing, the call, and how far behind each skewed worker's clock runs."""
        runtime = simulator.runtime
        if runtime is not self._runtime:
            self._runtime = runtime
            view = getattr(runtime, "rows_view", None) if self.follows_changes else None
            # The view's values are live too: taken once, not at every point.
            self._rows = None if view is None else view().values()
        rows = self._rows
        if rows is None:
            records = self.records(runtime)
        else:
            records = []
            cache = self._records
            for row in rows:
                entry = cache.get(row.seq)
                if entry is None:
                    entry = cache[row.seq] = _Execution()
                if entry.revision != row.revision:
                    # Only the steps written since the last read: a key written twice since
                    # is read once, so its hash is replaced, never summed twice.
                    entry.update(written_since(row, entry.writes), row.head())
                    entry.writes, entry.revision = len(row.step_writes), row.revision
                records.append(entry.part)
        # The clock, the ledger, the store and the other actors, joined once for as long as
        # none of them changes (most points change only a record).
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
            self._middle = "\n".join(
                (self._now_text, self._ledger_hex, self._store_text, self._others_text)
            )
        info: PointInfo = point.info
        text = "\n".join(
            (
                *records,
                # Each part its repr (self-delimiting) but the op, which is one of ours.
                f"{self._middle}\x1e{info.op}\x1e{info.execution_id!r}\x1e{info.step_key!r}",
                _clocks(simulator, name) if simulator.clocks.behind else "",
            )
        )
        running = HASH_12.copy()
        running.update(text.encode())
        return running.hexdigest()

    def _describe_others(self, kernel: Kernel, name: str, waits: dict[str, Any] | None) -> bool:
        """Describe the actors other than ``name`` again (someone moved, or another actor
        asks; equal waits describe alike, and the acting actor's own move between two of its
        points is not seen); whether their text changed."""
        others = sorted(
            state.replace(other, "~") for other, state in kernel.waiting() if other != name
        )
        if waits is not None:
            self._waits, self._name = dict(waits), name
        if others == self._others:
            return False
        self._others, self._others_text = others, repr(others)
        return True

    def records(self, runtime: Any) -> list[str]:
        """Each execution's part of the fingerprint, in admission order, read whole."""
        return [_read_whole(runtime, record).part for record in runtime.executions()]

    def _fold(self, effects: list[Effect]) -> None:
        """Chain the effects added since the last point into the ledger's hash."""
        if len(effects) < self._effects:
            # Not this run's ledger: start again.
            self._effects, self._ledger = 0, HASH_16.copy()
        for effect in effects[self._effects :]:
            self._ledger.update(_effect_text(effect).encode() + b"\n")
        self._effects = len(effects)
        self._ledger_hex = self._ledger.hexdigest()


def _read_whole(runtime: Any, record: ExecutionRecord) -> _Execution:
    entry = _Execution()
    entry.update(runtime.steps(record.execution_id), record_head(record))
    return entry


def written_since(row: Row, done: int) -> Sequence[StepRecord]:
    """The steps of ``row`` written since its first ``done`` step writes, each once: a key
    written twice since is read once, so its hash is replaced, never summed twice."""
    writes, steps = row.step_writes, row.steps
    if len(writes) == done + 1:  # most often: one step written
        return (steps[writes[done]],)
    return [steps[key] for key in dict.fromkeys(writes[done:])]


def store_text(store: dict[str, str]) -> str:
    """The world's store as a key reads it: its items sorted by key."""
    return repr(sorted(store.items())) if store else "[]"


def _effect_text(effect: Effect) -> str:
    return repr((effect.name, sorted(effect.data.items()), effect.execution_id, effect.step_key))


def _state_key(
    simulator: Simulator, name: str, point: Point, cache: Fingerprints | None = None
) -> str:
    """A fingerprint of the state at a choice point (``Fingerprints.key``). With ``cache``
    (one per run), only what changed since its last fingerprint is read again."""
    return (cache if cache is not None else Fingerprints()).key(simulator, name, point)


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
) -> Outcome:
    """The outcome of plan number ``index`` from its finished simulator (whose runtime it
    closes) and what ``observe_points`` saw."""
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
    run.runtime.close()
    return outcome


def _simulator(
    scenario: Scenario, plan: Plan, runtime: RuntimeChoice, timeout: float | None = DEFAULT_TIMEOUT
) -> Simulator:
    chooser: Callable[[int, list[str]], str] | None = None
    if plan.priorities:
        chooser = _PctChooser(plan.priorities, plan.change_points)
    elif plan.schedule:
        chooser = _ScheduleChooser(plan.schedule)
    return Simulator(
        scenario, seed=plan.seed, runtime=runtime, faults=plan.faults, scenario_faults=False,
        chooser=chooser, timeout=timeout,
    )  # fmt: skip


def simulate_plan(
    scenario: Scenario, plan: Plan, runtime: RuntimeChoice = "memory", timeout: float | None = None
) -> SimulationRun:
    """Run one plan and keep the whole run (trace, records) for reading."""
    simulator = _simulator(scenario, plan, runtime, timeout)
    simulator.run()
    return finish(simulator)
