"""The runtime's records as of any trace event, derived from the trace alone.

A runtime keeps only its final state, so a stepper cannot ask it what the tables held at event
12. The trace holds every runtime call and its result, so folding it event by event gives the
records at each point: executions, start requests, steps, leases, wakes (when each execution is
claimable next) and the effect ledger. Rows that an event added or changed are marked.

>>> import yieldstar_sim as ys
>>> run = ys.simulate(ys.load_scenario("durable-start"), runtime="memory")
>>> book = RecordBook.of_run(run)
>>> [row.cells for row in book.at(len(run.trace) - 1).table("start requests").rows]
[('order-42 / ship', 'ship-order', '@ship-order-2', '2', 'accepted @ship-order-2')]
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.model import TERMINAL_STATUSES
from yieldstar_sim.core.ops import Op
from yieldstar_sim.engine.world import TRIGGERED
from yieldstar_sim.simulation.trace import (
    BodyData,
    ClaimData,
    ClientAnswerData,
    EffectData,
    HeartbeatData,
    PutStepData,
    RecordWakeData,
    StartChildData,
    StartData,
    StatusData,
    StoreWriteData,
    TraceKind,
    TriggerData,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.trace import TraceEvent

#: The statuses after which an execution never runs workflow code again (the model's set).
TERMINAL = TERMINAL_STATUSES

#: Row marks: a row the current event added, and one whose cells it changed.
NEW, CHANGED = "new", "changed"

_MARK_STYLE = {
    NEW: "background:#d9f2e3",
    CHANGED: "background:#fff1b8",
}


@dataclass(frozen=True, slots=True)
class Row:
    """One record: a key that identifies it across events, its cells, and its mark (``"new"``,
    ``"changed"`` or ``""``) relative to the previous event."""

    key: str
    cells: tuple[str, ...]
    mark: str = ""


@dataclass(frozen=True, slots=True)
class Table:
    """One table of records as of an event."""

    name: str
    columns: tuple[str, ...]
    rows: tuple[Row, ...]
    note: str = ""

    @property
    def marked(self) -> list[Row]:
        """The rows the event added or changed."""
        return [row for row in self.rows if row.mark]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Every table as of one trace event (``seq``), at virtual time ``t``."""

    seq: int
    t: float
    tables: tuple[Table, ...]

    def table(self, name: str) -> Table:
        """The table called ``name`` (``"executions"``, ``"start requests"``, ``"steps"``,
        ``"leases"``, ``"wakes"``, ``"effects"``)."""
        for table in self.tables:
            if table.name == name:
                return table
        raise KeyError(f"no table {name!r}; the tables are {[t.name for t in self.tables]}")

    @property
    def changed(self) -> dict[str, list[Row]]:
        """For each table with marked rows, those rows."""
        return {table.name: table.marked for table in self.tables if table.marked}


# --------------------------------------------------------------------------- folding the trace


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
class _State:
    executions: dict[str, _Execution] = field(default_factory=dict)
    requests: dict[tuple[str, str], _Request] = field(default_factory=dict)
    steps: dict[tuple[str, str], tuple[str, str, str]] = field(default_factory=dict)
    leases: dict[tuple[str, int], _Lease] = field(default_factory=dict)
    effects: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    world: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    """The world's key-value store: each key's value, who wrote it last, and when."""


