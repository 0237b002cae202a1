"""The reference state keys the tests (and the exhaustive benchmark) compare the explorer's
incremental keys with: everything read again and formatted whole at every choice point.

They live here, not in the package, because nothing but a comparison calls them."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from yieldstar_sim.simulation.explorer.statekeys import _HISTORY, WholeReads, _feed, actor_role

if TYPE_CHECKING:
    from yieldstar_sim.simulation import ExplorationReport
    from yieldstar_sim.simulation.kernel import Point
    from yieldstar_sim.simulation.simulator import Simulator


def state_key(
    simulator: Simulator,
    histories: dict[str, list[str]],
    chosen: tuple[str, Point] | None,
    *,
    ended: bool = False,
) -> str:
    """The fingerprint of the state at a choice point (before the choice), blind to which
    worker is which: the records with their step values, the start requests, the clock, the
    ledger, the world's store, and each actor's state (what it waits for, and its delivery so
    far as the trace reads: what its generator holds; ``StateKeys.histories``).

    Everything is read again and formatted whole: the key the search used before
    ``StateKeys``, which tells states apart exactly as this one does in time proportional to
    what changed. With ``ended``, the state a run ended in: no actor is counted.
    """
    runtime = simulator.runtime
    records = []
    for record in runtime.executions():
        lease = record.lease
        steps = tuple(
            (s.step_key, str(s.status), s.attempt, repr(s.value))
            for s in runtime.steps(record.execution_id)
        )
        records.append((
            record.execution_id, str(record.status), record.due_at, record.lease_token,
            None if lease is None else lease.expires_at, record.cancel_requested,
            record.waiting_on, repr(record.result), steps,
        ))  # fmt: skip
    requests = sorted(
        repr((r.request_id, r.workflow_id, r.target_execution_id)) for r in runtime.start_requests()
    )
    waiting = [] if ended else list(simulator.kernel.waiting())
    if chosen is not None:
        waiting.append((chosen[0], f"point {chosen[1].label}"))
    actors = sorted(
        (state.replace(name, "~") + actor_role(name), tuple(histories.get(name, ())))
        for name, state in waiting
    )
    ledger = [
        (e.name, repr(e.data), e.execution_id, e.step_key, e.attempt)
        for e in simulator.ledger.effects
    ]
    store = sorted(simulator.store.canonical.items())
    # What workers believe: how far behind each skewed clock runs, and where each lease ends
    # after its heartbeats (worker names are blinded like the actors').
    clocks = sorted(simulator.clocks.behind.values())
    leases = sorted(simulator.lease_ends.items())
    names = simulator.state.group_names
    groups = sorted((names[n], tuple(o)) for n, o in simulator.state.groups.items())
    text = repr(
        (records, requests, simulator.clock.now(), ledger, store, actors, clocks, leases, groups)
    )
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def whole_key(
    simulator: Simulator, histories: dict[str, list[str]], chosen: tuple[str, Point] | None
) -> str:
    """The key ``StateKeys.key`` gives, with everything read whole: every record and step, the
    start requests, the whole ledger, each actor's whole history (``histories``), the store
    and the clock."""
    hashes = {}
    for name, lines in histories.items():
        running = hashes[name] = _HISTORY.copy()
        for line in lines:
            _feed(running, line)
    keys = WholeReads()
    keys.restore((hashes, None))
    return keys.key(simulator, chosen)


def search_summary(report: ExplorationReport) -> tuple[object, ...]:
    """What two exhaustive searches of one scenario must agree on, whatever way they read keys
    or reach states: counts, cuts, verdicts, violations and the paths to each state."""
    return (
        report.distinct_states,
        report.schedules_run,
        report.pruned_by_cache,
        report.pruned_by_reduction,
        report.searched_to_the_end,
        report.cut_by,
        report.naive_schedules,
        sorted(report.verdicts.items()),
        [(v.invariant, v.message, v.faults) for v in report.violations],
        report.state_paths,
    )
