"""Clients are actors too: a ``ys.Client``'s triggers and cancels pass choice points, take
faults and retry by their policy, and the trace records each attempt and the runtime's answer."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.model import InfrastructureError
from yieldstar_sim.examples import charge_order, ship_order
from yieldstar_sim.runtime.memory import MemoryRuntime
from yieldstar_sim.simulation import SimulationRun
from yieldstar_sim.simulation.trace_payloads import (
    ClientAnswerData,
    ClientAttemptData,
    ClientGiveUpData,
    TraceKind,
)
from yieldstar_sim.views.timeline import build_timeline
from yieldstar_sim.views.words import narrate

COURIER_ONCE = ys.at_most_once("courier.booked", by="order")


def shop(
    *triggers: ys.Trigger,
    faults: tuple[ys.Fault, ...] = (),
    cancels: tuple[ys.Cancel, ...] = (),
    on_existing_id: str | None = None,
) -> ys.Scenario:
    return ys.Scenario(
        name="clients",
        workflows=[charge_order, ship_order],
        triggers=list(triggers),
        cancels=list(cancels),
        faults=list(faults),
        invariants=[COURIER_ONCE],
        runtime_options={} if on_existing_id is None else {"on_existing_id": on_existing_id},
    )


def order(client: ys.Client | None, execution_id: str | None = "order-42") -> ys.Trigger:
    return ys.Trigger("charge-order", {"order": 42}, execution_id=execution_id, client=client)


def answers(run: SimulationRun) -> list[ClientAnswerData]:
    return [e.data for e in run.trace if isinstance(e.data, ClientAnswerData)]


def attempts(run: SimulationRun) -> list[ClientAttemptData]:
    return [e.data for e in run.trace if isinstance(e.data, ClientAttemptData)]


def charge_orders(run: SimulationRun) -> list[str]:
    return [r.execution_id for r in run.executions if r.workflow_id == "charge-order"]


@pytest.fixture(params=["memory", "duckdb"])
def runtime(request: pytest.FixtureRequest) -> str:
    return str(request.param)


LOSE_FIRST = ys.Fault("lose_response", worker="api", op="trigger")
FRESH = ys.Client("api", ys.ClientRetry(reuse_request_id=False))
SAME = ys.Client("api")


def test_a_client_without_faults_admits_once_and_the_trace_says_so(runtime: str) -> None:
    run = ys.simulate(shop(order(SAME)), runtime=runtime)
    assert run.verdict == "ok"
    assert charge_orders(run) == ["order-42"]
    (attempt,) = attempts(run)
    assert (attempt.client, attempt.attempt, attempt.request_id) == ("api", 1, "order-42")
    (answer,) = answers(run)
    assert (answer.answer, answer.execution_id, answer.lost) == ("admitted", "order-42", False)
    assert [a.how for a in run.admissions if a.execution_id == "order-42"] == ["client trigger"]


def test_a_retry_with_a_fresh_request_id_admits_a_second_execution(runtime: str) -> None:
    run = ys.simulate(shop(order(FRESH), faults=(LOSE_FIRST,)), runtime=runtime)
    assert charge_orders(run) == ["order-42", "order-42~retry-2"]
    assert [a.fresh_id for a in attempts(run)] == [False, True]
    found = {v.invariant: v.message for v in run.violations}
    assert (
        "the runtime could not tell the retry from a new request"
        in found["one execution per client request"]
    )
    assert "fresh request ID, order-42~retry-2" in found["one execution per client request"]
    assert "at_most_once(courier.booked, by=order)" in found


def test_a_retry_with_the_same_request_id_is_refused_and_admits_nothing_more(runtime: str) -> None:
    run = ys.simulate(shop(order(SAME), faults=(LOSE_FIRST,)), runtime=runtime)
    assert run.verdict == "ok"
    assert charge_orders(run) == ["order-42"]
    first, second = answers(run)
    assert (first.answer, first.lost) == ("admitted", True)
    assert (second.answer, second.code) == ("refused", "EXECUTION_EXISTS")


def test_under_return_existing_the_retry_gets_the_execution_back(runtime: str) -> None:
    scenario = shop(order(SAME), faults=(LOSE_FIRST,), on_existing_id="return_existing")
    run = ys.simulate(scenario, runtime=runtime)
    assert run.verdict == "ok"
    assert [(a.answer, a.execution_id) for a in answers(run)] == [
        ("admitted", "order-42"),
        ("existing", "order-42"),
    ]


def test_a_trigger_without_a_request_id_retried_after_a_lost_response_admits_two() -> None:
    run = ys.simulate(shop(order(SAME, execution_id=None), faults=(LOSE_FIRST,)), runtime="memory")
    assert len(charge_orders(run)) == 2
    (violation,) = [v for v in run.violations if v.invariant == "one execution per client request"]
    assert "carries no request ID" in violation.message


def test_an_infrastructure_error_is_retried_and_admits_once() -> None:
    fault = ys.Fault("infra_error", worker="api", op="trigger")
    run = ys.simulate(shop(order(FRESH), faults=(fault,)), runtime="memory")
    # The first attempt never reached the runtime: even a fresh ID admits one execution.
    assert run.verdict == "ok"
    assert charge_orders(run) == ["order-42~retry-2"]
    assert [e.kind for e in run.trace if e.worker == "api"][:3] == [
        TraceKind.FAULT,
        TraceKind.CLIENT_ATTEMPT,
        TraceKind.ERROR,
    ]


class _FailsFirstTrigger(MemoryRuntime):
    """The reference runtime, whose first ``trigger`` fails with an infrastructure error
    before anything is written."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.failed = False

    def trigger(self, *args: Any, **kwargs: Any) -> str:
        if not self.failed:
            self.failed = True
            raise InfrastructureError("connection reset")
        return super().trigger(*args, **kwargs)


