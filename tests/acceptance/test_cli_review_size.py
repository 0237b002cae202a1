"""The command at review size, as a user runs it: a violated run of many orders prints the
story of the execution that broke, not one line per event, and the verdict stays in sight."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "yieldstar_sim.cli"]

#: zombie-attempt copied to many orders on 3 workers: order-1's charge stalls past its lease,
#: its retry charges, and the stalled attempt charges again.
ORDERS = """\
import yieldstar_sim as ys


def charge(step, order):
    step.world.elapse(5)
    step.world.effect("card.charged", order=order)


@ys.workflow("checkout")
def checkout(step, params):
    yield from step.run("charge", lambda: charge(step, params["order"]))
    return "charged"


scenario = ys.Scenario(
    name="zombie-orders",
    workflows=[checkout],
    triggers=[
        ys.Trigger("checkout", {{"order": n}}, execution_id=f"order-{{n}}")
        for n in range(1, {count} + 1)
    ],
    workers=3,
    faults=[ys.Fault("stall", op="elapse", execution_id="order-1", seconds=50)],
    invariants=[ys.at_most_once("card.charged", by="order")],
    max_time=36_000,
)
"""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def test_a_violated_run_of_100_orders_prints_the_broken_order_s_story(tmp_path: Path) -> None:
    (tmp_path / "orders.py").write_text(ORDERS.format(count=100), encoding="utf-8")
    args = ("run", "orders.py", "--runtime", "memory", "--format", "json", "--out", "out")
    result = cli(*args, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    # 810 events, each a line, before: the verdict was 810 lines down.
    assert len(lines) < 60
    trace_file = Path("out") / "zombie-orders-seed0-trace.jsonl"
    assert lines[2] == (
        "trace: 810 events, too many to print one a line; below, the story of order-1 (named "
        "by violation 1): its events, those of the executions it started and what befell its "
        f"workers (18 events); every event is in {trace_file} (--full-trace prints them all)"
    )
    assert any("fault    stall the attempt 50s at w2 elapse order-1/charge" in x for x in lines)
    assert any(line.strip().endswith("events left out") for line in lines)
    assert "zombie-orders (seed 0, memory): violated: 1 invariant violation" in lines
    every = cli(*args, "--full-trace", cwd=tmp_path)
    assert every.returncode == 1, every.stderr
    assert len(every.stdout.splitlines()) > 810
    assert "too many to print" not in every.stdout
