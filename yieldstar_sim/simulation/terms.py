"""State keys as sums of terms: one hash per part of the state, added modulo 2**128.

The state keys (``statekeys.StateKeys``) are built this way. A key is the sum of one term per
part of the state: each execution's record, each of its steps, the clock, the ledger, the
store, each actor... A part that changes replaces its own term (``total += new - old``), so a
key costs one hash per part that changed since the last, and a sum of cached integers,
whatever the size of the state.

Each term is a blake2b hash (a cryptographic hash: two states that shared a key would be
merged, a schedule skipped, and a violation there would come back as a green verdict) of an
injective text of its part, personalised by the kind of part (``kind``), so the texts of two
kinds never meet. A sum of such terms is a multiset hash (AdHash, Bellare and Micciancio,
1997): two different multisets of terms sum alike with a chance of 2**-128, as for one
128-bit hash of everything, and no two states give one multiset of terms, since each term
names what it stands for (a step's term, its execution; a record's, its ID).
"""

from __future__ import annotations

from hashlib import blake2b
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from yieldstar_sim.core.model import ExecutionRecord, StepRecord
    from yieldstar_sim.runtime.memory_rows import Row

#: Keys and sums of terms are kept to 128 bits, the size of a term.
MASK = (1 << 128) - 1


def kind(name: str) -> Any:
    """The empty 128-bit hash of one kind of part, copied for each term of that kind (a copy
    costs half of making one: the constructor parses its keyword arguments each time).

    >>> kind("step").copy().hexdigest() == kind("ledger").copy().hexdigest()
    False
    """
    return blake2b(digest_size=16, person=name.encode())


def term(empty: Any, text: str) -> int:
    """The term of ``text`` under ``empty`` (one ``kind``)."""
    running = empty.copy()
    running.update(text.encode())
    return int.from_bytes(running.digest())


def key_text(total: int) -> str:
    """A key as the searches keep it: the sum's 32 hex digits."""
    return f"{total & MASK:032x}"


_RECORD = kind("record")
_STEP = kind("step")


def record_head(record: ExecutionRecord) -> tuple[object, ...]:
    """What of an execution's record a key covers: the fields that change as it runs
    (``Row.head`` gives the same from the memory runtime's row)."""
    lease = record.lease
    return (
        record.execution_id,
        str(record.status),
        record.due_at,
        record.lease_token,
        None if lease is None else lease.expires_at,
        record.cancel_requested,
        record.waiting_on,
        record.recoveries,
    )


def admitted(record: ExecutionRecord) -> str:
    """What an execution's admission fixed that what comes next reads, as its record's term
    covers it: whether an execution admitted it (claims among rows due at one instant take
    triggered ones first: ``Row.claim_rank``), its workflow and its parameters. The ID alone
    does not tell them: a business ID (``step.child``) may be admitted by a trigger in one
    state and by an execution in another, and once that caller is pruned no start-request
    record tells the two apart (``row_admitted`` gives the same from the memory runtime's row).
    """
    return repr((record.parent is not None, record.workflow_id, record.params))


def row_admitted(row: Row) -> str:
    """``admitted`` of the record of ``row``."""
    return repr((row.parent_execution_id is not None, row.workflow_id, row.params_value))


def written_since(row: Row, done: int) -> Sequence[StepRecord]:
    """The steps of ``row`` written since its first ``done`` step writes, each once: a key
    written twice since is read once, so its term is replaced, never added twice."""
    writes, steps = row.step_writes, row.steps
    if len(writes) == done + 1:  # most often: one step written
        return (steps[writes[done]],)
    return [steps[key] for key in dict.fromkeys(writes[done:])]


def store_text(store: dict[str, str]) -> str:
    """The world's store as a key reads it: its items sorted by key."""
    return repr(sorted(store.items())) if store else "[]"