def test_a_trigger_the_runtime_fails_is_traced_as_an_error_and_sent_again() -> None:
    run = ys.simulate(shop(order(SAME)), runtime=_FailsFirstTrigger)
    assert run.verdict == "ok"
    assert [(e.worker, e.text) for e in run.trace.of_kind(TraceKind.ERROR)] == [
        ("api", "trigger failed: connection reset"),
    ]
    assert [(a.attempt, a.answer, a.execution_id) for a in answers(run)] == [
        (2, "admitted", "order-42")
    ]
    assert charge_orders(run) == ["order-42"]


def test_a_client_that_runs_out_of_attempts_gives_up() -> None:
    client = ys.Client("api", ys.ClientRetry(attempts=2, backoff=5.0))
    # Two faults at the client's trigger: each takes the next one its placement matches.
    faults = (ys.Fault("infra_error", worker="api", op="trigger"),) * 2
    run = ys.simulate(shop(order(client), faults=faults), runtime="memory")
    assert charge_orders(run) == []
    (gave_up,) = [e for e in run.trace if isinstance(e.data, ClientGiveUpData)]
    assert (gave_up.t, gave_up.data.attempts, gave_up.data.why) == (5.0, 2, "attempts used up")


def test_a_client_that_crashes_after_the_call_forgets_it_and_does_not_retry() -> None:
    fault = ys.Fault("crash_after", worker="api", op="trigger")
    run = ys.simulate(shop(order(FRESH), faults=(fault,)), runtime="memory")
    assert run.verdict == "ok"
    assert charge_orders(run) == ["order-42"]
    (gave_up,) = [e.data for e in run.trace if isinstance(e.data, ClientGiveUpData)]
    assert gave_up.why == "crashed"


def test_a_frozen_client_sends_late() -> None:
    fault = ys.Fault("freeze", worker="api", op="trigger", seconds=12)
    run = ys.simulate(shop(order(SAME), faults=(fault,)), runtime="memory")
    (attempt,) = [e for e in run.trace if e.kind == TraceKind.CLIENT_ATTEMPT]
    assert attempt.t == 12.0
    assert run.verdict == "ok"


def test_a_clients_cancel_is_retried_after_a_lost_response() -> None:
    ops = ys.Client("ops")
    scenario = shop(
        order(None),
        cancels=(ys.Cancel("order-42", at=0.0, client=ops),),
        faults=(ys.Fault("lose_response", worker="ops", op="cancel"),),
    )
    run = ys.simulate(scenario, runtime="memory")
    cancels = [a for a in answers(run) if a.action == "cancel"]
    assert [(a.answer, a.lost) for a in cancels] == [
        ("cancel requested", True),
        ("cancel requested", False),
    ]


@pytest.mark.parametrize(
    ("policy", "second"), [("refuse", "refused"), ("return_existing", "existing")]
)
def test_concurrent_clients_admitting_one_business_id_get_the_runtimes_answer(
    policy: str, second: str, runtime: str
) -> None:
    api, cli = ys.Client("api"), ys.Client("cli")
    run = ys.simulate(shop(order(api), order(cli), on_existing_id=policy), runtime=runtime)
    assert run.verdict == "ok"
    assert charge_orders(run) == ["order-42"]
    assert sorted(a.answer for a in answers(run)) == sorted(["admitted", second])


def test_the_trace_of_a_client_reads_back_from_json() -> None:
    run = ys.simulate(shop(order(FRESH), faults=(LOSE_FIRST,)), runtime="memory")
    again = ys.simulation.trace.Trace.from_jsonl(run.trace.to_jsonl())
    assert again.events == run.trace.events


def test_words_and_the_timeline_show_what_the_client_did() -> None:
    run = ys.simulate(shop(order(FRESH), faults=(LOSE_FIRST,)), runtime="memory")
    words = "\n".join(narrate(run.trace))
    assert "The response is lost on the way back: api does not know, and retries." in words
    assert "with a fresh request ID, order-42~retry-2: to the runtime this retry is a new" in words
    timeline = build_timeline(run.trace, run.scenario.worker_names)
    assert "api" in timeline.lanes
    assert {m.kind for m in timeline.marks if m.lane == "api"} >= {"error", "trigger", "fault"}


