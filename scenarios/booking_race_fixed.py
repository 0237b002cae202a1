"""The booking race repaired: each booking checks the seats left and books in one step.

The same two bookings for the last seat as booking-race, but the check and the write are one
step body: the seat service reads the count and takes the seat in one atomic call (as a
conditional write would). Whatever order the workers take their turns in, the second booking
sees no seat left and stops: ``yieldstar-sim explore booking-race-fixed --strategy exhaustive
--max-faults 0`` verifies every interleaving. A replayed step finds its booking among the
holders and books nothing twice.
"""

from __future__ import annotations

import yieldstar_sim as ys

SEATS = 1


def check_and_book(step, booking):
    """Read the seats left and take one in the same call: nothing can come in between."""
    holders = step.world.read("holders", [])
    if booking in holders:
        return "booked"  # a replay of this step: booked already
    seats_left = step.world.read("seats_left", SEATS)
    if seats_left < 1:
        return "sold out"
    step.world.write("seats_left", seats_left - 1)
    step.world.write("holders", [*holders, booking])
    return "booked"


@ys.workflow("book-seat")
def book_seat(step, params):
    booking = params["booking"]
    return (yield from step.run("book", lambda: check_and_book(step, booking)))


def no_oversell(run):
    """No more holders than seats: the world's store says who holds a seat."""
    holders = run.world.get("holders", [])
    if len(holders) > SEATS:
        return f"oversold: {len(holders)} holders {holders} for {SEATS} seat"
    return None


scenario = ys.Scenario(
    name="booking-race-fixed",
    workflows=[book_seat],
    triggers=[
        ys.Trigger("book-seat", {"booking": "booking-1"}, execution_id="booking-1"),
        ys.Trigger("book-seat", {"booking": "booking-2"}, execution_id="booking-2"),
    ],
    invariants=[no_oversell],
)