class RecordBook:
    """The records as of every event of a trace, computed on first use and kept.

    ``lease_seconds`` and ``redelivery_delay`` are the scenario's (a heartbeat renews a lease
    for the body's work plus ``lease_seconds``; a release makes the execution due after
    ``redelivery_delay``): the trace does not repeat them.
    """

    def __init__(
        self,
        trace: Iterable[TraceEvent],
        *,
        lease_seconds: float = 30.0,
        redelivery_delay: float = 5.0,
    ) -> None:
        self.events: list[TraceEvent] = list(trace)
        self.lease_seconds = lease_seconds
        self.redelivery_delay = redelivery_delay
        self._state = _State()
        self._frozen: set[str] = set()
        self._heartbeats = False
        self._snapshots: list[Snapshot] = []

    @classmethod
    def of_run(cls, run: SimulationRun) -> RecordBook:
        """The record book of a run, with its scenario's lease and redelivery times."""
        return cls(
            run.trace,
            lease_seconds=run.scenario.lease_seconds,
            redelivery_delay=run.scenario.redelivery_delay,
        )

    def __len__(self) -> int:
        return len(self.events)

    def at(self, seq: int) -> Snapshot:
        """The records just after event ``seq``, rows marked against the event before."""
        if not 0 <= seq < len(self.events):
            raise IndexError(f"event {seq} is not in a trace of {len(self.events)} events")
        while len(self._snapshots) <= seq:
            event = self.events[len(self._snapshots)]
            self._apply(event)
            previous = self._snapshots[-1] if self._snapshots else None
            self._snapshots.append(self._snapshot(event, previous))
        return self._snapshots[seq]

    # ------------------------------------------------------------------ one event

    def _apply(self, event: TraceEvent) -> None:
        state, t, data = self._state, event.t, event.data
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
            for key in [k for k in state.steps if k[0] == pruned]:
                del state.steps[key]
            for key in [k for k in state.requests if k[0] == pruned]:
                del state.requests[key]
        elif event.kind in (TraceKind.CRASH, TraceKind.FREEZE, TraceKind.RESUME):
            self._worker(event)

    def _renewed(self, event: TraceEvent, expires: float) -> None:
        state = self._state
        record = state.executions.get(event.execution_id or "")
        if record is not None and record.lease_token == event.token:
            record.lease_expires_at = expires
            lease = state.leases.get((event.execution_id or "", event.token or 0))
            if lease is not None:
                lease.expires_at = expires

    def _effect(self, event: TraceEvent, data: EffectData) -> None:
        state, name = self._state, data.name
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
        state, t, data, op = self._state, event.t, event.data, event.op
        execution_id = event.execution_id or ""
        record = state.executions.get(execution_id)
        if isinstance(data, ClaimData):
            token = int(event.token or 0)
            expires = data.expires_at
            for lease in state.leases.values():
                if lease.execution_id == execution_id and not lease.ended:
                    lease.ended = f"expired; taken over by token {token} at t={t:g}"
            state.leases[(execution_id, token)] = _Lease(
                execution_id, event.worker or "?", token, t, expires
            )
            if record is None:  # admitted before the trace began (not in a simulation)
                record = state.executions[execution_id] = _Execution(data.workflow_id, "?", "")
            record.lease_owner, record.lease_token = event.worker, token
            record.lease_expires_at, record.due_at, record.due_why = expires, None, ""
        elif op in (Op.START, Op.START_CHILD):
            self._start(event)
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
            if record.status in TERMINAL:
                record.due_at, record.due_why = None, ""
            self._end_lease(execution_id, event.token, f"acknowledged at t={t:g}")
        elif op == Op.RELEASE and record is not None:
            record.lease_owner, record.lease_expires_at = None, None
            record.due_at = t + self.redelivery_delay
            record.due_why = "released: redelivered after the delay"
            self._end_lease(execution_id, event.token, f"released at t={t:g}")

    def _start(self, event: TraceEvent) -> None:
        state, data = self._state, event.data
        if not isinstance(data, StartData | StartChildData):
            return
        caller, step_key = event.execution_id or "?", event.step_key or "?"
        joined = isinstance(data, StartChildData) and data.created is False
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

    @staticmethod
    def _wake(record: _Execution, at: float, why: str) -> None:
        if record.due_at is None or at < record.due_at:
            record.due_at, record.due_why = at, why

    def _end_lease(self, execution_id: str, token: int | None, how: str) -> None:
        lease = self._state.leases.get((execution_id, int(token or 0)))
        if lease is not None and not lease.ended:
            lease.ended = how

    def _worker(self, event: TraceEvent) -> None:
        worker = event.worker or ""
        if event.kind == TraceKind.FREEZE:
            self._frozen.add(worker)
        elif event.kind == TraceKind.RESUME:
            self._frozen.discard(worker)
        for lease in self._state.leases.values():
            if lease.owner != worker or lease.ended:
                continue
            if event.kind == TraceKind.CRASH:
                lease.holder = f"{worker} crashed at t={event.t:g}"
            elif event.kind == TraceKind.FREEZE:
                lease.holder = f"{worker} frozen since t={event.t:g}"
            else:
                lease.holder = ""

    # ------------------------------------------------------------------ tables

    def _snapshot(self, event: TraceEvent, previous: Snapshot | None) -> Snapshot:
        state, t = self._state, event.t
        executions = [
            Row(eid, (eid, r.workflow_id, r.origin, r.parent or "none", r.status,
                      _lease_text(r, t)))
            for eid, r in state.executions.items()
        ]  # fmt: skip
        requests = [
            Row(
                f"{caller}/{step}",
                (f"{caller} / {step}", r.workflow_id, r.target or "nothing admitted",
                 str(r.calls), r.answer),
            )
            for (caller, step), r in state.requests.items()
        ]  # fmt: skip
        steps = [
            Row(f"{eid}/{key}", (eid, key, status, value, when))
            for (eid, key), (status, value, when) in state.steps.items()
        ]
        leases = [
            Row(f"{lease.execution_id}#{lease.token}",
                (lease.execution_id, lease.owner, str(lease.token), f"{lease.claimed_at:g}",
                 f"{lease.expires_at:g}", _lease_state(lease, t)))
            for lease in state.leases.values()
        ]  # fmt: skip
        wakes = []
        for eid, r in state.executions.items():
            if r.status in TERMINAL:
                continue
            if r.lease_owner is not None and r.lease_expires_at is not None:
                when, why = r.lease_expires_at, f"when {r.lease_owner}'s lease expires"
            elif r.due_at is not None:
                when, why = r.due_at, r.due_why
            else:
                continue
            due = "due now" if when <= t else "waiting"
            wakes.append(Row(eid, (eid, f"t={when:g}", why, due)))
        effects = [Row(str(i), (str(i + 1), *effect)) for i, effect in enumerate(state.effects)]
        tables = [
            Table("executions", ("execution", "workflow", "origin", "parent link", "status",
                                 "lease"), tuple(executions)),
            Table("start requests", ("request (caller / step)", "workflow", "target",
                                     "start calls", "last answer"), tuple(requests),
                  "one record per request ID: every call with it gets the first target"),
            Table("steps", ("execution", "step", "status", "value", "recorded"), tuple(steps)),
            Table("leases", ("execution", "owner", "token", "claimed at", "expires at",
                             "state"), tuple(leases),
                  "fenced writes must name the current token"),
            Table("wakes", ("execution", "claimable at", "because", "now"), tuple(wakes),
                  "when each live execution can be claimed next"),
            Table("effects", ("#", "effect", "data", "made by", "worker", "t"), tuple(effects),
                  "the outside world's ledger: crashes never undo an effect"),
        ]  # fmt: skip
        if state.world:  # only for runs whose bodies wrote to the world's key-value store
            world = [Row(k, (k, *v)) for k, v in sorted(state.world.items())]
            tables.append(
                Table("world", ("key", "value", "written by", "t"), tuple(world),
                      "the outside world's key-value store: crashes never undo a write"),
            )  # fmt: skip
        before = {} if previous is None else {table.name: table for table in previous.tables}
        tables = [_mark(table, before.get(table.name)) for table in tables]
        return Snapshot(event.seq, t, tuple(tables))


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