def test_the_explorer_finds_the_fresh_id_retry_with_one_fault_and_the_fix_holds() -> None:
    found = ys.explore(ys.load_scenario("client-retry-new-request-id"), runtime="memory",
                       confirm=None)  # fmt: skip
    assert found.verdict == "violated"
    assert found.violations[0].invariant == "one execution per client request"
    assert list(found.violations[0].faults) == ["lose the response of api's trigger in order-42"]
    fixed = ys.explore(ys.load_scenario("client-retry-same-request-id"), runtime="memory",
                       confirm=None)  # fmt: skip
    assert fixed.verdict == "ok"
    assert fixed.exhausted


def test_a_client_without_faults_leaves_the_schedule_to_the_workers() -> None:
    # Clients are actors only when declared: a scenario without one keeps its trace.
    plain = ys.simulate(shop(order(None)), runtime="memory")
    assert not [e for e in plain.trace if e.worker == "api"]
    assert "~client" not in plain.schedule


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ys.Client(""), "a client's name is a non-empty string"),
        (lambda: ys.ClientRetry(attempts=0), "a client's attempts are a whole number >= 1"),
        (lambda: ys.ClientRetry(backoff=-1), "a client's backoff is finite seconds >= 0"),
        (lambda: ys.ClientRetry(backoff=math.inf), "a client's backoff is finite seconds >= 0"),
        (
            lambda: shop(order(ys.Client("w1"))),
            "client 'w1' has the name of a worker",
        ),
        (
            lambda: shop(order(SAME), order(FRESH)),
            "client 'api' is declared twice with different retry policies",
        ),
        (
            lambda: shop(order(SAME), faults=(ys.Fault("crash", worker="apj"),)),
            "names worker 'apj' (did you mean 'api'?), but the workers are w1, w2 and the clients "
            "api",
        ),
        (
            lambda: shop(order(SAME), on_existing_id="merge"),
            "runtime option 'on_existing_id' is one of 'refuse', 'return_existing', not 'merge'",
        ),
    ],
)
def test_a_mistake_in_a_client_is_refused_in_one_line(make: object, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=re.escape(message)):
        make()  # type: ignore[operator]


def test_the_bundled_concurrent_clients_record_both_answers(runtime: str) -> None:
    run = ys.simulate(ys.load_scenario("concurrent-clients"), runtime=runtime)
    assert run.verdict == "ok"
    assert charge_orders(run) == ["order-42"]
    assert sorted(a.answer for a in answers(run)) == ["admitted", "refused"]


def test_a_clients_cancel_of_an_execution_the_run_never_had_is_a_scenario_error() -> None:
    # A misspelled ID was an ordinary refused answer, and the run came back green.
    scenario = shop(order(None), cancels=(ys.Cancel("order-24", at=1.0, client=ys.Client("ops")),))
    with pytest.raises(ys.ScenarioError, match="client ops's cancel names execution 'order-24'"):
        ys.simulate(scenario, runtime="memory")
    with pytest.raises(ys.ScenarioError, match="which the run never had"):
        ys.explore(scenario, confirm=None)


def test_a_scenario_cancel_of_no_execution_is_a_scenario_error_that_names_the_cancel() -> None:
    scenario = shop(order(None), cancels=(ys.Cancel("order-24", at=1.0),))
    with pytest.raises(ys.ScenarioError, match=r"ys.Cancel\('order-24'\) at t=1 names no exec"):
        ys.simulate(scenario, runtime="memory")


def test_a_clients_cancel_that_comes_before_its_execution_is_an_answer_not_an_error() -> None:
    # The execution exists later in the run: the refusal is the runtime's answer to a race.
    ops = ys.Client("ops", ys.ClientRetry(attempts=1))
    late = ys.Trigger("charge-order", {"order": 42}, execution_id="order-42", at=5.0)
    run = ys.simulate(shop(late, cancels=(ys.Cancel("order-42", at=1.0, client=ops),)),
                      runtime="memory")  # fmt: skip
    assert [(a.action, a.answer) for a in answers(run)] == [("cancel", "refused")]


def test_the_timeline_draws_a_refused_trigger_as_a_refusal_not_a_second_admission() -> None:
    run = ys.simulate(ys.load_scenario("concurrent-clients"), runtime="memory")
    timeline = build_timeline(run.trace, run.scenario.worker_names)
    marks = {m.lane: (m.kind, m.label) for m in timeline.marks if m.lane in ("web", "mobile")}
    assert marks == {
        "web": ("trigger", ""),
        "mobile": ("declined", "refused: EXECUTION_EXISTS"),
    }


@pytest.mark.parametrize("client", [None, SAME], ids=["scenario", "client"])
def test_a_trigger_with_an_id_no_caller_may_choose_is_refused_at_construction(
    client: ys.Client | None,
) -> None:
    # The runtime refused it on every run, the refusal passed for an answer: a green run.
    with pytest.raises(ValueError, match=r"names an execution ID no caller may choose: .*'@bad'"):
        shop(order(client, execution_id="@bad"))
