"""A run's state key, in time proportional to what changed since the last choice point.

One key for every search: the exhaustive search's visited states and the systematic search's
equivalent points are the same thing. It covers, blind to which worker is which: every
execution's record with its result and its steps *with their values*, the start requests, the
clock, the ledger, the world's store and how far its random stream has run, what each actor
waits for and what its generator holds (and, when several wait at solo points, their turns),
and what the workers believe (skewed clocks, lease ends), and, in a scenario that sends
external events, the runtime's events with what became of each. It is a sum of terms (``terms``):
one blake2b hash per part, personalised by the kind of part. Two states get one key exactly
when they agree on every part, but for a chance of 2**-128 (a cryptographic hash: a collision
would merge two states and skip a schedule, and a violation there would come back as a green
verdict).

What a generator holds is a function of what it did since it last held nothing of its past
(its claim point, a crash, an outcome, a rejection): its *history*, the typed facts of the
trace events it left since (their kind, call, execution, step, token and payload, never their
words or times), a worker's or client's name inside a payload's text blinded, so that two
states that mirror each other by the workers' names are one state (worker symmetry).

What makes it incremental:

- on the memory runtime (``MemoryRuntime.rows_view``), only the rows written since the last
  point are read again (``MemoryRuntime.row_writes``), and of their steps only those written
  since (``step_writes``): a step written replaces its one term (``terms.Executions``);
- the start requests are read again only when the set of rows changes: a request's record
  is its target's row (an admission adds one, a prune removes one);
- the ledger's effects, only ever appended, are chained into one hash, each once;
- each actor's history is a running hash, fed each event once; an actor's term (its history
  and what it waits for) is made again only when one of them changed (the kernel's ``waits``);
- the clock's, the store's and the workers' beliefs' terms are kept while they stand still.

Any other runtime is read whole at every point, to the same key; the tests read everything
whole (their reference) and compare at every point.
"""

from __future__ import annotations

import re
import secrets
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation.invariants.recoveries import RECOVERED_WITHOUT_END, RecoveryLog
from yieldstar_sim.simulation.kernel import Park, Point
from yieldstar_sim.simulation.terms import (
    Executions,
    events_text,
    key_text,
    kind,
    store_text,
    term,
)
from yieldstar_sim.simulation.trace_payloads import TraceKind

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.engine.world import Effect
    from yieldstar_sim.simulation.state import RunState
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
_DRAWS = kind("draws")
_TURNS = kind("turns")
_EVENTS = kind("events")
_PAST = kind("past")

Histories = tuple[dict[str, Any], dict[str, list[str]] | None]
"""Each actor's history at a point (``StateKeys.snapshot``): its running hash, and its lines
(when kept)."""


def wait_facts(name: str, state: Point | float | Park) -> str:
    """What actor ``name`` waits for, as its key reads it: the call of its choice point (the
    worker blinded: it is the actor's own), or the time it sleeps until, or that it is parked.

    >>> from yieldstar_sim.simulation.faults import PointInfo
    >>> wait_facts("w1", Point("w1 claim", PointInfo("w1", Op.CLAIM))), wait_facts("w1", 3.0)
    ("point ('claim', None, None, ())", 'sleep 3.0')
    """
    if isinstance(state, Point):
        info = state.info
        if info is None:
            return f"point {state.label.replace(name, '~')!r}"
        return f"point {(str(info.op), info.execution_id, info.step_key, state.options)!r}"
    if isinstance(state, Park):
        return "parked"
    return f"sleep {state!r}"


def holds_no_past(wait: Point | float | Park) -> bool:
    """Whether a worker waiting at ``wait`` holds nothing of its past: at its claim (where
    ``workers._work`` resets it, and where an idle worker blocks) or parked after a claim that
    found nothing. Its history stays out of its term there, unless a stalled attempt of it is
    alive (``StateKeys.key``): two workers that got there from different deliveries do the
    same from now on.

    >>> from yieldstar_sim.simulation.faults import PointInfo
    >>> holds_no_past(Point("w1 claim", PointInfo("w1", Op.CLAIM))), holds_no_past(3.0)
    (True, False)
    """
    if isinstance(wait, Park):
        return True
    info = getattr(wait, "info", None)
    return info is not None and getattr(info, "op", None) == Op.CLAIM


