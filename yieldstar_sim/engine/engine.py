"""The engine: a runtime, registered workflows, an invoker and a dispatcher on a virtual clock.

>>> import yieldstar_sim as ys
>>> @ys.workflow("hello")
... def hello(step, params):
...     greeting = yield from step.run("greet", lambda: f"hello {params['name']}")
...     return greeting
>>> engine = ys.Engine([hello], runtime="memory")
>>> execution_id = engine.trigger("hello", {"name": "order-42"})
>>> [result.outcome for result in engine.run_until_idle()]
[Completed(result='hello order-42', status='completed')]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from yieldstar_sim.core.clock import ManualClock
from yieldstar_sim.core.events import EventRequest
from yieldstar_sim.engine.dispatcher import Dispatcher, DispatchResult
from yieldstar_sim.engine.invoker import InProcessInvoker, Invoker, Registry
from yieldstar_sim.engine.world import EngineWorld, Ledger
from yieldstar_sim.runtime.duckdb_runtime import DuckDBRuntime
from yieldstar_sim.runtime.memory import MemoryRuntime
from yieldstar_sim.runtime.protocol import events_of

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from yieldstar_sim.core.authoring import Workflow
    from yieldstar_sim.core.events import EventResult
    from yieldstar_sim.core.profiles import DriverProfile
    from yieldstar_sim.core.steps import StepDefinition
    from yieldstar_sim.runtime.protocol import Runtime


class Engine:
    """Runs registered workflows on a runtime, one delivery at a time, on a virtual clock.

    ``runtime`` is ``"duckdb"`` (the default, in memory), ``"memory"``, or a runtime you made
    with this engine's clock. ``invoker`` is ``"in-process"`` (workflow code runs in this process)
    or ``"worker"`` (a child process that sends its runtime calls here). An execution
    recovered more than ``max_recovery_attempts`` times (None: no limit) is dead-lettered.
    """

    def __init__(
        self,
        workflows: Iterable[Workflow],
        *,
        steps: Iterable[StepDefinition] = (),
        runtime: Runtime | Literal["duckdb", "memory"] = "duckdb",
        clock: ManualClock | None = None,
        invoker: Literal["in-process", "worker"] = "in-process",
        lease_seconds: float = 30.0,
        redelivery_delay: float = 5.0,
        profile: str | DriverProfile = "memory",
        max_recovery_attempts: int | None = None,
    ) -> None:
        self.registry = Registry(workflows, steps, profile)
        if isinstance(runtime, str):
            self.clock = clock if clock is not None else ManualClock()
            if runtime == "duckdb":
                self.runtime: Runtime = DuckDBRuntime(clock=self.clock)
            elif runtime == "memory":
                self.runtime = MemoryRuntime(clock=self.clock)
            else:
                raise ValueError(
                    f"runtime must be 'duckdb', 'memory' or a runtime, not {runtime!r}"
                )
        else:
            runtime_clock = runtime.clock
            if not isinstance(runtime_clock, ManualClock) or (clock and clock is not runtime_clock):
                raise ValueError(
                    "the engine moves virtual time: give the runtime a ManualClock and pass "
                    "the same clock (or none) to the engine"
                )
            self.clock, self.runtime = runtime_clock, runtime
        self.ledger = Ledger()
        self.world = EngineWorld(self.runtime, self.clock, self.ledger, lease_seconds=lease_seconds)
        self.invoker: Invoker
        if invoker == "in-process":
            self.invoker = InProcessInvoker(self.runtime, self.registry, self.world)
        elif invoker == "worker":
            from yieldstar_sim.engine.worker import WorkerProcessInvoker

            self.invoker = WorkerProcessInvoker(self.runtime, self.registry, self.world)
        else:
            raise ValueError(f"invoker must be 'in-process' or 'worker', not {invoker!r}")
        self.dispatcher = Dispatcher(
            self.runtime,
            self.invoker,
            lease_seconds=lease_seconds,
            redelivery_delay=redelivery_delay,
            max_recovery_attempts=max_recovery_attempts,
        )

    def trigger(
        self, workflow_id: str, params: object = None, *, execution_id: str | None = None
    ) -> str:
        """Admit an execution (RFC 001); it runs when dispatched. Returns its ID."""
        return self.runtime.trigger(workflow_id, params, execution_id=execution_id)

    def cancel(self, execution_id: str) -> list[str]:
        """Request cancellation of an execution and what it owns (RFC 009)."""
        return self.runtime.cancel(execution_id)

    def send_event(
        self,
        name: str,
        payload: object = None,
        *,
        execution_id: str | None = None,
        instance_id: str | None = None,
        event_id: str | None = None,
    ) -> EventResult:
        """Send an external event to one run (``execution_id``) or to a workflow instance's
        current run (``instance_id``); its ``step.wait_for_event`` takes it."""
        request = EventRequest(name, payload, execution_id, instance_id, event_id)
        return events_of(self.runtime).send_event(request)

    def dispatch(
        self, worker: str = "w1", execution_id: str | None = None
    ) -> DispatchResult | None:
        """Deliver one due execution (or the named one) to ``worker``, if any is due."""
        return self.dispatcher.dispatch(worker, execution_id)

    def run_until_idle(
        self,
        *,
        workers: str | Sequence[str] = "w1",
        max_deliveries: int = 10_000,
        until: float | None = None,
    ) -> list[DispatchResult]:
        """Deliver due executions, moving the clock to the next wake, until nothing is left.

        Deliveries go to ``workers`` in turn. The clock does not move past ``until``. Stops
        after ``max_deliveries`` (a workflow that never finishes cannot hang a test).
        """
        names = [workers] if isinstance(workers, str) else list(workers)
        if not names:
            raise ValueError("run_until_idle needs at least one worker name")
        results: list[DispatchResult] = []
        while len(results) < max_deliveries:
            result = self.dispatch(names[len(results) % len(names)])
            if result is not None:
                results.append(result)
                continue
            wake = self.runtime.next_wake_at()
            if wake is None or wake <= self.clock.now() or (until is not None and wake > until):
                break
            self.clock.set(wake)
        return results

    def close(self) -> None:
        """Stop worker processes and close the runtime."""
        self.invoker.close()
        self.runtime.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
