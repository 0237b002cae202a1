"""The visited states of one exhaustive search on a Dask cluster, partitioned by fingerprint over
the workers: each partition a Dask actor on the worker that owns it (``VisitedPartition``), and
the table as one process of the search sees it (``DaskVisited``, a ``SharedStates``), which
sends the states it searched in batches and hears the others'. ``simulation.cluster`` places
the partitions and the processes; docs/decisions.md says why ("The exhaustive search on a
Dask cluster").
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.shared_states import NO_SUMMARY, SummaryBook, key_bytes

if TYPE_CHECKING:
    import concurrent.futures
    from collections.abc import Callable

    from yieldstar_sim.simulation.persistent import Summary
    from yieldstar_sim.simulation.shared_states import Summaries

#: An entry sent to a partition: the key's 16 bytes, its kind, the faults left, the depth room
#: (0xFFFF: unbounded), the digest of the reduction's summary of the state (``SummaryBook``).
_ENTRY = struct.Struct("<16sBBH8s")
_SIZE = _ENTRY.size
_UNBOUNDED = 0xFFFF
#: An entry's kind: searched to its end (0), or a claim (a process is searching it), of a state
#: by its key, or ``_FILED``, of a state with a past by its verdict key, which is no state of
#: its own: a partition counts the states by their keys, as the statement does.
_CLAIM, _FILED = 1, 2
#: How often a process sends the states it searched and hears the others' (seconds), and how
#: many it holds back at most before it sends them anyway.
EXCHANGE_SECONDS = 0.1
EXCHANGE_BATCH = 8192
#: How long a process waits for a partition's answer before it takes the partition for lost,
#: its worker still in the cluster (a worker that left is known lost at once: ``answer``).
ANSWER_SECONDS = 60.0
#: How long a process waits for an answer before it asks whether the partition's worker is
#: still in the cluster, and between two askings (seconds).
LOOK_SECONDS = 1.0


class PartitionLost(RuntimeError):
    """A partition of the visited states is lost: its worker left the cluster, or did not
    answer in ``ANSWER_SECONDS``."""


#: What a scheduler of Dask 2021.05 to 2023.12.0 answers ``run_on_scheduler`` with (a
#: ``ValueError`` naming this setting) when ``distributed.scheduler.pickle`` is off: it runs no
#: function sent to it, and still schedules tasks. Dask 2023.12.1 removed the setting (a
#: scheduler given it refuses to start): pickle on the scheduler can no longer be turned off.
PICKLE_SETTING = "distributed.scheduler.pickle"


def _addresses(dask_scheduler: Any) -> list[str]:
    return list(dask_scheduler.workers)


def workers_in(client: Any) -> list[str]:
    """The workers in ``client``'s cluster now, as its scheduler has them. Not
    ``client.scheduler_info()``: it asks the scheduler, then returns the client's copy of
    the answer, which the client's own refresh (every 2 s, asking for no workers) may have
    replaced in between; a loaded machine read every worker gone, and a search on it ended
    saying both its workers left mid-search.

    A scheduler that runs no function sent to it (``PICKLE_SETTING`` off) is asked for its
    identity instead, in Dask's own messages, which need no pickle: an answer of its own, not
    the client's shared copy. A scheduler that cannot import the function (yieldstar_sim is
    not installed beside it) is refused with a ``ValueError`` that says so: it could not read
    the search's tasks either."""
    try:
        return list(client.run_on_scheduler(_addresses))
    except ImportError as missing:
        address = getattr(client.scheduler, "address", "?")
        raise ValueError(
            f"the Dask scheduler at {address!r} cannot import yieldstar_sim ({missing}): "
            "install yieldstar-sim[dask] beside the scheduler too, as on every worker"
        ) from None
    except ValueError as refused:
        if PICKLE_SETTING not in str(refused):
            raise
    return list(client.sync(client.scheduler.identity)["workers"])


def in_cluster(worker: str) -> bool:
    """Whether ``worker`` is in the cluster, as its scheduler says (asked from a worker's
    task, by the worker's client)."""
    from distributed import get_client

    return worker in workers_in(get_client())


