"""Runtime adapters with the bugs real engines shipped, to explore on purpose.

Each wraps the reference ``MemoryRuntime`` and changes one thing about ``start`` or ``cancel``:

- ``DedupWhileOpenRuntime`` deduplicates a start request only while its target is still open:
  a request repeated after the target finished starts a second run (dedup that ignored closed
  runs);
- ``FreshIdOnRetryRuntime`` is a start client that, when it sends a request it has sent
  before (its retry after a lost response, or a replay's), mints a fresh request ID for it (a
  retry that minted a new ID);
- ``CancelSkipsBackoffRuntime`` looks for the executions to cancel among those due now, so a
  run waiting out a retry backoff is "nothing live" to it and goes on to complete;
- ``StaleStepWritesRuntime`` checks a step write against the execution, not against the
  write's fencing token: a superseded delivery's write lands over a completed step's record;
- ``CompletesAnyAttemptRuntime`` takes an attempt's completion (``complete_attempt``) by the
  execution and the step alone, under the lease that holds now: an attempt its worker gave
  up on completes the step over its retry (a token without the attempt);
- ``ArchivesExpiredLeasesRuntime`` counts a lease that expired (its worker died) as a failed
  attempt and archives a task that has no retries left, though no attempt of it failed; it
  reports what it archives (``ReportsActions``). ``RequeuesExpiredLeasesRuntime`` is its fix:
  an expired lease sends the task back to the queue, and it reports that;
- ``EventsToCurrentRunRuntime`` hands an event sent to a workflow instance to the run that is
  current when it is sent, and drops it without a word when that run continues as new before
  taking it (the Durable Task framework's and go-workflows' lost events).

The explorer finds each with the built-in invariants, e.g.::

    yieldstar-sim explore durable-start \\
        --runtime yieldstar_sim.examples.flawed_runtimes:DedupWhileOpenRuntime

>>> import yieldstar_sim as ys
>>> report = ys.explore(ys.load_scenario("durable-start"), runtime=DedupWhileOpenRuntime,
...                     confirm=None)
>>> report.verdict, report.violations[0].invariant
('violated', 'at most one admitted execution per step')
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.events import EventAccepted
from yieldstar_sim.core.model import ErrorInfo, Failed, RequestId, StartAccepted, StartRequest
from yieldstar_sim.runtime.memory import MemoryRuntime
from yieldstar_sim.runtime.protocol import RuntimeAction

if TYPE_CHECKING:
    from yieldstar_sim.core.attempts import AttemptToken
    from yieldstar_sim.core.events import EventRecord, EventRequest, EventResult
    from yieldstar_sim.core.model import Delivery, Lease, StartResult


class _Wrapped:
    """Everything but ``start`` goes to the reference runtime."""

    def __init__(self, *, clock: Any = None, **options: Any) -> None:
        self.inner = MemoryRuntime(clock=clock, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class DedupWhileOpenRuntime(_Wrapped):
    """A start request is deduplicated only while its target is open: once the target is
    terminal, the same request starts a new run."""

    def start(self, request: StartRequest) -> StartResult:
        """Start, or return the open target of the same request."""
        first = self.inner.start(request)
        if not isinstance(first, StartAccepted):
            return first
        target = self.inner.execution(first.execution_id)
        if target is None or not target.terminal:
            return first
        # The bug: the dedup table only holds open runs, so a closed one is started again.
        again = self.inner.trigger(request.workflow_id, request.params)
        return StartAccepted(again)


class FreshIdOnRetryRuntime(_Wrapped):
    """A start client that mints a fresh request ID whenever it sends a request again.

    It keeps state of its own (the requests it sent), so it saves and restores that beside
    the reference runtime's records: an adapter that forwarded ``snapshot`` and ``restore``
    alone would put back a state it never was in, and the explorer stops with
    ``RestoreMismatch`` rather than count such states."""

    def __init__(self, *, clock: Any = None, **options: Any) -> None:
        super().__init__(clock=clock, **options)
        self.sent: dict[tuple[str, str], int] = {}

    def snapshot(self) -> object:
        """The reference runtime's records and the requests sent."""
        return self.inner.snapshot(), dict(self.sent)

    def restore(self, snapshot: Any) -> None:
        """Put back what ``snapshot`` saved."""
        records, sent = snapshot
        self.inner.restore(records)
        self.sent = dict(sent)

    def start(self, request: StartRequest) -> StartResult:
        """Start; a request sent before goes out under a new step key (a new request ID)."""
        key = (request.request_id.execution_id, request.request_id.step_key)
        retries = self.sent.get(key)
        self.sent[key] = 0 if retries is None else retries + 1
        if retries is None:
            return self.inner.start(request)
        fresh = RequestId(key[0], f"{key[1]}~retry-{retries + 1}")
        return self.inner.start(
            StartRequest(fresh, request.workflow_id, request.params, request.detached)
        )


