"""The simulation kernel on its own: tiny hand-written actors on a ManualClock, no runtime.

What is pinned here: virtual time only moves forward and jumps straight to the next sleeper;
``settle`` resumes whoever is due until an actor waits at a choice point; ``ready`` names the
actors waiting at one, sorted, and ``take`` resumes the one its caller chose with what it was
sent; an actor parked at a blocking point is offered it on ``nudge()`` once something is due,
and when time reaches ``next_wake()``; ``settle(until=)``
never passes ``until``; ``close()`` closes every live actor; a yielded non-request raises
``TypeError`` naming the actor. The kernel decides nothing: the tests' ``World.run`` chooses as
a plain run does (the schedule, then a seeded ``random.Random``), as ``Execution`` does.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import pytest

from yieldstar_sim.core.clock import ManualClock
from yieldstar_sim.simulation.kernel import Kernel, Point, Wait
from yieldstar_sim.simulation.moves import Choice, ScheduleMismatch

Actor = Generator[Wait | Point, Any, None]


@dataclass
class World:
    """A kernel, its clock, a log of what the actors did, as (time, actor, what), and the
    choices a run made (the schedule, then the seeded random generator)."""

    clock: ManualClock
    kernel: Kernel
    rng: random.Random
    schedule_left: list[str] = field(default_factory=list)
    log: list[tuple[float, str, str]] = field(default_factory=list)
    choices: list[Choice] = field(default_factory=list)
    sent: Callable[[int, str, Point], Any] = lambda index, name, point: None

    def note(self, actor: str, what: str) -> None:
        self.log.append((self.clock.now(), actor, what))

    @property
    def schedule(self) -> list[str]:
        return [choice.actor for choice in self.choices]

    def step(self, *, until: float | None = None) -> bool:
        """Take one choice point, as a plain run chooses; False when nothing is left."""
        kernel = self.kernel
        if not kernel.settle(until=until):
            return False
        ready = kernel.ready()
        if self.schedule_left:
            name = self.schedule_left.pop(0)
            if name not in ready:
                raise ScheduleMismatch(
                    f"choice point {kernel.points}: the schedule says {name!r}, but the actors "
                    f"waiting are {ready}"
                )
        else:
            name = ready[0] if len(ready) == 1 else self.rng.choice(ready)
        index = kernel.points
        self.choices.append(Choice(index, name, tuple(ready)))
        kernel.take(name, self.sent(index, name, kernel.point(name)))
        return True

    def run(self, *, until: float | None = None, max_points: int | None = None) -> None:
        while max_points is None or self.kernel.points < max_points:
            if not self.step(until=until):
                return


def world(
    seed: int = 0,
    *,
    schedule: tuple[str, ...] | list[str] = (),
    next_wake: Callable[[], float | None] | None = None,
) -> World:
    clock = ManualClock()
    kernel = Kernel(clock, next_wake=next_wake if next_wake is not None else (lambda: None))
    return World(clock, kernel, random.Random(seed), list(schedule))


def pointer(w: World, name: str, points: int, *, every: float = 0.0) -> Actor:
    """Pass ``points`` choice points, sleeping ``every`` seconds before each one after the first."""
    for number in range(points):
        if number and every:
            yield Wait(w.clock.now() + every)
        yield Point(f"{name}#{number}")
        w.note(name, f"went #{number}")


def order_of(w: World) -> list[str]:
    return [f"{actor} {what}" for _, actor, what in w.log]


# --------------------------------------------------------------------------- virtual time


def test_time_jumps_straight_to_the_next_sleeper() -> None:
    w = world()

    def sleeper(name: str, until: float) -> Actor:
        yield Wait(until)
        w.note(name, "woke")
        yield Point(name)
        w.note(name, "went")

    w.kernel.spawn("late", sleeper("late", 10.0))
    w.kernel.spawn("early", sleeper("early", 3.0))
    w.run()

    assert w.log == [
        (3.0, "early", "woke"),
        (3.0, "early", "went"),
        (10.0, "late", "woke"),
        (10.0, "late", "went"),
    ]
    assert w.clock.now() == 10.0
    assert w.kernel.points == 2


def test_time_only_moves_forward_and_a_wait_in_the_past_resumes_now() -> None:
    w = world()

    def actor(name: str, waits: list[float]) -> Actor:
        for until in waits:
            yield Wait(until)
            w.note(name, f"asked {until:g}")
            yield Point(name)

    # ``b`` asks for times already passed: it is resumed at once, never back in time.
    w.kernel.spawn("a", actor("a", [5.0, 7.0, 20.0]))
    w.kernel.spawn("b", actor("b", [6.0, 1.0, 0.0, 6.5]))
    w.kernel.spawn("c", actor("c", [2.0, 2.0, 30.0]), at=1.5)
    seen: list[float] = []

    def sent(index: int, name: str, point: Point) -> None:
        seen.append(w.clock.now())

    w.sent = sent
    w.run()

    times = [t for t, _, _ in w.log]
    assert times == sorted(times)
    assert seen == sorted(seen)
    assert [t for t, actor, _ in w.log if actor == "b"] == [6.0, 6.0, 6.0, 6.5]
    assert w.clock.now() == 30.0


def test_spawn_at_a_later_time_starts_the_actor_then() -> None:
    w = world()

    def actor(name: str) -> Actor:
        w.note(name, "started")
        yield Point(name)

    w.kernel.spawn("now", actor("now"))
    w.kernel.spawn("later", actor("later"), at=42.0)
    w.run()
    assert [(t, a) for t, a, _ in w.log] == [(0.0, "now"), (42.0, "later")]


def test_a_spawned_name_must_be_new() -> None:
    w = world()
    w.kernel.spawn("a", pointer(w, "a", 1))
    with pytest.raises(ValueError, match="an actor named 'a' exists already"):
        w.kernel.spawn("a", pointer(w, "a", 1))


def test_step_returns_false_once_every_actor_has_ended() -> None:
    w = world()
    w.kernel.spawn("a", pointer(w, "a", 2))
    assert w.step()
    assert w.step()
    assert not w.step()
    assert not w.step()
    assert w.kernel.points == 2


# --------------------------------------------------------------------------- ties and choices


def test_ties_at_one_instant_are_recorded_with_every_candidate() -> None:
    w = world(seed=3)
    for name in ("c", "a", "b"):
        w.kernel.spawn(name, pointer(w, name, 2))
    w.run()

    assert w.kernel.points == 6
    assert [choice.index for choice in w.choices] == list(range(6))
    first = w.choices[0]
    assert first.among == ("a", "b", "c")  # sorted, whatever the spawn order
    for choice in w.choices:
        assert choice.actor in choice.among
        assert list(choice.among) == sorted(choice.among)
    assert w.schedule == [choice.actor for choice in w.choices]
    assert [f"{a} {what}" for _, a, what in w.log] == [
        f"{choice.actor} went #{w.schedule[: choice.index].count(choice.actor)}"
        for choice in w.choices
    ]


def test_a_lone_actor_at_a_point_goes_without_consulting_the_rng() -> None:
    class NoRandom(random.Random):
        def choice(self, seq: Any) -> Any:
            raise AssertionError("the rng was asked with a single candidate")

    w = world()
    w.rng = NoRandom(0)
    w.kernel.spawn("solo", pointer(w, "solo", 3, every=1.0))
    w.run()
    assert w.choices == [
        Choice(0, "solo", ("solo",)),
        Choice(1, "solo", ("solo",)),
        Choice(2, "solo", ("solo",)),
    ]


def test_the_schedule_breaks_ties_before_the_rng() -> None:
    schedule = ["b", "b", "a", "c", "a", "c"]
    for seed in range(20):
        w = world(seed, schedule=schedule)
        for name in ("a", "b", "c"):
            w.kernel.spawn(name, pointer(w, name, 2))
        w.run()
        assert w.schedule == schedule, f"seed {seed}"
        assert order_of(w) == [
            "b went #0",
            "b went #1",
            "a went #0",
            "c went #0",
            "a went #1",
            "c went #1",
        ]


def test_the_rng_breaks_ties_once_the_schedule_is_used_up() -> None:
    prefix = ["c", "c"]
    for seed in range(20):
        w = world(seed, schedule=prefix)
        for name in ("a", "b", "c"):
            w.kernel.spawn(name, pointer(w, name, 2))
        w.run()
        assert w.schedule[:2] == prefix
        # With c done, a and b tie at every point: the seeded rng decides, as random.choice.
        rng = random.Random(seed)
        expected = []
        left = {"a": 2, "b": 2}
        while left:
            ready = sorted(left)
            name = ready[0] if len(ready) == 1 else rng.choice(ready)
            expected.append(name)
            left[name] -= 1
            if not left[name]:
                del left[name]
        assert w.schedule[2:] == expected, f"seed {seed}"


def run_busy(seed: int, schedule: list[str] | tuple[str, ...] = ()) -> World:
    """Three actors with points at shared instants and sleeps in between: many ties."""
    w = world(seed, schedule=schedule)
    w.kernel.spawn("a", pointer(w, "a", 6, every=1.0))
    w.kernel.spawn("b", pointer(w, "b", 4, every=2.0))
    w.kernel.spawn("c", pointer(w, "c", 8))
    w.run()
    return w


def test_replaying_the_recorded_schedule_reproduces_the_run_under_any_seed() -> None:
    for seed in range(30):
        original = run_busy(seed)
        for replay_seed in (seed, seed + 1000):
            replay = run_busy(replay_seed, original.schedule)
            assert replay.choices == original.choices
            assert replay.log == original.log
            assert replay.clock.now() == original.clock.now()


def test_same_seed_same_choices_over_100_seeds_and_seeds_differ() -> None:
    schedules = set()
    for seed in range(100):
        first = run_busy(seed)
        second = run_busy(seed)
        assert first.choices == second.choices, f"seed {seed}"
        assert first.log == second.log, f"seed {seed}"
        schedules.add(tuple(first.schedule))
    assert len(schedules) > 10, "different seeds should break ties differently"


# --------------------------------------------------------------------------- schedule mismatch


def test_a_schedule_naming_an_unknown_actor_raises_schedule_mismatch() -> None:
    w = world(schedule=["a", "ghost"])
    for name in ("a", "b"):
        w.kernel.spawn(name, pointer(w, name, 2))
    w.step()
    with pytest.raises(ScheduleMismatch) as raised:
        w.step()
    assert str(raised.value) == (
        "choice point 1: the schedule says 'ghost', but the actors waiting are ['a', 'b']"
    )
    assert w.kernel.points == 1


def test_a_schedule_naming_a_sleeping_actor_raises_schedule_mismatch() -> None:
    w = world(schedule=["late"])
    w.kernel.spawn("now", pointer(w, "now", 1))
    w.kernel.spawn("late", pointer(w, "late", 1), at=5.0)
    with pytest.raises(
        ScheduleMismatch, match=r"choice point 0: the schedule says 'late'.*\['now'\]"
    ):
        w.run()


def test_a_schedule_naming_a_finished_actor_raises_schedule_mismatch() -> None:
    w = world(schedule=["a", "a", "a"])
    w.kernel.spawn("a", pointer(w, "a", 2))
    w.kernel.spawn("b", pointer(w, "b", 2))
    with pytest.raises(ScheduleMismatch, match=r"choice point 2: the schedule says 'a'.*\['b'\]"):
        w.run()


# ------------------------------------------------------------------- parked, nudge, next_wake
# A worker's claim is a blocking point: offered only while the next wake is due, parked
# (its generator never resumed) until a nudge or the next wake comes.


class Wakes:
    """A runtime's next wake, as the tests set it: ``due`` makes it now, ``done`` none."""

    def __init__(self, w: World | None = None, at: float | None = None) -> None:
        self.w, self.at, self.asked = w, at, 0

    def __call__(self) -> float | None:
        self.asked += 1
        return self.at

    def due(self) -> None:
        assert self.w is not None
        self.at = self.w.clock.now()


