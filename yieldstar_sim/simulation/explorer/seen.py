"""The states an exhaustive search reached, as fingerprints: ``SeenStates``, one process's
table (``simulation.shared_states`` has the tables the processes of one search share).
docs/decisions.md says why they are kept so ("States kept as fingerprints; the state graph
bounded") and how the processes share ("The exhaustive search in several processes").

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

from yieldstar_sim.simulation.shared_states import key_bytes

#: An entry: the key's 16 bytes, flags, the faults left, the depth room, the estimate.
_ENTRY = struct.Struct("<16sBBHd")
_SIZE = _ENTRY.size
#: Flags: the entry is in use; it holds a visit (faults and depth); it holds an estimate.
_USED, _VISITED, _ESTIMATED = 1, 2, 4
_MAX_DEPTH = 0xFFFF
_SLOTS = 1 << 12


class SeenStates:
    """The distinct states a search reached, each with the faults and depth left it was
    reached with and the naive-count estimate of its subtree: 28 bytes an entry in one
    open-addressing table, at most three quarters full. A visit the one entry cannot hold (a
    second, incomparable one: under a depth bound only) goes to a small dictionary beside it."""

    def __init__(self) -> None:
        self._table = bytearray(_SLOTS * _SIZE)  # grown, doubled, past three quarters full
        self._mask = _SLOTS - 1
        self._count = 0
        self._more: dict[bytes, list[tuple[int, int]]] = {}

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
        old, slots = self._table, (self._mask + 1) * 2
        self._table, self._mask, self._count = bytearray(slots * _SIZE), slots - 1, 0
        for offset in range(0, len(old), _SIZE):
            if old[offset + 16]:
                at = self._slot(bytes(old[offset : offset + 16]))
                self._table[at : at + _SIZE] = old[offset : offset + _SIZE]

    def add(self, key: str) -> bool:
        """Count state ``key`` as reached; whether it is new."""
        before = self._count
        self._slot(key_bytes(key))
        return self._count > before

    def reached(self, key: str, faults_left: int, depth_left: int | None) -> bool:
        """Whether ``key`` was reached before with no fewer faults and no less depth left (the
        search cuts it); if not, record this visit."""
        raw = key_bytes(key)
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
        _, flags, _, _, estimate = _ENTRY.unpack_from(self._table, self._slot(key_bytes(key)))
        return float(estimate) if flags & _ESTIMATED else 1.0

    def keep_estimate(self, key: str, estimate: float) -> None:
        """Keep the naive-count estimate of ``key``'s subtree (searched to its end)."""
        raw = key_bytes(key)
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
        # They come in the order of the other table's slots: into a table of fewer slots they
        # pile up in runs, each probing past the run before (36 us a state, 2 s to merge two
        # processes' 18,000). Grown first to hold them all, the table takes each at its slot
        # or next to it.
        while (self._count + len(raw) // 16) * 4 > (self._mask + 1) * 3:
            self._grow()
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