class StateKeys:
    """One run's state keys (see the module's docstring).

    Feed it the run's trace events (``remember``) as they come, and ask ``key`` at each choice
    point. With ``lines``, ``histories`` also holds each actor's history as lines, for reading
    whole (the tests' reference); the searches need only their hashes.
    """

    follows_changes = True
    """Whether to follow the memory runtime's rows and the kernel's ``waits`` (a subclass
    that reads whole says no)."""
    forgets_idle_pasts = True
    """Whether a worker that holds nothing of its past (``holds_no_past``) is keyed without
    its history (the tests' check that this merges only states with the same future says
    no, to key them apart)."""

    def __init__(
        self,
        *,
        lines: bool = False,
        recovery_bound: int | None = None,
        claim_rivals: dict[int | None, tuple[str, ...]] | None = None,
    ) -> None:
        self.lines = lines
        self.histories: dict[str, list[str]] = {}
        """Each actor's delivery so far, a line per event (with ``lines``)."""
        self._hashes: dict[str, Any] = {}
        self._claims: dict[str, int | None] = {}
        """The claim point each worker's history started at (None: it started elsewhere)."""
        self._actors: dict[str, tuple[object, float, int, bool]] = {}
        """Each waiting actor's last wait (``Kernel.waits``), how far behind its clock ran, and
        its term (its wait, its clock and its history), dropped when its history grows."""
        self._executions = Executions()
        self._shape: tuple[int, int] = (-1, -1)
        self._requests = 0
        self._effects = 0
        self._ledger = _LEDGER.copy()
        self._ledger_term = int.from_bytes(self._ledger.digest())
        self._now: float | None = None
        self._now_term = 0
        self._store: dict[str, str] | None = None
        self._store_term = 0
        self._ends: dict[tuple[str, int], float] | None = None
        self._believed = 0
        self._draws = 0
        self._draws_term = 0
        self._events: str | None = None
        self._events_term = 0
        self._workers: frozenset[str] = frozenset()
        self._names = re.compile(r"(?!)")  # matches nothing until a worker is seen
        self._recoveries = RecoveryLog(recovery_bound)
        """The run's recoveries so far, which "nothing is recovered without end" judges by
        (``past``)."""
        self._claim_rivals = {} if claim_rivals is None else claim_rivals
        """The run's ``RunState.claim_rivals``: the rivals of a claim that recovers an
        execution."""
        self._rivals_unknown = False
        """A recovering claim's rivals were not recorded (a state that came from another
        process): its past is equal to no other."""

    # ------------------------------------------------------------------ histories

    def remember(self, events: Sequence[TraceEvent]) -> None:
        """Add each event to its actor's history (and its helpers': a stalled attempt, a body
        completing, a draw write in their worker's name, and what they decided is the
        worker's to go on with). A claim, anything else at a claim point, a crash, an outcome
        or a rejection starts the history again."""
        histories, hashes, actors, lines = self.histories, self._hashes, self._actors, self.lines
        recoveries, rivals, claims = self._recoveries, self._rivals, self._claims
        for event in events:
            if event.execution_id is not None or event.op == Op.CLAIM:
                recoveries.take(event, rivals)
            worker = event.worker
            if worker is None:
                continue
            kind = event.kind
            if worker not in self._workers:
                self._learn(worker)
            # The event's facts, not its words: the time is left out (the clock has its own
            # term), and every actor's name in them is blinded (a fenced write's reason names
            # the lease's holder), so that two states that mirror each other by the workers'
            # names get one key.
            line = self._names.sub(
                "~",
                repr((str(kind), event.op, event.execution_id, event.step_key, event.token,
                      event.data.to_json())),
            )  # fmt: skip
            running = hashes.get(worker)
            # Kinds compared by identity: an enum member's hash is a Python call.
            at_claim = event.op == Op.CLAIM
            if (
                running is None
                or kind is _CRASH
                or kind is _OUTCOME
                or kind is _REJECT
                or (at_claim and (kind is _CALL or claims.get(worker) != event.point))
            ):
                # At its claim a worker holds nothing of its past (``holds_no_past``), so a
                # fault struck there before the call (a freeze) starts its history too: two
                # workers keyed alike while idle go on to one key whichever delivered before.
                hashes[worker] = running = _HISTORY.copy()
                claims[worker] = event.point if at_claim else None
                if lines:
                    histories[worker] = [line]
            elif lines:
                histories[worker].append(line)
            data = line.encode()
            running.update(b"%d:%b" % (len(data), data))
            actors.pop(worker, None)

    def _learn(self, worker: str) -> None:
        """Blind ``worker`` too from now on (longer names first: ``w10`` before ``w1``)."""
        self._workers = self._workers | {worker}
        names = sorted(self._workers, key=len, reverse=True)
        self._names = re.compile("|".join(rf"\b{re.escape(name)}\b" for name in names))

    def copy(self) -> StateKeys:
        """These keys, whole, kept apart: a saved state's, which a restored run goes on from
        (``caught_up``) instead of reading every row again."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.histories = {w: list(h) for w, h in self.histories.items()} if self.lines else {}
        new._hashes = {w: h.copy() for w, h in self._hashes.items()}
        new._claims = dict(self._claims)
        new._actors = dict(self._actors)
        new._executions = self._executions.copy()
        new._ledger = self._ledger.copy()
        new._recoveries = self._recoveries.copy()
        return new

    def caught_up(self) -> StateKeys:
        """These keys, after the runtime's rows were restored to those they were read from
        (``MemoryRuntime.restore``): the restored rows' writes count as read."""
        self._executions.caught_up()
        return self

    def _actor(self, name: str, wait: str, behind: float, *, fresh: bool = False) -> int:
        """The term of actor ``name`` waiting as ``wait`` says, its worker's clock ``behind``
        seconds: its history with the wait after it. History lines are fed with their lengths,
        which start with a digit: the wait, after a zero byte, reads back one way.

        The skew is the actor's own, not a belief of the run's in general: two states in which
        a different one of two workers runs behind are one state only when each worker's
        history goes with it (a key that summed the skews apart merged the state where the
        worker holding a lease runs behind with the one where the other does)."""
        # A worker's helper (a stalled attempt: ``w1~order-42~3``) has its worker's history:
        # which worker it belongs to is what tells apart a stall of the worker now idle from a
        # stall of the one now busy, which the role alone does not.
        running = None if fresh else self._hashes.get(name.partition("~")[0])
        running = _HISTORY.copy() if running is None else running.copy()
        clock = b"" if not behind else repr(behind).encode()
        running.update(b"\0" + wait.encode() + b"\0" + actor_role(name).encode() + b"\0" + clock)
        return int.from_bytes(running.digest())

    # ------------------------------------------------------------------ the key

    def key(self, state: RunState, *, ended: bool = False) -> str:
        """The key of ``state`` at a choice point (before the move taken there). With
        ``ended``, the state a run ended in: its actors are over (or left parked), and none
        is counted."""
        runtime, executions = state.runtime, self._executions
        total = executions.of(runtime, follow=self.follows_changes)
        if not executions.following:
            self._requests = _requests(runtime)
        elif executions.shape != self._shape:
            # A request's record is its target's row (an admission adds one, a prune removes
            # one): the requests change only with the set of rows.
            self._shape, self._requests = executions.shape, _requests(runtime)
        now = state.clock.now()
        if now != self._now:
            self._now, self._now_term = now, term(_CLOCK, repr(now))
        effects = state.ledger.effects
        if len(effects) != self._effects:
            self._fold(effects)
        store = state.store.canonical
        if store != self._store:
            self._store, self._store_term = dict(store), term(_STORE, store_text(store))
        total += self._requests + self._now_term + self._ledger_term + self._store_term
        if not ended:
            total += self._waiting(state)
        ends = state.lease_ends
        if ends:
            total += self._beliefs(ends)
        if state.scenario.sends:
            # The external events, pending, consumed or undelivered: two states that differ
            # only in them go on differently (a run that looks finds one, or none).
            events = events_text(runtime)
            if events != self._events:
                self._events, self._events_term = events, term(_EVENTS, events)
            total += self._events_term
        draws = state.world_draws
        if draws:
            if draws != self._draws:
                self._draws, self._draws_term = draws, term(_DRAWS, str(draws))
            total += self._draws_term
        return key_text(total)

    def _waiting(self, state: RunState) -> int:
        """The actors' terms, each with its history, its wait and its clock's skew (and, when
        several wait at solo points, their turns)."""
        total, actors, behind = 0, self._actors, state.clocks.behind
        waits = state.kernel.waits
        helped = _helped(waits)
        for name, wait in waits.items():
            total += self._term(name, wait, behind, helped)
        turns = state.kernel.turns
        if len(turns) > 1:
            # Among actors waiting at solo points, the one still on its move goes first
            # (which no actor's own term holds); the others' order is a choice to come.
            holder = state.kernel.holder
            others = sorted(str(actors[name][2]) for name in turns if name != holder)
            first = [] if holder is None else [str(actors[holder][2])]
            total += term(_TURNS, ",".join(first + others))
        return total

    def _term(self, name: str, wait: Any, behind: dict[str, float], helped: set[str]) -> int:
        """Actor ``name``'s term waiting at ``wait``: its history (none where it holds nothing
        of its past and ``forgets_idle_pasts``), its wait, and how far its clock runs behind."""
        skew = behind.get(name.partition("~")[0], 0.0) if behind else 0.0
        fresh = self.forgets_idle_pasts and name not in helped and holds_no_past(wait)
        # An actor's term is made again only when it waits on another object than at the
        # last point, its clock was skewed, or its history grew (most often only the one that
        # just went). A helper's term is made again at every point: its worker's history
        # moves without it, and helpers are few and short-lived.
        seen = self._actors.get(name) if self.follows_changes and "~" not in name else None
        if seen is None or seen[0] is not wait or seen[1] != skew or seen[3] != fresh:
            term_ = self._actor(name, wait_facts(name, wait), skew, fresh=fresh)
            seen = self._actors[name] = (wait, skew, term_, fresh)
        return seen[2]

    def _rivals(self, claim: TraceEvent) -> list[str]:
        """The other workers waiting at their claim where ``claim`` was taken, as the run
        recorded them (what the invariant reads from the run's choices: ``_Rivals``)."""
        found = self._claim_rivals.get(claim.point)
        if found is None:
            self._rivals_unknown = True
            return []
        return list(found)

    def with_past(self, key: str, state: RunState) -> str:
        """``key``, this state's, with its ``past`` (the key itself while it has none)."""
        past = self.past(state)
        return key if past is None else key_text(int(key, 16) + past)

    def past(self, state: RunState) -> int | None:
        """What "nothing is recovered without end" reads of the run's past that its state does
        not hold, as a number (None: nothing yet): each execution's recoveries (counted up to
        what the verdict can tell apart), whether it is held and whether a fault struck its
        holder, and for each worker, beside its term in the key, which executions it lost
        without a fault, could have claimed at a recovery, or holds. Two states with one key
        and one ``past`` go on to the same verdicts, the workers' names blinded as the key
        blinds them."""
        if self._rivals_unknown:
            # Equal to no other, in any process: the processes of a search share states by
            # their verdict keys, and a count would give the same pasts in each.
            return term(_PAST, f"unknown {secrets.token_hex(16)}")
        log, now = self._recoveries, state.clock.now()
        cap = RECOVERED_WITHOUT_END if log.bound is None else log.bound + 1
        idle_now = log.idle.get(now, set())
        executions: list[tuple[object, ...]] = []
        workers: dict[str, list[tuple[object, ...]]] = {}
        for execution_id, each in log.seen.items():
            faulted = (execution_id, each.holder[1]) in log.faulted
            if not each.count and not (each.held and faulted):
                continue
            executions.append((
                execution_id, min(each.count, cap), each.held, each.holder[1], faulted,
                now in each.instants, each.past, each.ran is not None,
            ))  # fmt: skip
            ready: set[str] = set().union(*(log.idle.get(t, ()) for t in each.instants))
            holder = each.holder[0]
            named = ready | each.failed | ({holder} if holder is not None else set())
            for worker in named:
                held = worker == holder
                workers.setdefault(worker, []).append(
                    (execution_id, worker in ready, worker in each.failed, held)
                )
        if not executions and not idle_now:
            return None
        for worker in idle_now:
            workers.setdefault(worker, []).append(("idle now",))
        total = term(_PAST, repr(sorted(executions)))
        waits, behind = state.kernel.waits, state.clocks.behind
        helped = _helped(waits)
        for worker, facts in workers.items():
            # The worker by its term in the key (its history, wait and clock; the one the key
            # just made, where it is kept): two states that mirror each other by the workers'
            # names get one past.
            wait = waits.get(worker)
            role: object = worker if wait is None else self._term(worker, wait, behind, helped)
            total += term(_PAST, repr((role, sorted(facts, key=repr))))
        return total

    def _beliefs(self, ends: dict[tuple[str, int], float]) -> int:
        """The term of where each lease ends after its heartbeats (by execution and token, not
        by worker), hashed again only when one changed (a heartbeat). How far a skewed clock
        runs behind is its actor's (``_actor``)."""
        if ends != self._ends:
            self._ends = dict(ends)
            self._believed = term(_BELIEVED, repr(sorted(ends.items())))
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
            data = text.encode()
            self._ledger.update(b"%d:%b" % (len(data), data))
        self._effects = len(effects)
        self._ledger_term = int.from_bytes(self._ledger.digest())


