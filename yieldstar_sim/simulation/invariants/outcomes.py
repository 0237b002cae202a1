"""The scenario's expectations of how each execution ends, and the words for how one
did end: where it failed, what its workflow code read that made a replay diverge."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yieldstar_sim.core.model import STEP_NOT_RUN
from yieldstar_sim.core.ops import Op
from yieldstar_sim.core.suggest import misspelt
from yieldstar_sim.simulation.invariants.evidence import RUNTIME_FIX
from yieldstar_sim.simulation.invariants.protocol import Violation
from yieldstar_sim.simulation.trace_payloads import (
    OutcomeData,
    PutStepData,
    RuntimeActionData,
    TraceKind,
    WorldReadData,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from yieldstar_sim.core.model import ExecutionRecord
    from yieldstar_sim.simulation.invariants.protocol import RunView
    from yieldstar_sim.simulation.scenario import Expect


_STEP_WORK = (TraceKind.BODY, TraceKind.CALL, TraceKind.REFUSED, TraceKind.ERROR)

#: The ends an expectation must allow: a completion needs none, nor a cancellation (its
#: invariant is ``cancels``'), nor a pruned record.
_JUDGED = frozenset({"failed", "dead-lettered"})


def _failed_at(run: RunView, execution_id: str) -> str | None:
    """Where an execution's failing delivery was when it failed, from the trace: ``at step
    ship`` (the step failed) or ``after step pay-back`` (workflow code raised after it); or,
    when the runtime ended it on its own and reported it (``runtime_actions.py``), that: ``by
    the runtime, which archived it at t=30 (...)``."""
    where = None
    for event in run.trace:
        if event.execution_id != execution_id:
            continue
        if isinstance(event.data, RuntimeActionData):
            reason = f" ({event.data.reason})" if event.data.reason else ""
            where = f"by the runtime, which {event.data.action} it at t={event.t:g}{reason}"
        elif event.kind == TraceKind.CALL and event.op == Op.CLAIM:
            where = None  # a new delivery: what the last one did is replayed
        elif event.step_key is not None and event.kind in _STEP_WORK:
            done = isinstance(event.data, PutStepData) and event.data.status == "completed"
            where = f"{'after' if done else 'at'} step {event.step_key}"
        elif isinstance(event.data, OutcomeData) and event.data.status == "failed":
            return where
    return where


def _error_words(record: ExecutionRecord) -> str:
    if record.error is None:
        return "an error with no record"
    code = f" {record.error.code}" if record.error.code else ""
    return f"{record.error.name}{code}: {record.error.message}"


class ExecutionsEndAsExpected:
    """Every execution ends as the scenario allows: completed, cancelled after a cancellation
    request, or as an expectation (``ys.expect``) declares (a failure, a dead letter). A
    failure nobody declared, or one other than the declared one, is a violation that names
    the execution, the step and the error; so is a dead letter nobody declared, and an
    execution that never finished."""

    name = "executions end as expected"
    final_only = True  # about how a run ends

    def __init__(self, expected: Sequence[Expect] = (), *, registered: Iterable[str] = ()) -> None:
        self.expected = tuple(expected)
        self.registered = frozenset(registered)
        """The workflows the scenario registers (at the start or in a deploy): an expectation
        of one is never a misspelling, whether or not a run started it."""

    def check(self, run: RunView) -> list[Violation]:
        """Compare each execution's end with what the scenario allows of it."""
        live = {r.execution_id for r in run.executions if not r.terminal}
        violations = []
        for record in run.executions:
            wanted = [e for e in self.expected if e.names(record.execution_id, record.workflow_id)]
            who = f"{record.execution_id} ({record.workflow_id})"
            if not record.terminal:
                stranded = (
                    record.due_at is None and record.lease is None and record.waiting_on not in live
                )
                if not stranded:  # a stranded one is "no execution lost"'s to report
                    waits = f", waiting for {record.waiting_on}" if record.waiting_on else ""
                    violations.append(
                        Violation(self.name, f"{who} never finished: it is {record.status}{waits}")
                    )
                continue
            status = str(record.status)
            if status not in _JUDGED or any(_ends_as(record, e) for e in wanted):
                continue
            if wanted:
                violations.append(
                    Violation(
                        self.name,
                        f"{who} ended {_end_words(run, record)}, but the scenario expects "
                        + " or ".join(e.describe() for e in wanted),
                        {"execution": record.execution_id},
                    )
                )
                continue
            if status == "dead-lettered":
                violations.append(self._dead_lettered(record, who))
                continue
            error = record.error
            # A verb never run names its own verb, key and line: the step the delivery was
            # last at ("after step settle") would point elsewhere.
            not_run = error is not None and error.code == STEP_NOT_RUN
            step = None if not_run else _failed_at(run, record.execution_id)
            where = f" {step}" if step else ""
            fix = self._fix(record)
            if step is not None and step.startswith("by the runtime"):
                # No delivery failed it: a step that "failed" would point at code that never
                # did (the runtime's own action is the cause, and the runtime the fix).
                fix = f"; no delivery failed it: the runtime ended it on its own, and {RUNTIME_FIX}"
            violations.append(
                Violation(
                    self.name,
                    f"{who} failed{where}: {_error_words(record)}{_why_diverged(run, record)}{fix}",
                    {"execution": record.execution_id, "where": step},
                )
            )
        return violations

    def _dead_lettered(self, record: ExecutionRecord, who: str) -> Violation:
        """A dead letter nobody declared: set aside for a person to look at."""
        return Violation(
            self.name,
            f"{who} was dead-lettered: {_error_words(record)} (fix what kills its worker; or, "
            "if the scenario means it to be set aside, declare it: "
            f'expected=[ys.expect("{record.workflow_id}", status="dead-lettered")])',
            {"execution": record.execution_id},
        )

    def _fix(self, record: ExecutionRecord) -> str:
        """What fixes a failure nobody declared: for a mistake in the code, the fix of the
        code (never declaring the mistake expected); otherwise, fix what raised, or declare
        the failure if the scenario means it."""
        error = record.error
        if error is not None and error.name == "UnknownWorkflowError":
            return _unknown_workflow(record, self.registered)
        if error is not None and error.name in _CODE_MISTAKES:
            return ""  # its message says what to write instead
        hint = f'ys.expect("{record.workflow_id}"'
        if error is not None:
            hint += f', error="{error.name}"'
        return (
            " (fix what raised; or, if the scenario means it to fail, declare it: "
            f"expected=[{hint})])"
        )

    def misnamed(self, run: RunView) -> str | None:
        """A scenario mistake: an expectation that named no execution of the run, by a
        workflow or an execution ID that misspells one the run has."""
        workflows = {record.workflow_id for record in run.executions}
        ids = {record.execution_id for record in run.executions}
        mistakes = []
        for expectation in self.expected:
            if any(expectation.names(r.execution_id, r.workflow_id) for r in run.executions):
                continue
            for what, name, present in (
                ("workflow", expectation.workflow_id, workflows),
                ("execution", expectation.execution_id, ids),
            ):
                if name is None or (what == "workflow" and name in self.registered):
                    continue
                meant = misspelt(name, present)
                if meant is not None:
                    mistakes.append(
                        f"the expectation {expectation.describe()} names the {what} {name!r}, "
                        f"which the run never had; it had {meant!r}"
                    )
        return "; ".join(mistakes) or None

    def unwatched(self, run: RunView) -> str | None:
        """A warning for each expectation that named no execution of the run, or whose
        executions all ended otherwise (the expected failure did not happen)."""
        warnings = []
        idle = [
            e.describe()
            for e in self.expected
            if not any(e.names(r.execution_id, r.workflow_id) for r in run.executions)
        ]
        if idle:
            present = sorted({r.workflow_id for r in run.executions})
            warnings.append(
                f"the expectation{'s' if len(idle) > 1 else ''} {'; '.join(idle)} named no "
                f"execution of the run (its workflows: {', '.join(present) or 'none'})"
            )
        for expectation in self.expected:
            named = [r for r in run.executions if expectation.names(r.execution_id, r.workflow_id)]
            if named and not any(_ends_as(r, expectation) for r in named):
                ends = ", ".join(f"{r.execution_id} ended {r.status}" for r in named[:3])
                warnings.append(
                    f"the expectation {expectation.describe()} did not come true ({ends})"
                )
        return "; ".join(warnings) or None


