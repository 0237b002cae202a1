"""Variants of the exhaustive search that ``bench_exhaustive.py --reductions`` measures against
the search as shipped: what each reduction the issue names would spare on its case, measured
instead of argued (docs/decisions.md, "Not done in issue 32").

Each variant is applied in the child that searches, before the search, by patching the tree
under measurement; none is a supported switch of the package.

- ``named``: keys that name the workers (no worker symmetry): what the symmetry spares.
- ``sleep``: sleep sets on (``ExhaustiveSearch.sleep_sets``), beside state caching.
- ``sleep-reads``: sleep sets, and a claim that found nothing due reads the queue of due work
  instead of writing it: two such claims, or one and a call that changes no due work, commute.
- ``effects-bag``: the effect ledger keyed as a multiset, its order left out: two states that
  differ only in the order their effects were recorded are one (sound only for invariants that
  count effects, as the case's do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

VARIANTS = ("named", "sleep", "sleep-reads", "effects-bag")


def apply(variant: str) -> None:
    """Patch the imported package for ``variant`` (one of ``VARIANTS``)."""
    if variant not in VARIANTS:
        raise SystemExit(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")
    from yieldstar_sim.simulation.explorer import exhaustive, statekeys

    if variant == "named":
        keys: Any = statekeys.StateKeys
        actor = keys._actor
        keys._learn = lambda self, worker: None  # no name is blinded
        keys._actor = lambda self, name, wait: actor(self, name, f"{wait}|{name}")
    elif variant == "effects-bag":
        _effects_as_a_bag(statekeys)
    else:
        exhaustive.ExhaustiveSearch.sleep_sets = True
        if variant == "sleep-reads":
            _empty_claims_read()


def _effects_as_a_bag(statekeys: Any) -> None:
    from yieldstar_sim.simulation.explorer.terms import term

    def fold(self: Any, effects: Sequence[Any]) -> None:
        if len(effects) < self._effects or self._effects == 0:
            self._effects, self._ledger_term = 0, 0
        for effect in effects[self._effects :]:
            text = repr(
                (effect.name, effect.data, effect.execution_id, effect.step_key, effect.attempt)
            )
            self._ledger_term += term(statekeys._LEDGER, text)  # a sum: blind to the order
        self._effects = len(effects)

    statekeys.StateKeys._fold = fold


def _empty_claims_read() -> None:
    from yieldstar_sim.core.ops import Op
    from yieldstar_sim.simulation.explorer import footprints, probe
    from yieldstar_sim.simulation.trace_payloads import ClaimData, TraceKind

    shipped = footprints.footprint

    def footprint(events: Sequence[Any], *, fault: bool, time_moved: bool) -> frozenset[str]:
        found = shipped(events, fault=fault, time_moved=time_moved)
        if footprints.QUEUE not in found:
            return found
        writes = any(
            event.kind == TraceKind.CALL
            and event.op != Op.PUT_STEP
            and not (event.op == Op.CLAIM and not isinstance(event.data, ClaimData))
            for event in events
        )
        return (found - {footprints.QUEUE}) | {"w:queue" if writes else "r:queue"}

    probe.footprint = footprint  # type: ignore[assignment]
