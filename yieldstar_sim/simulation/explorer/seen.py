"""The states an exhaustive search reached, as fingerprints: ``SeenStates``, one process's
table, and ``SharedVisited``, the table the processes of one search share in shared memory
(a ``SharedStates``; ``simulation.cluster`` has the one a Dask cluster shares).
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
from dataclasses import dataclass
from hashlib import blake2b
from multiprocessing import resource_tracker, shared_memory
from typing import Any, Protocol

#: An entry: the key's 16 bytes, flags, the faults left, the depth room, the estimate.
_ENTRY = struct.Struct("<16sBBHd")
_SIZE = _ENTRY.size
#: Flags: the entry is in use; it holds a visit (faults and depth); it holds an estimate.
_USED, _VISITED, _ESTIMATED = 1, 2, 4
_MAX_DEPTH = 0xFFFF
_SLOTS = 1 << 12


def key_bytes(key: str) -> bytes:
    """A key's 16 bytes: the 32 hex digits the search's keys are; any other text (a key of
    your own ``StateKeys``) hashed to 16."""
    if len(key) == 32:
        try:
            return bytes.fromhex(key)
        except ValueError:
            pass
    return blake2b(key.encode(), digest_size=16).digest()


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


class SharedStates(Protocol):
    """The states searched to their end that the processes of one search share, and the flag
    one raises to stop the others: what ``ExhaustiveSearch.shared`` asks of it."""

    @property
    def stopped(self) -> bool:
        """Whether a process asked the others to stop."""
        ...

    def stop(self) -> None:
        """Ask every process of the search to stop."""
        ...

    def covers(self, key: str, faults_left: int, depth_left: int | None) -> bool:
        """Whether state ``key`` was searched with no fewer faults and no less depth left."""
        ...

    def add(self, key: str, faults_left: int, depth_left: int | None) -> None:
        """Record that state ``key`` was searched to its end with what was left."""
        ...

    def claim(self, key: str) -> None:
        """Record that this process is searching state ``key`` now."""
        ...

    def claimed(self, key: str) -> bool:
        """Whether a process is searching state ``key`` (or searched it)."""
        ...

    def heard(self, progress: dict[str, Any]) -> None:
        """This process's progress (``ExhaustiveSearch.progress``), for a table that shows
        the whole search's."""
        ...

    def close(self) -> None:
        """This process is done with the table (what it holds back is sent first)."""
        ...


class SharesStates(Protocol):
    """What crosses to each process of a search to reach the shared table (it pickles)."""

    def attach(self, part: int) -> SharedStates | None:
        """The table, for the process searching as ``part``; None where it cannot be reached
        (that process searches on its own)."""
        ...


@dataclass(frozen=True, slots=True)
class SharedTable:
    """A ``SharedVisited`` table by name, for the processes of this machine."""

    name: str
    slots: int

    def attach(self, part: int) -> SharedVisited | None:
        """The table (``SharedVisited.attach``)."""
        return SharedVisited.attach(self.name, self.slots)


#: A shared entry: a mark byte (0: empty, 1: searched to its end, 2: claimed), the faults left,
#: the depth room (two bytes, 0xFFFF for none), the key's 16 bytes.
_SHARED_ENTRY = 20
_DONE, _CLAIMED = 1, 2
_SHARED_HEADER = 8
_NO_DEPTH = 0xFFFF
#: How far a lookup probes from a key's slot before it gives up (a full neighbourhood: the
#: state is searched again, never cut wrongly).
_PROBES = 32
#: The default number of slots: a million states at half load, 40 MB.
DEFAULT_SLOTS = 1 << 21


