"""The exhaustive strategy: every interleaving and every fault up to a bound, with a reduction
that never hides a violation, a completeness statement that claims no more than was searched,
and the explored state space as a graph."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import yieldstar_sim as ys
from yieldstar_sim.cli_explore import report_json
from yieldstar_sim.simulation.execution import Execution
from yieldstar_sim.simulation.explorer.exhaustive import ExhaustiveSearch
from yieldstar_sim.simulation.explorer.report import ExplorationReport
from yieldstar_sim.simulation.explorer.shards import Runner
from yieldstar_sim.simulation.explorer.strategy import Exhaustive, SearchConfig
from yieldstar_sim.simulation.faults import FaultKind
from yieldstar_sim.simulation.run import replay
from yieldstar_sim.simulation.statekeys import StateKeys
from yieldstar_sim.simulation.trace import TraceEvent
from yieldstar_sim.views.statespace_paths import path_to


def exhaustive(
    name: str | ys.Scenario,
    *,
    reduction: bool = True,
    partial_order: bool = True,
    order: str = "dfs",
    max_depth: int | None = None,
    **options: Any,
) -> ExplorationReport:
    """An exhaustive search; ``reduction=False``: without state caching, the naive search;
    ``partial_order=False``: without partial-order reduction (which, with worker symmetry,
    may keep other states of the same runs with caching than without: the comparisons of
    caching with the naive search leave it out; ``test_reduction.py`` checks it)."""
    scenario = ys.load_scenario(name) if isinstance(name, str) else name
    options.setdefault("max_faults", 0)
    options.setdefault("confirm", None)
    strategy = Exhaustive(
        max_depth=max_depth, order=order, cache=reduction, reduction=partial_order
    )
    return ys.explore(scenario, strategy=strategy, **options)


def test_the_booking_race_oversells_under_some_interleaving_without_any_fault() -> None:
    report = exhaustive("booking-race")
    assert report.verdict == "violated"
    (found,) = report.violations
    assert found.invariant == "no_oversell"
    assert found.faults == []
    again = replay(found.artifact)
    assert [v.invariant for v in again.violations] == ["no_oversell"]
    assert "verified" not in report.summary()


def test_the_fixed_booking_is_verified_over_every_interleaving() -> None:
    report = exhaustive("booking-race-fixed")
    assert report.exhausted
    assert report.ok
    assert re.match(r"verified: \d+ distinct states searched", report.coverage())
    assert (
        "every interleaving of 2 workers up to worker symmetry and the order of independent "
        "moves, every draw and completion order, none violates" in report.coverage()
    )
    assert report.distinct_states == len(report.state_space or ())


def test_the_fixed_booking_is_verified_under_one_fault_too() -> None:
    report = exhaustive("booking-race-fixed", max_faults=1)
    assert report.exhausted
    assert report.ok
    assert "under 1 fault and every interleaving" in report.coverage()


def test_a_budget_that_cuts_the_search_is_named_and_nothing_is_verified() -> None:
    report = exhaustive("booking-race-fixed", max_faults=1, budget=2)
    assert not report.exhausted
    assert report.verdict == "incomplete"
    assert report.cut_by == ["the budget of 2 schedules"]
    text = report.coverage()
    assert "verified" not in text
    assert "the budget of 2 schedules cut the search; no violation in 2 schedules" in text


def test_a_depth_bound_that_cuts_the_search_is_named() -> None:
    report = exhaustive("booking-race-fixed", max_depth=2)
    assert not report.exhausted
    assert report.cut_by == ["the depth bound of 2 choice points"]
    assert "verified" not in report.summary()


def test_a_time_budget_that_cuts_the_search_is_named() -> None:
    report = exhaustive("booking-race-fixed", max_faults=1, time_budget=1e-9)
    assert not report.exhausted
    assert report.cut_by == ["the time budget of 1e-09s"]


def test_state_caching_finds_what_the_naive_search_finds_in_fewer_schedules() -> None:
    reduced = exhaustive("booking-race", stop_at_first=False, partial_order=False)
    naive = exhaustive("booking-race", stop_at_first=False, reduction=False, partial_order=False)
    assert [v.invariant for v in reduced.violations] == [v.invariant for v in naive.violations]
    assert reduced.distinct_states == naive.distinct_states
    assert reduced.schedules_run * 2 <= naive.schedules_run
    assert reduced.exhaustive is not None
    assert naive.exhaustive is not None
    assert naive.exhaustive.naive_schedules == naive.schedules_run
    assert reduced.exhaustive.naive_schedules == naive.schedules_run  # estimated, exactly
    assert reduced.exhaustive.pruned_by_cache > 0
    assert naive.exhaustive.pruned_by_cache == 0


def test_the_completeness_statement_is_in_the_json_and_the_notebook_repr() -> None:
    report = exhaustive("booking-race-fixed")
    data = json.loads(json.dumps(report_json(report)))
    completeness = data["completeness"]
    assert completeness["exhausted"] is True
    assert completeness["cut_by"] == []
    assert completeness["distinct_states"] == report.distinct_states
    assert completeness["schedules_run"] == report.schedules_run
    assert completeness["statement"].startswith("verified: ")
    assert "verified: " in report._repr_html_()


def violating_lengths(name: str, max_faults: int) -> list[tuple[int, int]]:
    """(faults, trace events) of every violating schedule the naive search runs."""
    runner = Runner(ys.load_scenario(name), "memory")
    config = SearchConfig(
        strategy=Exhaustive(cache=False), seed=0, max_faults=max_faults,
        kinds=(FaultKind.CRASH,), freeze=40.0, stop_at_first=False,
    )  # fmt: skip
    search = ExhaustiveSearch(runner, config)
    search.search()
    runner.close()
    return [
        (len(outcome.faults), outcome.length)
        for outcome in search.tally.outcomes
        if outcome.violations
    ]


def test_the_shortest_order_returns_a_violation_with_the_fewest_faults_and_events() -> None:
    shortest = exhaustive("booking-race", max_faults=1, kinds=["crash"], order="shortest")
    (found,) = shortest.violations
    assert found.faults == []  # a fault-free interleaving oversells: no fault is needed
    events = len(replay(found.artifact).trace)
    assert (0, events) == min(violating_lengths("booking-race", 0))
    depth_first = exhaustive("booking-race", max_faults=1, kinds=["crash"])
    assert events <= len(replay(depth_first.violations[0].artifact).trace)


def test_the_state_graph_marks_each_violation_and_a_shortest_path_to_it() -> None:
    report = exhaustive("booking-race", stop_at_first=False)
    graph = report.state_graph()
    violating = [node for node, data in graph.nodes(data=True) if data["violating"]]
    assert violating
    space = report.state_space
    assert space is not None
    for key in violating:
        path = path_to(space, key)
        assert path[-1].target == key
    figure = report.draw_state_graph()
    assert figure.axes


def test_a_state_graph_is_refused_for_a_strategy_that_explores_none() -> None:
    report = ys.explore(ys.load_scenario("booking-race-fixed"), max_faults=0, confirm=None)
    with pytest.raises(ValueError, match="only strategy='exhaustive' explores a state space"):
        report.state_graph()


def test_a_strategy_is_a_name_or_its_options() -> None:
    with pytest.raises(TypeError, match=r"strategy is a name \(systematic, random, pct"):
        ys.explore(ys.load_scenario("booking-race"), strategy=42, confirm=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="order must be one of dfs, shortest, not 'widest'"):
        ys.Exhaustive(order="widest")


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"reduction": "no"}, TypeError, "cache is True or False, not 'no'"),
        ({"max_depth": 2.5}, ValueError, "max_depth must be a whole number >= 1, not 2.5"),
    ],
)
def test_an_exhaustive_option_of_the_wrong_type_is_refused_not_taken_as_truthy(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message.replace(".", r"\.")):
        exhaustive("booking-race-fixed", **options)


# --------------------------------------------------------------------------- state caching


def racing_scenario(programs: list[list[tuple[str, str]]], key: str, value: int) -> ys.Scenario:
    """Workflows that each run steps reading or writing keys (a write stores what the
    execution read last, plus one); the invariant fails when ``key`` ends at ``value``."""
    workflows = []
    for number, program in enumerate(programs):

        def run(step: ys.StepRunner, params: Any, program: list[tuple[str, str]] = program) -> Any:
            seen = 0
            for index, (op, name) in enumerate(program):
                if op == "read":
                    seen = yield from step.run(
                        f"s{index}", lambda name=name: step.world.read(name, 0)
                    )
                else:
                    yield from step.run(
                        f"s{index}", lambda name=name, seen=seen: step.world.write(name, seen + 1)
                    )
            return seen

        workflows.append(ys.workflow(f"p{number}")(run))

    def not_reached(sim: Any) -> str | None:
        return f"{key} ended at {value}" if sim.world.get(key, 0) == value else None

    return ys.Scenario(
        name="random-race",
        workflows=workflows,
        triggers=[ys.Trigger(f"p{n}", {}, execution_id=f"e{n}") for n in range(len(programs))],
        invariants=[not_reached],
    )


OPS = st.tuples(st.sampled_from(["read", "write"]), st.sampled_from(["a", "b"]))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    programs=st.lists(st.lists(OPS, min_size=1, max_size=2), min_size=2, max_size=2),
    key=st.sampled_from(["a", "b"]),
    value=st.integers(0, 3),
)
def test_the_reduced_search_finds_a_violation_whenever_the_naive_search_does(
    programs: list[list[tuple[str, str]]], key: str, value: int
) -> None:
    scenario = racing_scenario(programs, key, value)
    naive = exhaustive(scenario, reduction=False, stop_at_first=False, partial_order=False)
    reduced = exhaustive(scenario, stop_at_first=False, partial_order=False)
    assert naive.exhausted
    assert reduced.exhausted
    assert bool(reduced.violations) == bool(naive.violations)
    assert reduced.distinct_states == naive.distinct_states
    assert reduced.schedules_run <= naive.schedules_run


def grouped_scenario(programs: list[list[tuple[str, str]]], key: str, value: int) -> ys.Scenario:
    """As ``racing_scenario``, but each workflow runs its steps together in one ``step.all``:
    a write adds one to what it reads, so the end value depends on the completion order."""
    workflows = []
    for number, program in enumerate(programs):

        def run(step: ys.StepRunner, params: Any, program: list[tuple[str, str]] = program) -> Any:
            def body(op: str, name: str) -> Any:
                seen = step.world.read(name, 0)
                if op == "write":
                    step.world.write(name, seen + 1)
                return seen

            members = [step.run(f"s{i}", body, op, name) for i, (op, name) in enumerate(program)]
            return (yield from step.all(members))

        workflows.append(ys.workflow(f"p{number}")(run))

    def not_reached(sim: Any) -> str | None:
        return f"{key} ended at {value}" if sim.world.get(key, 0) == value else None

    return ys.Scenario(
        name="random-group-race",
        workflows=workflows,
        triggers=[ys.Trigger(f"p{n}", {}, execution_id=f"e{n}") for n in range(len(programs))],
        invariants=[not_reached],
    )


#: A group of two with a group of one, two workers: the naive search of two groups of two
#: takes minutes (20,144 schedules against the reduced search's 40).
GROUPS = st.tuples(st.lists(OPS, min_size=2, max_size=2), st.lists(OPS, min_size=1, max_size=1))


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs=GROUPS, key=st.sampled_from(["a", "b"]), value=st.integers(0, 3))
def test_the_reduced_search_over_completion_orders_finds_what_the_naive_one_does(
    programs: tuple[list[tuple[str, str]], list[tuple[str, str]]], key: str, value: int
) -> None:
    """The order of a step.all's completions is a choice point the reduction keeps sound: a
    completion is dependent on the others of its group (they touch one execution)."""
    scenario = grouped_scenario(list(programs), key, value)
    naive = exhaustive(scenario, reduction=False, stop_at_first=False, partial_order=False)
    reduced = exhaustive(scenario, stop_at_first=False, partial_order=False)
    assert naive.exhausted
    assert reduced.exhausted
    assert bool(reduced.violations) == bool(naive.violations)
    assert reduced.distinct_states == naive.distinct_states
    assert reduced.schedules_run <= naive.schedules_run


def drawing_scenario(programs: list[list[tuple[str, str]]], key: str, value: int) -> ys.Scenario:
    """As ``racing_scenario``, with draws: a ``draw`` step returns ``step.world.choice([0, 1])``
    (what the execution saw last), and a write adds one or two by a coin it tosses."""
    workflows = []
    for number, program in enumerate(programs):

        def run(step: ys.StepRunner, params: Any, program: list[tuple[str, str]] = program) -> Any:
            seen = 0
            for index, (op, name) in enumerate(program):
                if op == "read":
                    seen = yield from step.run(
                        f"s{index}", lambda name=name: step.world.read(name, 0)
                    )
                elif op == "draw":
                    seen = yield from step.run(f"s{index}", lambda: step.world.choice([0, 1]))
                else:

                    def write(name: str = name, seen: int = seen) -> None:
                        step.world.write(name, seen + (2 if step.world.coin() else 1))

                    yield from step.run(f"s{index}", write)
            return seen

        workflows.append(ys.workflow(f"p{number}")(run))

    def not_reached(sim: Any) -> str | None:
        return f"{key} ended at {value}" if sim.world.get(key, 0) == value else None

    return ys.Scenario(
        name="random-draw-race",
        workflows=workflows,
        triggers=[ys.Trigger(f"p{n}", {}, execution_id=f"e{n}") for n in range(len(programs))],
        invariants=[not_reached],
    )


DRAW_OPS = st.tuples(st.sampled_from(["read", "write", "draw"]), st.sampled_from(["a", "b"]))
#: Two steps against one: the naive search of two against two takes a minute (every draw and
#: coin multiplies the interleavings).
DRAWS = st.tuples(
    st.lists(DRAW_OPS, min_size=1, max_size=2), st.lists(DRAW_OPS, min_size=1, max_size=1)
)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs=DRAWS, key=st.sampled_from(["a", "b"]), value=st.integers(0, 4))
def test_the_reduced_search_over_draws_finds_what_the_naive_one_does(
    programs: tuple[list[tuple[str, str]], list[tuple[str, str]]], key: str, value: int
) -> None:
    """A draw is a choice point among its options, each an actor that touches its execution:
    two options of one draw are dependent, and both are tried."""
    scenario = drawing_scenario(list(programs), key, value)
    naive = exhaustive(scenario, reduction=False, stop_at_first=False, partial_order=False)
    reduced = exhaustive(scenario, stop_at_first=False, partial_order=False)
    assert naive.exhausted
    assert reduced.exhausted
    assert bool(reduced.violations) == bool(naive.violations)
    assert reduced.distinct_states == naive.distinct_states
    assert reduced.schedules_run <= naive.schedules_run


def heartbeat_scenario(works: list[list[int]], policy: int | None) -> ys.Scenario:
    """Executions whose one step works each of its ``works`` seconds and heartbeats after
    each, then writes its number under ``k``, under the lease-loss ``policy``."""
    workflows = []
    for number, work in enumerate(works):

        def body(step: ys.StepRunner, work: list[int] = work, number: int = number) -> None:
            for seconds in work:
                step.world.elapse(seconds)
                step.heartbeat()
            step.world.write("k", number)

        def run(step: ys.StepRunner, params: Any, body: Any = body) -> Any:
            yield from step.run("s", body, step)

        workflows.append(ys.workflow(f"p{number}")(run))
    return ys.Scenario(
        name="heartbeat-race",
        workflows=workflows,
        triggers=[ys.Trigger(f"p{n}", {}, execution_id=f"e{n}") for n in range(len(works))],
        stop_after_failed_renewals=policy,
    )


RENEWAL_FAULTS = ["infra_error", "lose_response"]
WORKS = st.lists(
    st.lists(st.sampled_from([10, 20]), min_size=1, max_size=2), min_size=1, max_size=2
).filter(lambda works: sum(map(len, works)) <= 3)


class BlindKeys(StateKeys):
    """State keys blind to every worker's name in what a worker was told, not only to its own:
    a refused write's reason names the worker that holds the lease now (``w1's lease ... now
    leased to w2``), so that two states that mirror each other (the workers swapped) get two
    keys while the state before them gets one. State caching then takes the mirrored state
    for the one it explored, and the reduced search counts fewer states than the naive one:
    fewer keys, not fewer states up to which worker is which. Under these keys the two
    searches count the same states."""

    def remember(self, events: Sequence[TraceEvent]) -> None:
        super().remember([_blind(event) for event in events])


def _blind(event: TraceEvent) -> TraceEvent:
    reason = getattr(event.data, "reason", None)
    if not isinstance(reason, str):
        return event
    data = replace(event.data, reason=re.sub(r"\bw\d+\b", "~", reason))  # type: ignore[type-var]
    return replace(event, data=data)


def naive_and_reduced(scenario: str | ys.Scenario, **options: Any) -> tuple[Any, Any]:
    """The naive and the reduced exhaustive searches of ``scenario``, both keyed blind to the
    workers' names (``BlindKeys``)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Execution, "state_keys", BlindKeys)
        naive = exhaustive(
            scenario, reduction=False, stop_at_first=False, **options, partial_order=False
        )
        reduced = exhaustive(scenario, stop_at_first=False, **options, partial_order=False)
    return naive, reduced


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(works=WORKS, policy=st.sampled_from([1, 2]))
def test_the_reduced_search_over_heartbeats_finds_what_the_naive_one_does(
    works: list[list[int]], policy: int
) -> None:
    """Each heartbeat is a renew choice point, where a renewal fault goes: the reduction keeps
    every state and every violation (an overlap, when a tolerated failure outlasts the
    lease)."""
    scenario = heartbeat_scenario(works, policy)
    naive, reduced = naive_and_reduced(scenario, max_faults=1, kinds=RENEWAL_FAULTS)
    assert naive.exhausted
    assert reduced.exhausted
    assert {v.invariant for v in reduced.violations} == {v.invariant for v in naive.violations}
    assert reduced.distinct_states == naive.distinct_states
    assert reduced.schedules_run <= naive.schedules_run


