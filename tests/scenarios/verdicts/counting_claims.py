"""A runtime adapter with state of its own (it counts the claims it answered and refuses every
one after its third) whose snapshot() and restore() forward to the memory runtime it wraps and
leave the count out: a restored state goes on as no real run would."""

from yieldstar_sim.runtime.memory import MemoryRuntime


class CountingClaims:
    """The memory runtime, with a claim count it never saves."""

    def __init__(self, clock=None, **options):
        self._inner = MemoryRuntime(clock=clock, **options)
        self.claims = 0

    def claim(self, worker, *, lease_seconds):
        self.claims += 1
        if self.claims > 3:
            return None
        return self._inner.claim(worker, lease_seconds=lease_seconds)

    def __getattr__(self, name):
        return getattr(self._inner, name)
