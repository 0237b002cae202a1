"""The explorer finds what breaks, shrinks it, replays it, and finds nothing where nothing
breaks; its results do not depend on how many shards ran them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.cli_explore import report_json
from yieldstar_sim.simulation.explorer.shrink import ddmin


def test_the_problem_is_found_shrunk_to_one_fault_and_replays_on_duckdb(tmp_path: Path) -> None:
    report = ys.explore(ys.load_scenario("trigger-in-step"), max_faults=1, out=tmp_path)
    assert not report.ok
    by_invariant = {v.invariant: v for v in report.violations}
    assert set(by_invariant) == {
        "at most one admitted execution per step",
        "at_most_once(courier.booked, by=order)",
    }
    courier = by_invariant["at_most_once(courier.booked, by=order)"]
    assert len(courier.faults) == 1
    assert courier.message.startswith("courier.booked happened 2 times for order=42")
    assert courier.nearest_passing == []
    assert courier.divergence is not None
    assert courier.divergence.startswith("event #")
    assert report.runtime_mismatches == []
    assert report.confirmations[0].startswith("confirmed on duckdb: 2 violation(s)")
    assert report.counterexample is not None
    assert courier.artifact_path is not None
    replayed = ys.replay(courier.artifact_path, runtime="duckdb")
    assert any(v.invariant == courier.invariant for v in replayed.violations)
    assert len(replayed.faults) == 1


def test_the_fix_survives_every_pair_of_faults() -> None:
    report = ys.explore(ys.load_scenario("durable-start"), max_faults=2, confirm="duckdb")
    assert report.ok, report.summary()
    assert report.total_under_bound is not None
    assert report.schedules_run + report.skipped_equivalent == report.total_under_bound
    assert report.schedules_run > 500
    assert report.skipped_equivalent > 0
    assert report.runtime_mismatches == []


@pytest.mark.parametrize("strategy", ["random", "pct"])
def test_random_and_pct_find_the_problem_too(strategy: str) -> None:
    report = ys.explore(
        ys.load_scenario("trigger-in-step"), strategy=strategy, budget=300, confirm=None
    )
    assert not report.ok
    assert all(len(v.faults) == 1 for v in report.violations)


# --------------------------------------------------------------------------- a new workflow


@ys.workflow("payout")
def payout(step: ys.StepRunner, params: Any) -> Any:
    paid = yield from step.run(
        "send-money",
        lambda: step.world.effect(
            "money.sent", transfer=params["transfer"], idempotency_key=step.execution_id
        ),
    )
    return paid


@ys.workflow("transfer")
def transfer(step: ys.StepRunner, params: Any) -> Any:
    yield from step.run(
        "debit", lambda: step.world.effect("account.debited", transfer=params["id"])
    )
    payout_id = yield from step.run(
        "payout", lambda: step.world.trigger("payout", {"transfer": params["id"]})
    )
    return {"payout": payout_id}


TRANSFER = ys.Scenario(
    name="funds-transfer",
    workflows=[transfer, payout],
    triggers=[ys.Trigger("transfer", {"id": "t-7"}, execution_id="transfer-7")],
    invariants=[ys.at_most_once("money.sent", by="transfer")],
)


def test_a_workflow_the_explorer_has_never_seen_is_caught_the_same_way() -> None:
    report = ys.explore(TRANSFER, max_faults=1, confirm="duckdb")
    assert not report.ok
    money = next(v for v in report.violations if v.invariant.startswith("at_most_once(money.sent"))
    assert "money.sent happened 2 times for transfer='t-7'" in money.message
    assert len(money.faults) == 1
    step = next(
        v for v in report.violations if v.invariant == "at most one admitted execution per step"
    )
    assert step.message.startswith("step (transfer-7, payout) admitted two executions")


def test_the_same_seed_twice_and_any_number_of_jobs_give_the_same_report() -> None:
    scenario = ys.load_scenario("trigger-in-step")
    reports = [
        ys.explore(scenario, max_faults=2, seed=5, jobs=jobs, confirm=None, stop_at_first=False)
        for jobs in (1, 1, 2)
    ]
    summaries = [
        (
            r.schedules_run,
            r.skipped_equivalent,
            r.total_under_bound,
            [(v.invariant, v.message, v.faults, v.artifact.trace_digest) for v in r.violations],
            sorted(r.verdicts.items()),
        )
        for r in reports
    ]
    assert summaries[0] == summaries[1] == summaries[2]


@pytest.mark.parametrize(
    ("name", "runtime"),
    [
        ("trigger-in-step", "memory"),
        # a runtime DuckDB disagrees with: every violation replays differently there
        ("durable-start", "yieldstar_sim.examples.flawed_runtimes:DedupWhileOpenRuntime"),
    ],
)
def test_confirmation_on_the_worker_processes_gives_the_report_of_one_process(
    name: str, runtime: str
) -> None:
    scenario = ys.load_scenario(name)
    reports = [
        report_json(ys.explore(
            scenario, max_faults=1, runtime=runtime, confirm="duckdb", stop_at_first=False,
            jobs=jobs,
        ))
        for jobs in (1, 2)
    ]  # fmt: skip
    for report in reports:
        report.pop("elapsed_seconds")
    assert reports[0] == reports[1]
    assert reports[0]["confirmations"][0].endswith("3 passing schedule(s) replayed, " + (
        "0 mismatch(es)" if runtime == "memory" else "3 mismatch(es)"
    ))  # fmt: skip


def test_a_budget_bounds_the_schedules() -> None:
    report = ys.explore(
        ys.load_scenario("durable-start"),
        max_faults=2,
        budget=40,
        confirm=None,
        stop_at_first=False,
    )
    assert report.schedules_run == 40


def test_bad_arguments_are_refused() -> None:
    scenario = ys.load_scenario("durable-start")
    with pytest.raises(ValueError, match="strategy must be one of"):
        ys.explore(scenario, strategy="bogus")  # "exhaustive" is one now
    with pytest.raises(ValueError, match="order must be one of dfs, shortest"):
        ys.explore(scenario, strategy=ys.Exhaustive(order="widest"))
    with pytest.raises(ValueError, match="max_depth must be a whole number >= 1"):
        ys.explore(scenario, strategy=ys.Exhaustive(max_depth=0))
    with pytest.raises(TypeError, match="strategy is a name"):
        ys.explore(scenario, strategy=ys.Exhaustive)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_faults"):
        ys.explore(scenario, max_faults=-1)
    with pytest.raises(ValueError, match="unknown fault kind"):
        ys.explore(scenario, kinds=["meteor"])
    with pytest.raises(TypeError, match="on_searched is a function of the report, not 'draw'"):
        ys.explore(scenario, on_searched="draw")  # type: ignore[arg-type]


@pytest.mark.parametrize("call", [ys.simulate, ys.explore])
def test_a_scenarios_name_given_for_the_scenario_says_how_to_load_it(call: Any) -> None:
    hint = r"takes a ys.Scenario, not 'durable-start' \(str\); load one by name or path with "
    with pytest.raises(TypeError, match=hint + r"ys.load_scenario\('durable-start'\)"):
        call("durable-start")
    with pytest.raises(TypeError, match=r"takes a ys.Scenario, not None \(NoneType\)$"):
        call(None)


def test_ddmin_finds_a_one_minimal_subset() -> None:
    faults = [ys.Fault("crash", at=i) for i in range(8)]

    def fails(subset: list[ys.Fault]) -> bool:
        ats = {f.at for f in subset}
        return {2, 5} <= ats

    assert [f.at for f in ddmin(faults, fails)] == [2, 5]


def test_the_report_is_json(tmp_path: Path) -> None:
    report = ys.explore(ys.load_scenario("trigger-in-step"), confirm=None, out=tmp_path)
    data = json.loads(json.dumps(report_json(report)))
    assert data["ok"] is False
    assert data["violations"][0]["artifact"].endswith("trigger-in-step-violation-1.replay.json")


@pytest.mark.parametrize(
    "name", ["cancel-owner", "join-child", "call-child-fails", "retry-backoff", "spawn-after-prune"]
)
def test_the_ownership_scenarios_survive_every_single_fault_but_two_hazards(
    name: str,
) -> None:
    report = ys.explore(ys.load_scenario(name), max_faults=1, confirm="duckdb")
    assert report.runtime_mismatches == []
    if name == "join-child":
        # Ownership goes to whoever creates a business-ID child first: a crash of order-42's
        # worker lets recheck-42 create and own it, and recheck-42's cancellation fails order-42.
        (found,) = report.violations
        assert found.invariant == "executions end as expected"
        assert found.message.startswith("order-42 (order) failed at step fulfil: ChildFailedError")
        assert found.faults == ["crash before w2's start_child of step fulfil in order-42"]
        return
    if name != "spawn-after-prune":
        assert report.ok, report.summary()
        return
    (found,) = report.violations
    assert found.invariant == "one_survey_run_per_order"
    assert "no longer protected it" in found.message
    assert len(found.faults) == 1
    assert "order-42" in found.faults[0]


def test_the_progress_bar_of_a_systematic_search_knows_its_schedules(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # At review size a single-fault search is thousands of schedules and minutes long: a bar
    # that only counted up gave no end to wait for. Each level's schedules are its total.
    report = ys.explore(
        ys.load_scenario("durable-start"), max_faults=2, confirm=None, stop_at_first=False,
        progress=True,
    )  # fmt: skip
    frames = capsys.readouterr().err.replace("\r", "\n")
    assert f"{report.schedules_run}/{report.schedules_run} [" in frames
    first_level = [line for line in frames.splitlines() if "| 1/" in line]
    assert first_level
    assert all(f"| 1/{report.schedules_run} " not in line for line in first_level)
