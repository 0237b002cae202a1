"""Variants of the exhaustive search that ``bench_exhaustive.py --reductions`` measures against
the search as shipped: what each would spare on its case, measured instead of argued
(docs/decisions.md, "Not done in issue 32").

Each variant is applied in the child that searches, before the search, by patching the tree
under measurement; none is a supported switch of the package.

- ``named``: keys that name the workers (no worker symmetry): what the symmetry spares.
- ``effects-bag``: the effect ledger keyed as a multiset, its order left out: two states that
  differ only in the order their effects were recorded are one (sound only for invariants that
  count effects, as the case's do).

The sleep-set variants measured here before are gone with sleep sets (7857e99): they spared
under 3% of the transitions on the case, and the search has no footprints to refine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

VARIANTS = ("named", "effects-bag")


def apply(variant: str) -> None:
    """Patch the imported package for ``variant`` (one of ``VARIANTS``)."""
    if variant not in VARIANTS:
        raise SystemExit(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")
    from yieldstar_sim.simulation import statekeys

    if variant == "named":
        # As the tests' NamingKeys (tests/simulation/test_worker_symmetry.py): each actor's
        # term holds its own name, and no name is blinded in a history.
        keys: Any = statekeys.StateKeys
        actor = keys._actor

        def learn(self: Any, worker: str) -> None:
            self._workers = self._workers | {worker}  # seen, but never blinded

        keys._learn = learn
        keys._actor = lambda self, name, wait, behind, *, fresh=False: actor(
            self, name, f"{wait} as {name}", behind, fresh=fresh
        )
    else:
        _effects_as_a_bag(statekeys)


def _effects_as_a_bag(statekeys: Any) -> None:
    from yieldstar_sim.simulation.terms import term

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
