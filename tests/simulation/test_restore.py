"""A run restored to a state saved at any choice point goes on exactly as the run did: the same
trace, byte for byte, the same effects, records, store and choices. This is what lets the
searches restore states instead of replaying the path to each (``saving.py``), so every
bundled scenario is checked at every one of its choice points, with its own faults and with
each explored fault kind added at a point of its story; and a runtime that saves less than it
keeps is caught (``RestoreMismatch``), never counted."""

from __future__ import annotations

import contextlib
import random
from typing import Any

import pytest
from _keys import search_summary

import yieldstar_sim as ys
from yieldstar_sim.runtime.memory import MemoryRuntime
from yieldstar_sim.simulation import workers
from yieldstar_sim.simulation.execution import Execution, SavedExecution
from yieldstar_sim.simulation.faults import FAULT_KINDS, Fault, applies_at, explored_seconds
from yieldstar_sim.simulation.moves import Move
from yieldstar_sim.simulation.restore_check import RestoreMismatch, check_restore
from yieldstar_sim.simulation.saving import RestoreDiverged, can_snapshot
from yieldstar_sim.simulation.scenario_files import bundled_scenarios

SCENARIOS = sorted(bundled_scenarios())


def _outcome(execution: Execution) -> dict[str, Any]:
    state = execution.state
    return {
        "trace": state.trace.to_jsonl(),
        "effects": list(state.ledger.effects),
        "records": state.runtime.executions(),
        "requests": state.runtime.start_requests(),
        "store": dict(state.store.canonical),
        "choices": execution.choices,
        "applied": execution.applied,
        "admissions": list(state.admissions),
        "stopped": execution.stopped,
        "key": execution.key(),
    }


def _check_every_point(
    scenario: ys.Scenario, faults: tuple[Fault, ...] = ()
) -> tuple[int, int, int]:
    """Save at every point of a run that takes a random move at each (seeded), then restore
    each save and take the rest of the run's moves again: it must end as the run did. The
    points, the faults that fired and the actors made again."""
    execution = Execution(scenario, runtime="memory", faults=faults, saving=True)
    if not execution.can_restore:
        execution.close()
        pytest.skip(f"{scenario.name} runs on a runtime that cannot save its records")
    rng = random.Random(7)
    saved: dict[int, SavedExecution] = {}
    schedule: list[Move] = []
    while not execution.done():
        saved[execution.points] = execution.save()
        move = execution.planned(rng.choice(execution.moves()))
        schedule.append(move)
        execution.take(move)
    expected = _outcome(execution)
    # Deepest first, then the rest: each restore starts from wherever the last run ended.
    order = sorted(saved, reverse=True)
    order = order[::2] + order[1::2]
    for index in order:
        execution.restore(saved[index])
        for move in schedule[index:]:
            execution.take(move)
        got = _outcome(execution)
        for part, value in expected.items():
            assert got[part] == value, f"{scenario.name}: restored at point {index}, {part} differs"
    journal = execution.state.journal
    assert journal is not None
    execution.close()
    return len(order), len(expected["applied"]), journal.rebuilt


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_run_restored_at_any_choice_point_goes_on_as_it_went(name: str) -> None:
    points, _, made = _check_every_point(ys.load_scenario(name))
    assert points > 0
    assert made > 0


