"""One exhaustive search on a Dask cluster (``simulation/cluster.py``): a process on each worker,
the states they searched shared through a table partitioned by fingerprint over the workers
(each partition a Dask actor). It reaches the states one process reaches, with the same
verdict; the statement names the workers; a violation found on a worker comes back shrunk and
confirmed; and a worker killed mid-search makes the search say so, never "verified". Needs the
``dask`` extra; skipped without it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation.cluster import connect
from yieldstar_sim.simulation.explorer.strategy import Exhaustive, StopReason

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytest.importorskip("distributed")

#: Bundled scenarios whose exhaustive search at one fault takes a second or two: the cluster
#: must reach each one's states, violated or verified (a wider run over every bundled scenario
#: is in benchmarks/bench_cluster.py --agree).
SCENARIOS = [
    ("durable-start", 1), ("trigger-in-step", 1), ("booking-race", 1),
    ("booking-race-fixed", 1), ("fan-out-order", 1), ("cancel-owner", 0),
    ("concurrent-starts", 1), ("poison-workflow-fixed", 1), ("random-replica", 0),
]  # fmt: skip


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A local cluster of two worker processes, one thread each, for the module (the one
    ``--dask local:2`` makes)."""
    with connect("local:2") as client:
        yield client


def _explore(scenario: str | ys.Scenario, max_faults: int, **options: Any) -> ys.ExplorationReport:
    if isinstance(scenario, str):
        scenario = ys.load_scenario(scenario)
    options.setdefault("strategy", "exhaustive")
    options.setdefault("stop_at_first", False)
    return ys.explore(scenario, max_faults=max_faults, confirm=None, **options)


#: Scenarios whose reduced search reaches a few states more or fewer by the order it takes
#: each state's moves, which the cluster's processes take each in an order of their own:
#: poison-workflow-fixed reaches 651 states in the first process's order and 652 in the
#: others' (a persistent set at a state and at its mirror by worker symmetry names different
#: executions' put_step; both end in the same runtime-visible end states, docs/decisions.md).
#: Their counts are compared without reduction, where every order reaches every state.
ORDER_DEPENDENT = {"poison-workflow-fixed"}


@pytest.mark.parametrize(("name", "max_faults"), SCENARIOS)
def test_the_cluster_reaches_the_states_and_verdict_one_process_reaches(
    client: Any, name: str, max_faults: int
) -> None:
    options: dict[str, Any] = {}
    if name in ORDER_DEPENDENT:
        options["strategy"] = Exhaustive(reduction=False)
    alone = _explore(name, max_faults, **options)
    cluster = _explore(name, max_faults, executor=client, **options)
    assert cluster.verdict == alone.verdict
    assert cluster.exhausted == alone.exhausted
    assert cluster.distinct_states == alone.distinct_states
    assert {v.invariant for v in cluster.violations} == {v.invariant for v in alone.violations}
    assert cluster.exhaustive is not None
    progress = cluster.exhaustive.progress
    assert progress["processes"] == 2
    assert progress["cluster"] == "Dask workers"
    assert all(moves > 0 for moves in progress["transitions_per_process"])


def test_the_statement_names_the_dask_workers(client: Any) -> None:
    report = _explore("durable-start", 1, executor=client)
    statement = report.coverage()
    assert statement.startswith("verified: ")
    assert "searched by 2 Dask workers sharing their states" in statement


def test_a_violation_found_on_a_worker_stops_the_cluster_and_is_shrunk_and_confirmed_here(
    client: Any,
) -> None:
    scenario = ys.load_scenario("trigger-in-step")
    report = ys.explore(scenario, strategy="exhaustive", max_faults=1, executor=client)
    assert report.verdict == "violated"
    assert report.stopped is StopReason.VIOLATION
    assert not report.exhausted
    found = report.violations[0]
    # The path came back from the worker as moves: replayed here, it violates the invariant.
    replay = ys.replay(found.artifact)
    assert any(v.invariant == found.invariant for v in replay.violations)
    assert report.confirmations  # confirmed on DuckDB, in this process


