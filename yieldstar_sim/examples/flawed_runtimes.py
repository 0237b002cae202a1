"""Runtime adapters with the bugs real engines shipped, to explore on purpose.

Each wraps the reference ``MemoryRuntime`` and changes one thing about ``start`` or ``cancel``:

- ``DedupWhileOpenRuntime`` deduplicates a start request only while its target is still open:
  a request repeated after the target finished starts a second run (dedup that ignored closed
  runs);
- ``FreshIdOnRetryRuntime`` is a start client that, when it sends a request it has sent
  before (its retry after a lost response, or a replay's), mints a fresh request ID for it (a
  retry that minted a new ID);
- ``CancelSkipsBackoffRuntime`` looks for the executions to cancel among those due now, so a
  run waiting out a retry backoff is "nothing live" to it and goes on to complete.

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

from typing import TYPE_CHECKING, Any

from yieldstar_sim.core.model import RequestId, StartAccepted, StartRequest
from yieldstar_sim.runtime.memory import MemoryRuntime

if TYPE_CHECKING:
    from yieldstar_sim.core.model import StartResult


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