def _faults_along(scenario: ys.Scenario) -> list[Fault]:
    """One fault of each explored kind, each at the first point of the story where it can
    fire after its middle (so that it strikes inside a delivery)."""
    run = ys.simulate(scenario, runtime="memory")
    run.runtime.close()
    points = [(choice.index, choice.actor) for choice in run.choices]
    labels = {event.point: event for event in run.trace if event.point is not None}
    faults = []
    for kind in FAULT_KINDS:
        for index, _ in points[len(points) // 3 :]:
            event = labels.get(index)
            if (
                event is not None
                and event.op is not None
                and applies_at(kind, event.op, exploring=True)
            ):
                faults.append(Fault(kind, at=index, seconds=explored_seconds(kind, 40.0)))
                break
    return faults


FAULTED = [
    "durable-start", "booking-race", "zombie-attempt", "concurrent-clients",
    "timed-out-attempt", "effect-in-workflow-code", "cancel-owner", "heartbeat-zombie",
    "heartbeat-zombie-fixed",
]  # fmt: skip
# Not the draw and fan-out stories: a fault placed by index along seed 0's run lands elsewhere
# under the random moves taken (their draws and completion orders are moves too). Both are
# restored at every point above, and searched restoring and replaying below.


@pytest.mark.parametrize("name", FAULTED)
def test_a_faulted_run_restored_at_any_choice_point_goes_on_as_it_went(name: str) -> None:
    base = ys.load_scenario(name)
    faults = _faults_along(base)
    assert faults
    for fault in faults:
        _, fired, _ = _check_every_point(base, (fault,))
        assert fired > len(base.faults) or fired > 0, f"{fault} never fired"


def test_an_actor_that_reads_outside_the_simulation_is_not_made_again_silently() -> None:
    # An answer that is logged is told again; a generator that asks the shared state for
    # more than it was told is stopped with RestoreDiverged, never left half made.
    from yieldstar_sim.core.clock import ManualClock
    from yieldstar_sim.simulation.kernel import Kernel, Point
    from yieldstar_sim.simulation.saving import Journal

    clock = ManualClock()
    kernel = Kernel(clock)
    journal = Journal(kernel, clock)
    outside = iter(range(100))

    def reads_outside() -> Any:
        while True:
            if next(outside) % 2:
                journal.ask(lambda: 1)
            yield Point("p")

    journal.spawn("a", reads_outside(), reads_outside)
    for _ in range(4):
        assert kernel.settle()
        kernel.take("a", None)
    log = journal.logs["a"]
    with pytest.raises(RestoreDiverged):
        journal.feed("a", log.factory(), list(log.entries))


def _search(report: ys.ExplorationReport) -> tuple[object, ...]:
    graph = report.state_graph()
    return (*search_summary(report), sorted(graph.nodes), sorted(graph.edges))


class Unsnapshotted:
    """A runtime of your own that does not say it can snapshot itself: the memory runtime
    behind a door that shows everything but ``snapshot`` and ``restore``."""

    def __init__(self, clock: Any, **options: Any) -> None:
        self._inner = MemoryRuntime(clock=clock, **options)

    def __getattr__(self, name: str) -> Any:
        if name in ("snapshot", "restore", "rows_view", "row_writes"):
            raise AttributeError(name)
        return getattr(self._inner, name)


@pytest.mark.parametrize(
    ("name", "max_faults"),
    [(name, 0) for name in SCENARIOS]
    + [
        (name, 1)
        for name in (
            "booking-race", "booking-race-fixed", "durable-start", "trigger-in-step",
            "cancel-owner", "concurrent-starts", "skewed-lease", "zombie-attempt",
            "zombie-attempt-fixed", "timed-out-attempt", "fan-out-order", "fan-out-order-fixed",
            "concurrent-clients", "effect-in-workflow-code", "orphan-after-cancel",
            "heartbeat-zombie", "heartbeat-zombie-fixed", "random-replica",
            "random-replica-fixed",
        )
    ],
)  # fmt: skip
def test_the_search_that_restores_states_finds_what_replaying_finds(
    name: str, max_faults: int
) -> None:
    scenario = ys.load_scenario(name)
    if scenario.runtime is not None:
        pytest.skip(f"{name} runs on a runtime of its own")
    # Without partial-order reduction, which a runtime of one's own (this wrapper) never gets.
    options: dict[str, Any] = {
        "strategy": ys.Exhaustive(reduction=False), "confirm": None, "max_faults": max_faults,
        "stop_at_first": False, "budget": 300,
    }  # fmt: skip
    restoring = ys.explore(scenario, runtime="memory", **options)
    replaying = ys.explore(scenario, runtime=Unsnapshotted, **options)
    assert _search(restoring) == _search(replaying)
    assert restoring.exhaustive is not None
    assert replaying.exhaustive is not None
    assert restoring.exhaustive.progress["replayed_moves"] == 0
    assert replaying.exhaustive.progress["restores"] == restoring.exhaustive.progress["restores"]
    if max_faults:  # with no fault, some trees branch only at their root: nothing to replay
        assert replaying.exhaustive.progress["replayed_moves"] > 0


def test_a_search_on_a_runtime_that_cannot_save_its_records_replays_its_paths() -> None:
    report = ys.explore(
        ys.load_scenario("durable-start"), strategy="exhaustive", max_faults=0, confirm=None,
        runtime="duckdb",
    )  # fmt: skip
    assert report.exhausted
    assert report.exhaustive is not None
    assert report.exhaustive.progress["replayed_moves"] > 0
    assert not can_snapshot(Unsnapshotted(clock=None))


class CountingClaims:
    """A runtime of its own with state of its own: it counts the claims it answered, and
    refuses every claim after its third (an engine that archives busy queues). Its
    ``snapshot`` and ``restore`` forward to the memory runtime it wraps and leave the count
    out: the natural mistake."""

    def __init__(self, clock: Any) -> None:
        self._inner = MemoryRuntime(clock=clock)
        self.claims = 0

    def claim(self, worker: str, *, lease_seconds: float) -> Any:
        self.claims += 1
        return None if self.claims > 3 else self._inner.claim(worker, lease_seconds=lease_seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_an_adapter_that_saves_less_than_it_keeps_stops_the_search_naming_it() -> None:
    scenario = ys.load_scenario("durable-start")
    assert can_snapshot(CountingClaims(clock=None))
    wrong = r"the runtime adapter CountingClaims put back a state that went on"
    with pytest.raises(RestoreMismatch, match=wrong):
        ys.explore(
            scenario, strategy="exhaustive", max_faults=0, confirm=None, runtime=CountingClaims,
            stop_at_first=False,
        )  # fmt: skip
    # Run as it says (replayed, never restored), it is searched to the end.
    report = ys.explore(
        scenario, strategy="exhaustive", max_faults=0, confirm=None,
        runtime=_replayed,
        stop_at_first=False,
    )  # fmt: skip
    assert report.exhaustive is not None
    assert report.exhaustive.progress["replayed_moves"] > 0


def _replayed(clock: Any) -> Any:
    made = Unsnapshotted.__new__(Unsnapshotted)
    made._inner = CountingClaims(clock)
    return made


def _long_delivery(steps: int) -> ys.Scenario:
    """One delivery of many steps of every kind a delivery replays: runs, a start, delays (one
    that waits), a step retried after a failure, a failure the code catches, a group."""

    def flaky(world: Any) -> str:
        if world.attempt == 1:
            raise ConnectionError("busy")
        return "ok"

    def refuses() -> None:
        raise ValueError("no")

    retried = ys.define_step("retried", flaky, lambda s: s.retry(2).backoff(1, 2, 10))

    @ys.workflow("long")
    def long(step: ys.StepRunner, params: Any) -> Any:
        total = 0
        for i in range(steps):
            total += yield from step.run(f"s{i}", lambda i=i: i)
        yield from step.start("child", "child", {"n": total})
        yield from step.delay("now", 0)
        for i in range(steps):
            total += yield from step.run(f"t{i}", lambda i=i: i)
        yield from step.run("retried", retried, step.world)
        try:
            yield from step.run("refused", refuses)
        except ys.StepError:
            total += 1
        for i in range(steps):
            total += yield from step.run(f"u{i}", lambda i=i: i)
        yield from step.delay("later", 5)
        pair = yield from step.all([step.run("a", lambda: 1), step.run("b", lambda: 2)])
        for i in range(steps):
            total += yield from step.run(f"v{i}", lambda i=i: i)
        return [total, *pair]

    @ys.workflow("child")
    def child(step: ys.StepRunner, params: Any) -> Any:
        return (yield from step.run("work", lambda: params["n"]))

    trigger = ys.Trigger("long", {}, execution_id="long-1")
    return ys.Scenario(name="long-delivery", workflows=[long, child], triggers=[trigger],
                       workers=2)  # fmt: skip


def test_a_long_delivery_restored_anywhere_goes_on_as_it_went_from_a_short_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A worker made again used to replay its whole delivery call by call (a chain of 300
    # steps cost as much to make again as to run); it is made again from its last step that
    # a new delivery would replay quietly, so its log stays short while steps are plain.
    scenario = _long_delivery(8)
    points, _, made = _check_every_point(scenario)
    assert points > 40  # no empty claims among them
    assert made > 0
    chain = _chain(40)
    made_again_from_its_step = _longest_log(chain)
    monkeypatch.setattr(workers._Midway, "step_ended", lambda self, request: None)
    made_again_from_its_start = _longest_log(chain)
    assert made_again_from_its_start > 100  # every step's body and call since the claim
    assert made_again_from_its_step < 10


def _chain(steps: int) -> ys.Scenario:
    @ys.workflow("chain")
    def chain(step: ys.StepRunner, params: Any) -> Any:
        total = 0
        for i in range(steps):
            total += yield from step.run(f"s{i}", lambda i=i: i)
        return total

    trigger = ys.Trigger("chain", {}, execution_id="chain-1")
    return ys.Scenario(name="chain", workflows=[chain], triggers=[trigger], workers=2)


def _longest_log(scenario: ys.Scenario) -> int:
    execution = Execution(scenario, runtime="memory", saving=True)
    journal = execution.state.journal
    assert journal is not None
    longest = 0
    while not execution.done():
        execution.take(execution.default_move())
        longest = max(longest, *(len(log.entries) for log in journal.logs.values()))
    execution.close()
    return longest


def test_a_long_delivery_faulted_anywhere_and_restored_goes_on_as_it_went() -> None:
    base = _long_delivery(4)
    for fault in _faults_along(base):
        _check_every_point(base, (fault,))


@pytest.mark.parametrize("name", ["durable-start", "zombie-attempt", "fan-out-order"])
def test_a_run_gone_on_unrecorded_is_restored_as_it_went(name: str) -> None:
    # Unrecorded, an actor that moves is driven by the kernel without the journal's frame
    # (its log no longer says where it stands): the restore that ends the run makes it again.
    execution = Execution(ys.load_scenario(name), runtime="memory", saving=True)
    saved: dict[int, SavedExecution] = {}
    schedule: list[Move] = []
    while not execution.done():
        saved[execution.points] = execution.save()
        schedule.append(execution.default_move())
        execution.take(schedule[-1])
    expected = _outcome(execution)
    journal = execution.state.journal
    assert journal is not None
    for index in sorted(saved)[:: max(1, len(saved) // 6)]:
        execution.restore(saved[index])
        with execution.unrecorded():
            for move in schedule[index:]:
                execution.take(move)
            driven = execution.kernel.generators()
            assert journal.moved, f"{name}: nothing moved past point {index}"
            assert not [
                actor for actor in journal.moved
                if getattr(driven.get(actor), "__name__", None) == "_recorded"
            ]  # fmt: skip
        assert _outcome(execution) == expected, f"{name}: unrecorded from point {index}"
        execution.restore(saved[index])
        for move in schedule[index:]:
            execution.take(move)
        assert _outcome(execution) == expected, f"{name}: restored after point {index}"
    execution.close()


class _Event:
    def __init__(self, facts: tuple[Any, ...]) -> None:
        self._facts = facts

    def facts(self) -> tuple[Any, ...]:
        return self._facts


class _Trace:
    def __init__(self) -> None:
        self.events: list[_Event] = []


class StandInRun:
    """A run of three moves whose body events say which way ``coin`` fell, on ``runtime``
    (what ``check_restore`` reads of a run)."""

    trace: Any
    runtime: Any

    def __init__(self, runtime: Any, coin: Any) -> None:
        self.trace, self.runtime, self.coin = _Trace(), runtime, coin

    def take(self, move: Move) -> None:
        self.trace.events.append(_Event((0.0, "body", "w1", "run", "f-0", self.coin())))

    def moves(self) -> list[Move]:
        return [Move("w1")]

    def done(self) -> bool:
        return len(self.trace.events) >= 3

    def unrecorded(self) -> Any:
        return contextlib.nullcontext()

    def close(self) -> None:
        pass


def test_a_restore_that_differs_from_replays_that_differ_blames_no_one() -> None:
    # The scenario is not deterministic: the search goes on, and its confirmation says so.
    coins = iter(["b", "c"] * 20)
    check_restore(
        StandInRun(MemoryRuntime(), lambda: "b"), None, lambda: None,
        lambda: StandInRun(MemoryRuntime(), lambda: next(coins)),
    )  # fmt: skip


def test_a_memory_runtime_restore_that_differs_from_agreeing_replays_is_the_scenarios_doing() -> (
    None
):
    # The memory runtime puts back all it keeps: replays that agreed by chance do not make it
    # the one to blame.
    with pytest.raises(ys.ScenarioError, match=r"the scenario is not deterministic: a state put"):
        check_restore(
            StandInRun(MemoryRuntime(), lambda: "b"), None, lambda: None,
            lambda: StandInRun(MemoryRuntime(), lambda: "c"),
        )  # fmt: skip


def test_an_adapters_restore_that_differs_from_agreeing_replays_names_the_adapter() -> None:
    class OwnRuntime(MemoryRuntime):
        pass

    wrong = r"the runtime adapter OwnRuntime put back a state that went on differently from 4 "
    with pytest.raises(RestoreMismatch, match=wrong):
        check_restore(
            StandInRun(OwnRuntime(), lambda: "b"), None, lambda: None,
            lambda: StandInRun(OwnRuntime(), lambda: "c"),
        )  # fmt: skip
