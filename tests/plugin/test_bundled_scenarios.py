"""The bundled scenarios through the plugin's fixture, as a team would run its own: the ones
that hold hold under one fault; the hazards are found, each with its sentence."""

from __future__ import annotations

import pytest

import yieldstar_sim as ys
from yieldstar_sim.pytest_plugin import Yieldstar
from yieldstar_sim.simulation.faults import FAULT_KINDS
from yieldstar_sim.simulation.scenario_files import bundled_scenarios

HAZARDS = {
    "booking-race": "no_oversell",
    "cancel-in-backoff": "a cancelled live execution ends cancelled",
    "cancel-misses-sleeping-run": "a cancelled live execution ends cancelled",
    "trigger-in-step": "at most one admitted execution per step",
    "spawn-after-prune": "one_survey_run_per_order",
    "join-child": "executions end as expected",
    "orphan-after-cancel": "owned targets follow their owner",
    "effect-in-workflow-code": "at_most_once(email.sent, by=order)",
    "random-in-workflow-code": "executions end as expected",
    "client-retry-new-request-id": "one execution per client request",
    "zombie-attempt": "at_most_once(card.charged, by=order)",
    "timed-out-attempt": "at_most_once(card.charged, by=order)",
    "skewed-lease-unfenced": "at_most_once(card.charged, by=order)",
    "fan-out-order": "email_names_the_label_and_receipt",
    "heartbeat-zombie": "attempts of one step never overlap",
    "random-replica": "the_charge_covers_the_cart",
    "leader-rollback": "at_most_once(cron.inserted, by=slot)",
    "chord-result-late": "the_sum_has_every_part",
    "stale-step-write": "recorded history never changes",
    "expired-lease-archived": "executions end as expected",
    "poison-workflow": "nothing is recovered without end",
}


@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_each_bundled_scenario_through_the_plugin(name: str, yieldstar: Yieldstar) -> None:
    scenario = ys.load_scenario(name)
    if name not in HAZARDS:
        report = yieldstar.assert_holds(
            scenario, max_faults=1, kinds=list(FAULT_KINDS), confirm=None
        )
        assert report.exhausted
        return
    report = yieldstar.explore(scenario, max_faults=1, confirm=None)
    assert report.verdict == "violated"
    assert HAZARDS[name] in {found.invariant for found in report.violations}
    assert report.violations[0].artifact_path is not None
    assert report.violations[0].artifact_path.is_file()
