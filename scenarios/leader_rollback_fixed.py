"""A leader election whose transaction failed concedes: one cron job per slot.

Two peers, a and b, elect a leader through the outside world's store, as Oban's database
peers do: every 30 s each runs an election in one transaction (``with
step.world.transaction():``) that takes the lead (writing ``leader`` and a 45 s lease end,
``leader_until``) when nobody holds it, the lease has ended, or the peer holds it already; a
peer that leads inserts the round's cron job (``cron.inserted``, one per slot; the job queue
deduplicates a peer's own repeats by its key). a elects at t=0, 30, 60; b at t=15, 45, 75.
When an election fails (the outside world fails its commit or a read: ``ys.WorldError``, and
the transaction rolls back), the peer concedes: it does not lead this round, and the lease it
did not renew lapses to b. Verified under any one fault. leader-rollback is the peer that
keeps its belief instead.
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
        # The fix (oban-bg/oban 2.23.1): a failed election concedes the lead.
        return {"leading": False, "slot": slot}
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
    name="leader-rollback-fixed",
    workflows=[peer],
    triggers=[
        ys.Trigger("peer", {"peer": "a", "offset": 0}, execution_id="peer-a"),
        ys.Trigger("peer", {"peer": "b", "offset": 15}, execution_id="peer-b"),
    ],
    # The outside world fails a's renewal at t=30: its transaction's commit.
    faults=[ys.Fault("world_error", op="commit", execution_id="peer-a", step_key="elect-1")],
    invariants=[ys.at_most_once("cron.inserted", by="slot")],
)
