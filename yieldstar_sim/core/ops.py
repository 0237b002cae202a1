"""The choice points' ops: each runtime call a worker or client makes, and a step body's elapse.

An op names a choice point in a ``Fault`` (``op="put_step"``), in a trace event and in the
explorer's plans. It is a ``StrEnum``, so a scenario may still write the plain string, and the
trace's JSON is unchanged; code compares against the members, never against string literals, so
that a renamed op is one edit here and a misspelt one is a type error.

>>> Op.PUT_STEP == "put_step", Op("claim") is Op.CLAIM
(True, True)
"""

from __future__ import annotations

import enum


class Op(enum.StrEnum):
    """A choice point's op (``faults.CHOICE_POINT_OPS`` says what each is)."""

    CLAIM = "claim"
    PUT_STEP = "put_step"
    RECORD_WAKE = "record_wake"
    WAIT_FOR = "wait_for"
    START = "start"
    START_CHILD = "start_child"
    CANCEL = "cancel"
    ACKNOWLEDGE = "acknowledge"
    RELEASE = "release"
    TRIGGER = "trigger"
    SEND_EVENT = "send_event"
    """A sender (``ys.SendEvent``) hands an event to the runtime: a choice point where the
    event can be lost, duplicated or delayed on its way."""
    WAIT_FOR_EVENT = "wait_for_event"
    """A worker takes a pending event for ``step.wait_for_event`` and records the step."""
    COMPLETE_ATTEMPT = "complete_attempt"
    """A step attempt records its result through its own call, under its attempt token
    (``completes_by_token()``): its worker's, or that of an attempt its worker gave up on."""
    ELAPSE = "elapse"
    COMPLETE = "complete"
    RENEW = "renew"
    """A step body's heartbeat (``step.heartbeat()``): its worker renews the lease there, a
    choice point where a fault fails the renewal or loses its answer. The renewals a worker
    makes on its own while a body that never heartbeats works are no choice point: they are
    part of that body's elapse, and trace a ``heartbeat`` event."""
    DRAW = "draw"
    """One option of a step body's draw (``step.world.choice``, ``step.world.coin``): the
    first option the kernel lets pass is the one drawn."""
    STORE_READ = "store_read"
    """A step body's read of the outside world's store (``step.world.read``), where the work
    reaches it: a solo point (only a fault is decided there)."""
    STORE_WRITE = "store_write"
    """A step body's write to the outside world's store (``step.world.write``), outside a
    transaction, where the work reaches it: a solo point."""
    EFFECT = "effect"
    """A step body's effect on the outside world (``step.world.effect``), where the work
    reaches it: a solo point."""
    COMMIT = "commit"
    """The commit of a step body's transaction (``with step.world.transaction():``), its
    writes landing together: a solo point."""