#: Errors of workflow code that misuses the verbs: their messages say what to write instead,
#: and no scenario means them (a hint to declare one expected pointed the wrong way).
_CODE_MISTAKES = frozenset({"WorkflowDefinitionError", "StepKeyError"})


def _unknown_workflow(record: ExecutionRecord, registered: frozenset[str]) -> str:
    """Who started an execution of a workflow the scenario lacks, and the fix: the name
    meant (one typing slip from a workflow of the scenario), or the workflow added to it."""
    parent = record.parent
    name = record.workflow_id
    starter = (
        f"step {parent.step_key} of {parent.execution_id} started it"
        if parent is not None
        else "it was admitted"
    )
    meant = misspelt(name, registered)
    if meant is not None:
        return (
            f"; {starter}: did you mean {meant!r}? Fix the name in that step, or, if {name!r} "
            "is a workflow of yours, add it to Scenario(workflows=[...])"
        )
    return (
        f"; {starter}: add its @ys.workflow to Scenario(workflows=[...]) (every workflow a "
        "step starts must be there)"
    )


def _why_diverged(run: RunView, record: ExecutionRecord) -> str:
    """For a nondeterminism error: what its workflow code read outside any step, delivery by
    delivery, that made a replay take another path."""
    if record.error is None or record.error.name != "NondeterminismError":
        return ""
    reads = [
        (event.data, event.token)
        for event in run.trace
        if event.execution_id == record.execution_id
        and isinstance(event.data, WorldReadData)
        and event.data.in_workflow_code
    ]
    if not reads:
        return ""
    call = "random()" if reads[0][0].read == "random" else "now()"
    seen = ", ".join(f"{read.value:.6g} under token {token}" for read, token in reads[:4])
    return (
        f"; its workflow code read step.world.{call} outside any step ({seen}), so the replay "
        "took another path: read it inside a step, whose recorded result every replay gets"
    )


def _ends_as(record: ExecutionRecord, expectation: Expect) -> bool:
    if str(record.status) != expectation.status:
        return False
    error = record.error
    if expectation.error and (error is None or error.name != expectation.error):
        return False
    if expectation.code and (error is None or error.code != expectation.code):
        return False
    return not (expectation.message and (error is None or expectation.message not in error.message))


def _end_words(run: RunView, record: ExecutionRecord) -> str:
    if str(record.status) != "failed":
        return str(record.status)
    step = _failed_at(run, record.execution_id)
    return f"failed{f' {step}' if step else ''} ({_error_words(record)})"
