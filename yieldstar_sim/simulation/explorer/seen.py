"""The states one exhaustive search has reached, kept as fingerprints (issue 32, item 5).

A model checker keeps what it must to cut a state reached again, and no more: TLC stores
8 bytes a state. Here a state is its key's 16 bytes (a blake2b sum, ``terms.py``), with the
faults and depth it was reached with and the naive-count estimate of its subtree, in one
open-addressing table in a ``bytearray``: 28 bytes an entry, at most three quarters full, so
37 to 75 bytes a state against the ~600 a dictionary of key strings to lists of tuples
took. The table is the set of distinct states (``len``), which the report's state graph, kept
for people, no longer has to be (``StateSpace.limit``).

A visit the table cannot hold in its one entry (a second visit neither covering nor covered by
the first, possible under a depth bound only) goes to a small dictionary beside it.

>>> seen = SeenStates()
>>> key = "0123456789abcdef0123456789abcdef"
>>> seen.reached(key, faults_left=1, depth_left=None)
False
>>> seen.reached(key, faults_left=1, depth_left=None), seen.reached(key, 2, None)
(True, False)
>>> len(seen), seen.estimate(key)
(1, 1.0)
"""

from __future__ import annotations

import struct
import sys
from hashlib import blake2b

#: An entry: the key's 16 bytes, flags, the faults left, the depth room, the estimate.
_ENTRY = struct.Struct("<16sBBHd")
_SIZE = _ENTRY.size
#: Flags: the entry is in use; it holds a visit (faults and depth); it holds an estimate.
_USED, _VISITED, _ESTIMATED = 1, 2, 4
_MAX_DEPTH = 0xFFFF


def _raw(key: str) -> bytes:
    """A key's 16 bytes: the 32 hex digits the search's keys are; any other text (a key of
    your own ``StateKeys``) hashed to 16."""
    if len(key) == 32:
        try:
            return bytes.fromhex(key)
        except ValueError:
            pass
    return blake2b(key.encode(), digest_size=16).digest()


class SeenStates:
    """The distinct states a search reached, with what it reached each with."""

    def __init__(self, slots: int = 1 << 12) -> None:
        if slots < 2 or slots & (slots - 1):
            raise ValueError(f"a table's slots are a power of two, not {slots}")
        self._table = bytearray(slots * _SIZE)
        self._mask = slots - 1
        self._count = 0
        self._more: dict[bytes, list[tuple[int, int]]] = {}
        """Visits the one entry cannot hold: a second, incomparable one."""

    def __len__(self) -> int:
        return self._count

    def _slot(self, raw: bytes) -> int:
        """The offset of ``raw``'s entry, made (empty of visits) when it is new."""
        table, mask = self._table, self._mask
        slot = int.from_bytes(raw[:8], "little") & mask
        while True:
            offset = slot * _SIZE
            if not table[offset + 16]:
                if (self._count + 1) * 4 > (mask + 1) * 3:
                    self._grow()
                    return self._slot(raw)
                table[offset : offset + 16] = raw
                table[offset + 16] = _USED
                self._count += 1
                return offset
            if table[offset : offset + 16] == raw:
                return offset
            slot = (slot + 1) & mask

    def _grow(self) -> None:
        old = self._table
        slots = (self._mask + 1) * 2
        self._table, self._mask = bytearray(slots * _SIZE), slots - 1
        table, mask = self._table, self._mask
        for offset in range(0, len(old), _SIZE):
            if old[offset + 16]:
                slot = int.from_bytes(old[offset : offset + 8], "little") & mask
                while table[slot * _SIZE + 16]:
                    slot = (slot + 1) & mask
                table[slot * _SIZE : (slot + 1) * _SIZE] = old[offset : offset + _SIZE]

    def add(self, key: str) -> bool:
        """Count state ``key`` as reached; whether it is new."""
        before = self._count
        self._slot(_raw(key))
        return self._count > before

    def reached(self, key: str, faults_left: int, depth_left: int | None) -> bool:
        """Whether ``key`` was reached before with no fewer faults and no less depth left (the
        search cuts it); if not, record this visit."""
        raw = _raw(key)
        offset = self._slot(raw)
        table = self._table
        _, flags, faults, depth, estimate = _ENTRY.unpack_from(table, offset)
        if (
            flags & _VISITED
            and faults >= faults_left
            and (depth_left is None or depth >= depth_left)
        ):
            return True
        for left, room in self._more.get(raw, ()):
            if left >= faults_left and (depth_left is None or room >= depth_left):
                return True
        depth_room = min(depth_left or 0, _MAX_DEPTH)
        if not flags & _VISITED or (faults <= faults_left and depth <= depth_room):
            # Reached again with at least as much left: this visit covers the one it replaces.
            _ENTRY.pack_into(
                table, offset, raw, flags | _VISITED, min(faults_left, 255), depth_room, estimate
            )
        else:
            self._more.setdefault(raw, []).append((faults_left, depth_left or 0))
        return False

    def estimate(self, key: str) -> float:
        """The naive-count estimate kept for the subtree of ``key``, a state reached (1.0 when
        none was)."""
        _, flags, _, _, estimate = _ENTRY.unpack_from(self._table, self._slot(_raw(key)))
        return float(estimate) if flags & _ESTIMATED else 1.0

    def keep_estimate(self, key: str, estimate: float) -> None:
        """Keep the naive-count estimate of ``key``'s subtree (searched to its end)."""
        raw = _raw(key)
        offset = self._slot(raw)
        _, flags, faults, depth, _ = _ENTRY.unpack_from(self._table, offset)
        _ENTRY.pack_into(self._table, offset, raw, flags | _ESTIMATED, faults, depth, estimate)

    def fingerprints(self) -> bytes:
        """Every state's 16 bytes, one after another: what a process of a search in several
        sends back, for the states to be counted once over all."""
        table = self._table
        used = range(0, len(table), _SIZE)
        return b"".join(table[at : at + 16] for at in used if table[at + 16])

    def add_fingerprints(self, raw: bytes) -> None:
        """Count the states of ``fingerprints()`` (another process's) as reached."""
        for start in range(0, len(raw), 16):
            self._slot(raw[start : start + 16])


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (0.0 where it cannot be read)."""
    try:
        import resource
    except ImportError:  # not on Windows
        return 0.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)