@pytest.mark.parametrize(
    ("name", "max_faults"),
    [("heartbeat-zombie", 1), ("heartbeat-zombie-fixed", 1), ("random-replica", 0)],
)
def test_the_reduced_search_of_the_new_stories_finds_what_the_naive_one_does(
    name: str, max_faults: int
) -> None:
    """The bundled heartbeat and draw stories, naive against reduced, under renewal faults
    (random-replica has no renewal; its naive search under a fault takes 8 s)."""
    naive, reduced = naive_and_reduced(name, max_faults=max_faults, kinds=RENEWAL_FAULTS)
    assert naive.exhausted
    assert reduced.exhausted
    assert {v.invariant for v in reduced.violations} == {v.invariant for v in naive.violations}
    assert set(reduced.state_space.nodes) == set(naive.state_space.nodes)  # type: ignore[union-attr]
    assert reduced.schedules_run < naive.schedules_run


def test_only_the_order_of_completion_lets_a_read_in_a_group_see_the_write_beside_it() -> None:
    """One workflow, one worker, no fault: the read member sees the write member's value only
    when the write completes first; both searches find that order."""
    scenario = grouped_scenario([[("read", "a"), ("write", "a")]], "a", -1)

    def read_saw_the_write(run: Any) -> str | None:
        (record,) = run.executions
        return "the read completed after the write" if record.result == [1, 0] else None

    scenario = replace(scenario, workers=1, invariants=[read_saw_the_write])
    for reduction in (True, False):
        report = exhaustive(scenario, reduction=reduction, stop_at_first=False)
        assert report.exhausted
        assert [v.invariant for v in report.violations] == ["read_saw_the_write"]