def events_text(runtime: Any) -> str:
    """The runtime's external events as a key reads them (``EventClient.events``): each
    with its place, IDs, target, payload, when it was sent and what became of it (its status,
    the run and step that took it). Empty for a runtime without events."""
    events = getattr(runtime, "events", None)
    if events is None:
        return "[]"
    return repr(
        [
            (e.seq, e.event_id, e.instance_id, e.execution_id, e.name, e.payload, e.sent_at,
             e.status, e.consumed_by, e.step_key)
            for e in events()
        ]
    )  # fmt: skip


class _Execution:
    """One execution's terms: its record's and its steps', summed (``term``)."""

    __slots__ = (
        "admitted", "head", "prefix", "record", "result", "result_text",
        "revision", "shared", "step_terms", "steps_sum", "term", "writes",
    )  # fmt: skip

    def __init__(self, execution_id: str, admitted: str) -> None:
        self.prefix = f"{execution_id!r}\x1f"
        self.admitted = admitted
        """What its admission fixed (``admitted``): part of the record's term."""
        self.revision = -1
        self.writes = 0
        self.step_terms: dict[int, int] = {}
        self.steps_sum = 0
        self.head: tuple[object, ...] | None = None
        self.result: object = _Execution
        self.result_text = ""
        self.record = 0
        self.term = 0
        self.shared = False
        """Whether another ``Executions`` holds this very entry: it is copied before it is
        updated (``Executions._update``)."""

    def copy(self) -> _Execution:
        """An entry of its own with the same terms."""
        new = _Execution.__new__(_Execution)
        for name in _Execution.__slots__:
            setattr(new, name, getattr(self, name))
        new.step_terms = dict(self.step_terms)
        new.shared = False
        return new

    def update(
        self,
        steps: Iterable[StepRecord],
        head: tuple[object, ...],
        result: object,
    ) -> None:
        """Fold in the current state of ``steps``; take ``head`` (``record_head``) and ``result``
        as the record's, with what its admission fixed (``admitted``) but not its place in
        admission order: the ID names the record, and since claims take executions by ready
        time, rank and ID, the order of admissions is not part of what comes next, so two
        starts admitted in either order leave one state. A step's term covers its value and
        the record's covers its result: a workflow's generator holds the values it was given."""
        terms = self.step_terms
        total = self.steps_sum
        # Each step's term names its execution and its position (its place in first-recorded
        # order): the terms of every execution's steps sum to one multiset that reads back
        # as each one's ordered list. The key is quoted and the value last: one reading.
        prefix = self.prefix
        for s in steps:
            position = s.position
            running = _STEP.copy()
            running.update(
                f"{prefix}{position}\x1f{s.step_key!r}\x1f{s.status}\x1f{s.attempt}\x1f{s.value!r}".encode()
            )
            new = int.from_bytes(running.digest())
            total += new - terms.get(position, 0)
            terms[position] = new
        self.steps_sum = total = total & MASK
        moved = False
        if head != self.head:
            # Equal heads print alike (each field has one type): most writes are steps, which
            # leave the head as it was.
            self.head, moved = head, True
        # The row's result is replaced, never changed in place (readers get copies): the same
        # object has the same text. Holding it keeps its id from being reused.
        if result is not self.result:
            self.result, self.result_text, moved = result, repr(result), True
        if moved:
            self.record = term(_RECORD, f"{self.admitted}\x1f{head!r}\x1f{self.result_text}")
        self.term = self.record + total