def test_the_shortest_first_search_on_a_cluster_keeps_its_shortest_violation(
    client: Any,
) -> None:
    options: dict[str, Any] = {
        "strategy": ys.Exhaustive(order="shortest"), "kinds": ["crash"], "stop_at_first": True
    }  # fmt: skip
    alone = _explore("booking-race", 1, **options)
    cluster = _explore("booking-race", 1, executor=client, **options)
    assert [(v.invariant, len(v.faults)) for v in cluster.violations] == [
        (v.invariant, len(v.faults)) for v in alone.violations
    ]
    # Shortest first searches its fault levels one by one, so its processes share nothing.
    assert "searched by 2 Dask workers, each on its own" in cluster.coverage()


def test_a_scenario_file_edited_between_two_searches_is_searched_as_it_is_now(
    client: Any, tmp_path: Path
) -> None:
    # The workers keep what they loaded by the file's path and the hash of its bytes: a
    # file written over with the bug must not be searched as the fix a worker loaded before.
    from yieldstar_sim.simulation.scenario_files import bundled_scenarios

    shop = tmp_path / "shop.py"
    shop.write_bytes(bundled_scenarios()["booking-race-fixed"].read_bytes())
    fixed = _explore(ys.load_scenario(str(shop)), 1, executor=client)
    shop.write_bytes(bundled_scenarios()["booking-race"].read_bytes())
    buggy = _explore(ys.load_scenario(str(shop)), 1, executor=client)
    assert fixed.verdict == "ok"
    assert buggy.verdict == "violated"
    assert buggy.distinct_states == _explore("booking-race", 1).distinct_states


def test_a_worker_killed_mid_search_makes_the_search_say_so_and_claim_nothing(
    tmp_path: Path,
) -> None:
    # Its own cluster: the killed worker's nanny starts another, and the module's cluster
    # must not depend on when.
    scenario = tmp_path / "orders.py"
    scenario.write_text(_ORDERS)
    with connect("local:2") as client:
        pids = client.run(os.getpid)
        victim = sorted(pids)[1]

        def kill_when_searching() -> None:
            # Once the search has states to lose (its partitions hold some), not before.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                time.sleep(0.2)
                if any(
                    task.startswith("yieldstar-part")
                    for tasks in client.processing().values()
                    for task in tasks
                ):
                    time.sleep(1.0)
                    os.kill(pids[victim], signal.SIGKILL)
                    return

        killer = threading.Thread(target=kill_when_searching)
        killer.start()
        report = _explore(ys.load_scenario(str(scenario)), 1, executor=client)
        killer.join()
        # The surviving part was waiting on the lost partition: it hears the scheduler say
        # its worker left within a look or two, not after a minute, and frees its worker.
        survivor = next(worker for worker in pids if worker != victim)
        free = client.submit(sum, [1, 2], workers=[survivor], pure=False)
        assert free.result(timeout=20) == 3
    assert report.verdict == "incomplete"
    assert report.stopped is StopReason.LOST
    assert not report.exhausted
    statement = report.coverage()
    assert not statement.startswith("verified")
    assert "left the cluster mid-search" in statement
    assert report.exhaustive is not None
    assert report.exhaustive.lost


def test_a_worker_lost_before_its_partition_is_made_makes_the_search_say_so_not_hang() -> None:
    # A partition is an actor pinned to its worker: Dask waits for that worker, and for one
    # gone (a new one takes its place under another address), forever. Its worker busy (a
    # part of a search before, still running), its partition waits to be made; it dies then.
    with connect("local:2") as client:
        pids = client.run(os.getpid)
        busy = sorted(pids)[0]
        sleeping = client.submit(time.sleep, 60, workers=[busy], pure=False)

        def kill_when_waiting() -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                time.sleep(0.2)
                waiting = [task for tasks in client.processing().values() for task in tasks]
                if any(str(task).startswith("yieldstar-visited") for task in waiting):
                    time.sleep(1.0)
                    os.kill(pids[busy], signal.SIGKILL)
                    return

        killer = threading.Thread(target=kill_when_waiting)
        killer.start()
        started = time.monotonic()
        report = _explore("durable-start", 1, executor=client)
        killer.join()
        sleeping.cancel()
    assert time.monotonic() - started < 30
    assert report.verdict == "incomplete"
    assert report.stopped is StopReason.LOST
    assert report.exhaustive is not None
    assert report.exhaustive.lost == [f"worker {busy} left the cluster as the search began"]