def claimer(w: World, name: str, wakes: Wakes | None = None) -> Actor:
    """Claim once at a blocking point, and note it (the claim takes what was due)."""
    yield Point(f"{name} claim", blocking=True)
    w.note(name, "claimed")
    if wakes is not None:
        wakes.at = None  # it took what was due


def test_a_parked_claim_is_offered_on_a_nudge_once_something_is_due() -> None:
    wakes = Wakes()
    w = world(next_wake=wakes)
    wakes.w = w

    def nudger() -> Actor:
        yield Wait(5.0)
        yield Point("nudger")
        w.note("nudger", "nudges")
        wakes.due()
        w.kernel.nudge()

    w.kernel.spawn("waiter", claimer(w, "waiter", wakes))
    w.kernel.spawn("nudger", nudger())
    w.run()
    assert w.log == [(5.0, "nudger", "nudges"), (5.0, "waiter", "claimed")]


def test_a_parked_claim_stays_parked_without_nudge_or_wake_and_is_never_resumed() -> None:
    w = world()
    closed: list[str] = []

    def waiter() -> Actor:
        try:
            yield from claimer(w, "waiter")
        finally:
            closed.append("waiter")

    w.kernel.spawn("waiter", waiter())
    w.kernel.spawn("other", pointer(w, "other", 2, every=10.0))
    w.run()
    assert order_of(w) == ["other went #0", "other went #1"]
    assert not w.step()
    assert ("waiter", "parked") in w.kernel.waiting()
    assert closed == []
    w.kernel.close()
    assert closed == ["waiter"]


