"""Plans and their outcomes: one schedule to run (a seed, faults at choice points, PCT
priorities), what running it gave, and the state fingerprint that makes two choice points
equivalent."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.deadline import DEFAULT_TIMEOUT
from yieldstar_sim.simulation.run import SimulationRun, finish
from yieldstar_sim.simulation.simulator import Simulator

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from yieldstar_sim.core.model import ExecutionRecord, StepRecord
    from yieldstar_sim.engine.world import Effect
    from yieldstar_sim.runtime.factory import RuntimeChoice
    from yieldstar_sim.simulation.faults import Fault, PointInfo
    from yieldstar_sim.simulation.kernel import Point
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


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=16).digest(), "big")


_MASK = (1 << 128) - 1


class _Execution:
    """What one execution contributes to a fingerprint, kept up to date from its changes."""

    __slots__ = ("part", "revision", "step_hashes", "steps_sum", "writes")

    def __init__(self) -> None:
        self.revision = -1
        self.writes = 0
        self.step_hashes: dict[int, int] = {}
        self.steps_sum = 0
        self.part = ""

    def add_steps(self, steps: Iterable[StepRecord]) -> None:
        """Fold in the current state of ``steps``: a step's hash includes its position, and
        the steps' hashes are summed, so replacing one costs one hash whatever the count."""
        hashes = self.step_hashes
        total = self.steps_sum
        for s in steps:
            new = _digest(f"{s.position}\x1f{s.step_key}\x1f{s.status}\x1f{s.attempt}")
            total += new - hashes.get(s.position, 0)
            hashes[s.position] = new
        self.steps_sum = total & _MASK

    def set_record(self, record: ExecutionRecord) -> None:
        """Take the record's changing fields (``record_head``) as this execution's head."""
        self.set_head(record_head(record))

    def set_head(self, head: tuple[object, ...]) -> None:
        self.part = f"{head!r}:{len(self.step_hashes)}:{self.steps_sum:032x}"


def record_head(record: ExecutionRecord) -> tuple[object, ...]:
    """What of an execution's record its fingerprint covers: the fields that change as it
    runs (``MemoryRuntime.record_state`` gives the same without building the record)."""
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
    On a runtime that reports changes (``revisions()`` and ``steps_written()``, as the memory
    runtime does) only the executions whose revision moved are read again, and of their steps
    only those written since; any other runtime is read whole at every point, to the same
    fingerprint. The ledger's effects, only ever appended, are chained into one hash, each
    once.
    """

    __slots__ = ("_effects", "_ledger", "_ledger_hex", "_readers", "_records")

    def __init__(self) -> None:
        self._records: dict[tuple[str, int], _Execution] = {}
        self._effects = 0
        self._ledger = hashlib.blake2b(digest_size=16)
        self._ledger_hex = self._ledger.hexdigest()
        self._readers: tuple[Any, Any, Any, Any] | None = None

    def _methods(self, runtime: Any) -> tuple[Any, Any, Any]:
        """The runtime's change-reporting methods (looked up once per runtime: this runs at
        every choice point)."""
        readers = self._readers
        if readers is None or readers[0] is not runtime:
            readers = self._readers = (
                runtime,
                getattr(runtime, "revisions", None),
                getattr(runtime, "steps_written", None),
                getattr(runtime, "record_state", None),
            )
        return readers[1], readers[2], readers[3]

    def records(self, runtime: Any) -> list[str]:
        """Each execution's part of the fingerprint, in admission order."""
        revisions, steps_written, record_state = self._methods(runtime)
        if revisions is None or steps_written is None:
            return [_read_whole(runtime, record).part for record in runtime.executions()]
        parts = []
        cache = self._records
        for execution_id, incarnation, revision in revisions():
            entry = cache.get((execution_id, incarnation))
            if entry is None:
                entry = cache[execution_id, incarnation] = _Execution()
            if entry.revision != revision:
                entry.writes, changed = steps_written(execution_id, entry.writes)
                entry.add_steps(changed)
                if record_state is not None:
                    entry.set_head(record_state(execution_id))
                else:
                    entry.set_record(runtime.execution(execution_id))
                entry.revision = revision
            parts.append(entry.part)
        return parts

    def ledger(self, simulator: Simulator) -> str:
        """A hash of the ledger's effects, in order."""
        effects = simulator.ledger.effects
        if len(effects) == self._effects:
            return self._ledger_hex  # most points add no effect
        if len(effects) < self._effects:
            # Not this run's ledger: start again.
            self._effects, self._ledger = 0, hashlib.blake2b(digest_size=16)
        for effect in effects[self._effects :]:
            self._ledger.update(_effect_text(effect).encode() + b"\n")
        self._effects = len(effects)
        self._ledger_hex = self._ledger.hexdigest()
        return self._ledger_hex


def _read_whole(runtime: Any, record: ExecutionRecord) -> _Execution:
    entry = _Execution()
    entry.add_steps(runtime.steps(record.execution_id))
    entry.set_record(record)
    return entry


def _effect_text(effect: Effect) -> str:
    return repr((effect.name, sorted(effect.data.items()), effect.execution_id, effect.step_key))


def _state_key(
    simulator: Simulator, name: str, point: Point, cache: Fingerprints | None = None
) -> str:
    """A fingerprint of the state at a choice point, blind to which worker is which: the
    runtime's records, the clock, the ledger, the world's store, what every other actor is
    doing, the call, and how far behind each skewed worker's clock runs.

    With ``cache`` (one per run), only what changed since its last fingerprint is read again.
    """
    cache = cache if cache is not None else Fingerprints()
    others = sorted(
        state.replace(other, "~") for other, state in simulator.kernel.waiting() if other != name
    )
    info: PointInfo = point.info
    text = "\n".join(
        (
            *cache.records(simulator.runtime),
            repr(simulator.clock.now()),
            cache.ledger(simulator),
            repr(sorted(simulator.store.canonical.items())),
            repr((others, info.op, info.execution_id, info.step_key)),
            _clocks(simulator, name),
        )
    )
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


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
    seen = observe_points(simulator, expand=expand)
    simulator.run()
    return outcome_of(simulator, plan.index, seen, digest=digest)


def observe_points(simulator: Simulator, *, expand: bool) -> tuple[list[str], list[str], list[str]]:
    """Record each choice point's op, and with ``expand`` its label and state key, as the
    simulator passes it: the lists ``(labels, keys, ops)`` ``outcome_of`` reports."""
    labels: list[str] = []
    keys: list[str] = []
    ops: list[str] = []
    simulator.kernel.observers.append(lambda index, name, point, fault: ops.append(point.info.op))
    if expand:
        fingerprints = Fingerprints()

        def observe(index: int, name: str, point: Point, fault: Any) -> None:
            labels.append(point.label)
            keys.append(_state_key(simulator, name, point, fingerprints))

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
