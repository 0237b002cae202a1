"""Target IDs from the start request (docs/decisions.md, issue 49 item 3), as runtime-adapter
cases: a started target's ID and its place in the claim order depend on its request alone, so
two starts admitted in either order leave the same records, on every adapter alike."""

from __future__ import annotations

from yieldstar_sim.core.ids import start_target_id
from yieldstar_sim.core.model import Completed, ParentLink
from yieldstar_sim.testing._support import (
    LEASE,
    RuntimeFactory,
    _accepted,
    _caller,
    _expect,
    _finish,
    _fresh,
    _ship,
)

_REQUESTS = (("order-42", "ship"), ("order-43", "ship"), ("order-42", "ship/2"))


def a_targets_id_is_its_requests(make: RuntimeFactory) -> None:
    """Starts admitted in either order give each request the same target ID, the one
    ``core.ids.start_target_id`` names; a repeat gets it again."""
    orders = (_REQUESTS, tuple(reversed(_REQUESTS)))
    found: list[dict[tuple[str, str], str]] = []
    for requests in orders:
        runtime, _ = _fresh(make)
        _caller(runtime, "order-42")
        _caller(runtime, "order-43")
        found.append({r: _accepted(runtime.start(_ship(*r)), str(r)) for r in requests})
        for request, target in found[-1].items():
            again = _accepted(runtime.start(_ship(*request)), f"the repeat of {request}")
            _expect(again == target, f"the repeat of {request} got {again}, not {target}")
    expected = {
        (caller, step_key): start_target_id("ship-order", caller, step_key)
        for caller, step_key in _REQUESTS
    }
    _expect(found[0] == expected, f"the targets' IDs are {found[0]}, not {expected}")
    _expect(found[1] == expected, f"admitted the other way round, they are {found[1]}")


def rows_due_at_one_instant_are_claimed_by_id(make: RuntimeFactory) -> None:
    """Among executions due at the same time, claims take triggered ones first, then those an
    execution admitted, each by ID, not in admission order; one due earlier still goes first."""
    runtime, clock = _fresh(make)
    for execution_id in ("order-9", "order-10"):
        _caller(runtime, execution_id)
    target = _accepted(runtime.start(_ship("order-9")), "the start")
    _caller(runtime, "order-1")
    clock.set(1.0)
    _caller(runtime, "order-0")  # due later than the others
    claimed = []
    while (delivery := runtime.claim("w1", lease_seconds=LEASE)) is not None:
        claimed.append(delivery.lease.execution_id)
    expected = ["order-1", "order-10", "order-9", target, "order-0"]
    _expect(claimed == expected, f"claims took {claimed}, not {expected}")


def a_reused_callers_requests_get_new_targets(make: RuntimeFactory) -> None:
    """A caller pruned and its ID admitted again is a new incarnation: its request with a
    step key the old one used gets a new target ID, while the old targets keep theirs (and
    their parent link); a repeat of the new request gets the new target again."""
    runtime, _ = _fresh(make)
    targets: list[str] = []
    for incarnation in range(3):
        caller = _caller(runtime)
        targets.append(_accepted(runtime.start(_ship()), f"incarnation {incarnation}'s start"))
        again = _accepted(runtime.start(_ship()), f"incarnation {incarnation}'s repeat")
        _expect(again == targets[-1], f"the repeat got {again}, not {targets[-1]}")
        _finish(runtime, caller, Completed(None))
        runtime.prune(caller)
    _expect(len(set(targets)) == 3, f"three incarnations' requests got the IDs {targets}")
    for target in targets:
        record = runtime.execution(target)
        _expect(
            record is not None and record.parent == ParentLink("order-42", "ship"),
            f"the target {target} was not kept as it was: {record}",
        )
    _finish(runtime, targets[0], Completed(None))
    runtime.prune(targets[0])
    caller = _caller(runtime)
    fresh = _accepted(runtime.start(_ship()), "the fourth incarnation's start")
    _expect(fresh not in targets[1:], f"a retained target's ID {fresh} was given again")
    _expect(runtime.claim("w1", lease_seconds=LEASE) is not None, "nothing to claim")
