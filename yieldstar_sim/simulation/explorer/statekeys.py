"""The exhaustive search's state keys, each in time proportional to what changed since the last
choice point of the run.

The key covers what the full read it replaced covers (the tests keep it as their reference),
blind to which worker is which: every execution's record with its result and its steps *with
their values*, the start requests, the clock, the ledger, the world's store, each actor's state
(what it waits for, and its delivery so far as the trace reads: what its generator holds), and
what the workers believe (skewed clocks, lease ends). It is a sum of terms (``terms``): one
blake2b hash per part, personalised by the kind of part. Two states get one key exactly when the
full read gives them one, but for a chance of 2**-128 (a cryptographic hash: a collision would
merge two states and skip a schedule, and a violation there would come back as a green verdict).

What makes it incremental:

- on the memory runtime (``MemoryRuntime.rows_view``), only the rows written since the last
  point are read again (``MemoryRuntime.row_writes``), and of their steps only those written
  since (``step_writes``): a step written replaces its one term (``terms.Executions``);
- the start requests are read again only when the set of rows changes: a request's record
  is its target's row (an admission adds one, a prune removes one);
- the ledger's effects, only ever appended, are chained into one hash, each once;
- each actor's history is a running hash, fed a line per trace event and reset where the
  history is (a claim, a crash, an outcome, a rejection); an actor's term (its history and
  what it waits for) is made again only when one of them changed (the kernel's ``waits``);
- the clock's, the store's and the workers' beliefs' terms are kept while they stand still.

Any other runtime is read whole at every point, to the same key; the tests read everything
whole (their reference) and compare at every point.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.explorer.terms import Executions, key_text, kind, store_text, term
from yieldstar_sim.simulation.kernel import describe
from yieldstar_sim.simulation.trace_payloads import TraceKind

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.engine.world import Effect
    from yieldstar_sim.simulation.kernel import Point
    from yieldstar_sim.simulation.simulator import Simulator
    from yieldstar_sim.simulation.trace import TraceEvent

#: Trace events after which an actor's generator holds nothing of its past: its history starts
#: again (a claim call too).
_CRASH, _OUTCOME, _REJECT = TraceKind.CRASH, TraceKind.OUTCOME, TraceKind.REJECT
_CALL = TraceKind.CALL
#: The running hashes (an actor's history, the ledger) and the terms of each kind of part.
_HISTORY = kind("history")
_LEDGER = kind("ledger")
_REQUESTS = kind("requests")
_CLOCK = kind("clock")
_STORE = kind("store")
_BELIEVED = kind("believed")
_GROUPS = kind("groups")

Histories = tuple[dict[str, Any], dict[str, list[str]] | None]
"""Each actor's history at a point (``StateKeys.snapshot``): its running hash, and its lines
(when kept)."""


class StateKeys:
    """One run's state keys for the exhaustive search (see the module's docstring).

    Feed it the run's trace events (``remember``) as they come, and ask ``key`` at each choice
    point. With ``lines``, ``histories`` also holds each actor's history as lines, for reading
    whole (the tests' reference); the search needs only their hashes.
    """

    follows_changes = True
    """Whether to follow the memory runtime's rows and the kernel's ``waits`` (a subclass
    that reads whole says no)."""

    def __init__(self, *, lines: bool = False) -> None:
        self.lines = lines
        self.histories: dict[str, list[str]] = {}
        """Each actor's delivery so far, as its trace reads (a line per event; with ``lines``)."""
        self._hashes: dict[str, Any] = {}
        self._actors: dict[str, tuple[object, int]] = {}
        """Each waiting actor's last wait (``Kernel.waits``) and its term (its wait and its
        history), dropped when its history grows."""
        self._executions = Executions(values=True)
        self._shape: tuple[int, int] = (-1, -1)
        self._requests = 0
        self._effects = 0
        self._ledger = _LEDGER.copy()
        self._ledger_term = int.from_bytes(self._ledger.digest())
        self._now: float | None = None
        self._now_term = 0
        self._store: dict[str, str] | None = None
        self._store_term = 0
        self._behind: dict[str, float] | None = None
        self._ends: dict[tuple[str, int], float] | None = None
        self._believed = 0
        self._workers: frozenset[str] = frozenset()
        self._names = re.compile(r"(?!)")  # matches nothing until a worker is seen

    # ------------------------------------------------------------------ histories

    def remember(self, events: Sequence[TraceEvent]) -> None:
        """Add each event to its worker's history, as its trace reads with the workers' names
        blinded: the state its generator holds (and its helpers': a stalled attempt, a body
        completing, a draw's options write in their worker's name, and what they decided is
        the worker's to go on with). A claim, a crash, an outcome or a rejection starts the
        history again."""
        histories, hashes, actors, lines = self.histories, self._hashes, self._actors, self.lines
        for event in events:
            worker = event.worker
            if worker is None:
                continue
            kind = event.kind
            # The event's facts, not its words: the payloads carry what the text says (a
            # body's value or error, an outcome, a lease's end, a wait's target, a reason),
            # and every bundled scenario's exhaustive search counts the same states keyed so
            # as keyed by the text. The time is left out: the clock has its own term.
            if worker not in self._workers:
                self._learn(worker)
            # Every worker's name blinded, not only its own: a refused write's reason names the
            # worker that holds the lease now, and two states that mirror each other (the
            # workers swapped) would get two keys while the state before them gets one.
            line = self._names.sub(
                "~",
                f"{kind} {event.op} {event.execution_id} {event.step_key} {event.token} "
                f"{event.data.to_json()}",
            )
            running = hashes.get(worker)
            # Kinds compared by identity: an enum member's hash is a Python call.
            if (
                running is None
                or kind is _CRASH
                or kind is _OUTCOME
                or kind is _REJECT
                or (kind is _CALL and event.op == Op.CLAIM)
            ):
                hashes[worker] = running = _HISTORY.copy()
                if lines:
                    histories[worker] = [line]
            elif lines:
                histories[worker].append(line)
            data = line.encode()  # as _feed does, inline: every event passes here
            running.update(b"%d:%b" % (len(data), data))
            actors.pop(worker, None)

    def _learn(self, worker: str) -> None:
        """Blind ``worker`` too from now on (longer names first: ``w10`` before ``w1``)."""
        self._workers = self._workers | {worker}
        names = sorted(self._workers, key=len, reverse=True)
        self._names = re.compile("|".join(rf"\b{re.escape(name)}\b" for name in names))

    def snapshot(self) -> Histories:
        """The histories as they are now, for ``restore``: a run that replays the same path
        to this point has the same histories, without feeding them its events again."""
        lines = {w: list(h) for w, h in self.histories.items()} if self.lines else None
        return ({w: h.copy() for w, h in self._hashes.items()}, lines)

    def copy(self) -> StateKeys:
        """These keys, whole, kept apart: a saved state's, which a restored run goes on from
        (``caught_up``) instead of reading every row again."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.histories = {w: list(h) for w, h in self.histories.items()} if self.lines else {}
        new._hashes = {w: h.copy() for w, h in self._hashes.items()}
        new._actors = dict(self._actors)
        new._executions = self._executions.copy()
        new._ledger = self._ledger.copy()
        return new

    def caught_up(self) -> StateKeys:
        """These keys, after the runtime's rows were restored to those they were read from
        (``MemoryRuntime.restore``): the restored rows' writes count as read."""
        self._executions.caught_up()
        return self

    def restore(self, snapshot: Histories) -> None:
        """Put back the histories of ``snapshot`` (one ``snapshot`` gave): the keys go on
        from there."""
        hashes, lines = snapshot
        # Copied again: one snapshot is restored by every run that replays its path.
        self._hashes = {w: h.copy() for w, h in hashes.items()}
        self._actors = {}
        self.histories = {} if lines is None else {w: list(h) for w, h in lines.items()}

    def _actor(self, name: str, wait: str) -> int:
        """The term of actor ``name`` waiting as ``wait`` says (its name blinded): its history
        with the wait after it. History lines are fed with their lengths (``_feed``), which
        start with a digit: the wait, after a zero byte, reads back one way."""
        running = self._hashes.get(name)
        running = _HISTORY.copy() if running is None else running.copy()
        running.update(b"\0" + wait.encode() + b"\0" + actor_role(name).encode())
        return int.from_bytes(running.digest())

    def actor_term(self, simulator: Simulator, name: str) -> int:
        """The term of actor ``name`` in the key just read (``key``): its history and its wait,
        its name blinded; equal for two actors exactly when each holds what the other does."""
        state = simulator.kernel.waits[name]
        seen = self._actors.get(name) if self.follows_changes else None
        if seen is not None and seen[0] is state:
            return seen[1]
        return self._actor(name, describe(state).replace(name, "~"))

    # ------------------------------------------------------------------ the key

    def key(
        self, simulator: Simulator, chosen: tuple[str, Point] | None, *, ended: bool = False
    ) -> str:
        """The key of the state at a choice point (before the choice); ``chosen`` is the
        actor the kernel already took there, with its point, when only one was ready. With
        ``ended``, the state a run ended in: its actors are over (closed, or left parked by a
        run the search restores from), and none is counted."""
        runtime, executions = simulator.runtime, self._executions
        total = executions.of(runtime, follow=self.follows_changes)
        if not executions.following:
            self._requests = _requests(runtime)
        elif executions.shape != self._shape:
            # A request's record is its target's row (an admission adds one, a prune removes
            # one): the requests change only with the set of rows.
            self._shape, self._requests = executions.shape, _requests(runtime)
        now = simulator.clock.now()
        if now != self._now:
            self._now, self._now_term = now, term(_CLOCK, repr(now))
        effects = simulator.ledger.effects
        if len(effects) != self._effects:
            self._fold(effects)
        store = simulator.store.canonical
        if store != self._store:
            self._store, self._store_term = dict(store), term(_STORE, store_text(store))
        total += self._requests + self._now_term + self._ledger_term + self._store_term
        if ended:
            pass
        elif self.follows_changes:
            # An actor's term is made again only when it waits on another object than at the
            # last point, or its history grew (most often only the one that just went).
            actors = self._actors
            for name, state in simulator.kernel.waits.items():
                seen = actors.get(name)
                if seen is None or seen[0] is not state:
                    wait = describe(state).replace(name, "~")
                    seen = actors[name] = (state, self._actor(name, wait))
                total += seen[1]
        else:
            for name, text in simulator.kernel.waiting():
                total += self._actor(name, text.replace(name, "~"))
        if chosen is not None:
            name = chosen[0]
            total += self._actor(name, f"point {chosen[1].label}".replace(name, "~"))
        behind, ends = simulator.clocks.behind, simulator.lease_ends
        if behind or ends:
            total += self._beliefs(behind, ends)
        run = simulator.state
        if run.groups:
            # The order a step.all's bodies completed in so far (and each draw's option): the
            # worker and the actors that wait share it, and it decides what the worker does
            # next. By what each group is for, not its number (made in the order runs went).
            names = run.group_names
            groups = sorted((names[n], tuple(o)) for n, o in run.groups.items())
            total += term(_GROUPS, repr(groups))
        return key_text(total)

    def _beliefs(self, behind: dict[str, float], ends: dict[tuple[str, int], float]) -> int:
        """The term of what the workers believe: how far behind each skewed clock runs, and
        where each lease ends after its heartbeats (sorted: blind to which worker is which),
        hashed again only when a belief changed (a heartbeat, a skew)."""
        if behind != self._behind or ends != self._ends:
            self._behind, self._ends = dict(behind), dict(ends)
            believed = repr((sorted(behind.values()), sorted(ends.items())))
            self._believed = term(_BELIEVED, believed)
        return self._believed

    def _fold(self, effects: list[Effect]) -> None:
        """Chain the effects added since the last point into the ledger's hash."""
        if len(effects) < self._effects:
            # Not this run's ledger: start again.
            self._effects, self._ledger = 0, _LEDGER.copy()
        for effect in effects[self._effects :]:
            text = repr(
                (effect.name, effect.data, effect.execution_id, effect.step_key, effect.attempt)
            )
            _feed(self._ledger, text)
        self._effects = len(effects)
        self._ledger_term = int.from_bytes(self._ledger.digest())


class WholeReads(StateKeys):
    """Every execution and start request read again at every point, as on a runtime that
    reports no changes (the ledger, the histories and the rest are followed as before)."""

    follows_changes = False

    def __init__(self, *, lines: bool = True) -> None:
        super().__init__(lines=lines)


def actor_role(name: str) -> str:
    """What an actor's name says of it once its worker is blinded: nothing for a worker, the
    rest of the name for an actor a worker's delivery left behind (a stalled attempt,
    ``w1~order-42~3``: which execution, lease and attempt it goes on with), whose history is
    its worker's and whose wait alone (``sleep until 120``) would not tell two apart.

    >>> actor_role("w1"), actor_role("w1~order-42~3")
    ('', 'order-42~3')
    """
    return name.partition("~")[2]


def _feed(running: Any, line: str) -> None:
    """Add one line to a running hash, its length first: the hash reads back as one list."""
    data = line.encode()
    running.update(b"%d:%b" % (len(data), data))


def _requests(runtime: Any) -> int:
    """The start requests' term."""
    text = repr(
        sorted(
            repr((r.request_id, r.workflow_id, r.target_execution_id))
            for r in runtime.start_requests()
        )
    )
    return term(_REQUESTS, text)
