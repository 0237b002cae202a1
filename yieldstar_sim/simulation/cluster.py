"""The exhaustive search on a Dask cluster: one process a worker, each searching the whole tree
in an order of its own (``exhaustive.search_part``), sharing the states searched to their end
through a visited table partitioned by fingerprint over the workers, each partition a Dask
actor on the worker that owns it. docs/decisions.md says why the search is shaped so, and what
TLC does differently ("The exhaustive search on a Dask cluster").

A process sends the states it searched, in batches, to the partitions that own them, which
keep those that say more than what they hold and drop the rest; it hears back what the others
sent, and cuts those states when it reaches them (``simulation.dask_visited``). Sharing only
spares work: a process cuts a state only once another searched it to its end, so a batch that
arrives late costs time, never a state. A worker that dies takes its partition with it: the
search says what was lost and claims nothing (``StopReason.LOST``).

Needs the ``dask`` extra (``pip install "yieldstar-sim[dask]"``), imported only here and only
when a cluster is asked for.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any, Protocol

from yieldstar_sim.engine.worker import frozen_heap
from yieldstar_sim.simulation.dask_visited import DaskTable, VisitedPartition, workers_in

if TYPE_CHECKING:
    import concurrent.futures
    from collections.abc import Callable, Iterator

    from yieldstar_sim.simulation.explorer.exhaustive import Part

#: How long the client waits for the other processes to stop once one failed (seconds).
STOP_SECONDS = 5.0
#: How often the client reads the whole search's progress from the partitions (seconds).
WATCH_SECONDS = 0.5
#: How long ``connect`` waits for a scheduler to answer, and for its first worker (seconds).
CONNECT_SECONDS = 10.0
#: Dask's setting of how a nanny starts its worker's process.
START_METHOD = "distributed.worker.multiprocessing-method"
#: Dask's setting of whether a worker samples its threads' stacks for its dashboard.
PROFILER = "distributed.worker.profile.enabled"
#: Dask's setting of how often each server (the scheduler, a nanny, a worker) measures how
#: late its event loop runs, and how often ``local:N``'s servers do.
TICK = "distributed.admin.tick.interval"
LOCAL_TICK = "1s"
#: The deadline watchdog's thread (``simulation.deadline``).
_WATCHDOG = "yieldstar-deadline"


class DaskClient(Protocol):
    """What the search needs of a ``distributed.Client``."""

    def submit(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``func`` on a worker (or make an actor there, with ``actor=True``)."""
        ...

    def run_on_scheduler(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``function(dask_scheduler=the scheduler)``, run on the scheduler."""
        ...

    def get_executor(self, **kwargs: Any) -> Any:
        """The client as a ``concurrent.futures.Executor``."""
        ...

    def gather(self, futures: list[Any]) -> list[Any]:
        """The results of ``futures``, fetched together."""
        ...

    def wait_for_workers(self, n_workers: int, timeout: float | None = None) -> None:
        """Wait until the cluster has ``n_workers`` (``TimeoutError`` after ``timeout``)."""
        ...

    @property
    def scheduler(self) -> Any:
        """The scheduler, as the client reaches it (its ``address``)."""
        ...


def on_dask(
    executor: concurrent.futures.Executor | DaskClient | None,
) -> tuple[concurrent.futures.Executor | None, DaskClient | None]:
    """What ``explore(executor=)`` was given, as the executor that runs schedules and, where
    it is a Dask client, the client (the exhaustive search then runs on its cluster)."""
    if type(executor).__module__.split(".")[0] == "distributed" and hasattr(
        executor, "get_executor"
    ):
        client: DaskClient = executor  # type: ignore[assignment]
        return client.get_executor(), client
    return executor, None  # type: ignore[return-value]


@contextlib.contextmanager
def connect(address: str) -> Iterator[DaskClient]:
    """A Dask client: of a new ``LocalCluster`` of N worker processes (one thread each) for
    ``"local:N"``, else of the scheduler at ``address`` (``"tcp://host:8786"``). Closed (and
    the local cluster with it) on leaving."""
    try:
        import distributed
    except ImportError:
        raise ValueError(
            'a Dask cluster needs the dask extra: pip install "yieldstar-sim[dask]"'
        ) from None
    if address.startswith("local:"):
        count = address.removeprefix("local:")
        if not count.isdigit() or int(count) < 1:
            raise ValueError(
                f"a local Dask cluster is local:N, N worker processes (N >= 1), not {address!r}"
            )
        import dask

        # Spawned, each worker started an interpreter, imported Dask, then imported this
        # package at its first task, which took longer than a small search (docs/cluster.md).
        # Forked from this process, which has imported both, they are ready at once. The
        # heap is frozen as for ``--jobs``'s forks. Dask's profiler is off on these workers:
        # it walks every thread's stack from the worker's loop every 10 ms, taking the
        # interpreter lock from the search, for a dashboard page of a cluster that lives for
        # one command (decisions.md); a cluster of your own keeps its settings. Each server
        # also measures its loop's lateness 50 times a second, for a warning past 3 s: the
        # scheduler and the nannies in this process, and each worker beside its search. Once
        # a second still warns of a loop held up for seconds.
        settings = {START_METHOD: start_method(), PROFILER: False, TICK: LOCAL_TICK}
        with dask.config.set(settings), frozen_heap():
            cluster = distributed.LocalCluster(  # type: ignore[no-untyped-call]
                n_workers=int(count), processes=True, threads_per_worker=1,
                dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR,
            )  # fmt: skip
        with cluster, distributed.Client(cluster) as client:  # type: ignore[no-untyped-call]
            yield client
        return
    try:
        _handshake(address, CONNECT_SECONDS)
        client = distributed.Client(address, timeout=CONNECT_SECONDS)  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError, ValueError) as error:
        raise ValueError(
            f"cannot reach the Dask scheduler at {address!r} ({error}); start one with "
            "`dask scheduler`, or give local:N for a cluster of N processes on this machine"
        ) from None
    with client:
        workers_of(client, address)
        yield client


def start_method() -> str:
    """How ``local:N`` starts its workers' processes: as Dask's setting says, but forked from
    this process where the setting is Dask's default (spawn), the platform forks safely
    (Linux; macOS's system libraries do not survive a fork), and this process runs no thread
    but its main one and the deadline watchdog, which a forked child replaces with its own
    (the command's case). Another thread (a notebook's, a test suite's earlier clusters') may
    hold a lock at the fork that the worker then waits on for good: in the test suite, a
    worker forked so never came free after a search that lost the other worker, in half the
    runs."""
    import dask

    method = str(dask.config.get(START_METHOD))
    main = threading.main_thread()
    alone = all(t is main or t.name == _WATCHDOG for t in threading.enumerate())
    return "fork" if method == "spawn" and sys.platform == "linux" and alone else method


def workers_of(client: DaskClient, address: str | None = None) -> list[str]:
    """The cluster's workers by address, waiting ``CONNECT_SECONDS`` for a first one where it
    has none; a ``ValueError`` that says so where none came (the scheduler at ``address``, by
    default the client's)."""
    workers = workers_in(client)
    if not workers:
        address = address or str(client.scheduler.address)
        try:
            client.wait_for_workers(1, timeout=CONNECT_SECONDS)
        except TimeoutError:
            # Else a search waits for a worker forever, saying nothing (every strategy but
            # the exhaustive one submits its schedules and waits for their answers).
            raise ValueError(
                f"the Dask scheduler at {address!r} has no workers (none came in "
                f"{CONNECT_SECONDS:g}s): start some with `dask worker {address}`"
            ) from None
        workers = workers_in(client)
    return sorted(workers)


def _handshake(address: str, seconds: float) -> None:
    """Raise ``OSError`` unless something listens at ``address`` (Dask tries ``seconds``), and
    ``TimeoutError`` unless it then answers Dask's handshake. ``distributed.Client`` waits for
    that answer with no deadline: on a port that accepts a connection and never answers as
    Dask does (the dashboard's, 8787), forever."""
    import asyncio
    import concurrent.futures

    from distributed.comm.addressing import parse_address
    from distributed.comm.core import connect as dask_connect

    if parse_address(address)[0] != "tcp":
        return  # tls:// needs the client's security settings: left to the client

    async def shake() -> None:
        # Dask's own deadline is for the connection (one refused is tried again until then);
        # this one, later, for the answer.
        try:
            answered = dask_connect(address, timeout=seconds)  # type: ignore[no-untyped-call]
            comm = await asyncio.wait_for(answered, seconds * 1.5)
        except TimeoutError:
            raise TimeoutError(
                "something there accepted the connection but did not answer as a Dask "
                "scheduler: give the scheduler's port (8786 by default), not the dashboard's "
                "(8787)"
            ) from None
        await comm.close()

    # In a thread of its own: this one may be running an event loop (a notebook's).
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, shake()).result()


class DaskCluster:
    """A Dask cluster that an exhaustive search runs on (an ``exhaustive.Cluster``): one
    process, and one partition of the visited states, a worker."""

    name = "Dask workers"

    def __init__(self, client: DaskClient) -> None:
        self.client = client
        self.workers = workers_of(client)
        """The workers the search runs on, one process each: those the cluster has now
        (``workers_of``: a ``ValueError`` where it has none). Read once, so that the count
        of processes the statement gives is of the processes that searched: a worker that
        joins later is not used, and one that leaves is lost."""
        self.figures: dict[str, Any] = {}
        """What sharing cost the last search: bytes of entries the partitions received and
        sent, exchanges, and the seconds the processes spent in them."""

    def processes(self) -> int:
        """How many processes search: one a worker."""
        return len(self.workers)

    def search(
        self,
        task: Callable[..., Part],
        watch: Callable[[dict[str, Any]], None] | None,
        *,
        share: bool,
    ) -> tuple[list[Part], list[str]]:
        """Run ``task(part=, table=)`` on every worker, sharing a new table of partitions
        (with ``share``); the parts that came back, and what was lost."""
        client, workers = self.client, self.workers
        search = uuid.uuid4().hex[:8]
        actors: list[Any] = []
        partitions: list[Any] = []
        futures: list[Any] = []
        try:
            if share:
                actors = [
                    client.submit(VisitedPartition, actor=True, workers=[worker], pure=False,
                                  key=f"yieldstar-visited-{search}-{index}")
                    for index, worker in enumerate(workers)
                ]  # fmt: skip
                if gone := self._placed(actors, workers):
                    return [], [
                        f"worker {worker} left the cluster as the search began" for worker in gone
                    ]
                partitions = [actor.result() for actor in actors]
            table = DaskTable(tuple(partitions), tuple(workers)) if share else None
            futures = [
                client.submit(task, part=index, table=table, workers=[worker], pure=False,
                              allow_other_workers=True, key=f"yieldstar-part-{search}-{index}")
                for index, worker in enumerate(workers)
            ]  # fmt: skip
            return self._gather(futures, workers, partitions, watch)
        except BaseException:
            _stop(partitions)
            for future in futures:
                future.cancel()
            raise
        finally:
            for actor in actors:
                actor.release()

    def _placed(self, actors: list[Any], workers: list[str]) -> list[str]:
        """Wait until the partitions' actors are made; the workers that left the cluster
        before (an actor waits for the worker it is pinned to: for one gone, forever)."""
        from distributed import wait

        pending = set(actors)
        while pending:
            with contextlib.suppress(TimeoutError):  # a worker busy still: is it there?
                wait(pending, timeout=WATCH_SECONDS)  # type: ignore[no-untyped-call]
            pending = {actor for actor in pending if not actor.done()}
            if gone := self._gone(workers):
                return gone
        return []

    def _gone(self, workers: list[str]) -> list[str]:
        """Those of ``workers`` no longer in the cluster."""
        here = workers_in(self.client)
        return [worker for worker in workers if worker not in here]

    def _gather(
        self,
        futures: list[Any],
        workers: list[str],
        partitions: list[Any],
        watch: Callable[[dict[str, Any]], None] | None,
    ) -> tuple[list[Part], list[str]]:
        from distributed import wait

        started, pending = time.perf_counter(), set(futures)
        gone: list[str] = []
        got: dict[str, Any] | None = None
        came: dict[Any, Part] = {}
        while pending:
            with contextlib.suppress(TimeoutError):  # nothing ended: read the progress
                wait(pending, timeout=WATCH_SECONDS, return_when="FIRST_COMPLETED")  # type: ignore[no-untyped-call]
            pending = {future for future in pending if not future.done()}
            gone = self._gone(workers)
            if gone or any(future.status == "error" for future in futures):
                # A worker died (its partition with it) or a part failed: nothing the others
                # find can be claimed. They are told to stop. Where a part failed, the others
                # hear it within an exchange or two and are waited for (a few seconds at most):
                # a part cancelled runs on (Dask cannot stop it), and once the partitions are
                # released it waits on each a minute, holding its worker from the next search.
                # Where a worker died they are not waited for: a part Dask runs again, or one
                # waiting on the lost partition, would keep this here.
                _stop(partitions)
                if not gone:
                    with contextlib.suppress(TimeoutError):
                        wait(pending, timeout=STOP_SECONDS)  # type: ignore[no-untyped-call]
                for future in pending:
                    if not future.done():
                        future.cancel()
                break
            if pending:
                # A part that ended is fetched while the others search on, not after them:
                # its worker and this process are idle, and the last part's fetch is all
                # that is left to wait for at the end.
                ended = [f for f in futures if f.status == "finished" and f not in came]
                try:
                    came.update(zip(ended, self.client.gather(ended), strict=True) if ended else ())
                except Exception:  # its worker left as it was fetched: the next round says so
                    logging.getLogger(__name__).debug("a part that ended could not be fetched")
            if partitions and pending:  # once none is, the last word below is read
                got = _progress(partitions, time.perf_counter() - started) or got
                if watch is not None and got is not None:
                    watch(got)
        if partitions and not gone:
            got = _progress(partitions, time.perf_counter() - started) or got  # the last word
            if watch is not None and got is not None:
                watch(got)
        if got is not None:
            self.figures = {
                name: got[name] for name in ("bytes_shipped", "exchanges", "exchange_seconds")
            }
        after = "" if got is None else f", {got['states']:,} states in"
        parts = []
        lost = [f"worker {worker} left the cluster mid-search{after}" for worker in gone]
        # Asked for together: a worker pickles its part when the client asks for it, and the
        # parts asked for one by one were pickled one after another.
        finished = [f for f in futures if f.status == "finished" and f not in came]
        came.update(zip(finished, self.client.gather(finished), strict=True))
        for index, (future, worker) in enumerate(zip(futures, workers, strict=True)):
            if future in came:
                parts.append(came[future])
            elif future.status == "error":
                error = future.exception()
                lost.append(f"part {index} (on {worker}) failed: {error}{_hint(error)}")
            elif not gone and not lost:  # cancelled by someone else
                lost.append(f"part {index} (on {worker}) was cancelled")
        return parts, lost


def _hint(error: BaseException) -> str:
    """Where a worker could not load the scenario, what it needs: it loads it itself."""
    from yieldstar_sim.simulation.scenario import ScenarioError

    if not isinstance(error, ScenarioError):
        return ""
    return (
        " (each worker loads the scenario itself: a scenario file at the same path on every "
        "worker, and what it imports)"
    )


def _stop(partitions: list[Any]) -> None:
    if partitions:
        try:
            partitions[0].stop().result(timeout=5)
        except Exception:  # its worker is gone: the others stop on their own failure
            logging.getLogger(__name__).debug("the stop flag's partition is gone")


def _progress(partitions: list[Any], seconds: float) -> dict[str, Any] | None:
    """The whole search's progress in the shape of one process's (``ExhaustiveSearch
    .progress``): states are those claimed or searched to their end, counted once over the
    partitions."""
    try:
        summaries = [future.result(timeout=5) for future in [p.summary() for p in partitions]]
    except Exception:
        return None
    states = sum(size for size, _, _ in summaries)
    heard = summaries[0][2]
    return {
        "states": states, "seconds": round(seconds, 3),
        "states_per_second": round(states / seconds, 1) if seconds > 0 else 0.0,
        "frontier": sum(p.get("frontier", 0) for p in heard.values()),
        "depth": max((p.get("depth", 0) for p in heard.values()), default=0),
        "transitions": sum(p.get("transitions", 0) for p in heard.values()),
        "peak_rss_mb": max((p.get("peak_rss_mb", 0.0) for p in heard.values()), default=0.0),
        "processes": len(partitions),
        "bytes_shipped": sum(shipped for _, shipped, _ in summaries),
        "exchanges": sum(p.get("exchanges", 0) for p in heard.values()),
        "exchange_seconds": round(sum(p.get("exchange_seconds", 0.0) for p in heard.values()), 3),
    }  # fmt: skip