def answer(future: Any, index: int, worker: str) -> Any:
    """Partition ``index``'s answer, ``future``'s result: waited for while the partition's
    ``worker`` is in the cluster (``ANSWER_SECONDS`` at most), a ``PartitionLost`` once the
    scheduler says it left. Dask leaves a call to an actor whose worker died unanswered for
    good (the call waits for the actor to be made again, and is dropped when it is
    released): the process that made it waited a minute, holding its worker from the next
    search. A slow answer from a worker still there is waited for."""
    deadline = time.monotonic() + ANSWER_SECONDS
    while True:
        with contextlib.suppress(TimeoutError):
            return future.result(timeout=LOOK_SECONDS)
        if not in_cluster(worker):
            raise PartitionLost(
                f"partition {index} of the visited states is lost: its worker {worker} left "
                "the cluster"
            )
        if time.monotonic() >= deadline:
            raise PartitionLost(
                f"partition {index} of the visited states did not answer in "
                f"{ANSWER_SECONDS:g}s: its worker is lost"
            )


def _owner(raw: bytes, partitions: int) -> int:
    # Not the bytes a table's slot is found by (its first eight), so that a partition's
    # keys still spread over its slots.
    return int.from_bytes(raw[8:12], "little") % partitions


#: A visit as a partition and a process keep it: the faults left, the depth room, the digest
#: of its summary.
Visit = tuple[int, int, bytes]


def _dominates(new: Visit, faults: int, depth: int) -> bool:
    """Whether a visit with ``new`` left covers one with ``faults`` and ``depth`` left."""
    return new[0] >= faults and new[1] >= depth


def _says_more(new: Visit, held: Visit | None) -> bool:
    """Whether a visit ``new`` is worth keeping over ``held`` (none, or one it covers with
    more left, or with as much and a summary where it had none): the one rule a partition and
    a process merge entries by."""
    if held is None:
        return True
    if not _dominates(new, held[0], held[1]):
        return False
    return new[:2] != held[:2] or (new[2] != NO_SUMMARY and held[2] == NO_SUMMARY)


class VisitedPartition:
    """One partition of a search's visited states: a Dask actor on the worker that owns the
    keys it holds. Partition 0 also holds the search's stop flag, counts each process's
    starts (a second start: its worker died and Dask ran it again) and keeps each one's
    progress."""

    def __init__(self) -> None:
        self._table: dict[bytes, Visit] = {}
        self._claims: set[bytes] = set()
        # (the part that sent it, entries kept, summaries' texts by digest)
        self._batches: list[tuple[int, bytes, dict[bytes, bytes]]] = []
        self.stopped = False
        self._starts: dict[int, int] = {}
        self._progress: dict[int, dict[str, Any]] = {}
        self._bytes = 0  # entries received and sent back
        self._states = 0  # keys held, claimed or searched

    async def begin(self, part: int) -> int:
        """Process ``part`` starts: how many times it started, this one included."""
        self._starts[part] = self._starts.get(part, 0) + 1
        return self._starts[part]

    async def exchange(
        self,
        part: int,
        entries: bytes,
        since: int,
        progress: dict[str, Any] | None,
        texts: dict[bytes, bytes] | None = None,
    ) -> tuple[bytes, dict[bytes, bytes], int, bool]:
        """Keep what ``entries`` (from process ``part``, with the texts of the summaries it
        had not sent before) say more than the table holds, and return the entries and texts
        other processes sent since batch ``since``, the batch to ask from next time, and
        whether the search was asked to stop."""
        table, kept = self._table, bytearray()
        for offset in range(0, len(entries), _SIZE):
            raw, kind, faults, depth, digest = _ENTRY.unpack_from(entries, offset)
            state = not kind & _FILED
            if kind & _CLAIM:
                if raw in table or raw in self._claims:
                    continue
                self._claims.add(raw)
                self._states += state
                kept += entries[offset : offset + _SIZE]
                continue
            held = table.get(raw)
            if _says_more((faults, depth, digest), held):
                self._states += state and held is None and raw not in self._claims
                table[raw] = (faults, depth, digest)
                kept += entries[offset : offset + _SIZE]
        if kept or texts:
            self._batches.append((part, bytes(kept), texts or {}))
        if progress is not None:
            self._progress[part] = progress
        others = [(batch, said) for sender, batch, said in self._batches[since:] if sender != part]
        news = b"".join(batch for batch, _ in others)
        told = {digest: text for _, said in others for digest, text in said.items()}
        self._bytes += len(entries) + len(news) + _weight(texts) + _weight(told)
        return news, told, len(self._batches), self.stopped

    async def stop(self) -> None:
        """Ask every process to stop (at its next exchange)."""
        self.stopped = True

    async def summary(self) -> tuple[int, int, dict[int, dict[str, Any]]]:
        """The states this partition holds (claimed or searched), the bytes of entries it
        received and sent, and each process's last progress."""
        return self._states, self._bytes, dict(self._progress)


