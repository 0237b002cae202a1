"""The stepper over a big run: the graph around each event, drawn from the same records as
the tables (so they agree), and tables that show their first rows and the event's changes.
How fast it follows the slider: benchmarks/bench_stepper.py."""

from __future__ import annotations

import re

import pytest

import yieldstar_sim as ys
from yieldstar_sim.examples import charge_order, ship_order
from yieldstar_sim.simulation import SimulationRun
from yieldstar_sim.widgets import Stepper
from yieldstar_sim.widgets.graph_window import WINDOW
from yieldstar_sim.widgets.stepper import BIG_GRAPH, TABLE_ROWS

ORDERS = 40


@pytest.fixture(scope="module")
def many() -> SimulationRun:
    return ys.simulate(
        ys.Scenario(
            name="orders",
            workflows=[charge_order, ship_order],
            triggers=[
                ys.Trigger("charge-order", {"order": n}, execution_id=f"order-{n}")
                for n in range(1, ORDERS + 1)
            ],
            workers=4,
            faults=[ys.Fault("crash", op="put_step", execution_id="order-1", step_key="ship")],
            max_points=5_000,
        ),
        seed=0,
        runtime="memory",
    )


NODE = re.compile(r"<g class='ys-node' data-status='([^']*)'>.*?<text[^>]*>([^<]*)</text>")


def test_a_big_run_shows_the_executions_each_event_is_about(many: SimulationRun) -> None:
    assert len(many.executions) > BIG_GRAPH
    stepper = Stepper(many)
    assert stepper.graph_image.layout.display == "none"
    assert stepper.graph_html.layout.display != "none"
    for seq in range(0, len(many.trace), 7):
        stepper.go(seq)
        event = stepper.view.events[seq]
        shown = {name: status for status, name in NODE.findall(stepper.graph_html.value)}
        assert 0 < len(shown) <= WINDOW
        if event.execution_id:
            assert event.execution_id in shown, seq
        # The graph's statuses are the executions table's: one state model.
        table = {
            row.cells[0]: row.cells[4] for row in stepper.view.book.at(seq).table("executions").rows
        }
        assert {name: table[name] for name in shown} == shown, seq
        assert f"of {len(table):,} executions" in stepper.graph_html.value


def test_a_big_run_s_tables_show_their_first_rows_and_the_event_s_changes(
    many: SimulationRun,
) -> None:
    stepper = Stepper(many)
    last = len(many.trace) - 1
    stepper.go(last)
    html = stepper.records_html.value
    everything = stepper.view.book.at(last)
    executions = everything.table("executions")
    assert len(executions.rows) > TABLE_ROWS
    assert f"of {len(executions.rows):,} rows shown" in html
    trimmed = stepper.view.book.at(last, limit=TABLE_ROWS)
    assert [r.key for r in trimmed.table("executions").rows][:TABLE_ROWS] == [
        r.key for r in executions.rows[:TABLE_ROWS]
    ]
    for table in everything.tables:
        assert set(table.marked) <= set(trimmed.table(table.name).rows)