def test_a_nudge_with_nothing_due_parks_the_claim_again() -> None:
    w = world()

    def nudger() -> Actor:
        yield Point("nudger")
        w.kernel.nudge()  # nothing is due: the claim would find nothing

    w.kernel.spawn("waiter", claimer(w, "waiter"))
    w.kernel.spawn("nudger", nudger())
    w.run()
    assert w.schedule == ["nudger"]
    assert w.log == []


def test_a_parked_claim_is_offered_when_time_reaches_the_next_wake() -> None:
    wakes = Wakes(at=7.0)
    w = world(next_wake=wakes)

    def waiter() -> Actor:
        yield from claimer(w, "waiter", wakes)
        yield from claimer(w, "waiter again")  # never: nothing is due now

    w.kernel.spawn("waiter", waiter())
    w.run()
    assert w.log == [(7.0, "waiter", "claimed")]
    assert w.clock.now() == 7.0
    assert wakes.asked, "next_wake is consulted while an actor is parked"


def test_next_wake_is_not_consulted_while_nobody_is_parked() -> None:
    def next_wake() -> float | None:
        raise AssertionError("next_wake consulted with nobody parked")

    w = world(next_wake=next_wake)
    w.kernel.spawn("a", pointer(w, "a", 3, every=4.0))
    w.run()
    assert w.clock.now() == 8.0


