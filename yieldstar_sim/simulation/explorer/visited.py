"""The states an exhaustive search shares between its processes: a hash table of state keys in
shared memory, as multi-core model checkers share theirs (LTSmin's lockless table, its
"blue" marks of states searched to the end): each process searches the whole tree depth first
in an order of its own, and cuts a state another process has searched to its end.

An entry is a key's 16 bytes with the faults left and the depth room it was searched with; a
state is covered when it was searched with no fewer faults and no less depth left, the rule the
search's own cache keeps. Writes take no lock: an
entry is written key first and marked last, and two processes racing for one slot leave at
worst an entry no state has (a state searched twice, never one cut wrongly, as a lookup
compares the whole key). A full table stops taking entries: the processes then search more,
not less. It also holds a flag a process raises to stop the others (a violation found with
``stop_at_first``).

>>> table = SharedVisited.create(slots=64)
>>> key = "0123456789abcdef0123456789abcdef"
>>> table.covers(key, faults_left=1, depth_left=None)
False
>>> table.add(key, faults_left=1, depth_left=None)
>>> table.covers(key, faults_left=1, depth_left=None), table.covers(key, 2, None)
(True, False)
>>> table.close(unlink=True)
"""

from __future__ import annotations

from multiprocessing import resource_tracker, shared_memory

#: An entry: a mark byte (1: written), the faults left, the depth room (two bytes, 0xFFFF for
#: none), the key's 16 bytes.
_ENTRY = 20
_HEADER = 8
_NO_DEPTH = 0xFFFF
#: How far a lookup probes from a key's slot before it gives up (a full neighbourhood: the
#: state is searched again, never cut wrongly).
_PROBES = 32
#: The default number of slots: a million states at half load, 40 MB.
DEFAULT_SLOTS = 1 << 21


class SharedVisited:
    """A shared table of visited states (``create`` one, ``attach`` to it by ``name``)."""

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
        memory = shared_memory.SharedMemory(create=True, size=_HEADER + slots * _ENTRY)
        return cls(memory, slots)

    @classmethod
    def attach(cls, name: str, slots: int) -> SharedVisited | None:
        """The table ``name`` made by another process of this machine; None when it is not
        here (a process on another machine of a cluster: it searches on its own)."""
        # Python before 3.13 registers an attached segment with the resource tracker, which
        # then unlinks it (or warns of a leak) when this process ends: the process that made
        # the table unlinks it, so attaching registers nothing (3.13's ``track=False``).
        register = resource_tracker.register
        resource_tracker.register = _untracked  # type: ignore[assignment]
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
            offset = _HEADER + slot * _ENTRY
            if not buffer[offset]:
                return offset, False
            if buffer[offset + 4 : offset + _ENTRY] == key:
                return offset, True
            slot = (slot + 1) & mask
        return -1, False

    def covers(self, key: str, faults_left: int, depth_left: int | None) -> bool:
        """Whether state ``key`` was searched with no fewer faults and no less depth left."""
        offset, found = self._find(bytes.fromhex(key))
        if not found:
            return False
        buffer = self._buffer
        depth = int.from_bytes(buffer[offset + 2 : offset + 4], "little")
        return buffer[offset + 1] >= faults_left and (
            depth_left is None or (depth != _NO_DEPTH and depth >= depth_left)
        )

    def add(self, key: str, faults_left: int, depth_left: int | None) -> None:
        """Record that state ``key`` was searched to its end with ``faults_left`` and
        ``depth_left``."""
        raw = bytes.fromhex(key)
        offset, found = self._find(raw)
        if offset < 0:
            return  # a full neighbourhood: the state stays this process's own
        buffer = self._buffer
        faults = min(faults_left, 254)
        depth = _NO_DEPTH if depth_left is None else min(max(depth_left, 0), _NO_DEPTH - 1)
        if found:
            # Reached again with more left: the entry takes the larger (a cut needs no more).
            buffer[offset + 1] = max(buffer[offset + 1], faults)
            return
        buffer[offset + 4 : offset + _ENTRY] = raw
        buffer[offset + 1] = faults
        buffer[offset + 2 : offset + 4] = depth.to_bytes(2, "little")
        buffer[offset] = 1

    def close(self, *, unlink: bool = False) -> None:
        """Let go of the table; the process that made it unlinks it (``unlink``)."""
        self._buffer.release()
        self._memory.close()
        if unlink:
            self._memory.unlink()


def _untracked(name: str, rtype: str) -> None:
    """``resource_tracker.register`` while a table is attached: nothing."""