def test_a_search_stopped_at_its_first_violation_is_not_exhausted_in_either_order() -> None:
    for order in ("dfs", "shortest"):
        report = exhaustive("booking-race", max_faults=1, kinds=["crash"], order=order)
        assert report.violations
        assert not report.exhausted
        assert report.coverage().startswith("not exhausted: stopped at the first violation")


@pytest.mark.parametrize("name", ["concurrent-starts", "frozen-worker", "durable-start"])
def test_the_rfc_stories_are_verified_under_every_interleaving_and_any_single_fault(
    name: str,
) -> None:
    """The bound chosen for the bundled stories: every fault kind, one fault, two workers (two
    faults take about 16 s each and verify too: 7,840 states)."""
    report = exhaustive(name, max_faults=1)
    assert report.exhausted, report.coverage()
    assert report.ok
    assert report.coverage().startswith("verified: ")


def test_with_a_fault_the_reduced_search_reaches_every_state_the_naive_one_does() -> None:
    options = {"max_faults": 1, "kinds": ["crash_after"], "stop_at_first": False}
    naive = exhaustive("booking-race", reduction=False, **options, partial_order=False)
    reduced = exhaustive("booking-race", **options, partial_order=False)
    assert naive.exhausted
    assert reduced.exhausted
    assert set(naive.state_space.nodes) == set(reduced.state_space.nodes)  # type: ignore[union-attr]
    assert {v.invariant for v in naive.violations} == {v.invariant for v in reduced.violations}


