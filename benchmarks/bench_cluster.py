"""One exhaustive search on a Dask cluster (issue 50) against one process and ``--jobs 2``, in one
run, with what sharing costs and a model of more workers.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_cluster.py                # 3 orders x 3 workers, 1 fault
    .venv/bin/python benchmarks/bench_cluster.py --quick        # 2 x 3, 1 fault
    .venv/bin/python benchmarks/bench_cluster.py --smoke        # 1 x 2, 1 fault (CI)
    .venv/bin/python benchmarks/bench_cluster.py --case 5x3x1 --sides "one,jobs 2,local:2"
                                                                # another case, some sides
    .venv/bin/python benchmarks/bench_cluster.py --agree        # every bundled scenario, and
                                                                # orders 1-3 x workers 1-3 x
                                                                # faults 0-1: the same verdict
                                                                # and states as one process

The case is ``bench_exhaustive.py``'s: ``charge-order`` -> ``step.start ship-order`` on the
memory runtime, one trigger per order, every fault kind, ``stop_at_first=False``, no DuckDB
confirmation; the scenario is a file (Dask workers load it by path). Four sides, each in a
child process of its own, taking turns: one process (``one``), two processes sharing shared
memory (``jobs 2``), a ``LocalCluster`` of two worker processes (``local:2``), and a scheduler
with two ``dask worker`` processes over TCP on 127.0.0.1 (``tcp 2``), started for the run.
Wall-clock seconds (the sides are parallel: CPU seconds would hide what they share), the
distinct states (equal on every side, or the run says so), transitions per process, and for
the clusters the bytes of entries the partitions received and sent, per state, and the
seconds the processes spent exchanging. The cluster's seconds include starting it (a
``LocalCluster``) or not (the TCP cluster runs already); both are shown. Only ratios within
one run mean anything on a shared machine; the medians of ``--reps`` runs are quoted.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _harness import footer, header, parser, progress, show, target
from bench_baseline import ROOT

if TYPE_CHECKING:
    import argparse

#: The issue's target: --dask local:2 this much faster than one process at 3 x 3, one fault.
MIN_SPEEDUP = 1.3

SCENARIO = """
import dataclasses
import yieldstar_sim as ys

_base = ys.load_scenario("durable-start")
scenario = dataclasses.replace(
    _base, name="orders-{orders}x{workers}", faults=[], workers={workers},
    triggers=[
        ys.Trigger("charge-order", {{"order": 40 + n}}, execution_id=f"order-{{40 + n}}")
        for n in range({orders})
    ],
)
"""

CHILD = """
import json, logging, sys, time
import yieldstar_sim as ys
path, faults, side, address = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
scenario = ys.load_scenario(path)
options = dict(strategy="exhaustive", max_faults=faults, runtime="memory", confirm=None,
               stop_at_first=False)
began = time.perf_counter()
if side == "one":
    report = ys.explore(scenario, **options)
elif side == "jobs 2":
    report = ys.explore(scenario, jobs=2, **options)
else:
    from yieldstar_sim.simulation.cluster import connect
    with connect(address) as client:
        ready = time.perf_counter()
        report = ys.explore(scenario, executor=client, **options)
        searched = time.perf_counter() - ready
