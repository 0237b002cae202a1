"""The runtime's records folded from the trace one event at a time, as row changes.

Folding the trace gives the records at every event (``RecordBook``), but writing every table
out at every event costs the number of rows times the number of events: quadratic, and a
review of 1,000 orders has 15,000 events and 10,000 rows. So the fold notes which records each
event touched (its dictionaries count every key they hand out or take in) and which rows'
words change with time alone (a lease expiring, a wake falling due: a heap of those times),
and after each event recomputes just those rows. What comes out is the rows that changed:
the review page's script and the stepper replay these to derive any event's state, and the
graph reads the same rows as the tables, so the two cannot disagree.

Besides the tables people read, the fold keeps ``links``: the graph's edges (who started
whom through which step key, how many start calls, whether one step admitted several), with
the same rules as ``graph_from_trace``.

>>> import yieldstar_sim as ys
>>> run = ys.simulate(ys.load_scenario("durable-start"), runtime="memory")
>>> fold = RecordFold()
>>> changes = [fold.apply(event) for event in run.trace]
>>> [(c.table, c.cells) for c in changes[0]]  # doctest: +NORMALIZE_WHITESPACE
[('executions', ('order-42', 'charge-order', 'trigger', 'none', 'pending', 'none')),
 ('wakes', ('order-42', 't=0', 'admitted', 'due now'))]
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from yieldstar_sim.core.model import TERMINAL_STATUSES
from yieldstar_sim.core.ops import Op
from yieldstar_sim.engine.world import TRIGGERED
from yieldstar_sim.simulation.trace_payloads import (
    BodyData,
    ClaimData,
    ClientAnswerData,
    EffectData,
    EventTakenData,
    HeartbeatData,
    PutStepData,
    RecordWakeData,
    RenewData,
    RuntimeActionData,
    StartChildData,
    StartData,
    StatusData,
    StoreWriteData,
    TraceKind,
    TriggerData,
)
from yieldstar_sim.views.evidence import CONTINUED_AS, edge_line

if TYPE_CHECKING:
    from collections.abc import Hashable, Iterator

    from yieldstar_sim.simulation.trace import TraceEvent

#: The tables in the order they are shown, then the graph's edges (``links``, not a table).
TABLES = ("executions", "start requests", "steps", "leases", "wakes", "effects", "world")
LINKS = "links"
#: The cells of a link: the graph's edge between two executions.
LINK_CELLS = ("source", "target", "step key", "line", "duplicate", "start calls")

_Cells = tuple[tuple[str, ...], float | None]
"""A row's cells, and when its words next change by themselves (or ``None``)."""

K = TypeVar("K")
V = TypeVar("V")


class _Touched(dict[K, V]):
    """A dict that remembers every key it handed out or took in since the last ``take``:
    whatever the fold changed in a record, it reached the record through one of these."""

    def __init__(self) -> None:
        super().__init__()
        self.touched: set[K] = set()
        self.everything = False

    def __getitem__(self, key: K) -> V:
        self.touched.add(key)
        return super().__getitem__(key)

    def __setitem__(self, key: K, value: V) -> None:
        self.touched.add(key)
        super().__setitem__(key, value)

    def __delitem__(self, key: K) -> None:
        self.touched.add(key)
        super().__delitem__(key)

    def get(self, key: K, default: Any = None) -> Any:
        self.touched.add(key)
        return super().get(key, default)

    def setdefault(self, key: K, default: Any = None) -> Any:
        self.touched.add(key)
        return super().setdefault(key, default)

    def every(self) -> Iterator[V]:
        """Every record, all of them counted as touched (a crash reaches all its leases)."""
        self.everything = True
        return iter(list(super().values()))

    def take(self) -> set[K]:
        """The keys touched since the last call (all keys, after ``every``)."""
        keys = set(super().keys()) | self.touched if self.everything else self.touched
        self.touched, self.everything = set(), False
        return keys


@dataclass
class _Execution:
    workflow_id: str
    origin: str
    parent: str
    status: str = "pending"
    due_at: float | None = None
    due_why: str = ""
    lease_owner: str | None = None
    lease_token: int = 0
    lease_expires_at: float | None = None


@dataclass
class _Request:
    workflow_id: str
    target: str | None = None
    calls: int = 0
    answer: str = ""


@dataclass
class _Lease:
    execution_id: str
    owner: str
    token: int
    claimed_at: float
    expires_at: float
    ended: str = ""
    holder: str = ""


@dataclass
class _Link:
    source: str
    target: str
    step_key: str
    kind: str
    detached: bool
    calls: int = 1
    duplicate: bool = False


