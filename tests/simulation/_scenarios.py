"""Bundled scenarios grown to the sizes the search tests need: more orders, more bookings, more
starts of a story's first trigger, more workers."""

from __future__ import annotations

import dataclasses

import yieldstar_sim as ys


def orders(count: int, workers: int) -> ys.Scenario:
    """charge-order -> step.start ship-order, one trigger per order (the benchmarks' case)."""
    base = ys.load_scenario("durable-start")
    triggers = [
        ys.Trigger("charge-order", {"order": 40 + n}, execution_id=f"order-{40 + n}")
        for n in range(count)
    ]
    return dataclasses.replace(
        base, name=f"orders-{count}x{workers}", faults=[], workers=workers, triggers=triggers
    )


def bookings(count: int, workers: int) -> ys.Scenario:
    """The booking race (an interleaving-only oversell) with ``count`` bookings."""
    race = ys.load_scenario("booking-race")
    triggers = [
        ys.Trigger("book-seat", {"booking": f"booking-{n}"}, execution_id=f"booking-{n}")
        for n in range(1, count + 1)
    ]
    return dataclasses.replace(
        race, name=f"booking-race-{count}x{workers}", triggers=triggers, workers=workers
    )


def more_starts(base: str, starts: int, workers: int) -> ys.Scenario:
    """Bundled scenario ``base`` with ``workers`` workers and ``starts - 1`` more starts of its
    first trigger, with no fault of its own."""
    scenario = ys.load_scenario(base)
    first = scenario.triggers[0]
    more = [
        dataclasses.replace(first, execution_id=f"{first.execution_id}-{n}")
        for n in range(1, starts)
    ]
    return dataclasses.replace(
        scenario, name=f"{base}-{starts}x{workers}", faults=[], workers=workers,
        triggers=[*scenario.triggers, *more],
    )  # fmt: skip
