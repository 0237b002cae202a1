"""The exhaustive search's state keys, each in time proportional to what changed since the last
choice point of the run.

The key covers what ``exhaustive.state_key`` (the full read it replaces) covers, blind to which
worker is which: every execution's record with its result and its steps *with their values*,
the start requests, the clock, the ledger, the world's store, each actor's state (what it
waits for, and its delivery so far as the trace reads: what its generator holds), and what
the workers believe (skewed clocks, lease ends). Two states get one key exactly when the full
read gives them one: each part is an injective text of what the full read reads, or a
blake2b hash of one (a cryptographic hash: a collision would merge two states and skip a
schedule, and a violation there would come back as a green verdict).

What makes it incremental:

- on the memory runtime (``MemoryRuntime.rows_view``), only the rows whose ``revision``
  moved are read again, and of their steps only those written since (``step_writes``); an
  execution's steps are summed hashes, one per step, so a step written replaces one term;
  its result's text is kept while the row holds the same value;
- the start requests are read again only when the set of rows changes: a request's record
  is its target's row (an admission adds one, a prune removes one);
- the ledger's effects, only ever appended, are chained into one hash, each once;
- each actor's history is a running hash, fed a line per trace event and reset where the
  history is (a claim, a crash, an outcome, a rejection);
- the clock's, the store's and the workers' beliefs' texts are kept while they stand still,
  and each actor's state while it waits on the same object (the kernel's ``waits``).

Any other runtime is read whole at every point, to the same key; ``whole_key`` reads
everything whole (the reference the tests compare with at every point).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.explorer.plans import (
    HASH_12,
    HASH_16,
    MASK,
    record_head,
    store_text,
    written_since,
)
from yieldstar_sim.simulation.kernel import describe
from yieldstar_sim.simulation.trace import TraceKind

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence, ValuesView

    from yieldstar_sim.core.model import StepRecord
    from yieldstar_sim.engine.world import Effect
    from yieldstar_sim.runtime.memory_rows import Row
    from yieldstar_sim.simulation.kernel import Point
    from yieldstar_sim.simulation.simulator import Simulator
    from yieldstar_sim.simulation.trace import TraceEvent

#: Trace events after which an actor's generator holds nothing of its past: its history starts
#: again (a claim call too).
_RESETS = frozenset({TraceKind.CRASH, TraceKind.OUTCOME, TraceKind.REJECT})
#: The hash of an empty history (an actor with no delivery yet, or none since a reset).
_EMPTY = HASH_16.hexdigest()
_CALL = TraceKind.CALL

Histories = tuple[dict[str, Any], dict[str, str], dict[str, list[str]] | None]
"""Each actor's history at a point (``StateKeys.snapshot``): its running hash, its hex digest
where computed, and its lines (when kept)."""


def step_hash(step: StepRecord) -> int:
    """One step's term in its execution's sum: its position, key, status, attempt and value.

    The position (the step's place in first-recorded order) makes the sum of an execution's
    terms stand for its ordered list of steps; the key is quoted and the value last, so the
    text reads back one way.
    """
    s = step
    running = HASH_16.copy()
    running.update(
        f"{s.position}\x1f{s.step_key!r}\x1f{s.status}\x1f{s.attempt}\x1f{s.value!r}".encode()
    )
    return int.from_bytes(running.digest())


class _Record:
    """What one execution contributes to a key, kept up to date from its changes."""

    __slots__ = (
        "head", "head_text", "part", "result", "result_text", "revision", "step_hashes",
        "steps_sum", "writes",
    )  # fmt: skip

    def __init__(self) -> None:
        self.revision = -1
        self.writes = 0
        self.step_hashes: dict[int, int] = {}
        self.steps_sum = 0
        self.head: tuple[object, ...] | None = None
        self.head_text = ""
        self.result: object = _Record
        self.result_text = ""
        self.part = ""

    def update(self, steps: Iterable[StepRecord], head: tuple[object, ...], result: object) -> None:
        """Fold in the current state of ``steps``, and take ``head`` (``record_head``) and
        ``result`` (the execution's decoded result) as the record's."""
        hashes = self.step_hashes
        total = self.steps_sum
        for step in steps:
            position = step.position
            new = step_hash(step)
            total += new - hashes.get(position, 0)
            hashes[position] = new
        self.steps_sum = total = total & MASK
        if head != self.head:
            self.head, self.head_text = head, repr(head)
        # The row's result is replaced, never changed in place (readers get copies): the same
        # object has the same text. Holding it keeps its id from being reused.
        if result is not self.result:
            self.result, self.result_text = result, repr(result)
        self.part = f"{self.head_text}\x1e{self.result_text}\x1e{len(hashes)}:{total:x}"


class StateKeys:
    """One run's state keys for the exhaustive search (see the module's docstring).

    Feed it the run's trace events (``remember``) as they come, and ask ``key`` at each choice
    point. With ``lines``, ``histories`` also holds each actor's history as lines, for reading
    whole (``whole_key``); the search needs only their hashes.
    """

    follows_changes = True
    """Whether to follow the memory runtime's rows and the kernel's ``waits`` (a subclass
    that reads whole says no)."""

    def __init__(self, *, lines: bool = False) -> None:
        self.lines = lines
        self.histories: dict[str, list[str]] = {}
        """Each actor's delivery so far, as its trace reads (a line per event; with ``lines``)."""
        self._hashes: dict[str, Any] = {}
        self._hexes: dict[str, str] = {}
        self._records: dict[int, _Record] = {}
        self._runtime: object = None
        self._rows: ValuesView[Row] | None = None
        self._shape: tuple[int, int] = (-1, -1)
        self._requests = ""
        self._effects = 0
        self._ledger = HASH_16.copy()
        self._ledger_hex = self._ledger.hexdigest()
        self._now: float | None = None
        self._now_text = ""
        self._store: dict[str, str] | None = None
        self._store_text = ""
        self._described: dict[str, tuple[object, str]] = {}
        """Each actor's last wait (``Kernel.waits``) and its text, its name blinded."""
        self._behind: dict[str, float] | None = None
        self._ends: dict[tuple[str, int], float] | None = None
        self._believed = ""

    # ------------------------------------------------------------------ histories

    def remember(self, events: Sequence[TraceEvent]) -> None:
        """Add each event to its worker's history, as its trace reads with the worker's name
        blinded: the state its generator holds. A claim, a crash, an outcome or a rejection
        starts the history again."""
        histories, hashes, hexes, lines = self.histories, self._hashes, self._hexes, self.lines
        for event in events:
            worker = event.worker
            if worker is None:
                continue
            kind = event.kind
            line = f"{kind} {event.text}".replace(worker, "~")
            running = hashes.get(worker)
            if running is None or kind in _RESETS or (kind is _CALL and event.op == "claim"):
                hashes[worker] = running = HASH_16.copy()
                if lines:
                    histories[worker] = [line]
            elif lines:
                histories[worker].append(line)
            _feed(running, line)
            hexes.pop(worker, None)

    def snapshot(self) -> Histories:
        """The histories as they are now, for ``restore``: a run that replays the same path
        to this point has the same histories, without feeding them its events again."""
        lines = {w: list(h) for w, h in self.histories.items()} if self.lines else None
        return ({w: h.copy() for w, h in self._hashes.items()}, dict(self._hexes), lines)

    def restore(self, snapshot: Histories) -> None:
        """Put back the histories of ``snapshot`` (one ``snapshot`` gave): the keys go on
        from there."""
        hashes, hexes, lines = snapshot
        # Copied again: one snapshot is restored by every run that replays its path.
        self._hashes = {w: h.copy() for w, h in hashes.items()}
        self._hexes = dict(hexes)
        self.histories = {} if lines is None else {w: list(h) for w, h in lines.items()}

    def _history(self, name: str) -> str:
        text = self._hexes.get(name)
        if text is None:
            running = self._hashes.get(name)
            text = _EMPTY if running is None else running.hexdigest()
            self._hexes[name] = text
        return text

    # ------------------------------------------------------------------ the key

    def key(self, simulator: Simulator, chosen: tuple[str, Point] | None) -> str:
        """The key of the state at a choice point (before the choice); ``chosen`` is the
        actor the kernel already took there, with its point, when only one was ready."""
        runtime = simulator.runtime
        if runtime is not self._runtime:
            self._runtime = runtime
            view = getattr(runtime, "rows_view", None) if self.follows_changes else None
            # The view's values are live: taken once, not at every point.
            self._rows = None if view is None else view().values()
        rows = self._rows
        records = self._whole(runtime) if rows is None else self._follow(runtime, rows)
        now = simulator.clock.now()
        if now != self._now:
            self._now, self._now_text = now, repr(now)
        effects = simulator.ledger.effects
        if len(effects) != self._effects:
            self._fold(effects)
        store = simulator.store.canonical
        if store != self._store:
            self._store, self._store_text = dict(store), store_text(store)
        history = self._history
        if self.follows_changes:
            # Only an actor whose wait is another object than at the last point is described
            # again (most often the one that just went).
            described = self._described
            actors = []
            for name, state in simulator.kernel.waits.items():
                seen = described.get(name)
                if seen is None or seen[0] is not state:
                    seen = described[name] = (state, describe(state).replace(name, "~"))
                actors.append((seen[1], history(name)))
        else:
            actors = [
                (state.replace(name, "~"), history(name))
                for name, state in simulator.kernel.waiting()
            ]
        if chosen is not None:
            name = chosen[0]
            actors.append((f"point {chosen[1].label}".replace(name, "~"), history(name)))
        actors.sort()
        believed = ""
        behind, ends = simulator.clocks.behind, simulator.lease_ends
        if behind or ends:
            if behind != self._behind or ends != self._ends:
                # Sorted and formatted again only when a belief changed (a heartbeat, a skew).
                self._behind, self._ends = dict(behind), dict(ends)
                self._believed = repr((sorted(behind.values()), sorted(ends.items())))
            believed = self._believed
        text = "\n".join(
            (
                *records,
                self._requests,
                self._now_text,
                self._ledger_hex,
                self._store_text,
                repr(actors),
                believed,
            )
        )
        running = HASH_12.copy()
        running.update(text.encode())
        return running.hexdigest()

    def _follow(self, runtime: Any, rows: ValuesView[Row]) -> list[str]:
        """Each execution's part, reading again only the rows that changed (and the start
        requests only when the set of rows did)."""
        records = []
        cache = self._records
        last = 0
        for row in rows:
            last = row.seq
            entry = cache.get(last)
            if entry is None:
                entry = cache[last] = _Record()
            if entry.revision != row.revision:
                writes = row.step_writes
                done = entry.writes
                if len(writes) < done:  # the row's steps were emptied: read them all
                    entry, done = _Record(), 0
                    cache[last] = entry
                entry.update(written_since(row, done), row.head(), row.result_value)
                entry.writes = len(writes)
                entry.revision = row.revision
            records.append(entry.part)
        # Rows are kept in admission order and an admission takes a new, higher number: the
        # set of rows changed exactly when their count or the last one's number did.
        shape = (len(records), last)
        if shape != self._shape:
            self._shape, self._requests = shape, _requests(runtime)
        return records

    def _whole(self, runtime: Any) -> list[str]:
        """Each execution's part, and the start requests, read whole."""
        records = []
        for record in runtime.executions():
            entry = _Record()
            entry.update(runtime.steps(record.execution_id), record_head(record), record.result)
            records.append(entry.part)
        self._requests = _requests(runtime)
        return records

    def _fold(self, effects: list[Effect]) -> None:
        """Chain the effects added since the last point into the ledger's hash."""
        if len(effects) < self._effects:
            # Not this run's ledger: start again.
            self._effects, self._ledger = 0, HASH_16.copy()
        for effect in effects[self._effects :]:
            text = repr(
                (effect.name, effect.data, effect.execution_id, effect.step_key, effect.attempt)
            )
            _feed(self._ledger, text)
        self._effects = len(effects)
        self._ledger_hex = self._ledger.hexdigest()


class WholeReads(StateKeys):
    """Every execution and start request read again at every point, as on a runtime that
    reports no changes (the ledger, the histories and the rest are followed as before)."""

    follows_changes = False

    def __init__(self, *, lines: bool = True) -> None:
        super().__init__(lines=lines)


def whole_key(
    simulator: Simulator, histories: dict[str, list[str]], chosen: tuple[str, Point] | None
) -> str:
    """The key ``StateKeys.key`` gives, with everything read whole: every record and step, the
    start requests, the whole ledger, each actor's whole history (``histories``), the store
    and the clock."""
    keys = WholeReads()
    for name, lines in histories.items():
        running = keys._hashes[name] = HASH_16.copy()
        for line in lines:
            _feed(running, line)
    return keys.key(simulator, chosen)


def _feed(running: Any, line: str) -> None:
    """Add one line to a running hash, its length first: the hash reads back as one list."""
    data = line.encode()
    running.update(b"%d:%b" % (len(data), data))


def _requests(runtime: Any) -> str:
    return repr(
        sorted(
            repr((r.request_id, r.workflow_id, r.target_execution_id))
            for r in runtime.start_requests()
        )
    )
