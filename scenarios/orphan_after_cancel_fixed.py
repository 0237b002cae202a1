"""Orphan after cancel, fixed: a terminal owner admits no child; the frozen worker is refused.

The story of orphan-after-cancel with the runtimes' orphan guard on (the default). The worker
delivering order-42 freezes for 40 s just before start_child of pack-42; the shop cancels
order-42 at t=10 and the other worker delivers the cancellation at t=30. When the frozen worker
wakes at t=40, its start_child is refused like a fenced write (TerminalCallerError: order-42 is
cancelled, and a terminal execution admits no new targets), its delivery is rejected, and no
parcel is packed. Had it woken before order-42 ended, pack-42 would have been created with its
cancellation already requested, following its owner. Exploring it with two faults at every
choice point finds no violation.
"""

from __future__ import annotations

from pathlib import Path

import yieldstar_sim as ys

hazard = ys.load_scenario(Path(__file__).with_name("orphan_after_cancel.py"))

scenario = ys.Scenario(
    name="orphan-after-cancel-fixed",
    workflows=hazard.workflows,
    triggers=hazard.triggers,
    cancels=hazard.cancels,
    faults=hazard.faults,
    invariants=hazard.invariants,
)
