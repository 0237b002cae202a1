"""The invariant of clients' requests: one execution per request a client means, however many
attempts it took (a retry after a lost response must not admit a second execution)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.simulation.invariants.evidence import RUNTIME_FIX, repeated
from yieldstar_sim.simulation.invariants.protocol import Violation
from yieldstar_sim.simulation.trace_payloads import ClientAnswerData, ClientAttemptData, TraceKind

if TYPE_CHECKING:
    from yieldstar_sim.simulation.invariants.protocol import RunView
    from yieldstar_sim.simulation.trace import Admission


class OneExecutionPerClientRequest:
    """At most one execution admitted per request of a client (``ys.Client``), whatever the
    attempts carried: the invariant a client that mints a fresh request ID on retry breaks."""

    name = "one execution per client request"
    final_only = False  # a safety property: a cut run can break it too

    def check(self, run: RunView) -> list[Violation]:
        """Group the clients' admissions by the client and the request it meant."""
        clients = (
            (admission.by, admission)
            for admission in run.admissions
            if admission.how == "client trigger" and admission.by is not None
        )
        violations = []
        for (client, meant), admitted in repeated(clients):
            first, second = admitted[0], admitted[1]
            count = "two" if len(admitted) == 2 else str(len(admitted))
            violations.append(
                Violation(
                    self.name,
                    f"client {client}'s request {meant} admitted {count} executions, "
                    f"{first.execution_id} at t={first.at:g} and {second.execution_id} at "
                    f"t={second.at:g}: {_why(run, first, second)}",
                    {
                        "client": client,
                        "request": meant,
                        "executions": [a.execution_id for a in admitted],
                    },
                )
            )
        return violations


def _why(run: RunView, first: Admission, second: Admission) -> str:
    """Why one request admitted a second execution, from the attempts in the trace."""
    events = run.trace.events
    answer = events[first.event].data if first.event is not None else None
    attempt = None
    if second.event is not None:
        for event in reversed(events[: second.event]):
            if event.kind == TraceKind.CLIENT_ATTEMPT and isinstance(event.data, ClientAttemptData):
                attempt = event.data
                break
    missed = (
        f"the response of its attempt {answer.attempt} was lost"
        if isinstance(answer, ClientAnswerData) and answer.lost
        else "it never saw the first answer"
    )
    if attempt is not None and attempt.fresh_id:
        return (
            f"{missed} and its retry (attempt {attempt.attempt}) carried a fresh request ID, "
            f"{attempt.request_id}, so the runtime could not tell the retry from a new "
            f"request{_SAME_ID}"
        )
    if attempt is not None and attempt.request_id is None:
        return (
            f"{missed} and its trigger carries no request ID, so the runtime could not tell "
            "the retry from a new request: give the trigger its request ID, "
            "ys.Trigger(..., execution_id=BUSINESS_ID), and retry with it"
        )
    return f"{missed}, and the runtime admitted its retry again; {RUNTIME_FIX}"


#: The fix of a retry that minted a fresh request ID.
_SAME_ID = (
    ": retry with the first attempt's request ID (ys.ClientRetry(reuse_request_id=True), the "
    "default), which the runtime answers with the execution it admitted"
)