def test_a_sleeper_due_before_the_next_wake_goes_first() -> None:
    wakes = Wakes(at=10.0)
    w = world(next_wake=wakes)
    w.kernel.spawn("waiter", claimer(w, "waiter", wakes))
    w.kernel.spawn("sleeper", pointer(w, "sleeper", 2, every=4.0))
    w.run()
    assert w.log == [
        (0.0, "sleeper", "went #0"),
        (4.0, "sleeper", "went #1"),
        (10.0, "waiter", "claimed"),
    ]


def test_a_next_wake_in_the_past_offers_the_claim_now() -> None:
    wakes = Wakes(at=1.0)
    w = world(next_wake=wakes)
    w.clock.set(5.0)
    w.kernel.spawn("waiter", claimer(w, "waiter", wakes))
    w.run()
    assert w.log == [(5.0, "waiter", "claimed")]


def test_a_nudge_offers_every_parked_claim_and_ties_are_chosen() -> None:
    wakes = Wakes()
    w = world(seed=1, next_wake=wakes)
    wakes.w = w

    def nudger() -> Actor:
        yield Wait(3.0)
        wakes.due()
        w.kernel.nudge()

    for name in ("x", "y", "z"):
        w.kernel.spawn(name, claimer(w, name))
    w.kernel.spawn("nudger", nudger())
    w.run(max_points=1)
    assert w.choices[0].among == ("x", "y", "z")
    assert w.log[0][0] == 3.0


# --------------------------------------------------------------------------- run limits, close


def test_run_until_stops_before_time_passes_until_and_can_go_on() -> None:
    w = world()
    w.kernel.spawn("a", pointer(w, "a", 6, every=10.0))
    w.run(until=35.0)
    assert [t for t, _, _ in w.log] == [0.0, 10.0, 20.0, 30.0]
    assert w.clock.now() <= 35.0
    w.run(until=40.0)  # a point exactly at ``until`` is passed
    assert [t for t, _, _ in w.log][-1] == 40.0
    w.run()
    assert [t for t, _, _ in w.log] == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]


def test_run_max_points_stops_after_that_many_points_in_all() -> None:
    w = world()
    w.kernel.spawn("a", pointer(w, "a", 10))
    w.kernel.spawn("b", pointer(w, "b", 10))
    w.run(max_points=4)
    assert w.kernel.points == 4
    assert len(w.log) == 4
    # The budget counts the kernel's points from the start, not per call of run.
    w.run(max_points=4)
    assert w.kernel.points == 4
    w.run(max_points=7)
    assert w.kernel.points == 7
    w.run()
    assert w.kernel.points == 20