class DaskVisited:
    """The shared table as one process of the search sees it (a ``SharedStates``): the
    states the others searched, as heard so far, and what it holds back to send."""

    def __init__(self, partitions: list[Any], part: int, workers: list[str]) -> None:
        self._partitions, self._part, self._workers = partitions, part, workers
        self._heard: dict[bytes, Visit] = {}
        self._claims: set[bytes] = set()
        self._out = [bytearray() for _ in partitions]
        self._texts: list[dict[bytes, bytes]] = [{} for _ in partitions]
        self._book = SummaryBook()
        self._summaries: Summaries | None = None
        self._held = 0
        self._since = [0] * len(partitions)
        self._flight: list[Any] = []
        self._due = time.monotonic() + EXCHANGE_SECONDS
        self._stopped = False
        self._progress: dict[str, Any] | None = None
        self._exchanges, self._seconds = 0, 0.0

    @property
    def stopped(self) -> bool:
        """Whether a process asked the others to stop (as heard at the last exchange)."""
        self._tick()
        return self._stopped

    def stop(self) -> None:
        """Ask every process to stop."""
        self._stopped = True
        answer(self._partitions[0].stop(), 0, self._workers[0])

    def covers(self, key: str, faults_left: int, depth_left: int | None) -> bool:
        """Whether another process searched state ``key`` (or a state with a past by its
        verdict key) with no fewer faults and no less depth left (as heard so far)."""
        self._tick()
        held = self._heard.get(key_bytes(key))
        return held is not None and _dominates(held, faults_left, _room(depth_left))

    def add(
        self, key: str, faults_left: int, depth_left: int | None, filed: str | None = None
    ) -> None:
        """Send, with the next batch, that state ``key`` was searched to its end, with what
        this process knows whole of the runs below it, under ``filed`` where it is not its
        key (its verdict key: the state has a past)."""
        kind = 0 if filed is None or filed == key else _FILED
        raw = key_bytes(key if kind == 0 else str(filed))
        summary = None if self._summaries is None else self._summaries.summary(key)
        digest = NO_SUMMARY
        if summary is not None:
            digest, text = self._book.digest(summary)
            if text is not None:  # new: it travels once, with the first entry that has it
                self._texts[_owner(raw, len(self._out))][digest] = text
        self._send(raw, kind, min(faults_left, 0xFF), _room(depth_left), digest)

    def claim(self, key: str, filed: str | None = None) -> None:
        """Send, with the next batch, that this process is searching state ``key``, and under
        ``filed`` too where it is not its key (its verdict key)."""
        self._send(key_bytes(key), _CLAIM, 0, 0, NO_SUMMARY)
        if filed is not None and filed != key:
            self._send(key_bytes(filed), _CLAIM | _FILED, 0, 0, NO_SUMMARY)

    def summarised(self, summaries: Summaries | None) -> None:
        """Share with each state added what ``summaries`` knows whole of it."""
        self._summaries = summaries

    def summary(self, key: str) -> Summary | None:
        """What the process that searched state ``key`` to its end shared of it (as heard)."""
        held = self._heard.get(key_bytes(key))
        return None if held is None or held[2] == NO_SUMMARY else self._book.summary(held[2])

    def claimed(self, key: str) -> bool:
        """Whether another process is searching state ``key`` or searched it (as heard)."""
        raw = key_bytes(key)
        return raw in self._claims or raw in self._heard

    def _send(self, raw: bytes, kind: int, faults: int, depth: int, digest: bytes) -> None:
        self._out[_owner(raw, len(self._out))] += _ENTRY.pack(raw, kind, faults, depth, digest)
        self._held += 1
        if self._held >= EXCHANGE_BATCH:
            self._exchange()
        else:
            self._tick()

    def heard(self, progress: dict[str, Any]) -> None:
        """This process's progress, sent with the next batch (with the exchanges so far and
        the seconds they took this process)."""
        self._progress = {
            **progress, "exchanges": self._exchanges, "exchange_seconds": self._seconds
        }  # fmt: skip

    def close(self) -> None:
        """Send what is held back, with the last progress, and wait for the answers."""
        self._exchange()
        self._collect()
        self.heard(self._progress or {})  # the exchanges counted whole
        self._exchange()
        self._collect()

    def _tick(self) -> None:
        if time.monotonic() >= self._due:
            self._exchange()
        elif self._flight and all(future.done() for future in self._flight):
            # Heard as soon as the answers are in, not at the next exchange: what the others
            # searched reaches the search a round sooner.
            began = time.perf_counter()
            self._collect()
            self._seconds += time.perf_counter() - began

    def _exchange(self) -> None:
        # The answers to the last batches have long arrived: collecting them does not wait,
        # and the search goes on while these travel.
        began = time.perf_counter()
        self._exchanges += 1
        self._collect()
        self._flight = [
            partition.exchange(
                self._part, bytes(out), since, self._progress if index == 0 else None, texts
            )
            for index, (partition, out, since, texts) in enumerate(
                zip(self._partitions, self._out, self._since, self._texts, strict=True)
            )
        ]
        self._out = [bytearray() for _ in self._partitions]
        self._texts = [{} for _ in self._partitions]
        self._held = 0
        self._due = time.monotonic() + EXCHANGE_SECONDS
        self._seconds += time.perf_counter() - began

    def _collect(self) -> None:
        heard = self._heard
        for index, future in enumerate(self._flight):
            news, told, self._since[index], stopped = answer(future, index, self._workers[index])
            self._stopped = self._stopped or stopped
            for digest, text in told.items():
                self._book.learn(digest, text)
            for offset in range(0, len(news), _SIZE):
                raw, kind, faults, depth, digest = _ENTRY.unpack_from(news, offset)
                if kind & _CLAIM:
                    self._claims.add(raw)
                    continue
                if _says_more((faults, depth, digest), heard.get(raw)):
                    heard[raw] = (faults, depth, digest)
        self._flight = []


