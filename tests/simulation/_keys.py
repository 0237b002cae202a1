"""The reference state keys the tests (and the exhaustive benchmark) compare the explorer's
incremental keys with: everything read again and formatted whole at every choice point.

They live here, not in the package, because nothing but a comparison calls them."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from yieldstar_sim.simulation.statekeys import WholeReads, actor_role, holds_no_past, wait_facts
from yieldstar_sim.simulation.terms import events_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.simulation import ExplorationReport
    from yieldstar_sim.simulation.state import RunState
    from yieldstar_sim.simulation.trace import TraceEvent


def state_key(state: RunState, histories: dict[str, list[str]], *, ended: bool = False) -> str:
    """The key of ``state`` at a choice point (before the move), blind to which worker is
    which: the records with their step values, the start requests, the clock, the ledger, the
    world's store and its random draws, the external events, each actor's state (what it
    waits for, and its history: ``StateKeys.histories``), the turns of actors at solo points,
    and what the workers believe.

    Everything is read again and formatted whole: ``StateKeys`` tells states apart exactly as
    this one does, in time proportional to what changed. With ``ended``, the state a run
    ended in: no actor is counted.
    """
    runtime = state.runtime
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
            record.waiting_on, record.recoveries, repr(record.result), steps,
        ))  # fmt: skip
    requests = sorted(
        repr((r.request_id, r.workflow_id, r.target_execution_id)) for r in runtime.start_requests()
    )
    waits = {} if ended else state.kernel.waits
    behind = state.clocks.behind
    helped = {name.partition("~")[0] for name in waits if "~" in name}

    def actor(name: str) -> tuple[str, float, tuple[str, ...]]:
        # Each actor with its worker's skew: which worker runs behind goes with its history
        # (none where it holds nothing of its past, unless a stalled attempt of it lives).
        fresh = name not in helped and holds_no_past(waits[name])
        return (
            wait_facts(name, waits[name]) + actor_role(name),
            behind.get(name.partition("~")[0], 0.0),
            () if fresh else tuple(histories.get(name.partition("~")[0], ())),
        )

    actors = sorted(actor(name) for name in waits)
    # Who goes first among actors waiting at solo points, when several wait there: the one
    # still on its move; the others in any order (which of them goes next is a choice).
    turns = state.kernel.turns if waits and len(state.kernel.turns) > 1 else []
    holder = state.kernel.holder
    order = [actor(name) for name in turns if name == holder]
    order += sorted(actor(name) for name in turns if name != holder)
    ledger = [
        (e.name, repr(e.data), e.execution_id, e.step_key, e.attempt) for e in state.ledger.effects
    ]
    store = sorted(state.store.canonical.items())
    # Where each lease ends after its heartbeats, by execution and token.
    leases = sorted(state.lease_ends.items())
    # The external events, in a scenario that sends them.
    events = events_text(runtime) if state.scenario.sends else ""
    text = repr(
        (records, requests, state.clock.now(), ledger, store, actors, order, leases,
         state.world_draws, events)
    )  # fmt: skip
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def whole_key(state: RunState, events: Sequence[TraceEvent], *, ended: bool = False) -> str:
    """The key ``StateKeys.key`` gives, with everything read whole: every record and step, the
    start requests, the whole ledger, each actor's whole history (``events``, the trace so
    far, fed again), the store and the clock."""
    keys = WholeReads()
    keys.remember(events)
    return keys.key(state, ended=ended)


def search_summary(report: ExplorationReport) -> tuple[object, ...]:
    """What two exhaustive searches of one scenario must agree on, whatever way they read keys
    or reach states: counts, cuts, verdicts, violations and the paths to each state."""
    covered = report.exhaustive
    assert covered is not None
    return (
        covered.distinct_states,
        report.schedules_run,
        covered.pruned_by_cache,
        covered.searched_to_the_end,
        covered.cut_by,
        covered.naive_schedules,
        [(v.invariant, v.message, v.faults) for v in report.violations],
        covered.state_paths,
    )