class Executions:
    """Every execution's terms, summed: followed on the memory runtime (``follow``), read
    whole on any other (``read_whole``), to the same sum.

    """

    __slots__ = ("_cache", "_done", "_rows", "_runtime", "_total", "shape")

    def __init__(self) -> None:
        self._runtime: object = None
        self._rows: tuple[Mapping[str, Row], Sequence[Row]] | None = None
        self._cache: dict[int, _Execution] = {}
        self._done = 0
        self._total = 0
        self.shape: tuple[int, int] = (0, 0)
        """How many rows there are, and the last one's number, as ``follow`` last read them:
        rows are kept in admission order and an admission takes a new, higher number, so the
        set of rows changed exactly when this did."""

    def of(self, runtime: Any, *, follow: bool) -> int:
        """The sum of ``runtime``'s terms: followed (``follow``) when it logs the rows it
        writes (the memory runtime), else read whole."""
        if runtime is not self._runtime:
            self._runtime = runtime
            view = getattr(runtime, "rows_view", None) if follow else None
            writes = getattr(runtime, "row_writes", None)
            # The view and the writes are live: taken once, not at every point.
            self._rows = None if view is None or writes is None else (view(), writes())
        rows = self._rows
        return self.read_whole(runtime) if rows is None else self.follow(*rows)

    def copy(self) -> Executions:
        """The same sums, kept apart from these (a saved state's keys): following the same
        runtime's live views."""
        new = Executions()
        new._runtime, new._rows, new._done, new._total = (
            self._runtime, self._rows, self._done, self._total,
        )  # fmt: skip
        new._cache = dict(self._cache)
        for entry in new._cache.values():
            entry.shared = True  # copied by whichever of the two updates it first
        new.shape = self.shape
        return new

    def caught_up(self) -> None:
        """Take every write logged so far as read: the runtime's rows were restored to those
        these sums were made from (their writes log starts again with every row)."""
        rows = self._rows
        if rows is not None:
            self._done = len(rows[1])

    @property
    def following(self) -> bool:
        """Whether the last ``of`` followed the runtime's rows (else it read them whole)."""
        return self._rows is not None

    def follow(self, rows: Mapping[str, Row], writes: Sequence[Row]) -> int:
        """The sum of the terms of ``rows`` (``MemoryRuntime.rows_view``), reading again only
        the rows written since the last call (``MemoryRuntime.row_writes``), and of their
        steps only those written since: in time proportional to what changed, whatever the
        number of rows, but for an admission or a prune, which changes the set of rows and
        sums every row's term again."""
        done = self._done
        if len(writes) == done:
            return self._total
        self._done = len(writes)
        changed: Iterable[Row]
        if len(writes) == done + 1:  # most often: one write
            changed = (writes[done],)
        else:
            # Each row once; rows compare by value, so they are told apart by identity.
            changed = {id(row): row for row in writes[done:]}.values()
        cache, total = self._cache, self._total
        for row in changed:
            entry = cache.get(row.seq)
            if entry is None or rows.get(row.execution_id) is not row:
                return self._read_rows(rows)  # admitted or pruned since
            old = entry.term
            entry = self._update(entry, row)
            total += entry.term - old
        self._total = total = total & MASK
        return total

    def _read_rows(self, rows: Mapping[str, Row]) -> int:
        """The sum over every row's term (the rows written since read again)."""
        cache: dict[int, _Execution] = {}
        total = count = last = 0
        for row in rows.values():
            last = row.seq
            entry = self._cache.get(last) or _Execution(row.execution_id, row_admitted(row))
            if entry.revision != row.revision:
                entry = self._update(entry, row)
            cache[last] = entry
            total += entry.term
            count += 1
        self._cache, self.shape = cache, (count, last)
        self._total = total = total & MASK
        return total

    def _update(self, entry: _Execution, row: Row) -> _Execution:
        """Fold the writes to ``row`` since ``entry`` last read it into ``entry`` (or, should
        its steps have been emptied, into a new one, which it returns)."""
        writes = row.step_writes
        done = entry.writes
        if len(writes) < done:  # the row's steps were emptied: read them all
            entry, done = _Execution(row.execution_id, row_admitted(row)), 0
            self._cache[row.seq] = entry
        elif entry.shared:
            entry = self._cache[row.seq] = entry.copy()
        entry.update(written_since(row, done), row.head(), row.result_value)
        entry.writes = len(writes)
        entry.revision = row.revision
        return entry

    def read_whole(self, runtime: Any) -> int:
        """The sum of the terms of every execution of ``runtime``, each read whole."""
        total = 0
        for record in runtime.executions():
            entry = _Execution(record.execution_id, admitted(record))
            entry.update(runtime.steps(record.execution_id), record_head(record), record.result)
            total += entry.term
        return total & MASK