seconds = time.perf_counter() - began
progress = report.exhaustive.progress
print(json.dumps({
    "states": report.distinct_states, "verdict": report.verdict, "seconds": seconds,
    "searched": searched if side not in ("one", "jobs 2") else seconds,
    "transitions": progress.get("transitions_per_process") or [progress.get("transitions")],
    "bytes": progress.get("bytes_shipped"), "exchanges": progress.get("exchanges"),
    "exchange_seconds": progress.get("exchange_seconds"), "statement": report.coverage(),
}))
"""

SIDES = ("one", "jobs 2", "local:2", "tcp 2")


class TcpCluster:
    """A ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1, for the run."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.processes: list[subprocess.Popen[bytes]] = []
        self.address = ""

    def __enter__(self) -> TcpCluster:
        dask = [sys.executable, "-m", "distributed.cli"]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        file = self.folder / "scheduler.json"
        quiet = subprocess.DEVNULL
        self.processes.append(subprocess.Popen(
            [*dask[:2], "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", str(file)],
            stdout=quiet, stderr=quiet, env=env,
        ))  # fmt: skip
        deadline = time.monotonic() + 60
        while not file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        self.address = json.loads(file.read_text())["address"]
        for _ in range(2):
            self.processes.append(subprocess.Popen(
                [*dask[:2], "distributed.cli.dask_worker", self.address, "--nthreads", "1",
                 "--nworkers", "1", "--no-dashboard"],
                stdout=quiet, stderr=quiet, env=env,
            ))  # fmt: skip
        self._wait_for_workers(2)
        return self

    def _wait_for_workers(self, count: int) -> None:
        from distributed import Client

        with Client(self.address, timeout="30s") as client:  # type: ignore[no-untyped-call]
            client.wait_for_workers(count, timeout=60)

    def __exit__(self, *exc: object) -> None:
        for process in reversed(self.processes):
            process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def run_side(path: Path, faults: int, side: str, address: str) -> dict[str, Any]:
    """One search in a child process of this tree."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(faults), side, address],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{side} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def scenario_file(folder: Path, orders: int, workers: int) -> Path:
    """The case as a scenario file the workers load by path."""
    path = folder / f"orders_{orders}x{workers}.py"
    path.write_text(SCENARIO.format(orders=orders, workers=workers))
    return path


def _case(args: argparse.Namespace) -> tuple[int, int, int]:
    """The case: ``--case ORDERSxWORKERSxFAULTS``, else by the sizes asked for."""
    if args.case:
        try:
            orders, workers, faults = (int(n) for n in args.case.split("x"))
        except ValueError:
            raise SystemExit(
                f"--case takes ORDERSxWORKERSxFAULTS, like 5x3x1, not {args.case!r}"
            ) from None
        return orders, workers, faults
    return (1, 2, 1) if args.smoke else (2, 3, 1) if args.quick else (3, 3, 1)


def _sides(args: argparse.Namespace) -> tuple[str, ...]:
    """The sides asked for (``--sides``), one process first: the others are compared to it."""
    asked = tuple(side for side in SIDES if side in args.sides.split(","))
    if "one" not in asked:
        raise SystemExit(f"--sides must name one and some of {', '.join(SIDES)}: {args.sides!r}")
    return asked


def compare(args: argparse.Namespace) -> None:
    """The sides on one case, ``--reps`` times, taking turns."""
    orders, workers, faults = _case(args)
    sides = _sides(args)
    reps = 1 if args.smoke else args.reps or 3
    began = header("cluster", f"{orders} x {workers}, {faults} fault", details=f"reps {reps}")
    found: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        tcp = stack.enter_context(TcpCluster(tmp)) if "tcp 2" in sides else None
        path = scenario_file(tmp, orders, workers)
        for rep in range(reps):
            for side in sides if rep % 2 == 0 else sides[::-1]:
                progress(f"rep {rep + 1}: {side}")
                address = "local:2" if side == "local:2" else tcp.address if tcp else ""
                found[side].append(run_side(path, faults, side, address))
    one = statistics.median(r["seconds"] for r in found["one"])
    states = found["one"][0]["states"]
    rows = []
    for side in sides:
        results = found[side]
        seconds = statistics.median(r["seconds"] for r in results)
        searched = statistics.median(r["searched"] for r in results)
        last = results[-1]
        moves = "+".join(f"{m:,}" for m in last["transitions"])
        shipped = last.get("bytes")
        rows.append([
            side, f"{last['states']:,}", last["verdict"], f"{seconds:.1f}", f"{searched:.1f}",
            f"{one / seconds:.2f}x", moves,
            "-" if shipped is None else f"{shipped / max(last['states'], 1):.0f}",
            "-" if last.get("exchange_seconds") is None
            else f"{last['exchange_seconds']:.2f} ({last['exchanges']:,})",
        ])  # fmt: skip
    show(
        [["side", "states", "verdict", "wall s", "searching s", "speed-up", "transitions",
          "bytes/state", "exchanging s (exchanges)"], *rows],
        [False, True, False, True, True, True, True, True, True],
    )  # fmt: skip
    same = all(r["states"] == states and r["verdict"] == found["one"][0]["verdict"]
               for results in found.values() for r in results)  # fmt: skip
    target(same, f"every side reached the {states:,} states and the verdict of one process")
    if "local:2" in sides and (orders, workers, faults) == (3, 3, 1):
        local = statistics.median(r["seconds"] for r in found["local:2"])
        target(one / local >= MIN_SPEEDUP, f"--dask local:2 at least {MIN_SPEEDUP}x faster "
               f"than one process ({one / local:.2f}x, medians of {reps})")  # fmt: skip
    if "tcp 2" in sides or "local:2" in sides:
        model(found, one)
    footer(began)


def model(found: dict[str, list[dict[str, Any]]], one: float) -> None:
    """Where more workers would take this search, from the costs measured here."""
    single = found["one"][-1]
    pair = found["tcp 2" if "tcp 2" in found else "local:2"][-1]
    total = sum(single["transitions"])
    per_move = one / total
    shared = sum(pair["transitions"])
    redundancy = shared / total
    per_batch = (pair["exchange_seconds"] or 0.0) / max(pair["exchanges"] or 1, 1)
    bytes_per_state = (pair["bytes"] or 0) / max(pair["states"], 1)
    print(
        f"\nA model, from this run: a move costs {per_move * 1e6:.0f} us in one process; two "
        f"processes ran {redundancy:.2f}x the moves of one in all; an exchange cost a process "
        f"{per_batch * 1e3:.1f} ms; the partitions moved {bytes_per_state:.0f} bytes a state."
    )
    print(
        "With P workers, each process searches the whole tree in its own order and cuts what "
        "the others finished: the moves in all grow with P (assumed here as at two, "
        "1 + (P - 1) x the excess measured), and every state's entries reach every process, "
        "so the bytes a state grow with P too."
    )
    rows = []
    for workers in (2, 4, 16, 64):
        moves = total * (1 + (redundancy - 1) * (workers - 1))
        seconds = moves * per_move / workers
        traffic = bytes_per_state / 2 * workers * single["states"]
        rows.append([str(workers), f"{moves / total:.2f}x", f"{seconds:.1f}",
                     f"{one / seconds:.2f}x", f"{traffic / 1e6:.1f}"])  # fmt: skip
    show([["workers", "moves", "model s", "speed-up", "MB shipped"], *rows],
         [True, True, True, True, True])  # fmt: skip


def agree(args: argparse.Namespace) -> None:
    """Every bundled scenario at 0 and 1 fault, and orders 1-3 x workers 1-3 x faults 0-1, on a
    local cluster of two against one process: the same verdict and distinct states."""
    import logging

    import yieldstar_sim as ys
    from yieldstar_sim.simulation.cluster import connect
    from yieldstar_sim.simulation.scenario_files import bundled_scenarios

    began = header("cluster agrees", "local:2 against one process")
    options: dict[str, Any] = {"strategy": "exhaustive", "confirm": None, "stop_at_first": False}
    options["time_budget"] = args.budget or 120.0
    differ = cut = 0
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    with tempfile.TemporaryDirectory() as tmp, connect("local:2") as client:
        cases = [(name, faults) for faults in (0, 1) for name in sorted(bundled_scenarios())]
        cases += [(str(scenario_file(Path(tmp), o, w)), k)
                  for o in (1, 2, 3) for w in (1, 2, 3) for k in (0, 1)]  # fmt: skip
        for reference, faults in cases:
            scenario = ys.load_scenario(reference)
            alone = ys.explore(scenario, max_faults=faults, **options)
            shared = ys.explore(scenario, max_faults=faults, executor=client, **options)
            if not (alone.exhausted and shared.exhausted):
                cut += 1
                print(f"  {scenario.name} at {faults}: cut by the time budget, not compared")
                continue
            same = (alone.verdict, alone.distinct_states) == (
                shared.verdict, shared.distinct_states
            )  # fmt: skip
            differ += not same
            # A count does not depend on the order the moves are taken in (decisions.md, "Twins
            # that went on differently"): any other count is a difference.
            print(
                f"  {'same' if same else 'DIFFERS'}: {scenario.name} at {faults} fault(s): "
                f"{alone.verdict} {alone.distinct_states:,} / {shared.verdict} "
                f"{shared.distinct_states:,}",
                flush=True,
            )
    target(differ == 0, f"{len(cases) - cut} cases compared, {differ} differ, {cut} cut")
    footer(began)


def main(argv: list[str] | None = None) -> None:
    """Compare the sides on one case, or check that the cluster agrees (``--agree``)."""
    made = parser(__doc__, reps="runs of each side (default 3)")
    made.add_argument("--agree", action="store_true", help="check agreement instead")
    made.add_argument("--case", help="this case instead, ORDERSxWORKERSxFAULTS (5x3x1)")
    made.add_argument(
        "--sides", default=",".join(SIDES), help=f"the sides to run, of {', '.join(SIDES)}"
    )
    made.add_argument("--budget", type=float, default=0.0, help="--agree: seconds a search")
    args = made.parse_args(argv)
    if args.agree:
        agree(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