class CancelSkipsBackoffRuntime(_Wrapped):
    """A cancellation reaches only executions that are due now or leased: one waiting out a
    retry backoff (or a delay) is passed over, and the answer says it reached nothing."""

    def __init__(self, *, clock: Any = None, **options: Any) -> None:
        super().__init__(clock=clock, **options)
        self.clock = clock

    def cancel(self, execution_id: str) -> list[str]:
        """Cancel, unless the execution's next delivery is due later than now."""
        record = self.inner.execution(execution_id)
        now = self.clock.now() if self.clock is not None else 0.0
        if record is not None and record.lease is None and (record.due_at or 0.0) > now:
            # The bug: the cancel looked in the run queue, where a sleeping run is not.
            return []
        return list(self.inner.cancel(execution_id))


class StaleStepWritesRuntime(_Wrapped):
    """A step write is checked against the execution alone: a write under a superseded lease
    (a delivery that froze past its lease while another took over) is made under the lease
    that holds now, over whatever the current delivery recorded."""

    def put_step(self, lease: Lease, step_key: str, **write: Any) -> None:
        """Record a step; a stale lease's write lands all the same."""
        record = self.inner.execution(lease.execution_id)
        holder = None if record is None else record.lease
        if holder is not None and holder.incarnation == lease.incarnation:
            # The bug: the fencing token is not compared, so the superseded write lands.
            lease = holder
        self.inner.put_step(lease, step_key, **write)


class CompletesAnyAttemptRuntime(_Wrapped):
    """An attempt's completion is taken by the execution and the step its token names, not by
    the attempt or the lease it started under: while another lease holds the execution, the
    completion is recorded under that lease, as the step's put_step, whichever attempt sent
    it, over whatever the step holds (the Temporal Java SDK's test server, whose activity task
    tokens did not carry the attempt, so that a previous attempt could complete the next one:
    temporalio/sdk-java#84). With no lease held it refuses as the reference does."""

    def complete_attempt(self, token: AttemptToken, value: object = None) -> None:
        """Complete the step; an earlier attempt's completion lands all the same."""
        record = self.inner.execution(token.execution_id)
        holder = None if record is None else record.lease
        if holder is None or holder.incarnation != token.lease.incarnation:
            self.inner.complete_attempt(token, value)
            return
        # The bug: neither the attempt nor its lease's fencing token is compared.
        self.inner.put_step(
            holder, token.step_key, status="completed", value=value, attempt=token.attempt
        )