def test_close_closes_every_live_actor() -> None:
    w = world()
    closed: list[str] = []

    def actor(name: str, points: int) -> Actor:
        try:
            for _ in range(points):
                yield Point(name)
        except GeneratorExit:
            closed.append(name)
            raise

    w.kernel.spawn("short", actor("short", 1))
    w.kernel.spawn("long", actor("long", 100))
    w.kernel.spawn("sleepy", actor("sleepy", 5), at=1000.0)  # never started
    w.run(max_points=5)
    w.kernel.close()
    assert closed == ["long"]  # short ended by itself; sleepy never ran, so nothing to close
    w.kernel.close()  # closing twice is harmless
    assert closed == ["long"]


# --------------------------------------------------------------------------- what is sent


def test_the_value_sent_at_a_point_reaches_the_actor_that_went() -> None:
    w = world()
    got: list[tuple[str, Any]] = []

    def actor(name: str) -> Actor:
        for number in range(3):
            value = yield Point(f"{name}.{number}", info={"n": number}, options=("x", "y"))
            got.append((name, value))

    w.kernel.spawn("a", actor("a"))
    w.kernel.spawn("b", actor("b"))
    w.sent = lambda index, name, point: (index, point.label, point.options)
    w.run()
    assert [value[0] for _, value in got] == list(range(6))
    assert [name for name, _ in got] == w.schedule
    assert all(value[2] == ("x", "y") for _, value in got)


def test_take_refuses_an_actor_that_waits_at_no_point() -> None:
    w = world()
    w.kernel.spawn("a", pointer(w, "a", 1))
    w.kernel.spawn("late", pointer(w, "late", 1), at=5.0)
    assert w.kernel.settle()
    with pytest.raises(KeyError, match=r"'late' waits at no choice point.*\['a'\]"):
        w.kernel.take("late", None)


def test_point_info_is_not_part_of_its_equality() -> None:
    assert Point("x", info=1) == Point("x", info=2)
    assert Point("x") != Point("y")


# --------------------------------------------------------------------------- bad actors


def test_a_yielded_non_request_raises_type_error_naming_the_actor() -> None:
    w = world()

    def confused() -> Generator[Any, Any, None]:
        yield Point("fine")
        yield 42

    w.kernel.spawn("confused", confused())
    with pytest.raises(TypeError, match=r"actor 'confused' yielded 42; actors yield Wait or Point"):
        w.run()


def test_a_non_request_yielded_first_is_refused_too() -> None:
    w = world()

    def confused() -> Generator[Any, Any, None]:
        yield "Wait(3)"

    w.kernel.spawn("w9", confused())
    with pytest.raises(TypeError, match=r"actor 'w9' yielded 'Wait\(3\)'"):
        w.step()


# --------------------------------------------------------------------------- regressions


def test_an_actor_nudged_at_an_instant_competes_at_that_instants_next_point() -> None:
    """An actor woken at the current instant competes at that instant's next choice point.

    ``waker`` passes a point, makes something due and nudges the parked ``sleeper``, and asks
    for more points at t=0;
    the sleeper is among the candidates of the waker's next point. (It once was not: the other
    worker could never claim a new ship-order before the starting worker recorded its step.)
    """
    wakes = Wakes()
    w = world(seed=0, next_wake=wakes)
    wakes.w = w

    def waker() -> Actor:
        yield Point("waker.0")
        wakes.due()
        w.kernel.nudge()
        yield Point("waker.1")
        yield Point("waker.2")

    def sleeper() -> Actor:
        yield from claimer(w, "sleeper")

    w.kernel.spawn("sleeper", sleeper())
    w.kernel.spawn("waker", waker())
    w.run()
    assert w.choices[1].among == ("sleeper", "waker")


def test_run_until_never_passes_a_point_after_until() -> None:
    """``run(until=...)`` never passes a point after ``until``, even when an actor resumed
    before ``until`` sleeps again past it without a point in between."""
    w = world()

    def actor() -> Actor:
        yield Wait(5.0)
        yield Wait(100.0)
        yield Point("late")
        w.note("actor", "went")

    w.kernel.spawn("actor", actor())
    w.run(until=50.0)
    assert w.kernel.points == 0
    assert w.clock.now() <= 50.0


