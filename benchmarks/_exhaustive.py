"""The exhaustive strategy's figures for ``bench_explorer.py --only exhaustive``.

* distinct states and schedules run, with the reduction (sleep sets and state caching) and
  without it (the naive search), for the booking race (2 and 3 bookings), its fix,
  concurrent-starts, frozen-worker and durable-start at ``max_faults`` 0, 1 (and 2 in the full
  run); the naive search is given a time budget and, when it cuts it, its count is a lower
  bound. Both run with ``stop_at_first=False``: the violations they find must be the same.
* cost per schedule: the exhaustive search's seconds per run (schedules run and runs cut at a
  cached or sleeping state) against one plain run of the scenario.
* time to the first violation in the 3-booking race: exhaustive against random and PCT.
"""

from __future__ import annotations

import dataclasses

from _explorer_kit import explore, timed_simulate
from _harness import median

import yieldstar_sim as ys

#: The target the issue sets for the 3-booking race: the reduction runs 10x fewer schedules.
MIN_REDUCTION = 10.0


def bookings(count: int) -> ys.Scenario:
    """The booking race with ``count`` bookings (and as many workers) for one seat."""
    race = ys.load_scenario("booking-race")
    triggers = [
        ys.Trigger("book-seat", {"booking": f"booking-{n}"}, execution_id=f"booking-{n}")
        for n in range(1, count + 1)
    ]
    return dataclasses.replace(race, name=f"booking-race-{count}", triggers=triggers, workers=count)


def plain_run_seconds(scenario: ys.Scenario, reps: int = 11) -> float:
    runs = (timed_simulate(scenario, seed=0, runtime="memory", scenario_faults=False)[0]
            for _ in range(reps))  # fmt: skip
    return median(runs)


def run_exhaustive(quick: bool, smoke: bool = False) -> int:
    """Print the table of figures; returns 0. Smoke: every case, the naive search cut at a
    tenth of a second, one plain run each."""
    cases: list[tuple[ys.Scenario, int]] = [
        (bookings(2), 0), (bookings(3), 0), (ys.load_scenario("booking-race-fixed"), 0),
        (ys.load_scenario("booking-race-fixed"), 1), (ys.load_scenario("concurrent-starts"), 0),
        (ys.load_scenario("frozen-worker"), 0), (ys.load_scenario("durable-start"), 0),
        (ys.load_scenario("durable-start"), 1),
    ]  # fmt: skip
    if not quick:
        cases += [(bookings(3), 1), (ys.load_scenario("durable-start"), 2)]
    naive_seconds = 0.1 if smoke else 10.0 if quick else 120.0
    plain_reps = 1 if smoke else 11
    print("Exhaustive search: reduced (sleep sets + state caching) against naive")
    print(
        f"  {'scenario':<22} {'k':>2} {'states':>7} {'reduced':>8} {'cut runs':>8} "
        f"{'naive':>9} {'ratio':>7} {'estimate':>9} {'s/run':>7} {'x plain':>7}  same"
    )
    ratios: dict[str, float] = {}
    for scenario, k in cases:
        kinds = {"kinds": ["crash", "freeze"]} if k else {}
        reduced_s, reduced = explore(
            scenario, strategy="exhaustive", max_faults=k, stop_at_first=False, **kinds
        )
        _, naive = explore(
            scenario, strategy="exhaustive", max_faults=k, stop_at_first=False,
            reduction=False, time_budget=naive_seconds, **kinds,
        )  # fmt: skip
        lower = "" if naive.exhausted else ">="
        ratio = naive.schedules_run / max(reduced.schedules_run, 1)
        cut_runs = reduced.pruned_by_cache
        runs = reduced.schedules_run + cut_runs
        per_run = reduced_s / max(runs, 1)
        plain = plain_run_seconds(scenario, plain_reps)
        mine = {v.invariant for v in reduced.violations}
        theirs = {v.invariant for v in naive.violations}
        # A naive search its time budget cut may not have reached the violation yet.
        same = (
            "yes" if mine == theirs else "cut" if not naive.exhausted and theirs <= mine else "NO"
        )
        naive_count = lower + format(naive.schedules_run, ",")
        print(
            f"  {scenario.name:<22} {k:>2} {reduced.distinct_states:>7,} "
            f"{reduced.schedules_run:>8,} {cut_runs:>8,} {naive_count:>9} "
            f"{lower + format(ratio, '.1f') + 'x':>7} {reduced.naive_schedules or 0:>9,} "
            f"{per_run * 1000:>6.1f}m {per_run / plain:>6.2f}x  {same}"
        )
        ratios[f"{scenario.name}/{k}"] = ratio
    print(
        "  k: max_faults (crash and freeze at k >= 1); states: distinct states; reduced, naive: "
        "schedules run to the end;\n  cut runs: runs cut at a state explored already; estimate: "
        "the reduced search's estimate of the naive count;\n  s/run: seconds per run "
        "(milliseconds), x plain: against one plain ys.simulate run; same: the same invariants "
        "violated (cut: the naive search was cut before it)"
    )
    print("\nTime to the first violation, booking race with 3 bookings")
    race = bookings(3)
    for strategy, options in (
        ("exhaustive", {"max_faults": 0}),
        ("random", {"max_faults": 0, "budget": 2000}),
        ("pct", {"max_faults": 0, "budget": 2000}),
    ):
        seconds, report = explore(race, strategy=strategy, **options)
        found = "found" if report.violations else "not found"
        print(
            f"  {strategy:<10} {found} after {report.schedules_run:,} schedules, "
            f"{seconds * 1000:.0f} ms (with shrinking)"
        )
    three = ratios.get("booking-race-3/0", 0.0)
    verdict = "PASS" if three >= MIN_REDUCTION else "MISS"
    print(
        f"\n  [{verdict}] reduction on the 3-booking race at 0 faults: {three:.1f}x fewer "
        f"schedules run (target >= {MIN_REDUCTION:g}x)"
    )
    return 0