def test_a_part_that_fails_leaves_no_other_part_running_on_its_worker(client: Any) -> None:
    # Dask cannot stop a part it cancels: one cancelled and left running would wait on the
    # released partitions a minute each, holding its worker's thread from the next search.
    from yieldstar_sim.simulation.cluster import DaskCluster

    def task(*, part: int, table: Any) -> str:
        visited = table.attach(part)
        if part == 0:
            raise ValueError("this part fails")
        while not visited.stopped:  # searching, until told to stop
            time.sleep(0.01)
        visited.close()
        return "stopped"

    parts, lost = DaskCluster(client).search(task, None, share=True)
    assert parts == ["stopped"]
    assert len(lost) == 1
    assert "failed: this part fails" in lost[0]
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    # Free at once: each worker runs one task at a time.
    assert client.submit(sum, [1, 2], workers=[workers[1]], pure=False).result(timeout=5) == 3


def test_a_process_reaches_the_partition_on_its_own_worker_on_that_worker_s_loop(
    client: Any,
) -> None:
    # Through its actor, a call from a process to the partition on its own worker was
    # pickled, sent to the worker's own server and read back there: it runs on the worker's
    # loop directly now. The other partition is called through its actor, as before.
    from yieldstar_sim.simulation.cluster import DaskCluster

    def task(*, part: int, table: Any) -> tuple[list[str], int]:
        visited = table.attach(part)
        visited.claim(f"{part + 1:032x}")
        visited.close()  # both exchanges answered, each its own way
        kinds = [type(partition).__name__ for partition in visited._partitions]
        return kinds, visited._exchanges

    parts, lost = DaskCluster(client).search(task, None, share=True)
    assert not lost
    assert [kinds for kinds, _ in parts] == [["_Here", "Actor"], ["Actor", "_Here"]]
    assert all(exchanges >= 2 for _, exchanges in parts)


def test_a_local_cluster_s_workers_run_no_profiler(client: Any) -> None:
    # Dask's profiler walks each thread's stack every 10 ms from the worker's loop, taking the
    # interpreter lock from the search, for a dashboard page no one opens on local:N.
    import dask

    def profiler() -> bool:
        return bool(dask.config.get("distributed.worker.profile.enabled"))

    assert set(client.run(profiler).values()) == {False}
    assert dask.config.get("distributed.worker.profile.enabled")  # here, as it was


def test_a_local_cluster_s_servers_measure_their_loops_once_a_second(client: Any) -> None:
    # Each Dask server measures how late its loop runs, 50 times a second by default, for a
    # warning past 3 s: on local:N the scheduler and nannies do it in the command's process
    # and each worker beside its search.
    def tick(dask_worker: Any) -> int:
        return int(dask_worker.periodic_callbacks["tick"].callback_time)

    def scheduler_tick(dask_scheduler: Any) -> int:
        return int(dask_scheduler.periodic_callbacks["tick"].callback_time)

    assert set(client.run(tick).values()) == {1000}
    assert client.run_on_scheduler(scheduler_tick) == 1000


#: A search long enough to be killed in (4 orders: some 50,000 states, tens of seconds on
#: one process; it is cut a second or two in).
_ORDERS = """
import dataclasses
import yieldstar_sim as ys

_base = ys.load_scenario("durable-start")
scenario = dataclasses.replace(
    _base, name="orders-4x3", faults=[], workers=3,
    triggers=[
        ys.Trigger("charge-order", {"order": 40 + n}, execution_id=f"order-{40 + n}")
        for n in range(4)
    ],
)
"""