class SharedVisited:
    """A table of the states searched to their end, shared by the processes of one search
    (``create`` one, ``attach`` to it by ``name``). Writes take no lock: an entry is written
    key first and marked last, and a lookup compares the whole key, so a race costs at worst
    a state searched twice, never one cut wrongly; a full table stops taking entries. It also
    holds the flag a process raises to stop the others (``stop_at_first``)."""

    def __init__(self, memory: shared_memory.SharedMemory, slots: int) -> None:
        self._memory = memory
        buffer = memory.buf
        assert buffer is not None, "an open segment has a buffer"
        self._buffer: memoryview = buffer
        self.slots = slots
        self._mask = slots - 1
        self.name = memory.name

    @classmethod
    def create(cls, slots: int = DEFAULT_SLOTS) -> SharedVisited:
        """A new, empty table of ``slots`` entries (a power of two)."""
        if slots < 2 or slots & (slots - 1):
            raise ValueError(f"a table's slots are a power of two, not {slots}")
        memory = shared_memory.SharedMemory(
            create=True, size=_SHARED_HEADER + slots * _SHARED_ENTRY
        )
        return cls(memory, slots)

    @classmethod
    def attach(cls, name: str, slots: int) -> SharedVisited | None:
        """The table ``name`` made by another process of this machine; None when it is not
        here (a process on another machine of a cluster: it searches on its own)."""
        # Python before 3.13 registers an attached segment with the resource tracker, which
        # then unlinks it (or warns of a leak) when this process ends: the process that made
        # the table unlinks it, so attaching registers nothing (3.13's ``track=False``).
        register = resource_tracker.register
        resource_tracker.register = lambda name, rtype: None
        try:
            memory = shared_memory.SharedMemory(name=name)
        except (FileNotFoundError, OSError):
            return None
        finally:
            resource_tracker.register = register
        return cls(memory, slots)

    @property
    def stopped(self) -> bool:
        """Whether a process asked the others to stop."""
        return bool(self._buffer[0])

    def stop(self) -> None:
        """Ask every process searching with this table to stop."""
        self._buffer[0] = 1

    def _find(self, key: bytes) -> tuple[int, bool]:
        """The offset of ``key``'s entry (True), or of the empty slot it would take (False);
        -1 when neither is near."""
        buffer, mask = self._buffer, self._mask
        slot = int.from_bytes(key[:8], "little") & mask
        for _ in range(_PROBES):
            offset = _SHARED_HEADER + slot * _SHARED_ENTRY
            if not buffer[offset]:
                return offset, False
            if buffer[offset + 4 : offset + _SHARED_ENTRY] == key:
                return offset, True
            slot = (slot + 1) & mask
        return -1, False

    def covers(self, key: str, faults_left: int, depth_left: int | None) -> bool:
        """Whether state ``key`` was searched with no fewer faults and no less depth left."""
        offset, found = self._find(key_bytes(key))
        if not found or self._buffer[offset] != _DONE:
            return False
        buffer = self._buffer
        depth = int.from_bytes(buffer[offset + 2 : offset + 4], "little")
        return buffer[offset + 1] >= faults_left and (
            depth_left is None or (depth != _NO_DEPTH and depth >= depth_left)
        )

    def add(self, key: str, faults_left: int, depth_left: int | None) -> None:
        """Record that state ``key`` was searched to its end with ``faults_left`` and
        ``depth_left``."""
        raw = key_bytes(key)
        offset, found = self._find(raw)
        if offset < 0:
            return  # a full neighbourhood: the state stays this process's own
        buffer = self._buffer
        faults = min(faults_left, 254)
        depth = _NO_DEPTH if depth_left is None else min(max(depth_left, 0), _NO_DEPTH - 1)
        if found and buffer[offset] == _CLAIMED:
            buffer[offset + 1] = faults
            buffer[offset + 2 : offset + 4] = depth.to_bytes(2, "little")
            buffer[offset] = _DONE
            return
        if found:
            # Reached again with more left of both: the entry takes the new visit. An
            # incomparable one (more faults, less depth) is not merged into a visit no
            # process made: the entry keeps the first.
            held = int.from_bytes(buffer[offset + 2 : offset + 4], "little")
            room = -1 if depth == _NO_DEPTH else depth
            if faults >= buffer[offset + 1] and room >= (-1 if held == _NO_DEPTH else held):
                buffer[offset + 1] = faults
                buffer[offset + 2 : offset + 4] = depth.to_bytes(2, "little")
            return
        buffer[offset + 4 : offset + _SHARED_ENTRY] = raw
        buffer[offset + 1] = faults
        buffer[offset + 2 : offset + 4] = depth.to_bytes(2, "little")
        buffer[offset] = _DONE

    def claim(self, key: str) -> None:
        """Record that this process is searching state ``key`` now."""
        raw = key_bytes(key)
        offset, found = self._find(raw)
        if offset >= 0 and not found:
            self._buffer[offset + 4 : offset + _SHARED_ENTRY] = raw
            self._buffer[offset] = _CLAIMED

    def claimed(self, key: str) -> bool:
        """Whether a process is searching state ``key`` (or searched it)."""
        return self._find(key_bytes(key))[1]

    def heard(self, progress: dict[str, Any]) -> None:
        """Nothing: each process's progress comes back with its part."""

    def shipped(self) -> SharedTable:
        """What a process of this machine attaches to the table by."""
        return SharedTable(self.name, self.slots)

    def close(self, *, unlink: bool = False) -> None:
        """Let go of the table; the process that made it unlinks it (``unlink``)."""
        self._buffer.release()
        self._memory.close()
        if unlink:
            self._memory.unlink()