class WholeReads(StateKeys):
    """Every execution and start request read again at every point, as on a runtime that
    reports no changes, and every actor's term made again (the tests' reference)."""

    follows_changes = False

    def __init__(self, *, lines: bool = True, **options: Any) -> None:
        super().__init__(lines=lines, **options)


def _helped(waits: dict[str, Any]) -> set[str]:
    """The workers a stalled attempt of which is still alive: their history is that attempt's
    too, and stays in their term wherever they wait."""
    return {name.partition("~")[0] for name in waits if "~" in name}


def actor_role(name: str) -> str:
    """What an actor's name says of it once its worker is blinded: nothing for a worker, the
    rest of the name for an actor a worker's delivery left behind (a stalled attempt,
    ``w1~order-42~3``: which execution, lease and attempt it goes on with), whose history is
    its worker's and whose wait alone (``sleep until 120``) would not tell two apart.

    >>> actor_role("w1"), actor_role("w1~order-42~3")
    ('', 'order-42~3')
    """
    return name.partition("~")[2]


def _requests(runtime: Any) -> int:
    """The start requests' term."""
    text = repr(
        sorted(
            repr((r.request_id, r.workflow_id, r.target_execution_id))
            for r in runtime.start_requests()
        )
    )
    return term(_REQUESTS, text)