def test_a_cluster_of_one_worker_says_one_worker_searched() -> None:
    with connect("local:1") as client:
        report = _explore("durable-start", 1, executor=client)
    assert report.verdict == "ok"
    assert report.distinct_states == _explore("durable-start", 1).distinct_states
    assert "; searched by one Dask worker;" in report.coverage()


def test_a_worker_that_joins_after_the_processes_are_counted_is_not_used(client: Any) -> None:
    # The statement counts the processes from the workers read when the search is set up: a
    # second read, when the parts are placed, saw one more and ran a part the count missed.
    from yieldstar_sim.simulation.cluster import DaskCluster

    class Joining:
        """The module's client, but for its first read of the workers, which misses one
        (it joins after)."""

        def __init__(self, client: Any) -> None:
            self._client, self._reads = client, 0

        def run_on_scheduler(self, function: Any) -> Any:
            self._reads += 1
            found = self._client.run_on_scheduler(function)
            return found[:1] if self._reads == 1 else found

        def __getattr__(self, name: str) -> Any:
            return getattr(self._client, name)

    def task(*, part: int, table: Any) -> int:
        table.attach(part).close()
        return part

    cluster = DaskCluster(Joining(client))
    parts, lost = cluster.search(task, None, share=True)
    assert cluster.processes() == 1
    assert parts == [0]
    assert lost == []


@pytest.mark.parametrize("strategy", ["exhaustive", "systematic", "random", "pct"])
def test_a_client_of_a_cluster_with_no_workers_is_refused_by_every_strategy(
    strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The exhaustive search raised a RuntimeError of its own, and the others waited for a
    # worker forever: each now says what connect says of a scheduler with none.
    import logging

    import distributed

    from yieldstar_sim.simulation import cluster

    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 0.5)
    with (
        distributed.LocalCluster(
            n_workers=0, processes=False, dashboard_address="127.0.0.1:0",
            silence_logs=logging.CRITICAL,
        ) as empty,
        distributed.Client(empty) as client,
        pytest.raises(ValueError, match="has no workers") as refused,
    ):  # fmt: skip
        _explore("durable-start", 1, strategy=strategy, executor=client)
    assert str(refused.value) == (
        f"the Dask scheduler at '{empty.scheduler_address}' has no workers (none came in "
        f"0.5s): start some with `dask worker {empty.scheduler_address}`"
    )


