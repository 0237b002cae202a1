"""Small-domain draws as choice points (issue 35, item 4): ``step.world.choice`` and ``coin``
are decided at one choice point among their options, which the exhaustive search tries each of
and the other strategies vary across schedules; a body that draws runs again once its draw is
decided, and what its first run did is taken back."""

from __future__ import annotations

from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.cli_explore import report_json
from yieldstar_sim.core.ops import Op
from yieldstar_sim.simulation import SimulationRun
from yieldstar_sim.simulation.faults import applies_at
from yieldstar_sim.simulation.trace_payloads import DrawData, TraceKind


def one_step(body: Any, **options: Any) -> ys.Scenario:
    """One execution ``d-1`` whose step ``pick`` runs ``body(step)``."""

    @ys.workflow("pick")
    def workflow(step: ys.StepRunner, params: Any) -> Any:
        return (yield from step.run("pick", body, step))

    options.setdefault("workers", 1)
    return ys.Scenario(
        name="drawing", workflows=[workflow],
        triggers=[ys.Trigger("pick", {}, execution_id="d-1")], **options,
    )  # fmt: skip


def run(scenario: ys.Scenario, seed: int = 0, **options: Any) -> SimulationRun:
    return ys.simulate(scenario, seed=seed, runtime="memory", **options)


def draws(result: SimulationRun) -> list[Any]:
    return [event for event in result.trace if event.kind == TraceKind.DRAW]


def result_of(result: SimulationRun) -> Any:
    (record,) = result.executions
    return record.result


def exhaustive(scenario: ys.Scenario, **options: Any) -> Any:
    options.setdefault("confirm", None)
    options.setdefault("stop_at_first", False)
    options.setdefault("max_faults", 0)
    return ys.explore(scenario, strategy="exhaustive", **options)


def test_a_draw_is_one_choice_point_among_its_options() -> None:
    result = run(one_step(lambda step: step.world.choice(["east", "west", "north"])))
    assert result.ok, result.explain()
    (drawn,) = draws(result)
    assert isinstance(drawn.data, DrawData)
    assert drawn.op == Op.DRAW
    assert drawn.data == DrawData(drawn.data.index, 3, drawn.data.value, 1)
    assert result_of(result) == ["east", "west", "north"][drawn.data.index]
    # One point decides it: the worker's, whose move names the option drawn.
    (at_draw,) = [move for move in result.schedule if move.choice is not None]
    assert at_draw.choice == drawn.data.index
    assert at_draw.actor == drawn.worker


def test_the_exhaustive_search_tries_every_option() -> None:
    seen: list[Any] = []

    def last_option(run: Any) -> str | None:
        (record,) = run.executions
        seen.append(record.result)
        return "drew north" if record.result == "north" else None

    scenario = one_step(
        lambda step: step.world.choice(["east", "west", "north"]), invariants=[last_option]
    )
    report = exhaustive(scenario)
    assert report.exhausted
    assert [v.invariant for v in report.violations] == ["last_option"]
    assert set(seen) == {"east", "west", "north"}


def test_the_other_strategies_vary_a_draw_across_schedules() -> None:
    scenario = one_step(lambda step: step.world.coin())
    assert {result_of(run(scenario, seed)) for seed in range(8)} == {True, False}

    def tails(run: Any) -> str | None:
        return "tails" if result_of(run) is False else None

    for strategy in ("random", "pct", "systematic"):
        report = ys.explore(
            one_step(lambda step: step.world.coin(), invariants=[tails]), strategy=strategy,
            confirm=None, max_faults=0, budget=20, stop_at_first=True,
        )  # fmt: skip
        assert [v.invariant for v in report.violations] == ["tails"], strategy


def test_random_stays_fixed_by_the_seed() -> None:
    """A draw is a choice point; ``random()`` is not (a continuous domain has no small set of
    values to try): one seed reads one number, whatever the schedule."""
    scenario = one_step(lambda step: step.world.random(), workers=2)
    values = {result_of(run(scenario, seed=3, schedule=())) for _ in range(2)}
    assert len(values) == 1


def test_what_a_body_did_before_its_draw_is_taken_back_and_done_once() -> None:
    def body(step: ys.StepRunner) -> Any:
        seats = step.world.read("seats", 3)
        step.world.write("seats", seats - 1)
        step.world.effect("seat.held", seats=seats)
        row = step.world.choice(["front", "back"])
        step.world.effect("seat.placed", row=row)
        return [seats, row]

    result = run(one_step(body))
    assert result.ok, result.explain()
    kinds = [e.kind for e in result.trace if e.step_key == "pick"]
    assert kinds.count(TraceKind.STORE_READ) == 1
    assert kinds.count(TraceKind.STORE_WRITE) == 1
    assert [e.name for e in result.effects] == ["seat.held", "seat.placed"]
    assert result.world["seats"] == 2
    assert result_of(result)[0] == 3
    # The draw is traced before what the body did: the body ran once it was decided.
    assert kinds.index(TraceKind.DRAW) < kinds.index(TraceKind.STORE_READ)


def test_a_body_with_two_draws_makes_two_choice_points_and_every_pair_is_tried() -> None:
    pairs: set[tuple[bool, bool]] = set()

    def record(run: Any) -> None:
        (record,) = run.executions
        pairs.add(tuple(record.result))

    scenario = one_step(lambda step: [step.world.coin(), step.world.coin()], invariants=[record])
    result = run(scenario)
    assert len(draws(result)) == 2
    assert exhaustive(scenario).exhausted
    assert pairs == {(True, True), (True, False), (False, True), (False, False)}


