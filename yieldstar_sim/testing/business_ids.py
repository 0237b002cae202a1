"""The business-ID cases: what a runtime answers a trigger whose caller-chosen execution ID
exists, under each ``on_existing_id`` policy (docs/decisions.md, "Business IDs").

``refuse`` (the default) answers EXECUTION_EXISTS; ``return_existing`` (DBOS-style) answers
with the existing execution's ID when it runs the same workflow. Either way, concurrent clients
admitting one ID admit one execution.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.core.model import (
    AdmissionErrorCode,
    Completed,
    ExecutionAdmissionError,
)
from yieldstar_sim.testing._support import _expect, _finish, _fresh, _race

if TYPE_CHECKING:
    from collections.abc import Callable

    from yieldstar_sim.runtime.protocol import Runtime
    from yieldstar_sim.testing._support import RuntimeFactory

_CLIENTS = 4


def _race_triggers(
    runtime: Runtime, execution_id: str
) -> tuple[list[str], list[ExecutionAdmissionError]]:
    """``_CLIENTS`` threads trigger ``execution_id`` together: the IDs answered and the
    refusals (any other error is re-raised)."""

    def client(params: int) -> Callable[[], str | ExecutionAdmissionError]:
        def run() -> str | ExecutionAdmissionError:
            try:
                return runtime.trigger("charge-order", {"order": params}, execution_id=execution_id)
            except ExecutionAdmissionError as refused:
                return refused

        return run

    answers = _race([client(number) for number in range(_CLIENTS)])
    return (
        [answer for answer in answers if isinstance(answer, str)],
        [answer for answer in answers if isinstance(answer, ExecutionAdmissionError)],
    )


def _one_execution(runtime: Runtime, execution_id: str, what: str) -> None:
    ids = [record.execution_id for record in runtime.executions()]
    _expect(ids == [execution_id], f"{what}: expected exactly {execution_id} admitted, found {ids}")


def concurrent_triggers_of_one_id_admit_one_execution(make: RuntimeFactory) -> None:
    """Under ``refuse``, one of several concurrent triggers of one caller-chosen ID is
    admitted; every other is refused with EXECUTION_EXISTS."""
    for round_ in range(5):
        runtime, _ = _fresh(make)
        execution_id = f"order-{round_}"
        answers, refusals = _race_triggers(runtime, execution_id)
        _expect(answers == [execution_id], f"concurrent triggers were answered {answers}")
        codes = {str(refused.code) for refused in refusals}
        _expect(
            len(refusals) == _CLIENTS - 1 and codes == {AdmissionErrorCode.EXECUTION_EXISTS},
            f"the other triggers should be refused with EXECUTION_EXISTS, got {sorted(codes)}",
        )
        _one_execution(runtime, execution_id, "concurrent triggers")
        runtime.close()


def a_repeated_trigger_returns_the_existing_execution(make: RuntimeFactory) -> None:
    """Under ``return_existing``, a trigger of an existing ID and the same workflow returns
    that ID and admits nothing; the first admission's parameters stand."""
    runtime, _ = _fresh(make)
    first = runtime.trigger("charge-order", {"order": 42}, execution_id="order-42")
    before = runtime.executions()
    again = runtime.trigger("charge-order", {"order": 43}, execution_id="order-42")
    _expect(again == first == "order-42", f"the repeat was answered {again!r}, not {first!r}")
    _expect(runtime.executions() == before, "the repeated trigger changed the records")


def the_existing_execution_is_returned_after_it_ended(make: RuntimeFactory) -> None:
    """Under ``return_existing``, a terminal execution is returned as it is: not run again."""
    runtime, _ = _fresh(make)
    runtime.trigger("charge-order", {"order": 42}, execution_id="order-42")
    _finish(runtime, "order-42", Completed("charged"))
    before = runtime.executions()
    again = runtime.trigger("charge-order", {"order": 42}, execution_id="order-42")
    _expect(again == "order-42", f"the repeat was answered {again!r}")
    _expect(runtime.executions() == before, "the repeat after the end changed the records")
    _expect(runtime.due() == [], f"the ended execution is due again: {runtime.due()}")


def another_workflow_under_an_existing_id_is_refused(make: RuntimeFactory) -> None:
    """Under ``return_existing``, an existing ID asked for another workflow is still refused
    with EXECUTION_EXISTS: returning it would hide the conflict."""
    runtime, _ = _fresh(make)
    runtime.trigger("charge-order", {"order": 42}, execution_id="order-42")
    before = runtime.executions()
    try:
        answer = runtime.trigger("refund-order", {"order": 42}, execution_id="order-42")
    except ExecutionAdmissionError as refused:
        _expect(refused.code == AdmissionErrorCode.EXECUTION_EXISTS, f"wrong code {refused.code}")
    else:
        raise AssertionError(f"another workflow under an existing ID was answered {answer!r}")
    _expect(runtime.executions() == before, "the refused trigger changed the records")


def concurrent_triggers_of_one_id_share_one_execution(make: RuntimeFactory) -> None:
    """Under ``return_existing``, concurrent triggers of one caller-chosen ID all get it, and
    one execution is admitted."""
    for round_ in range(5):
        runtime, _ = _fresh(make)
        execution_id = f"order-{round_}"
        answers, refusals = _race_triggers(runtime, execution_id)
        _expect(not refusals, f"a concurrent trigger was refused: {refusals[:1]}")
        _expect(
            answers == [execution_id] * _CLIENTS, f"concurrent triggers were answered {answers}"
        )
        _one_execution(runtime, execution_id, "concurrent triggers")
        runtime.close()
