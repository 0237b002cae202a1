"""The states the processes of one exhaustive search share: what each asks of the table
(``SharedStates``), and ``SharedVisited``, the table of one machine, in shared memory
(``simulation.cluster`` has a Dask cluster's). docs/decisions.md says how the processes share
("The exhaustive search in several processes").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from hashlib import blake2b
from multiprocessing import resource_tracker, shared_memory
from typing import TYPE_CHECKING, Any, Protocol

from yieldstar_sim.simulation.footprints import Footprint

if TYPE_CHECKING:
    from collections.abc import Iterable

    from yieldstar_sim.simulation.footprints import Thing
    from yieldstar_sim.simulation.persistent import Summary


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

    def add(
        self, key: str, faults_left: int, depth_left: int | None, filed: str | None = None
    ) -> None:
        """Record that state ``key`` was searched to its end with what was left, under
        ``filed`` where that is not its key: a state with a past is filed under its verdict
        key (``Execution.verdict_key``), and stands for another only with the same past."""
        ...

    def claim(self, key: str, filed: str | None = None) -> None:
        """Record that this process is searching state ``key`` now (and under ``filed``, its
        verdict key, where that is not its key)."""
        ...

    def summarised(self, summaries: Summaries | None) -> None:
        """Share with each state added what ``summaries`` knows whole of the runs below it
        (the process's ``Reduction``; None: nothing)."""
        ...

    def summary(self, key: str) -> Summary | None:
        """What the process that searched state ``key`` to its end shared of the runs below
        it (None: nothing known whole, or not heard yet)."""
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


class Summaries(Protocol):
    """Where a process's summaries of the states it searched are read (``Reduction``)."""

    def summary(self, key: str) -> Summary | None:
        """What is known whole of the runs below state ``key`` (None: nothing)."""
        ...


#: An entry's summary where it has none.
NO_SUMMARY = bytes(8)


def _sorted(things: Iterable[Thing]) -> list[list[str | None]]:
    return [list(thing) for thing in sorted(things, key=lambda t: (t[0], t[1] is None, t[1] or ""))]


def _things(found: list[list[str | None]]) -> frozenset[Thing]:
    return frozenset((str(kind), name) for kind, name in found)


class SummaryBook:
    """The reduction's summaries (``persistent.Summary``) a process shared or heard, by an
    8-byte digest of their text. They repeat (at 3 orders x 3 workers, 143 distinct over
    7,460 states searched), so an entry carries the digest and each summary's text travels
    once. The text is JSON of sorted things: the same summary has the same digest in every
    process, whatever the order its sets iterate in there."""

    def __init__(self) -> None:
        self._digests: dict[Summary, bytes] = {}
        self._summaries: dict[bytes, Summary] = {}
        self._texts: dict[bytes, bytes] = {}  # heard, not read yet

    def digest(self, summary: Summary) -> tuple[bytes, bytes | None]:
        """``summary``'s digest, and its text where it is new here (to be sent)."""
        found = self._digests.get(summary)
        if found is not None:
            return found, None
        instant, below, alone = summary
        text = json.dumps(
            [instant, _sorted(below), None if alone is None else
             [_sorted(alone.reads), _sorted(alone.writes)]],
            separators=(",", ":"),
        ).encode()  # fmt: skip
        digest = digest_of(text)
        self._digests[summary], self._summaries[digest] = digest, summary
        return digest, text

    def forget(self, summary: Summary) -> None:
        """``summary`` could not be sent: it is new again next time."""
        digest = self._digests.pop(summary, None)
        if digest is not None:
            self._summaries.pop(digest, None)

    def learn(self, digest: bytes, text: bytes) -> None:
        """Another process shared the summary ``text`` by ``digest``."""
        if digest not in self._summaries:
            self._texts.setdefault(digest, text)

    def summary(self, digest: bytes) -> Summary | None:
        """The summary shared by ``digest`` (None: not heard)."""
        found = self._summaries.get(digest)
        if found is None:
            text = self._texts.pop(digest, None)
            if text is None:
                return None
            instant, below, alone = json.loads(text)
            found = (
                instant, _things(below),
                None if alone is None else Footprint(_things(alone[0]), _things(alone[1])),
            )  # fmt: skip
            self._summaries[digest] = found
            self._digests.setdefault(found, digest)
        return found


def digest_of(text: bytes) -> bytes:
    """A summary's digest by its text (never ``NO_SUMMARY``)."""
    digest = blake2b(text, digest_size=8).digest()
    return digest if digest != NO_SUMMARY else b"\x01" + digest[1:]


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
        """The table (``SharedVisited.attach``), for the process searching as ``part``."""
        return SharedVisited.attach(self.name, self.slots, part)


#: A shared entry: a mark byte (0: empty, 1: searched to its end, 2: claimed), the faults left,
#: the depth room (two bytes, 0xFFFF for none), the key's 16 bytes, its summary's digest.
_SHARED_ENTRY = 28
_KEY, _DIGEST = slice(4, 20), slice(20, 28)
_DONE, _CLAIMED = 1, 2
_SHARED_HEADER = 8
_NO_DEPTH = 0xFFFF
#: How far a lookup probes from a key's slot before it gives up (a full neighbourhood: the
#: state is searched again, never cut wrongly).
_PROBES = 32
#: The default number of slots: a million states at half load, 56 MB (pages never written
#: take no memory).
DEFAULT_SLOTS = 1 << 21
#: The summaries' texts, after the entries: a region for each of the first ``_REGIONS``
#: processes, which only that process writes (so no lock): records of a digest, the text's
#: length (two bytes) and the text, the digest written last. A process past them, or whose
#: region is full, shares its states without their summaries.
_REGIONS = 16
_REGION = 1 << 20
_RECORD = 10


class SharedVisited:
    """A table of the states searched to their end, shared by the processes of one search
    (``create`` one, ``attach`` to it by ``name``), with the reduction's summary of each
    (``SummaryBook``). Writes take no lock: an entry is written key and digest first and
    marked last, and a lookup compares the whole key, so a race costs at worst a state
    searched twice, never one cut wrongly; a full table stops taking entries. A summary's
    record is read only where its text has the digest it is filed by, so one read while it
    is written is read again later. It also holds the flag a process raises to stop the
    others (``stop_at_first``)."""

    def __init__(self, memory: shared_memory.SharedMemory, slots: int, part: int | None) -> None:
        self._memory = memory
        buffer = memory.buf
        assert buffer is not None, "an open segment has a buffer"
        self._buffer: memoryview = buffer
        self.slots = slots
        self._mask = slots - 1
        self.name = memory.name
        self._regions = _SHARED_HEADER + slots * _SHARED_ENTRY
        self._region = part if part is not None and 0 <= part < _REGIONS else None
        self._written = 0  # in this process's region
        self._read = [0] * _REGIONS  # how far each region was read
        self._book = SummaryBook()
        self._summaries: Summaries | None = None

    @classmethod
    def create(cls, slots: int = DEFAULT_SLOTS) -> SharedVisited:
        """A new, empty table of ``slots`` entries (a power of two)."""
        if slots < 2 or slots & (slots - 1):
            raise ValueError(f"a table's slots are a power of two, not {slots}")
        memory = shared_memory.SharedMemory(
            create=True, size=_SHARED_HEADER + slots * _SHARED_ENTRY + _REGIONS * _REGION
        )
        return cls(memory, slots, None)

    @classmethod
    def attach(cls, name: str, slots: int, part: int | None = None) -> SharedVisited | None:
        """The table ``name`` made by another process of this machine, for the process
        searching as ``part``; None when it is not here (a process on another machine of a
        cluster: it searches on its own)."""
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
        return cls(memory, slots, part)

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
            if buffer[offset + 4 : offset + 20] == key:
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

    def add(
        self, key: str, faults_left: int, depth_left: int | None, filed: str | None = None
    ) -> None:
        """Record that state ``key`` was searched to its end with ``faults_left`` and
        ``depth_left``, with what this process knows whole of the runs below it, under
        ``filed`` where that is not its key (its verdict key)."""
        raw = key_bytes(key if filed is None else filed)
        offset, found = self._find(raw)
        if offset < 0:
            return  # a full neighbourhood: the state stays this process's own
        buffer = self._buffer
        faults = min(faults_left, 254)
        depth = _NO_DEPTH if depth_left is None else min(max(depth_left, 0), _NO_DEPTH - 1)
        summary = None if self._summaries is None else self._summaries.summary(key)
        at = slice(offset + _DIGEST.start, offset + _DIGEST.stop)
        if found and buffer[offset] == _CLAIMED:
            buffer[at] = self._filed(summary)
            buffer[offset + 1] = faults
            buffer[offset + 2 : offset + 4] = depth.to_bytes(2, "little")
            buffer[offset] = _DONE
            return
        if found:
            # Reached again with more left of both: the entry takes the new visit, its summary
            # first (read with the old visit's budget it says more, never less, than that
            # visit's runs). An incomparable one (more faults, less depth) is not merged into
            # a visit no process made: the entry keeps the first.
            held = int.from_bytes(buffer[offset + 2 : offset + 4], "little")
            room = -1 if depth == _NO_DEPTH else depth
            if faults >= buffer[offset + 1] and room >= (-1 if held == _NO_DEPTH else held):
                buffer[at] = self._filed(summary)
                buffer[offset + 1] = faults
                buffer[offset + 2 : offset + 4] = depth.to_bytes(2, "little")
            return
        buffer[offset + 4 : offset + 20] = raw
        buffer[at] = self._filed(summary)
        buffer[offset + 1] = faults
        buffer[offset + 2 : offset + 4] = depth.to_bytes(2, "little")
        buffer[offset] = _DONE

    def claim(self, key: str, filed: str | None = None) -> None:
        """Record that this process is searching state ``key`` now (and under ``filed``, its
        verdict key, where that is not its key)."""
        raws = [key_bytes(key)]
        if filed is not None and filed != key:  # as DaskVisited.claim: each key once
            raws.append(key_bytes(filed))
        for raw in raws:
            offset, found = self._find(raw)
            if offset >= 0 and not found:
                self._buffer[offset + 4 : offset + 20] = raw
                self._buffer[offset] = _CLAIMED

    def claimed(self, key: str) -> bool:
        """Whether a process is searching state ``key`` (or searched it)."""
        return self._find(key_bytes(key))[1]

    def summarised(self, summaries: Summaries | None) -> None:
        """Share with each state added what ``summaries`` knows whole of it."""
        self._summaries = summaries

    def summary(self, key: str) -> Summary | None:
        """What the process that searched state ``key`` to its end shared of it."""
        offset, found = self._find(key_bytes(key))
        if not found or self._buffer[offset] != _DONE:
            return None
        digest = bytes(self._buffer[offset + _DIGEST.start : offset + _DIGEST.stop])
        if digest == NO_SUMMARY:
            return None
        summary = self._book.summary(digest)
        if summary is None:
            self._read_regions()
            summary = self._book.summary(digest)
        return summary

    def _filed(self, summary: Summary | None) -> bytes:
        """``summary``'s digest, its text written to this process's region first where it
        is new (``NO_SUMMARY``: none, or no room for it)."""
        if summary is None or self._region is None:
            return NO_SUMMARY
        digest, text = self._book.digest(summary)
        if text is None:
            return digest
        start = self._regions + self._region * _REGION + self._written
        if self._written + _RECORD + len(text) > _REGION or len(text) > 0xFFFF:
            self._book.forget(summary)
            return NO_SUMMARY
        buffer = self._buffer
        buffer[start + 8 : start + _RECORD] = len(text).to_bytes(2, "little")
        buffer[start + _RECORD : start + _RECORD + len(text)] = text
        buffer[start : start + 8] = digest
        self._written += _RECORD + len(text)
        return digest

    def _read_regions(self) -> None:
        """Learn the summaries the other processes filed since they were last read."""
        buffer = self._buffer
        for region in range(_REGIONS):
            if region == self._region:
                continue
            base, at = self._regions + region * _REGION, self._read[region]
            while at + _RECORD <= _REGION:
                digest = bytes(buffer[base + at : base + at + 8])
                size = int.from_bytes(buffer[base + at + 8 : base + at + _RECORD], "little")
                if digest == NO_SUMMARY or at + _RECORD + size > _REGION:
                    break
                text = bytes(buffer[base + at + _RECORD : base + at + _RECORD + size])
                if digest_of(text) != digest:
                    break  # being written: read again later
                self._book.learn(digest, text)
                at += _RECORD + size
            self._read[region] = at

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
