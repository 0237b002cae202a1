"""The states the processes of one exhaustive search share: what each asks of the table
(``SharedStates``), and ``SharedVisited``, the table of one machine, in shared memory
(``simulation.cluster`` has a Dask cluster's). docs/decisions.md says how the processes share
("The exhaustive search in several processes").
"""

from __future__ import annotations

from dataclasses import dataclass
from hashlib import blake2b
from multiprocessing import resource_tracker, shared_memory
from typing import Any, Protocol


def key_bytes(key: str) -> bytes:
    """A key's 16 bytes: the 32 hex digits the search's keys are; any other text (a key of
    your own ``StateKeys``) hashed to 16."""
    if len(key) == 32:
        try:
            return bytes.fromhex(key)
        except ValueError:
            pass
    return blake2b(key.encode(), digest_size=16).digest()


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