def test_a_closed_kernel_has_nothing_left_to_do() -> None:
    """After ``close()``, ``step()`` says there is nothing left to do."""
    w = world()
    w.kernel.spawn("a", pointer(w, "a", 3))
    w.kernel.spawn("b", pointer(w, "b", 3))
    w.run(max_points=1)
    w.kernel.close()
    assert not w.step()


# --------------------------------------------------------------------------- solo points


def soloist(w: World, name: str, solos: int, *, at: float = 0.0) -> Actor:
    """Sleep until ``at``, pass an ordinary point, then ``solos`` solo points in a row, then
    one more ordinary point."""
    if at:
        yield Wait(at)
    yield Point(f"{name} call")
    w.note(name, "called")
    for number in range(solos):
        yield Point(f"{name} solo#{number}", solo=True)
        w.note(name, f"solo #{number}")
    yield Point(f"{name} after")
    w.note(name, "after")


def test_an_actor_at_a_solo_point_is_the_only_one_ready_and_keeps_its_turn() -> None:
    w = world(seed=1, schedule=["a"])
    w.kernel.spawn("a", soloist(w, "a", 3))
    w.kernel.spawn("b", pointer(w, "b", 3))
    w.step()  # a makes its call and waits at its first solo point
    for number in range(3):
        w.kernel.settle()
        assert w.kernel.ready() == ["a"], number
        w.step()
    assert order_of(w)[:4] == ["a called", "a solo #0", "a solo #1", "a solo #2"]
    w.kernel.settle()
    assert w.kernel.ready() == ["a", "b"]  # a at an ordinary point again: the choice is open


def test_solo_points_draw_no_random_number() -> None:
    # A plain run chooses among several actors with the seed's generator and goes alone
    # without it: solo points in between leave the seed's choices where they were.
    def run(solos: int) -> list[str]:
        w = world(seed=5)
        w.kernel.spawn("a", soloist(w, "a", solos))
        w.kernel.spawn("b", soloist(w, "b", solos))
        w.kernel.spawn("c", pointer(w, "c", 4))
        state = w.rng.getstate()
        w.run()
        assert w.rng.getstate() != state
        return [line for line in order_of(w) if "solo" not in line]

    assert run(0) == run(2) == run(5)


def test_actors_that_reach_solo_points_at_one_instant_may_go_in_either_order() -> None:
    """Which goes first is a choice; once one goes, it keeps its turn until it leaves its
    solo points."""
    orders = []
    for first in ("late", "early"):
        w = world()

        def waker(name: str, at: float, w: Any = w) -> Actor:
            yield Wait(at)  # woken with the other at one instant, straight to solo points
            for number in range(2):
                yield Point(f"{name} solo#{number}", solo=True)
                w.note(name, f"solo #{number}")

        w.kernel.spawn("late", waker("late", 3.0))
        w.kernel.spawn("early", waker("early", 3.0))
        w.kernel.settle()
        assert w.kernel.turns == ["late", "early"]  # resumed in the order they went to sleep
        assert w.kernel.ready() == ["late", "early"]  # either may go first
        assert w.kernel.holder is None
        w.kernel.take(first, None)
        w.kernel.settle()
        other = "early" if first == "late" else "late"
        assert w.kernel.holder == first
        assert w.kernel.ready() == [first]
        with pytest.raises(KeyError, match=f"'{other}' waits its turn: '{first}' goes first"):
            w.kernel.take(other, None)
        w.run()
        orders.append(order_of(w))
    assert orders == [
        ["late solo #0", "late solo #1", "early solo #0", "early solo #1"],
        ["early solo #0", "early solo #1", "late solo #0", "late solo #1"],
    ]


def test_the_solo_queue_is_part_of_the_kernels_snapshot() -> None:
    w = world()
    w.kernel.spawn("a", soloist(w, "a", 2))
    w.kernel.spawn("b", soloist(w, "b", 2))
    w.kernel.settle()
    w.kernel.take("b", None)
    w.kernel.settle()
    saved = w.kernel.snapshot()
    assert saved.turns == ("b",)
    w.kernel.take("b", None)
    w.kernel.settle()
    assert saved.holder is None
    assert w.kernel.snapshot().holder == "b"
    again = world()
    again.kernel.restore(saved, {"a": soloist(again, "a", 2), "b": soloist(again, "b", 2)})
    assert again.kernel.turns == ["b"]
    assert again.kernel.ready() == ["b"]