def test_a_stall_is_tried_only_at_a_body_elapse_and_finds_the_zombie_attempt() -> None:
    report = exhaustive("zombie-attempt", max_faults=1, kinds=["stall"])
    # The stall runs two attempts of the charge at once, and the stale one charges again.
    overlap, found = report.violations
    assert overlap.invariant == "attempts of one step never overlap"
    assert found.invariant == "at_most_once(card.charged, by=order)"
    (fault,) = found.faults
    assert fault.startswith("stall the attempt ")
    assert "'s elapse of step charge" in fault


def test_a_stall_where_no_body_elapses_is_never_spent() -> None:
    """No choice point of booking-race is an elapse: a stall applies nowhere, so the search
    with stalls only is the search without faults."""
    stalls = exhaustive("booking-race-fixed", max_faults=1, kinds=["stall"])
    none = exhaustive("booking-race-fixed", max_faults=0)
    assert stalls.exhausted
    assert none.exhausted
    assert stalls.schedules_run == none.schedules_run
    assert stalls.distinct_states == none.distinct_states


def test_a_client_minting_a_new_request_id_is_found_and_one_reusing_it_verified() -> None:
    buggy = exhaustive("client-retry-new-request-id", max_faults=1, kinds=["lose_response"])
    assert "one execution per client request" in {v.invariant for v in buggy.violations}
    fixed = exhaustive("client-retry-same-request-id", max_faults=1)
    assert fixed.exhausted, fixed.coverage()
    assert fixed.ok


def test_a_cut_search_tells_its_state_graph_so_and_a_whole_one_does_not() -> None:
    # The state graph's pictures are shown alone in reviews: a cut space's must not read as
    # a verified one ("no state violates").
    cut = exhaustive("booking-race-fixed", max_faults=1, time_budget=1e-9)
    assert cut.state_space is not None
    assert cut.state_space.cut_by == ["the time budget of 1e-09s cut the search"]
    whole = exhaustive("booking-race-fixed")
    assert whole.exhausted
    assert whole.state_space is not None
    assert whole.state_space.cut_by == []
    first = exhaustive("booking-race")
    assert first.violations
    assert first.state_space is not None
    assert first.state_space.cut_by == ["it stopped at its first violation"]
