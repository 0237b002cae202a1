"""The trace is typed: each event's kind is a ``TraceKind`` and its data the kind's payload
dataclass, while its JSON form stays the one traces were written in, byte for byte."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation.scenario_files import bundled_scenarios
from yieldstar_sim.simulation.trace import Trace, TraceEvent
from yieldstar_sim.simulation.trace_payload_base import NO_DATA, NoData
from yieldstar_sim.simulation.trace_payloads import (
    CancelData,
    ClaimData,
    EffectData,
    PutStepData,
    StartData,
    TraceKind,
    TriggerData,
)

PACKAGE = Path(ys.__file__).parent
#: Kinds added after the trace was typed: no trace ever wrote them with dict payloads.
#: A delivery (an external event lost, duplicated or delayed) is written only under an event's
#: fault, which no bundled scenario's own run places: ``test_sends.py`` has each.
BORN_TYPED = {
    TraceKind.CLIENT_ATTEMPT,
    TraceKind.CLIENT_ANSWER,
    TraceKind.CLIENT_GIVE_UP,
    TraceKind.DELIVERY,
}
#: One event of every shape a trace had while its data was a dict, written by that version.
WRITTEN_BEFORE = Path(__file__).parent / "data" / "trace-with-dict-payloads.jsonl"


@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_a_trace_read_back_from_its_json_lines_is_the_same_trace(name: str) -> None:
    run = ys.simulate(ys.load_scenario(name), seed=0, runtime="memory")
    text = run.trace.to_jsonl()
    again = Trace.from_jsonl(text)
    assert again.events == run.trace.events
    assert again.to_jsonl() == text


def test_a_trace_written_when_data_was_a_dict_loads_into_typed_payloads() -> None:
    text = WRITTEN_BEFORE.read_text(encoding="utf-8")
    trace = Trace.from_jsonl(text)
    assert trace.to_jsonl() == text
    for line, event in zip(text.splitlines(), trace, strict=True):
        assert isinstance(event.data, NoData) == (json.loads(line)["data"] == {}), line
    kinds = {event.kind for event in trace}
    # The world's key-value store came after data was typed: its kinds were never dicts.
    assert kinds == set(TraceKind) - BORN_TYPED - KINDS_SINCE - {
        TraceKind.STORE_READ,
        TraceKind.STORE_WRITE,
    }
    (large,) = [e.data for e in trace if isinstance(e.data, PutStepData) and e.data.value_bytes]
    assert large.value is None
    assert "value" not in large


#: Kinds added after traces had typed payloads: the bundled scenarios emit each of them.
KINDS_SINCE = {
    TraceKind.STALL,
    TraceKind.UNSTALL,
    TraceKind.SKEW,
    TraceKind.HEARTBEAT,
    TraceKind.COMPLETION,
    TraceKind.STOP,
    TraceKind.DRAW,
    TraceKind.TRANSACTION,
    TraceKind.RUNTIME,
    TraceKind.SEND,
}


def test_the_kinds_added_since_are_emitted_by_bundled_scenarios() -> None:
    names = (
        "zombie-attempt", "skewed-lease", "fan-out-order", "heartbeat-zombie-fixed",
        "random-replica", "leader-rollback-fixed", "expired-lease-archived",
        "continue-as-new-event-fixed",
    )  # fmt: skip
    scenarios = [ys.load_scenario(name) for name in names]
    # A scenario that names its runtime runs on it (expired-lease-archived's reports what it
    # archives); the others on memory.
    runs = [
        ys.simulate(scenario, seed=0, runtime=None if scenario.runtime else "memory")
        for scenario in scenarios
    ]
    emitted = {event.kind for run in runs for event in run.trace}
    assert emitted.issuperset(KINDS_SINCE)


def test_every_kind_is_emitted_by_the_package() -> None:
    """The enum lists only kinds something writes: each is the kind of a ``trace.add`` (or of
    an actor's ``state.event``, which tells it)."""
    emitted = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("add", "event")
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Attribute)
                and isinstance(node.args[1].value, ast.Name)
                and node.args[1].value.id == "TraceKind"
            ):
                emitted.add(node.args[1].attr)
    assert emitted == set(TraceKind.__members__)


def test_a_kind_is_its_string_in_every_form() -> None:
    event = TraceEvent(0, 0.0, TraceKind.CALL, op="claim")
    assert event.kind == "call"
    assert f"{event.kind:<6}|" == "call  |"
    assert json.dumps(event.kind) == '"call"'
    assert TraceEvent(0, 0.0, "effect").kind is TraceKind.EFFECT  # type: ignore[arg-type]


def test_an_unknown_kind_is_refused_with_the_kinds_listed() -> None:
    with pytest.raises(ValueError, match="unknown trace event kind 'ack'; the kinds are trigger"):
        TraceEvent(0, 0.0, "ack")  # type: ignore[arg-type]


def test_an_event_refuses_a_payload_of_another_kind() -> None:
    claim = ClaimData("order-42", 30.0, "charge-order")
    with pytest.raises(TypeError, match="a effect event does not carry ClaimData"):
        TraceEvent(0, 0.0, TraceKind.EFFECT, data=claim)
    with pytest.raises(TypeError, match="a call event of put_step does not carry ClaimData"):
        TraceEvent(0, 0.0, TraceKind.CALL, op="put_step", data=claim)
    assert TraceEvent(0, 0.0, TraceKind.CALL, op="claim", data=claim).data is claim


def test_a_payload_reads_as_its_json_form_too() -> None:
    refused = TriggerData("ship", "order-42", "EXECUTION_EXISTS")
    assert "refused" in refused
    assert refused["execution_id"] == "order-42"
    assert "execution_id" not in TriggerData("ship")
    assert dict(CancelData(("a", "b"))) == {"cancelled": ["a", "b"]}
    assert EffectData("paid", {"n": 1}, 1, None).get("at", "absent") == "absent"
    assert dict(NO_DATA) == {}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"kind": "ack", "seq": 0, "t": 0}', "trace line 1: unknown trace event kind 'ack'"),
        (
            '{"kind": "trigger", "seq": 0, "t": 0, "data": {"workflow": "x"}}',
            "trace line 1: TriggerData has no field 'workflow'",
        ),
        (
            '{"kind": "call", "op": "start", "seq": 0, "t": 0, "data": {"detached": false}}',
            "trace line 1: StartData needs 'workflow_id'",
        ),
        (
            '{"kind": "crash", "seq": 0, "t": 0, "data": {"why": 1}}',
            r"trace line 1: crash events carry no data, yet this one has \['why'\]",
        ),
        ("[1, 2]", "trace line 1: an event is a JSON object, not list"),
        ('{"kind": "crash", "t": 0}', "trace line 1: "),
    ],
)
def test_a_line_that_does_not_fit_is_refused_by_number(line: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Trace.from_jsonl(line + "\n")


def test_a_start_payload_keeps_the_answer_it_got() -> None:
    accepted = StartData("ship-order", False, accepted="@ship-order-2")
    assert accepted.to_json() == {
        "workflow_id": "ship-order", "detached": False, "accepted": "@ship-order-2",
    }  # fmt: skip
    assert StartData.from_json(accepted.to_json()) == accepted
