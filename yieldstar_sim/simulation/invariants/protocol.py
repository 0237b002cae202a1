"""What an invariant is: a name and ``check(run)`` returning violations; a plain callable
over the run is one too."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from yieldstar_sim.core.events import EventRecord
    from yieldstar_sim.core.model import ExecutionRecord, StartRequestRecord, StepRecord
    from yieldstar_sim.engine.world import Effect
    from yieldstar_sim.simulation.trace import Admission, Trace


class RunView(Protocol):
    """What an invariant reads of a finished run (a ``RunView`` is one): its trace, the
    effects' ledger, the runtime's final records, every admission, the world's store and the
    runtime's external events."""

    @property
    def trace(self) -> Trace:
        """Every event of the run, in order."""
        ...

    @property
    def effects(self) -> Sequence[Effect]:
        """The ledger: every effect step bodies had on the outside world."""
        ...

    @property
    def executions(self) -> Sequence[ExecutionRecord]:
        """The runtime's execution records as the run left them."""
        ...

    @property
    def start_requests(self) -> Sequence[StartRequestRecord]:
        """The runtime's start request records."""
        ...

    @property
    def steps(self) -> Mapping[str, Sequence[StepRecord]]:
        """Each execution's recorded steps, by execution ID."""
        ...

    @property
    def admissions(self) -> Sequence[Admission]:
        """Every admission of the run, once per incarnation."""
        ...

    @property
    def world(self) -> Mapping[str, Any]:
        """The world's key-value store as the run left it."""
        ...

    @property
    def events(self) -> Sequence[EventRecord]:
        """The external events the runtime accepted, each with what became of it."""
        ...


@dataclass(frozen=True, slots=True)
class Violation:
    """An invariant that did not hold: its name and a sentence saying what happened."""

    invariant: str
    message: str
    data: dict[str, Any] = field(default_factory=dict, compare=False)

    def __str__(self) -> str:
        return f"{self.invariant}: {self.message}"


class Invariant(Protocol):
    """Something that must hold after a run.

    Optional attributes: ``final_only`` (default True: checked only on runs that finished; a
    safety property that a cut run can break too says False), ``unwatched(run)``, a warning
    when the invariant had nothing to watch in the run (or None), and ``misnamed(run)``, a
    scenario mistake when what it watches is absent from the run and a name the run has is
    one typing slip from it (``core.suggest.misspelt``): an error, never a green verdict.
    """

    @property
    def name(self) -> str:
        """The invariant's name, as violations report it."""
        ...

    def check(self, run: RunView) -> list[Violation]:
        """The violations in ``run`` (empty when it holds)."""
        ...


@dataclass(frozen=True, slots=True)
class FunctionInvariant:
    """A plain callable over the run: returns None/True when it holds, else a message (or
    False, or a list of messages). It is checked on runs that finished (``final_only``): a
    callable may well count what a cut run has not done yet."""

    function: Callable[[RunView], Any]
    name: str
    final_only: bool = True

    def check(self, run: RunView) -> list[Violation]:
        """Call the function and turn what it says into violations."""
        said = self.function(run)
        if said is None or said is True:
            return []
        if said is False:
            return [Violation(self.name, f"{self.name} does not hold")]
        if isinstance(said, Violation):
            return [said]
        if isinstance(said, str):
            return [Violation(self.name, said)]
        return [v if isinstance(v, Violation) else Violation(self.name, str(v)) for v in said]


def as_invariant(item: Invariant | Callable[[RunView], Any]) -> Invariant:
    """Accept an invariant object or a plain callable."""
    if hasattr(item, "check") and hasattr(item, "name"):
        return item
    if callable(item):
        return FunctionInvariant(item, getattr(item, "__name__", "user invariant"))
    raise TypeError(
        f"an invariant is an object with name and check(run), or a callable, not {item!r}"
    )