def test_a_draw_after_a_trigger_in_one_body_fails_the_step_with_the_reason() -> None:
    @ys.workflow("other")
    def other(step: ys.StepRunner, params: Any) -> Any:
        return None
        yield

    def body(step: ys.StepRunner) -> Any:
        step.world.trigger("other")
        return step.world.coin()

    scenario = one_step(body, expected=[ys.expect("pick", message="after its step.world.trigger")])
    scenario.workflows = (*scenario.workflows, other)
    result = run(scenario)
    assert result.ok, result.explain()


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ([], ValueError, "draws from 1 to 16 options"),
        (list(range(17)), ValueError, "draws from 1 to 16 options"),
        ({"a": 1}, TypeError, "takes a sequence of options"),
        (5, TypeError, "takes a sequence of options"),
    ],
)
def test_a_draw_of_the_wrong_shape_fails_the_step(options: Any, error: type, message: str) -> None:
    scenario = one_step(
        lambda step: step.world.choice(options),
        expected=[ys.expect("pick", error="StepError", message=message)],
    )
    assert run(scenario).ok


def test_a_draw_of_one_option_is_no_choice_point() -> None:
    result = run(one_step(lambda step: step.world.choice(["only"])))
    assert result_of(result) == "only"
    assert draws(result) == []


def test_a_draw_in_workflow_code_is_refused_even_where_the_world_is_allowed() -> None:
    @ys.workflow("coded")
    def coded(step: ys.StepRunner, params: Any) -> Any:
        side = step.world.coin()
        return (yield from step.run("s", lambda: side))

    scenario = ys.Scenario(
        name="coded", workflows=[coded], triggers=[ys.Trigger("coded", {})],
        world_in_workflow_code=True,
        expected=[ys.expect("coded", message="a step body's draws")],
    )  # fmt: skip
    assert run(scenario).ok


def test_no_fault_is_placed_at_a_draw() -> None:
    for kind in ("crash", "freeze", "infra_error", "skew", "stall"):
        assert not applies_at(kind, Op.DRAW)
    with pytest.raises(ValueError, match="cannot be placed at draw"):
        ys.Fault("crash", op="draw")


def test_the_bundled_replica_story_is_found_without_a_fault_and_its_fix_verified() -> None:
    report = exhaustive(ys.load_scenario("random-replica"))
    assert report.exhausted
    (found,) = report.violations
    assert found.invariant == "the_charge_covers_the_cart"
    assert found.faults == []
    again = ys.replay(found.artifact)
    assert [v.invariant for v in again.violations] == ["the_charge_covers_the_cart"]
    fixed = exhaustive(ys.load_scenario("random-replica-fixed"), max_faults=1)
    assert fixed.exhausted
    assert fixed.ok, [v.message for v in fixed.violations]


@pytest.mark.parametrize("invoker", ["in-process", "worker"])
def test_the_engine_draws_at_random(invoker: str) -> None:
    @ys.workflow("toss")
    def toss(step: ys.StepRunner, params: Any) -> Any:
        return (yield from step.run("s", lambda: step.world.choice(["heads", "tails"])))

    with ys.Engine([toss], runtime=ys.MemoryRuntime(), invoker=invoker) as engine:
        engine.trigger("toss", {}, execution_id="t-1")
        engine.run_until_idle(workers=("w1",))
        record = engine.runtime.execution("t-1")
        assert record is not None
        assert record.result in ("heads", "tails")


def _unlucky_route() -> ys.Scenario:
    """A bug that only one of four routes shows (the seed's run draws another): the route
    through the closed depot charges nothing."""

    def charged_on_every_route(run: Any) -> str | None:
        (record,) = run.executions
        return None if record.result != "closed-depot" else "the closed depot charged nothing"

    scenario = one_step(
        lambda step: step.world.choice(["closed-depot", "north", "east", "south"]),
        invariants=[charged_on_every_route],
    )
    seeded = run(scenario)
    assert seeded.ok, "the seed's run must miss it, or the test shows nothing"
    return scenario


def test_a_bug_that_needs_a_draw_to_come_out_one_way_is_found_without_any_fault() -> None:
    """The systematic search branches every option of a draw, at max_faults=0 too: it said
    "exhausted the bound: all 1 schedules" of such a scenario, having run the seed's draw."""
    scenario = _unlucky_route()
    report = ys.explore(scenario, max_faults=0, confirm=None)
    assert report.verdict == "violated"
    (found,) = report.violations
    assert found.invariant == "charged_on_every_route"
    assert found.faults == []
    again = ys.replay(found.artifact, runtime="memory", scenario=scenario)
    assert [v.invariant for v in again.violations] == ["charged_on_every_route"]
    clean = ys.explore(
        one_step(lambda step: step.world.choice(["north", "east"])), max_faults=0, confirm=None
    )
    assert clean.exhausted
    assert clean.schedules_run == 2
    assert "every option of 1 draw(s) and completion order(s)" in clean.coverage()


def test_every_strategy_tries_the_draw_s_options_and_counts_the_draws_it_branched() -> None:
    scenario = _unlucky_route()
    exhaustive_search = exhaustive(scenario)
    assert {v.invariant for v in exhaustive_search.violations} == {"charged_on_every_route"}
    sampled = ys.explore(scenario, strategy="random", max_faults=0, budget=40, confirm=None)
    assert sampled.violations
    report = ys.explore(scenario, max_faults=1, kinds=["crash"], confirm=None, stop_at_first=False)
    assert report.systematic is not None
    assert report.systematic.branched >= 1
    assert report_json(report)["draws_branched"] == report.systematic.branched