def _mark(table: Table, before: Table | None) -> Table:
    old = {} if before is None else {row.key: row.cells for row in before.rows}

    def mark(row: Row) -> str:
        if row.key not in old:
            return NEW
        return CHANGED if old[row.key] != row.cells else ""

    rows = tuple(Row(row.key, row.cells, mark(row)) for row in table.rows)
    return Table(table.name, table.columns, rows, table.note)


# --------------------------------------------------------------------------- HTML


def table_html(table: Table) -> str:
    """One table as HTML, every value escaped; marked rows highlighted, with their mark in the
    first column and as the row's class (``<tr class="changed">``)."""
    head = "".join(
        f"<th style='text-align:left;padding:2px 6px;border-bottom:1px solid #999'>"
        f"{html.escape(column)}</th>"
        for column in ("", *table.columns)
    )
    body = []
    for row in table.rows:
        style = _MARK_STYLE.get(row.mark, "")
        badge = f"<b>{html.escape(row.mark)}</b>" if row.mark else ""
        cells = "".join(
            f"<td style='padding:2px 6px'>{html.escape(cell)}</td>" for cell in (*row.cells,)
        )
        body.append(
            f"<tr class='{html.escape(row.mark) or 'same'}' style='{style}'>"
            f"<td style='padding:2px 4px;font-size:85%;color:#555'>{badge}</td>{cells}</tr>"
        )
    if not body:
        span = len(table.columns) + 1
        body.append(
            f"<tr><td colspan='{span}' style='color:#777;padding:2px 6px'>none yet</td></tr>"
        )
    note = (
        f"<span style='font-weight:normal;color:#666;font-size:90%'> · {html.escape(table.note)}"
        "</span>"
        if table.note
        else ""
    )
    return (
        f"<div style='margin:0 0 10px 0'><div style='font-weight:bold;margin:2px 0'>"
        f"{html.escape(table.name)} ({len(table.rows)}){note}</div>"
        f"<table style='border-collapse:collapse;font-family:monospace;font-size:12px'>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def records_html(snapshot: Snapshot, names: Sequence[str] | None = None) -> str:
    """All tables of a snapshot (or those named) as one HTML block, side by side where they
    fit."""
    tables = [t for t in snapshot.tables if names is None or t.name in names]
    return (
        "<div class='ys-records' style='display:flex;flex-wrap:wrap;column-gap:24px'>"
        + "".join(table_html(table) for table in tables)
        + "</div>"
    )