def _weight(texts: dict[bytes, bytes] | None) -> int:
    """The bytes of summaries' texts with their digests."""
    return 0 if not texts else sum(8 + len(text) for text in texts.values())


def _room(depth_left: int | None) -> int:
    return _UNBOUNDED if depth_left is None else min(max(depth_left, 0), _UNBOUNDED - 1)


class PartRunAgain(RuntimeError):
    """A process of the search started a second time: Dask ran it again after its worker
    died, and what the first run searched is lost."""


@dataclass(frozen=True)
class DaskTable:
    """What crosses to each process to reach the partitions (a ``SharesStates``)."""

    partitions: tuple[Any, ...]
    workers: tuple[str, ...]
    """The worker each partition is on."""

    def attach(self, part: int) -> DaskVisited:
        """The table for process ``part``, which must be its first start."""
        starts = answer(self.partitions[0].begin(part), 0, self.workers[0])
        if starts > 1:
            raise PartRunAgain(
                f"part {part} was started {starts} times: its first worker died mid-search"
            )
        partitions = [
            _here(partition, worker) or partition
            for partition, worker in zip(self.partitions, self.workers, strict=True)
        ]
        return DaskVisited(partitions, part, list(self.workers))


class _Here:
    """A partition on the worker this process runs on, called on the worker's event loop as
    its actor's calls run there, without the actor's round trip (through the actor, the
    worker's client pickled each call and sent it over TCP to the worker's own server, which
    read it back: twice the work, on the one loop that also serves the other processes')."""

    def __init__(self, partition: VisitedPartition, loop: asyncio.AbstractEventLoop) -> None:
        self._partition, self._loop = partition, loop

    def __getattr__(self, name: str) -> Callable[..., concurrent.futures.Future[Any]]:
        """The partition's method ``name``, run on the worker's loop: its answer's future."""
        method = getattr(self._partition, name)
        return lambda *args: asyncio.run_coroutine_threadsafe(method(*args), self._loop)


def _here(partition: Any, worker: str) -> _Here | None:
    """``partition`` (an actor) as a ``_Here`` where it lives on the worker running this
    task (Dask keeps a worker's actors by key, as its own calls between actors of one worker
    find them), else None."""
    try:
        from distributed import get_worker

        here = get_worker()
        found = here.state.actors.get(partition.key) if here.address == worker else None
    except (ImportError, ValueError, AttributeError):  # not on a worker, or another Dask
        return None
    if not isinstance(found, VisitedPartition):
        return None
    return _Here(found, here.loop.asyncio_loop)  # type: ignore[attr-defined]
