"""RFC 003's shop story on the engine: a start whose response is lost, replayed after
redelivery.

charge-order charges the card and starts ship-order with ``step.start``. The start commits, but
its response is lost (an armed failure point after the commit), so the delivery rejects and its
lease is released. After the redelivery delay the next worker replays charge-order: the charge
step is recorded and is not run again, and the replayed start returns the ship-order that
already exists. One courier.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from yieldstar_sim.cli_files import (
    FlagError,
    UsageError,
    check_database,
    database_path,
    output_folder,
)
from yieldstar_sim.core.files import write_whole
from yieldstar_sim.core.model import Cancelled, Completed, Failed, Suspended
from yieldstar_sim.engine.engine import Engine
from yieldstar_sim.examples import charge_order, ship_order

if TYPE_CHECKING:
    import argparse

    from yieldstar_sim.engine.dispatcher import DispatchResult
    from yieldstar_sim.runtime.protocol import Runtime

REDELIVERY_DELAY = 5.0


@dataclass
class DemoResult:
    """What the demo did, in words, and whether RFC 003's promise held."""

    lines: list[str] = field(default_factory=list)
    ship_orders: list[str] = field(default_factory=list)
    couriers: int = 0

    @property
    def ok(self) -> bool:
        """Exactly one ship-order was admitted for request (order-42, ship), one courier came."""
        return len(self.ship_orders) == 1 and self.couriers == 1


def _describe(result: DispatchResult) -> str:
    who = f"{result.worker} delivers {result.execution_id} (token {result.lease.token})"
    if result.rejection is not None:
        return (
            f"{who}: rejected ({type(result.rejection).__name__}: {result.rejection}); "
            f"lease released, redelivery in {REDELIVERY_DELAY:g}s"
        )
    return f"{who}: {_outcome_words(result.outcome)}"


def _outcome_words(outcome: object) -> str:
    """An outcome as a person reads it: ``completed with result {"shipment": "..."}``."""
    match outcome:
        case Completed(result=None):
            return "completed"
        case Completed(result=result):
            return f"completed with result {_value_words(result)}"
        case Failed(error=error):
            return f"failed: {error.name}: {error.message}"
        case Suspended():
            return "suspended until its next wake"
        case Cancelled():
            return "cancelled"
    return str(outcome)


def _value_words(value: object) -> str:
    """A durable value as JSON (what the runtime records), not a Python repr."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def lost_response_demo(runtime: Runtime | None = None) -> DemoResult:
    """Play the story on ``runtime`` (default: DuckDB in memory) and report what happened.

    ``runtime`` must read a ``ManualClock``: the engine moves virtual time.

    >>> lost_response_demo().ok
    True
    """
    engine = Engine(
        [charge_order, ship_order],
        runtime=runtime if runtime is not None else "duckdb",
        redelivery_delay=REDELIVERY_DELAY,
    )
    result = DemoResult()
    order = engine.trigger("charge-order", {"order": 42}, execution_id="order-42")
    result.lines.append(f"t=  0.0  trigger admits {order} (charge-order); it is due now")
    engine.runtime.failpoints.arm("start.after_commit")
    result.lines.append("         the next start will commit and then lose its response")
    for dispatched in engine.run_until_idle(workers=("w1", "w2")):
        result.lines.append(f"t={dispatched.at:>5.1f}  {_describe(dispatched)}")
    for effect in engine.ledger.effects:
        result.lines.append(
            f"         effect {effect.name} {_value_words(effect.data)} by {effect.worker} "
            f"({effect.execution_id} / {effect.step_key}, attempt {effect.attempt})"
        )
    result.couriers = engine.ledger.count("courier.booked", order=42)
    records = engine.runtime.executions()
    result.ship_orders = [r.execution_id for r in records if r.workflow_id == "ship-order"]
    for record in records:
        link = record.parent
        parent = "none" if link is None else f"{link.execution_id} / step {link.step_key}"
        result.lines.append(
            f"         {record.execution_id} ({record.workflow_id}): {record.status}, "
            f"parent link {parent}"
        )
    return result


def demo_command(args: argparse.Namespace) -> int:
    """``yieldstar-sim demo``: the shop story on the engine (``--runtime``, ``--db``, ``--out``,
    ``--json``), its graph written to ``--out``; exit code 0 when one courier came."""
    from yieldstar_sim.core.clock import ManualClock
    from yieldstar_sim.core.model import AdmissionErrorCode, ExecutionAdmissionError
    from yieldstar_sim.runtime.duckdb_runtime import DuckDBRuntime
    from yieldstar_sim.runtime.memory import MemoryRuntime
    from yieldstar_sim.views.graph import draw_execution_graph, execution_graph

    out = output_folder(args.out)
    clock = ManualClock()
    runtime: Runtime
    if args.runtime == "memory":
        if args.db:
            raise FlagError("--db needs --runtime duckdb")
        runtime = MemoryRuntime(clock=clock)
    else:
        db = database_path(args.db)
        check_database(db, continuing=True)  # order-42's admission says if it ran there
        runtime = DuckDBRuntime(db, clock=clock)
    try:
        result = lost_response_demo(runtime)
        graph = execution_graph(runtime)
    except ExecutionAdmissionError as error:
        if error.code != AdmissionErrorCode.EXECUTION_EXISTS:
            raise
        raise UsageError(
            f"the database {args.db!r} already holds order-42 from an earlier run; "
            "give a new --db file, or delete that one"
        ) from error
    finally:
        runtime.close()
    verdict = (
        "one ship-order, one courier: the promise held"
        if result.ok
        else f"{len(result.ship_orders)} ship-orders, {result.couriers} couriers"
    )
    figure = draw_execution_graph(
        graph, title=f"order-42 after a lost start response ({args.runtime})\n{verdict}"
    )
    image = out / "order-42-graph.png"
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=120)
    write_whole(image, buffer.getvalue())
    if args.json:
        print(
            json.dumps(
                {
                    "scenario": "lost-response-demo",
                    "runtime": args.runtime,
                    "ok": result.ok,
                    "ship_orders": result.ship_orders,
                    "couriers": result.couriers,
                    "events": result.lines,
                    "graph": str(image),
                }
            )
        )
    else:
        print("\n".join(result.lines))
        print(f"\n{verdict}; graph written to {image}")
    return 0 if result.ok else 1