@dataclass
class _State:
    executions: _Touched[str, _Execution] = field(default_factory=_Touched)
    requests: _Touched[tuple[str, str], _Request] = field(default_factory=_Touched)
    steps: _Touched[tuple[str, str], tuple[str, str, str]] = field(default_factory=_Touched)
    leases: _Touched[tuple[str, int], _Lease] = field(default_factory=_Touched)
    effects: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    world: _Touched[str, tuple[str, str, str]] = field(default_factory=_Touched)
    """The world's key-value store: each key's value, who wrote it last, and when."""
    links: _Touched[tuple[str, str, str], _Link] = field(default_factory=_Touched)
    live_leases: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    """Each execution's leases not yet ended (a claim ends them)."""
    links_of_step: dict[tuple[str, str], list[tuple[str, str, str]]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RowChange:
    """One row an event added, changed (``cells``) or removed (``cells`` is ``None``).

    ``ident`` names the record across events; ``key`` is the row's key as the tables show
    it; ``order`` places the row in its table (rows are shown by ascending order; the world's
    rows have ``-1`` and are shown sorted by key)."""

    table: str
    ident: Hashable
    key: str
    order: int
    cells: tuple[str, ...] | None


class RecordFold:
    """The records folded event by event: ``apply(event)`` returns the rows it changed.

    ``lease_seconds`` and ``redelivery_delay`` are the scenario's (a heartbeat renews a lease
    for the body's work plus ``lease_seconds``; a release makes the execution due after
    ``redelivery_delay``): the trace does not repeat them."""

    def __init__(self, *, lease_seconds: float = 30.0, redelivery_delay: float = 5.0) -> None:
        self.lease_seconds = lease_seconds
        self.redelivery_delay = redelivery_delay
        self.state = _State()
        self._frozen: set[str] = set()
        self._heartbeats = False
        self._shown: dict[tuple[str, Hashable], tuple[str, ...]] = {}
        self._order: dict[tuple[str, Hashable], int] = {}
        self._next_order = 0
        self._effects_shown = 0
        self._flips: list[tuple[float, int, str, Hashable]] = []
        self._flip_count = 0
        self._start_calls: dict[tuple[str, str], int] = {}

    def apply(self, event: TraceEvent) -> list[RowChange]:
        """Fold one event in; the rows it added, changed or removed, in table order."""
        self._apply(event)
        return self._changes(event.t)

    # ------------------------------------------------------------------ the changed rows

    def _changes(self, t: float) -> list[RowChange]:
        state = self.state
        due: dict[str, set[Hashable]] = {name: set() for name in (*TABLES, LINKS)}
        executions = state.executions.take()
        due["executions"] |= executions
        due["wakes"] |= executions
        due["start requests"] |= state.requests.take()
        due["steps"] |= state.steps.take()
        due["leases"] |= state.leases.take()
        due["world"] |= state.world.take()
        due[LINKS] |= state.links.take()
        due["effects"] |= set(range(self._effects_shown, len(state.effects)))
        self._effects_shown = len(state.effects)
        while self._flips and self._flips[0][0] <= t:
            _, _, table, ident = heapq.heappop(self._flips)
            due[table].add(ident)
        changes: list[RowChange] = []
        for table in (*TABLES, LINKS):
            for ident in due[table]:
                change = self._row(table, ident, t)
                if change is not None:
                    changes.append(change)
        changes.sort(key=lambda c: (_TABLE_INDEX[c.table], c.order, c.key))
        return changes

    def _row(self, table: str, ident: Any, t: float) -> RowChange | None:
        found = self._cells(table, ident, t)
        slot = (table, ident)
        if found is None:
            if slot not in self._shown:
                return None
            del self._shown[slot]
            return RowChange(table, ident, _key(table, ident), self._order.pop(slot, -1), None)
        cells, flips_at = found
        if flips_at is not None and flips_at > t:
            self._flip_count += 1
            heapq.heappush(self._flips, (flips_at, self._flip_count, table, ident))
        if self._shown.get(slot) == cells:
            return None
        self._shown[slot] = cells
        if table == "wakes":  # in the executions' order, as the executions table
            order = self._order[("executions", ident)]
        elif table == "world":
            order = -1
        else:
            order = self._order.get(slot, -1)
            if order < 0:
                order = self._order[slot] = self._next_order
                self._next_order += 1
        return RowChange(table, ident, _key(table, ident), order, cells)

    def _cells(
        self, table: str, ident: Any, t: float
    ) -> tuple[tuple[str, ...], float | None] | None:
        """A row's cells as of ``t``, and the time after which its words change by
        themselves (a lease expires, a wake falls due); ``None`` if there is no such row."""
        state = self.state
        if table == "executions":
            r = dict.get(state.executions, ident)
            if r is None:
                return None
            cells = (ident, r.workflow_id, r.origin, r.parent or "none", r.status,
                     _lease_text(r, t))  # fmt: skip
            return cells, r.lease_expires_at if r.lease_owner is not None else None
        if table == "wakes":
            r = dict.get(state.executions, ident)
            if r is None or r.status in TERMINAL_STATUSES:
                return None
            if r.lease_owner is not None and r.lease_expires_at is not None:
                when, why = r.lease_expires_at, f"when {r.lease_owner}'s lease expires"
            elif r.due_at is not None:
                when, why = r.due_at, r.due_why
            else:
                return None
            return (ident, f"t={when:g}", why, "due now" if when <= t else "waiting"), when
        if table == "start requests":
            request = dict.get(state.requests, ident)
            if request is None:
                return None
            caller, step = ident
            return (f"{caller} / {step}", request.workflow_id,
                    request.target or "nothing admitted", str(request.calls),
                    request.answer), None  # fmt: skip
        if table == "steps":
            step = dict.get(state.steps, ident)
            return None if step is None else ((ident[0], ident[1], *step), None)
        if table == "leases":
            lease = dict.get(state.leases, ident)
            if lease is None:
                return None
            cells = (lease.execution_id, lease.owner, str(lease.token), f"{lease.claimed_at:g}",
                     f"{lease.expires_at:g}", _lease_state(lease, t))  # fmt: skip
            return cells, None if lease.ended else lease.expires_at
        if table == "effects":
            return (str(ident + 1), *state.effects[ident]), None
        if table == "world":
            value = dict.get(state.world, ident)
            return None if value is None else ((ident, *value), None)
        link = dict.get(state.links, ident)
        if link is None:
            return None
        line = edge_line({"kind": link.kind, "detached": link.detached})
        return (link.source, link.target, link.step_key, line,
                "duplicate" if link.duplicate else "", str(link.calls)), None  # fmt: skip

    # ------------------------------------------------------------------ one event

    def _apply(self, event: TraceEvent) -> None:
        state, t, data = self.state, event.t, event.data
        if isinstance(data, TriggerData) and event.execution_id:
            state.executions[event.execution_id] = _Execution(
                data.workflow_id, "trigger", "", due_at=t, due_why="admitted"
            )
        elif isinstance(data, ClientAnswerData) and data.answer == "admitted":
            state.executions[str(data.execution_id)] = _Execution(
                data.workflow_id or "?", "trigger", "", due_at=t, due_why="admitted"
            )
        elif isinstance(data, EffectData):
            self._effect(event, data)
        elif isinstance(data, StoreWriteData):
            writer = f"{event.execution_id} / {event.step_key} (attempt {data.attempt})"
            state.world[data.key] = (_short(data.value), writer, f"{t:g}")
        elif isinstance(data, RenewData):
            # A body's heartbeat renewed the lease (a choice point of its own).
            self._heartbeats = True
            self._renewed(event, data.expires_at)
        elif isinstance(data, HeartbeatData) and data.renewed:
            # A working worker heartbeats before a body's work: its lease is renewed (the
            # renew call is not a choice point; the heartbeat event says where it ends).
            self._heartbeats = True
            self._renewed(event, data.expires_at)
        elif isinstance(data, BodyData) and data.elapsed > 0 and not self._heartbeats:
            # A trace written before heartbeats had events: the body's one renewal covered
            # its work.
            self._renewed(event, t + data.elapsed + self.lease_seconds)
        elif event.kind in (TraceKind.STALL, TraceKind.UNSTALL):
            lease = state.leases.get((event.execution_id or "", event.token or 0))
            if lease is not None and not lease.ended:
                stalled = event.kind == TraceKind.STALL
                lease.holder = f"its attempt stalled since t={event.t:g}" if stalled else ""
        elif event.kind == TraceKind.CALL:
            self._call(event)
        elif event.kind == TraceKind.PRUNE and event.execution_id:
            # Pruning removes an execution's steps and the start requests it made as a caller.
            pruned = event.execution_id
            for key in [k for k in dict.keys(state.steps) if k[0] == pruned]:
                del state.steps[key]
            for key in [k for k in dict.keys(state.requests) if k[0] == pruned]:
                del state.requests[key]
        elif event.kind in (TraceKind.CRASH, TraceKind.FREEZE, TraceKind.RESUME):
            self._worker(event)

    def _renewed(self, event: TraceEvent, expires: float) -> None:
        state = self.state
        record = state.executions.get(event.execution_id or "")
        if record is not None and record.lease_token == event.token:
            record.lease_expires_at = expires
            lease = state.leases.get((event.execution_id or "", event.token or 0))
            if lease is not None:
                lease.expires_at = expires

    def _effect(self, event: TraceEvent, data: EffectData) -> None:
        state, name = self.state, data.name
        if name == TRIGGERED:
            admitted = data.data
            target = str(admitted.get("execution_id", "?"))
            state.executions[target] = _Execution(
                str(admitted.get("workflow_id", "?")),
                "trigger",
                f"none (triggered by the body of {event.execution_id} / {event.step_key})",
                due_at=event.t,
                due_why="admitted",
            )
            source = event.execution_id
            if source is not None and source in state.executions:
                self._link(source, target, f"{event.step_key}#{target}", "trigger", True,
                           step_key=str(event.step_key))  # fmt: skip
        provenance = f"{event.execution_id} / {event.step_key} (attempt {data.attempt})"
        key = data.idempotency_key
        state.effects.append(
            (
                name,
                _short(data.data),
                provenance,
                event.worker or "",
                f"{event.t:g}" + (f", key {key}" if key else ""),
            )
        )

    def _call(self, event: TraceEvent) -> None:
        state, t, data, op = self.state, event.t, event.data, event.op
        execution_id = event.execution_id or ""
        record = state.executions.get(execution_id)
        if isinstance(data, ClaimData):
            token = int(event.token or 0)
            expires = data.expires_at
            for ident in state.live_leases.pop(execution_id, []):
                lease = state.leases[ident]
                if not lease.ended:
                    lease.ended = f"expired; taken over by token {token} at t={t:g}"
            state.leases[(execution_id, token)] = _Lease(
                execution_id, event.worker or "?", token, t, expires
            )
            state.live_leases[execution_id] = [(execution_id, token)]
            if record is None:  # admitted before the trace began (not in a simulation)
                record = state.executions[execution_id] = _Execution(data.workflow_id, "?", "")
            record.lease_owner, record.lease_token = event.worker, token
            record.lease_expires_at, record.due_at, record.due_why = expires, None, ""
        elif op in (Op.START, Op.START_CHILD):
            self._start(event)
        elif isinstance(data, EventTakenData) and data.event_id and event.step_key:
            # The runtime recorded the step as it handed the event over (one write).
            state.steps[(execution_id, event.step_key)] = (
                "completed",
                f"event {data.name!r} {data.event_id}",
                f"t={t:g} by {event.worker} (token {event.token})",
            )
        elif isinstance(data, PutStepData) and event.step_key:
            state.steps[(execution_id, event.step_key)] = (
                data.status,
                data.value_summary(),
                f"t={t:g} by {event.worker} (token {event.token})",
            )
            if data.status == "pending" and data.wake_at is not None and record is not None:
                self._wake(record, data.wake_at, f"step {event.step_key} is pending")
        elif isinstance(data, RecordWakeData) and record is not None:
            self._wake(record, data.at, "wake recorded")
        elif op == Op.ACKNOWLEDGE and record is not None:
            record.status = data.status if isinstance(data, StatusData) else record.status
            record.lease_owner, record.lease_expires_at = None, None
            if record.status in TERMINAL_STATUSES:
                record.due_at, record.due_why = None, ""
            self._end_lease(execution_id, event.token, f"acknowledged at t={t:g}")
            after = data.execution_id if isinstance(data, StatusData) else None
            if after and after not in state.executions:
                # A run that continued as new: its acknowledgement admitted the next run.
                state.executions[after] = _Execution(
                    record.workflow_id, "continue", "", due_at=t, due_why="continued as new"
                )
                self._link(execution_id, after, CONTINUED_AS, "continued", False)
        elif isinstance(data, RuntimeActionData) and data.status and record is not None:
            record.status = data.status  # the runtime's own action (an archive ...)
            if record.status in TERMINAL_STATUSES:
                record.lease_owner, record.lease_expires_at = None, None
                record.due_at, record.due_why = None, ""
        elif op == Op.RELEASE and record is not None:
            record.lease_owner, record.lease_expires_at = None, None
            record.due_at = t + self.redelivery_delay
            record.due_why = "released: redelivered after the delay"
            self._end_lease(execution_id, event.token, f"released at t={t:g}")

    def _start(self, event: TraceEvent) -> None:
        state, data = self.state, event.data
        if not isinstance(data, StartData | StartChildData):
            return
        caller, step_key = event.execution_id or "?", event.step_key or "?"
        joined = isinstance(data, StartChildData) and data.created is False
        self._start_link(event, data)
        if joined and (caller, step_key) not in state.requests:
            return  # joining an existing child records no request: it never takes ownership
        request = state.requests.setdefault((caller, step_key), _Request(data.workflow_id))
        request.calls += 1
        target = data.accepted
        if target is None:
            request.answer = f"rejected {data.rejected or '?'}"
            return
        request.answer = f"accepted {target}"
        if request.target is None:
            request.target = target
        if target not in state.executions and not joined:
            detached = data.detached
            parent = f"{caller} / {step_key}" + (" (detached)" if detached else "")
            # A child made by step.child or step.spawn (start_child) has its own origin.
            origin = "start" if event.op == Op.START else "spawn" if detached else "child"
            state.executions[target] = _Execution(
                data.workflow_id, origin, parent, due_at=event.t,
                due_why="admitted with its start request",
            )  # fmt: skip

    def _start_link(self, event: TraceEvent, data: StartData | StartChildData) -> None:
        """The graph's edge of a start call: ``graph_from_trace``'s rules."""
        caller, step_key, target = event.execution_id, event.step_key, data.accepted
        if not caller or not step_key:
            return
        if isinstance(data, StartData):
            calls = self._start_calls.get((caller, step_key), 0) + 1
            self._start_calls[(caller, step_key)] = calls
            if target is not None:
                link = self._link(caller, target, step_key, "start", data.detached, calls=0)
                link.calls = calls
        elif target is not None:
            kind = "start" if data.created else "joined"
            self._link(caller, target, step_key, kind, data.detached)

    def _link(self, source: str, target: str, key: str, kind: str, detached: bool, *,
              step_key: str | None = None, calls: int = 1) -> _Link:  # fmt: skip
        state = self.state
        ident = (source, target, key)
        link = dict.get(state.links, ident)
        if link is None:
            link = state.links[ident] = _Link(source, target, step_key or key, kind, detached,
                                              calls)  # fmt: skip
            siblings = state.links_of_step.setdefault((source, link.step_key), [])
            siblings.append(ident)
            if len(siblings) > 1:  # one step, several admissions: every edge of it is red
                for other in siblings:
                    state.links[other].duplicate = True
        return state.links[ident]

    @staticmethod
    def _wake(record: _Execution, at: float, why: str) -> None:
        if record.due_at is None or at < record.due_at:
            record.due_at, record.due_why = at, why

    def _end_lease(self, execution_id: str, token: int | None, how: str) -> None:
        lease = self.state.leases.get((execution_id, int(token or 0)))
        if lease is not None and not lease.ended:
            lease.ended = how

    def _worker(self, event: TraceEvent) -> None:
        worker = event.worker or ""
        if event.kind == TraceKind.FREEZE:
            self._frozen.add(worker)
        elif event.kind == TraceKind.RESUME:
            self._frozen.discard(worker)
        for lease in self.state.leases.every():
            if lease.owner != worker or lease.ended:
                continue
            if event.kind == TraceKind.CRASH:
                lease.holder = f"{worker} crashed at t={event.t:g}"
            elif event.kind == TraceKind.FREEZE:
                lease.holder = f"{worker} frozen since t={event.t:g}"
            else:
                lease.holder = ""


_TABLE_INDEX = {name: index for index, name in enumerate((*TABLES, LINKS))}


def _key(table: str, ident: Any) -> str:
    """A row's key as the tables show it."""
    if table in ("start requests", "steps"):
        return f"{ident[0]}/{ident[1]}"
    if table == "leases":
        return f"{ident[0]}#{ident[1]}"
    if table == LINKS:
        return "\u0000".join(ident)
    return str(ident)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _lease_text(record: _Execution, t: float) -> str:
    if record.lease_owner is None or record.lease_expires_at is None:
        return "none"
    expired = " (expired)" if record.lease_expires_at <= t else ""
    return (
        f"{record.lease_owner}, token {record.lease_token}, "
        f"until t={record.lease_expires_at:g}{expired}"
    )


def _lease_state(lease: _Lease, t: float) -> str:
    if lease.ended:
        return lease.ended
    held = "expired" if lease.expires_at <= t else "held"
    return f"{held}; {lease.holder}" if lease.holder else held
