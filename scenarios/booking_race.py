"""Two bookings race for the last seat: each reads the seats left in one step and books in the next.

One seat is left. booking-1 and booking-2 each check the seats left in a step ("check"), then,
seeing one, book it in the next step ("book"): they write the seats left minus one and add
themselves to the holders. Between the two steps the other booking may check too: both see one
seat and both book it, and the flight is oversold. Which happens depends only on the order the
two workers take their turns, not on any fault: ``yieldstar-sim explore booking-race --strategy
exhaustive --max-faults 0`` finds the oversell among every interleaving; a seeded run or a
fault search of one interleaving may never see it. booking-race-fixed is the repair.
"""

from __future__ import annotations

import yieldstar_sim as ys

SEATS = 1


def book(step, booking, seats_left):
    """Take a seat, trusting the count read in an earlier step (it may be stale by now)."""
    holders = step.world.read("holders", [])
    if booking in holders:
        return True  # a replay of this step: booked already
    step.world.write("seats_left", seats_left - 1)
    step.world.write("holders", [*holders, booking])
    return True


@ys.workflow("book-seat")
def book_seat(step, params):
    booking = params["booking"]
    seats_left = yield from step.run("check", lambda: step.world.read("seats_left", SEATS))
    if seats_left < 1:
        return "sold out"
    yield from step.run("book", lambda: book(step, booking, seats_left))
    return "booked"


def no_oversell(run):
    """No more holders than seats: the world's store says who holds a seat."""
    holders = run.world.get("holders", [])
    if len(holders) > SEATS:
        return f"oversold: {len(holders)} holders {holders} for {SEATS} seat"
    return None


scenario = ys.Scenario(
    name="booking-race",
    workflows=[book_seat],
    triggers=[
        ys.Trigger("book-seat", {"booking": "booking-1"}, execution_id="booking-1"),
        ys.Trigger("book-seat", {"booking": "booking-2"}, execution_id="booking-2"),
    ],
    invariants=[no_oversell],
)
