"""A leader election rolled back, and the peer kept its belief that it leads: two cron jobs.

Modelled on oban-bg/oban#1488: an election that rolled back preserved ``leader?``, so a peer
that lost its lease kept inserting cron jobs beside the new leader. Two peers, a and b, elect
a leader through the outside world's store in one transaction every 30 s (a at t=0, 30, 60;
b at t=15, 45, 75); a leader inserts the round's cron job. a leads from t=0. At t=30 the
outside world fails a's renewal (one ``world_error`` at its transaction's commit: nothing of
it lands); a catches ``ys.WorldError`` and keeps believing it leads, so it inserts slot 1's
job. Its lease, not renewed, ends at t=45, and b takes the lead then and inserts slot 1's job
too: ``at_most_once(cron.inserted, by=slot)`` breaks. No fault, no duplicate: the explorer
needs the one world_error. leader-rollback-fixed concedes instead.
"""

from __future__ import annotations

import yieldstar_sim as ys

LEASE = 45
ROUNDS = 3


def elect(step, peer, believed):
    """Take or renew the lead in one transaction: whether the peer believes it leads
    afterwards, and the cron slot (30 s each) of the election."""
    now = step.world.now()
    slot = int(now // 30)
    try:
        with step.world.transaction():
            leader = step.world.read("leader")
            until = step.world.read("leader_until", 0)
            if leader not in (None, peer) and until > now:
                return {"leading": False, "slot": slot}
            step.world.write("leader", peer)
            step.world.write("leader_until", now + LEASE)
    except ys.WorldError:
        # The bug: the rolled-back election keeps the peer's belief.
        return {"leading": believed, "slot": slot}
    return {"leading": True, "slot": slot}


@ys.workflow("peer")
def peer(step, params):
    name, leading = params["peer"], False
    if params["offset"]:
        yield from step.delay("offset", params["offset"])
    for round_ in range(ROUNDS):
        elected = yield from step.run(f"elect-{round_}", elect, step, name, leading)
        leading = elected["leading"]
        if leading:
            yield from step.run(f"cron-{round_}", insert_cron, step, elected["slot"], name)
        yield from step.delay(f"wait-{round_}", 30)
    return "done"


def insert_cron(step, slot, peer):
    """The leader inserts the slot's cron job (the queue drops a peer's own repeats)."""
    step.world.effect("cron.inserted", slot=slot, peer=peer, idempotency_key=f"cron-{slot}-{peer}")


scenario = ys.Scenario(
    name="leader-rollback",
    workflows=[peer],
    triggers=[
        ys.Trigger("peer", {"peer": "a", "offset": 0}, execution_id="peer-a"),
        ys.Trigger("peer", {"peer": "b", "offset": 15}, execution_id="peer-b"),
    ],
    # The outside world fails a's renewal at t=30: its transaction's commit.
    faults=[ys.Fault("world_error", op="commit", execution_id="peer-a", step_key="elect-1")],
    invariants=[ys.at_most_once("cron.inserted", by="slot")],
)
