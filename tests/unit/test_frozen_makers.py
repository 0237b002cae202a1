"""``core.frozen.maker``: an instance built by a maker is the instance the class builds (equal,
hashed, printed and frozen alike), for every class the package builds that way; and what a
maker cannot build exactly is refused."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import FrozenInstanceError, dataclass, field

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core.commands import BodyResult
from yieldstar_sim.core.frozen import maker
from yieldstar_sim.core.model import Delivery, ExecutionRecord, ExecutionStatus, Lease, StepRecord
from yieldstar_sim.engine import body_world, world
from yieldstar_sim.engine.world import Effect
from yieldstar_sim.runtime import _common as common
from yieldstar_sim.runtime import memory_rows
from yieldstar_sim.runtime._common import StepWrite
from yieldstar_sim.simulation import narration, port
from yieldstar_sim.simulation import points as points_module
from yieldstar_sim.simulation import trace as trace_module
from yieldstar_sim.simulation.attempts import Played, new_played
from yieldstar_sim.simulation.faults import PointInfo, new_point_info
from yieldstar_sim.simulation.kernel import Point
from yieldstar_sim.simulation.port import Ran, new_ran
from yieldstar_sim.simulation.saving import Resume, new_resume
from yieldstar_sim.simulation.trace import Trace, TraceEvent
from yieldstar_sim.simulation.trace_payloads import (
    BodyData,
    EffectData,
    OutcomeData,
    PutStepData,
    TraceKind,
)

LEASE = (("order-42", "w1", 3, 30.0, 1), Lease)
STEP = (("order-42", "ship", 0, "completed", {"a": [1]}, 2, 5.0), StepRecord)
RECORD = (
    (
        "order-42", "order", {"n": 1}, "trigger", None, ExecutionStatus.PENDING, 0.0, 1, None,
        None, None, None, Lease(*LEASE[0]), 3, False, None,
    ),
    ExecutionRecord,
)  # fmt: skip
POINT = (("w1 claim", PointInfo("w1", "claim")), Point)
EVENT = ((4, 1.5, TraceKind.BODY, "w1", None, "order-42", "ship", 3, 2, "ran", BodyData(1, 0.0)),
         TraceEvent)  # fmt: skip

CASES = {
    "lease": (memory_rows.new_lease, *LEASE),
    "step": (memory_rows.new_step, *STEP),
    "record": (memory_rows.new_record, *RECORD),
    "point": (points_module._new_point, *POINT),
    "event": (trace_module._new_event, *EVENT),
    "point info": (new_point_info, ("w1", "put_step", "order-42", "ship"), PointInfo),
    "played": (new_played, ("done", 0.0, 2.5), Played),
    "ran": (new_ran, (BodyResult(value=3), [1.0], 1.0, False, (1,), 0.5), Ran),
    "resume": (new_resume, (2.5, 7, None), Resume),
    "step write": (common._new_step_write, ("ship", "completed", 1, "[1]", [1]), StepWrite),
    "body result": (body_world._new_result, (3,), BodyResult),
    "body data": (narration._new_body_data, (2, 1.5, "3"), BodyData),
    "put step data": (
        narration._new_put_step_data,
        ("completed", 1, None, 3, None, None),
        PutStepData,
    ),
    "effect": (
        world._new_effect,
        ("card.charged", {"order": 1}, "o-1", "charge", 1, "w1", 2.0),
        Effect,
    ),
    "effect data": (
        port._new_effect_data,
        ("card.charged", {"order": 1}, 1, None, False, None),
        EffectData,
    ),
    "delivery": (memory_rows.new_delivery, (Lease(*LEASE[0]), None, ()), Delivery),
    "outcome data": (narration._new_outcome_data, ("failed", None, "E: boom"), OutcomeData),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_made_instance_is_the_one_its_class_builds(name: str) -> None:
    make, args, cls = CASES[name]
    made, built = make(*args), cls(*args)
    assert type(made) is cls
    assert made == built
    try:
        expected = hash(built)
    except TypeError:  # a record holding a dict value hashes neither way
        with pytest.raises(TypeError):
            hash(made)
    else:
        assert hash(made) == expected
    assert repr(made) == repr(built)
    assert dataclasses.astuple(made) == dataclasses.astuple(built)
    assert pickle.loads(pickle.dumps(made)) == built
    assert copy.copy(made) == built
    assert dataclasses.replace(made) == built
    first = dataclasses.fields(cls)[0].name
    with pytest.raises(FrozenInstanceError):
        setattr(made, first, None)


def test_defaults_and_keywords_are_the_classes() -> None:
    make = new_point_info
    assert make("w1", "claim") == PointInfo("w1", "claim")
    assert make("w1", op="put_step", step_key="s") == PointInfo("w1", "put_step", step_key="s")
    with pytest.raises(TypeError):
        make("w1")  # op has no default


def test_trace_add_still_refuses_a_payload_of_another_kind() -> None:
    trace = Trace()
    with pytest.raises(TypeError, match="does not carry BodyData"):
        trace.add(0.0, TraceKind.CALL, "x", op="claim", data=BodyData(1, 0.0))
    assert len(trace) == 0


def test_trace_add_still_takes_a_kind_given_as_text() -> None:
    event = Trace().add(0.0, "crash", "w1 crashed", worker="w1")  # type: ignore[arg-type]
    assert event.kind is TraceKind.CRASH
    assert event == TraceEvent(0, 0.0, TraceKind.CRASH, "w1", text="w1 crashed")
    with pytest.raises(ValueError, match="unknown trace event kind 'crsh'"):
        Trace().add(0.0, "crsh", "x")  # type: ignore[arg-type]


def test_a_run_s_events_and_records_equal_ones_their_classes_build() -> None:
    run = ys.simulate(ys.load_scenario("durable-start"), 0, runtime="memory")
    for event in run.trace:
        assert event == TraceEvent(
            **{f.name: getattr(event, f.name) for f in dataclasses.fields(event)}
        )
    for record in run.executions:
        assert record == dataclasses.replace(record)
        assert record.lease is None or record.lease == Lease(*dataclasses.astuple(record.lease))


@dataclass(frozen=True, slots=True)
class _Checked:
    n: int

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError("negative")


@dataclass(frozen=True)
class _NoSlots:
    n: int


@dataclass(slots=True)
class _NotFrozen:
    n: int


@dataclass(frozen=True, slots=True)
class _Factory:
    items: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Base:
    n: int


@dataclass(frozen=True, slots=True)
class _Derived(_Base):
    m: int


@pytest.mark.parametrize(
    ("cls", "why"),
    [
        (_Checked, "__post_init__"),
        (_NoSlots, "no __slots__"),
        (_NotFrozen, "not a frozen dataclass"),
        (_Factory, "no plain default"),
        (_Derived, "inherits slots"),
        (int, "not a frozen dataclass"),
    ],
)
def test_what_a_maker_cannot_build_exactly_is_refused(cls: type, why: str) -> None:
    with pytest.raises(TypeError, match=why):
        maker(cls)


def test_checked_takes_a_post_init_the_caller_makes_itself() -> None:
    make = maker(_Checked, checked=True)
    assert make(2) == _Checked(2)
    # The class's checks are skipped: the caller's promise is what keeps them.
    assert make(-1).n == -1