def test_the_progress_counts_the_states_the_statement_counts(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The progress is read from the partitions, which held the states claimed or searched
    # but not the runs' ends: its count ended below the statement's (707 against 722, before
    # idle workers blocked; one process counts 199 now, with acknowledgements in the
    # persistent sets).
    from yieldstar_sim.simulation.cluster import DaskCluster

    watched: list[dict[str, Any]] = []
    search = DaskCluster.search

    def watching(self: DaskCluster, task: Any, watch: Any, *, share: bool) -> Any:
        return search(self, task, watched.append, share=share)

    monkeypatch.setattr(DaskCluster, "search", watching)
    report = _explore("durable-start", 1, executor=client)
    assert watched
    assert watched[-1]["states"] == report.distinct_states == 195


def test_the_workers_are_read_from_the_scheduler_not_the_client_s_copy(client: Any) -> None:
    # client.scheduler_info() asks the scheduler, then returns the client's copy of the
    # answer, which the client's own refresh (every 2 s, asking for no workers) may replace
    # in between: on a loaded machine a search read every worker gone and ended saying both
    # left mid-search. Here the copy says no worker, always.
    from yieldstar_sim.simulation.cluster import DaskCluster

    class Refreshed:
        def __init__(self, client: Any) -> None:
            self._client = client

        def scheduler_info(self, n_workers: int = -1) -> Any:
            return {**self._client.scheduler_info(n_workers=n_workers), "workers": {}}

        def __getattr__(self, name: str) -> Any:
            return getattr(self._client, name)

    def task(*, part: int, table: Any) -> int:
        visited = table.attach(part)
        time.sleep(1.5)  # the client looks at the workers every 0.5 s meanwhile
        visited.close()
        return part

    cluster = DaskCluster(Refreshed(client))
    parts, lost = cluster.search(task, None, share=True)
    assert sorted(parts) == [0, 1]
    assert lost == []


class _Refusing:
    """The module's client, whose scheduler refuses every function sent to it with
    ``refusal`` (``run_on_scheduler``), and answers everything else."""

    def __init__(self, client: Any, refusal: Exception) -> None:
        self._client, self._refusal = client, refusal

    def run_on_scheduler(self, function: Any) -> Any:
        raise self._refusal

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_a_scheduler_that_runs_no_function_sent_to_it_is_asked_for_its_workers_otherwise(
    client: Any,
) -> None:
    # What Dask 2021.05 to 2023.12.0 answered with distributed.scheduler.pickle off: the
    # search read the workers by run_on_scheduler alone, and stopped with this ValueError.
    from yieldstar_sim.simulation.cluster import DaskCluster, workers_of

    refusing = _Refusing(
        client,
        ValueError(
            "Cannot run function as the scheduler has been explicitly disallowed from "
            "deserializing arbitrary bytestrings using pickle via the "
            "'distributed.scheduler.pickle' configuration setting."
        ),
    )
    assert workers_of(refusing) == sorted(client.scheduler_info(n_workers=-1)["workers"])

    def task(*, part: int, table: Any) -> int:
        table.attach(part).close()
        return part

    parts, lost = DaskCluster(refusing).search(task, None, share=True)
    assert sorted(parts) == [0, 1]
    assert lost == []


def test_a_scheduler_that_cannot_import_yieldstar_sim_is_refused_with_the_fix(
    client: Any,
) -> None:
    # What a scheduler started from another environment answers: it could not read the
    # search's tasks either (Dask's "Error during deserialization of the task graph").
    from yieldstar_sim.simulation.cluster import workers_of

    refusing = _Refusing(client, ModuleNotFoundError("No module named 'yieldstar_sim'"))
    with pytest.raises(ValueError, match="cannot import yieldstar_sim") as refused:
        workers_of(refusing)
    assert str(refused.value) == (
        f"the Dask scheduler at {client.scheduler.address!r} cannot import yieldstar_sim (No "
        "module named 'yieldstar_sim'): install yieldstar-sim[dask] beside the scheduler too, "
        "as on every worker"
    )


def test_any_other_refusal_of_a_function_on_the_scheduler_is_raised_as_it_is(
    client: Any,
) -> None:
    from yieldstar_sim.simulation.cluster import workers_of

    with pytest.raises(ValueError, match=r"^something else$"):
        workers_of(_Refusing(client, ValueError("something else")))


def test_a_local_cluster_forks_its_workers_only_from_a_process_with_no_other_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Forked, the workers start in a fraction of a second with the package imported; a
    # thread of this process's own could hold a lock at the fork that a worker then waits on
    # for good, so a process with one (a notebook, this suite) spawns them as Dask does.
    import dask

    from yieldstar_sim.simulation import cluster

    main = threading.main_thread()
    watchdog = threading.Thread(name="yieldstar-deadline")
    other = threading.Thread(name="a notebook's")
    monkeypatch.setattr(cluster.sys, "platform", "linux")
    monkeypatch.setattr(cluster.threading, "enumerate", lambda: [main, watchdog])
    assert cluster.start_method() == "fork"
    with dask.config.set({cluster.START_METHOD: "forkserver"}):
        assert cluster.start_method() == "forkserver"  # asked for: kept
    monkeypatch.setattr(cluster.threading, "enumerate", lambda: [main, watchdog, other])
    assert cluster.start_method() == "spawn"
    monkeypatch.setattr(cluster.threading, "enumerate", lambda: [main])
    monkeypatch.setattr(cluster.sys, "platform", "darwin")
    assert cluster.start_method() == "spawn"