class ArchivesExpiredLeasesRuntime(_Wrapped):
    """asynq's recoverer with ``MaxRetries(0)`` (hibiken/asynq#1015): at each claim it looks
    for leases that expired, counts each as a failed attempt, and archives a task with no
    retries left (it ends failed, though no attempt of it failed). It reports each task it
    archives, and each it sends back to the queue (``take_actions``)."""

    max_retries = 0
    counts_expiry = True
    """Whether an expired lease counts as a failed attempt (the bug); else it only sends the
    task back to the queue."""

    def __init__(self, *, clock: Any = None, **options: Any) -> None:
        super().__init__(clock=clock, **options)
        self.clock = clock
        self.retries: dict[str, int] = {}
        self.seen: set[tuple[str, int]] = set()
        self.actions: list[RuntimeAction] = []

    def snapshot(self) -> object:
        """The reference runtime's records, and the recoverer's counts and reports."""
        return self.inner.snapshot(), dict(self.retries), set(self.seen), list(self.actions)

    def restore(self, snapshot: Any) -> None:
        """Put back what ``snapshot`` saved."""
        records, retries, seen, actions = snapshot
        self.inner.restore(records)
        self.retries, self.seen, self.actions = dict(retries), set(seen), list(actions)

    def take_actions(self) -> list[RuntimeAction]:
        """What the recoverer did since it was last asked."""
        taken, self.actions = self.actions, []
        return taken

    def claim(
        self, owner: str, *, lease_seconds: float, execution_id: str | None = None
    ) -> Delivery | None:
        """Recover the tasks whose lease expired, then claim."""
        self._recover(lease_seconds)
        return self.inner.claim(owner, lease_seconds=lease_seconds, execution_id=execution_id)

    def _recover(self, lease_seconds: float) -> None:
        now = self.clock.now() if self.clock is not None else 0.0
        for record in self.inner.executions():
            lease = record.lease
            if record.terminal or lease is None or lease.expires_at > now:
                continue
            if (record.execution_id, lease.token) in self.seen:
                continue
            self.seen.add((record.execution_id, lease.token))
            why = f"{lease.owner}'s lease expired at t={lease.expires_at:g}"
            if not self.counts_expiry:
                self.actions.append(
                    RuntimeAction("requeued", record.execution_id, f"{why}; it runs again")
                )
                continue
            used = self.retries[record.execution_id] = self.retries.get(record.execution_id, 0) + 1
            if used <= self.max_retries:
                self.actions.append(RuntimeAction("requeued", record.execution_id, why))
                continue
            # The bug: a worker's death is counted as the task's failure.
            taken = self.inner.claim(
                "recoverer", lease_seconds=lease_seconds, execution_id=record.execution_id
            )
            if taken is None:
                continue
            message = "archived by the recoverer: no retries left"
            self.inner.acknowledge(taken.lease, Failed(ErrorInfo("TaskArchived", message)))
            self.actions.append(
                RuntimeAction(
                    "archived", record.execution_id,
                    f"{why}, which it counted as a failed attempt, with no retries left "
                    f"(max_retries={self.max_retries})",
                )
            )  # fmt: skip


class RequeuesExpiredLeasesRuntime(ArchivesExpiredLeasesRuntime):
    """The fix of ``ArchivesExpiredLeasesRuntime``: an expired lease is a worker's failure,
    not the task's, and only sends the task back to the queue (it reports that)."""

    counts_expiry = False


class EventsToCurrentRunRuntime(_Wrapped):
    """An event sent to a workflow instance goes to the instance's run that is current when
    it is sent, as if sent to that run by its ID; when that run continues as new before it
    takes the event, the run's queue goes with it, and the event is gone: ``events()`` no
    longer lists it, and nothing reports it (Azure/azure-functions-durable-extension#67,
    cschleiden/go-workflows#493). The reference runtime keeps it for the instance, and the
    next run takes it."""

    def __init__(self, *, clock: Any = None, **options: Any) -> None:
        super().__init__(clock=clock, **options)
        self.bound: set[int] = set()
        """The events sent to an instance that it bound to the run current then (by seq)."""

    def snapshot(self) -> object:
        """The reference runtime's records, and which events it bound to a run."""
        return self.inner.snapshot(), frozenset(self.bound)

    def restore(self, snapshot: Any) -> None:
        """Put back what ``snapshot`` saved."""
        records, bound = snapshot
        self.inner.restore(records)
        self.bound = set(bound)

    def send_event(self, request: EventRequest) -> EventResult:
        """Send an instance's event to its current run by ID (the bug); a run's as asked."""
        if request.instance_id is None:
            return self.inner.send_event(request)
        current = [
            record for record in self.inner.executions()
            if record.instance == request.instance_id and not record.terminal
        ]  # fmt: skip
        if not current:
            return self.inner.send_event(request)  # refused as the reference refuses it
        bound = replace(request, execution_id=current[-1].execution_id, instance_id=None)
        result = self.inner.send_event(bound)
        if isinstance(result, EventAccepted) and not result.duplicate:
            self.bound.add(result.seq)
        return result

    def events(self) -> list[EventRecord]:
        """Every event but those bound to a run that continued as new before taking them."""
        return [event for event in self.inner.events() if not self._dropped(event)]

    def _dropped(self, event: EventRecord) -> bool:
        if event.seq not in self.bound or event.status != "undelivered":
            return False
        run = self.inner.execution(event.execution_id) if event.execution_id else None
        return run is not None and run.status == "continued-as-new"
